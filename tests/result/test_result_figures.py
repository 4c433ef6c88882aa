"""The result's own judgement of its figures (suspect, above the roofline, a contention correction) on made-up
runs (tests/support/fakes.py), as its text, the failure, the summary and the JSON show it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from fakes import fake_result, record_of

from pytest_roofline.report.document import report_document
from pytest_roofline.report.failure import failure_message
from pytest_roofline.report.text import summary_lines


def test_a_run_faster_than_the_roofline_is_suspect_whatever_the_median() -> None:
    """Made-up runs: a layer norm read 80% at the median while three of its eight runs took less than its roofline
    time. The result is suspect (and says what to distrust) in its text, the failure, the summary and the JSON;
    its verdict is left as it was."""
    base = fake_result(0.8)  # roofline 0.8 ms
    times = (0.6e-3, 0.62e-3, 0.7e-3, 1.0e-3, 1.0e-3, 1.05e-3, 1.1e-3, 1.2e-3)
    result = replace(base, timing=replace(base.timing, per_run_s=times, wall_per_run_s=times))
    assert result.fast_runs[0] == 3 and result.fast_runs[1] == pytest.approx(0.8 / 0.6) and not result.impossible
    assert result.suspect.startswith("3 of 8 runs took less than the roofline time (the fastest at 133%, above "
                                      "105%): suspect the memory bandwidth 10 GB/s")
    assert f"SUSPECT ({result.suspect})" in str(result)
    record = record_of("t.py::test_norm", "norm", result, "pass", threshold=0.6)
    assert f"  SUSPECT       {result.suspect}" in failure_message(record, "", full=True).splitlines()
    summary = "\n".join(summary_lines([record]))
    assert "pass (min 60%) [above roofline]" in summary
    assert json.loads(json.dumps(report_document([record], {}, ".", {})))["results"][0]["result"]["suspect"] \
        == result.suspect
    steady = replace(base, timing=replace(base.timing, per_run_s=(0.8e-3,) * 8, wall_per_run_s=(0.8e-3,) * 8))
    assert steady.fast_runs[0] == 0 and steady.suspect == "" and "above roofline" not in "\n".join(
        summary_lines([record_of("t.py::test_norm", "norm", steady, "pass", threshold=0.6)]))


def test_a_contention_correction_above_the_roofline_is_no_figure_and_no_verdict() -> None:
    """Made-up runs: a kernel at 60% whose threads waited 45% of their ready time beside a neighbour. Taking the
    waiting out would read 109%, above the roofline (its runs agree: an interval of no width): that figure is
    shown nowhere, and below a threshold of 80% the kernel cannot be judged (a warning, neither pass nor fail)."""
    from pytest_roofline.analysis.verdict.decide import decide

    result = replace(fake_result(0.6, waiting=0.45), threshold=0.8)
    result = replace(result, timing=replace(result.timing, others_cpu_share=0.5))
    assert result.contended and result.on_cpu_rejected and result.utilization_on_cpu is None
    decision = decide(result.figures, 0.8, first_utilization=0.6)
    assert decision.verdict == "contended" and decision.warning and not decision.fails
    assert "cannot judge: its threads waited for a CPU held by another process during 45% of the time" in \
        decision.reason and "109" not in decision.reason
    assert "would put it above the roofline" in str(result) and "109" not in str(result)
    record = record_of("t.py::test_k", "k", result, "contended", threshold=0.8)
    assert "109" not in failure_message(record, "", full=True) and result.to_dict()["utilization_on_cpu"] is None
    # A correction that stays under the roofline is still shown, and said below the threshold (not failed: a
    # neighbour can cost more than the waiting shows).
    modest = replace(fake_result(0.6, waiting=0.2), threshold=0.8)
    modest = replace(modest, timing=replace(modest.timing, others_cpu_share=0.5))
    assert modest.utilization_on_cpu == pytest.approx(0.75) and not modest.on_cpu_rejected
    said = decide(modest.figures, 0.8, first_utilization=0.6)
    assert said.verdict == "contended" and "below it even at 75.0%" in said.reason


def test_an_interval_that_reaches_above_the_roofline_is_flagged_though_its_median_is_not() -> None:
    """Made-up runs of 0.97-1.2 ms against a 1 ms roofline: the median 90.9%, its interval reaching 103% (before,
    nothing flagged an interval of 80%-129% on a flax block beside busy neighbours)."""
    base = fake_result(1.0)  # roofline 1 ms
    times = (1.2e-3, 1.1e-3, 1.05e-3, 0.97e-3, 1.15e-3)
    result = replace(base, timing=replace(base.timing, per_run_s=times, wall_per_run_s=times))
    low, high = result.utilization_interval
    assert result.utilization < 1.0 < high and not result.impossible
    assert result.suspect.startswith(f"its 95% interval reaches {high:.1%}, above the roofline (the median "
                                     f"{result.utilization:.1%}): suspect ")
    summary = "\n".join(summary_lines([record_of("t.py::test_k", "k", result, "measured")]))
    assert "[above roofline]" in summary


def test_a_median_above_the_roofline_within_its_noise_is_flagged_too() -> None:
    """Made-up runs at 101-104% of the roofline: none beyond 105%, not impossible, but no figure above 100% goes
    unflagged."""
    base = fake_result(1.0)  # roofline 1 ms
    times = (0.97e-3, 0.98e-3, 0.985e-3, 0.99e-3, 0.96e-3)
    result = replace(base, timing=replace(base.timing, per_run_s=times, wall_per_run_s=times))
    assert result.fast_runs[0] == 0 and not result.impossible and result.utilization > 1.0
    assert result.suspect.startswith(f"the median {result.utilization:.1%} is above the roofline, within its noise: "
                                     "suspect the memory bandwidth")
    summary = "\n".join(summary_lines([record_of("t.py::test_k", "k", result, "measured")]))
    assert "[above roofline]" in summary
