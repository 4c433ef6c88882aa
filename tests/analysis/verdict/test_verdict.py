"""Every branch of the pass/fail rule, on figures alone (no measurement)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_roofline.analysis.model.roofline import IMPOSSIBLE_ABOVE
from pytest_roofline.analysis.verdict.decide import Figures, decide


def figures(util: float = 0.5, ops: float | None = None, bound: str = "memory",
            interval: tuple[float, float] | None = None) -> Figures:
    return Figures(util, util if ops is None else ops, bound, 1.0, 10.0, interval)  # type: ignore[arg-type]


def test_without_threshold_a_kernel_is_measured_never_failed() -> None:
    d = decide(figures(0.001), None)
    assert (d.verdict, d.reason, d.confirm, d.fails) == ("measured", "", False, False)


@pytest.mark.parametrize("util", [0.8, 0.95, 1.0, IMPOSSIBLE_ABOVE])
def test_at_or_above_the_threshold_passes(util: float) -> None:
    d = decide(figures(util), 0.8)
    assert (d.verdict, d.fails, d.confirm) == ("pass", False, False)


def test_below_the_threshold_asks_for_a_second_measurement_first() -> None:
    d = decide(figures(0.79), 0.8)
    assert (d.verdict, d.confirm, d.fails) == ("fail", True, False)


def test_confirmed_failure_states_both_measurements() -> None:
    d = decide(figures(0.5), 0.8, first_utilization=0.6)
    assert d.verdict == "fail" and d.fails and not d.confirm
    assert d.reason == "utilization 50.0% is below its threshold 80% (measured twice: 60.0%, then 50.0%)"


def test_second_measurement_that_passes_passes() -> None:
    assert decide(figures(0.9), 0.8, first_utilization=0.6).verdict == "pass"


@pytest.mark.parametrize("threshold", [None, 0.5, 1.0])
def test_above_105_percent_is_impossible_whatever_the_threshold(threshold: float | None) -> None:
    d = decide(figures(IMPOSSIBLE_ABOVE + 0.01), threshold)
    assert d.verdict == "impossible" and not d.confirm
    # With a threshold the test fails; without one the result is a warning, not a silent pass.
    assert d.fails == (threshold is not None)
    assert d.warning == (threshold is None)
    assert "impossible (above 105%: a peak or a count is wrong)" in d.reason


def test_impossible_wins_over_a_wrong_bound() -> None:
    assert decide(figures(2.0, bound="memory"), 0.5, expected_bound="compute").verdict == "impossible"


def test_ops_model_uses_the_per_op_utilization() -> None:
    f = figures(0.9, ops=0.6)
    assert decide(f, 0.8).verdict == "pass"
    assert decide(f, 0.8, model="ops").confirm
    d = decide(f, 0.8, model="ops", first_utilization=0.65)
    assert d.reason.startswith("utilization (per-op model) 60.0% is below its threshold 80%")


def test_impossible_is_judged_on_the_program_model_even_under_ops() -> None:
    # The program-level bound is the loosest: above 105% there a ceiling is wrong, whatever the model.
    assert decide(figures(1.2, ops=0.9), 0.5, model="ops").verdict == "impossible"


def test_wrong_bound_without_threshold() -> None:
    d = decide(figures(0.5, bound="memory"), None, expected_bound="compute")
    assert d.verdict == "wrong-bound" and d.fails
    assert d.reason == "expected compute-bound, but it is memory-bound (intensity 1 vs critical 10 FLOP/B)"


def test_wrong_bound_and_below_threshold_gives_both_reasons() -> None:
    assert decide(figures(0.6), 0.8, expected_bound="compute").confirm  # confirm before any verdict
    d = decide(figures(0.6), 0.8, expected_bound="compute", first_utilization=0.65)
    assert d.verdict == "wrong-bound" and "below its threshold" in d.reason and "expected compute-bound" in d.reason


def test_far_below_the_threshold_fails_on_one_measurement() -> None:
    # The whole interval under half the threshold: no noise of a shared machine explains it, no second measurement.
    d = decide(figures(0.1, interval=(0.08, 0.3)), 0.8)
    assert not d.confirm and d.verdict == "fail" and d.fails
    assert d.reason == ("utilization 10.0%, 95% interval 8.0%-30.0% is below its threshold 80% (measured once: "
                        "under 50% of its threshold, beyond the noise)")
    # The interval reaching half the threshold, or the waiting for a CPU taken out reaching it: measured again.
    assert decide(figures(0.1, interval=(0.08, 0.41)), 0.8).confirm
    assert decide(replace(figures(0.1, interval=(0.08, 0.3)), on_cpu=0.45), 0.8).confirm
    # On the per-op model its own utilization decides.
    assert decide(figures(0.9, ops=0.3), 0.8, model="ops").verdict == "fail"
    assert decide(figures(0.2, ops=0.6), 0.8, model="ops").confirm


def test_right_bound_passes() -> None:
    assert decide(figures(0.9, bound="compute"), 0.8, expected_bound="compute").verdict == "pass"
    assert decide(figures(0.9, bound="compute"), None, expected_bound="compute").verdict == "measured"


def test_the_point_estimate_decides_and_the_message_states_the_interval() -> None:
    d = decide(figures(0.48, interval=(0.45, 0.52)), 0.5, first_utilization=0.49)
    assert d.verdict == "fail" and d.fails and d.marginal
    assert d.reason == ("utilization 48.0%, 95% interval 45.0%-52.0% is below its threshold 50% (measured twice: "
                        "49.0%, then 48.0%); marginal: the threshold is inside the interval, within the noise")
    passing = decide(figures(0.51, interval=(0.45, 0.55)), 0.5)
    assert passing.verdict == "pass" and passing.marginal and not passing.fails
    clear = decide(figures(0.9, interval=(0.88, 0.92)), 0.5)
    assert clear.verdict == "pass" and not clear.marginal


def test_a_transcendental_bound_kernel_is_compute_bound_for_bound_checks() -> None:
    assert decide(figures(0.9, bound="transcendental"), 0.5, expected_bound="compute").verdict == "pass"
    assert decide(figures(0.9, bound="transcendental"), 0.5, expected_bound="memory").verdict == "wrong-bound"


def test_impossible_needs_the_whole_interval_above_105_percent() -> None:
    # A kernel at the ceiling whose median lands at 107% within a noisy interval is not called impossible.
    assert decide(figures(1.07, interval=(0.98, 1.12)), 0.5).verdict == "pass"
    assert decide(figures(1.07, interval=(1.06, 1.09)), 0.5).verdict == "impossible"


def test_below_the_threshold_on_a_contended_machine_is_a_warning_when_the_waiting_explains_it() -> None:
    contended = Figures(0.5, 0.5, "memory", 1.0, 10.0, None, core_low=None, on_cpu=0.85, ops_on_cpu=0.85)
    first = decide(contended, 0.8)
    assert first.confirm and not first.fails  # measured again first, as any kernel below its threshold
    d = decide(contended, 0.8, first_utilization=0.55)
    assert (d.verdict, d.warning, d.fails) == ("contended", True, False)
    assert "85.0% without the time its threads waited for a CPU" in d.reason
    assert "not judged on a contended machine" in d.reason


def test_below_the_threshold_even_without_the_waiting_is_still_not_failed_and_says_both() -> None:
    """A neighbour can cost more than the waiting shows (OpenBLAS threads spin while a partner waits): a LAPACK
    Cholesky beside two busy processes read 4.8%, 2.2%, 0.3% against 20%, and had failed."""
    contended = Figures(0.3, 0.3, "memory", 1.0, 10.0, None, core_low=None, on_cpu=0.45, ops_on_cpu=0.45)
    d = decide(contended, 0.8, first_utilization=0.31)
    assert (d.verdict, d.fails, d.warning) == ("contended", False, True)
    assert "below it even at 45.0% without the time its threads waited" in d.reason
    assert "spin while they wait for each other" in d.reason and "not judged on a contended machine" in d.reason
    far = decide(Figures(0.003, 0.003, "compute", 1.0, 10.0, None, core_low=None, on_cpu=0.01, ops_on_cpu=0.01), 0.2)
    assert (far.verdict, far.fails) == ("contended", False)  # far below, on one measurement: still a neighbour's


def test_the_per_op_model_is_said_on_its_own_figure_without_the_waiting() -> None:
    contended = Figures(0.9, 0.5, "memory", 1.0, 10.0, None, core_low=None, on_cpu=0.95, ops_on_cpu=0.6)
    d = decide(contended, 0.8, model="ops", first_utilization=0.5)
    assert d.verdict == "contended" and "below it even at 60.0%" in d.reason


def test_a_contended_kernel_of_the_wrong_bound_still_fails() -> None:
    contended = Figures(0.5, 0.5, "memory", 1.0, 10.0, None, core_low=None, on_cpu=0.9, ops_on_cpu=0.9)
    d = decide(contended, 0.8, expected_bound="compute", first_utilization=0.5)
    assert (d.verdict, d.fails) == ("wrong-bound", True)


@pytest.mark.parametrize(("threshold", "bound", "fails"), [(0.5, None, True), (None, "compute", True),
                                                           (None, "memory", True), (None, None, False)])
def test_a_kernel_that_does_no_work_never_passes_and_says_so(threshold: float | None, bound: str | None,
                                                             fails: bool) -> None:
    # A kernel returning None reads "compute-bound, 0 FLOP, intensity inf": it must not pass bound="compute".
    figures = Figures(0.0, 0.0, "compute", float("inf"), 10.0, no_work=True)
    d = decide(figures, threshold, expected_bound=bound)  # type: ignore[arg-type]
    assert d.verdict == "no-work" and d.fails is fails and d.warning is not fails
    assert "the kernel does no work: its compiled program computes nothing" in d.reason


class _Gate:
    """A made-up baseline judgement."""

    def __init__(self, regressed: bool) -> None:
        self.regressed = regressed

    def message(self) -> str:
        return "utilization 30.0% dropped 50.0% from the baseline's 60.0%"


def test_one_rule_decides_a_regression_a_contended_drop_and_over_memory() -> None:
    from pytest_roofline.analysis.program.memory import MemoryCheck, MemoryLimit

    quiet = Figures(0.3, 0.3, "memory", 1.0, 10.0)
    d = decide(quiet, None, baseline=_Gate(True), first_utilization=0.31)
    assert (d.verdict, d.fails) == ("regression", True)
    assert d.reason.endswith("(measured twice: 31.0%, then 30.0%)")
    assert decide(quiet, None, baseline=_Gate(False)).verdict == "measured"
    contended = Figures(0.3, 0.3, "memory", 1.0, 10.0, on_cpu=0.55)
    d = decide(contended, None, baseline=_Gate(True))
    assert (d.verdict, d.warning, d.fails) == ("contended", True, False) and "not judged" in d.reason
    over = MemoryCheck(MemoryLimit(1e6, False, "max_memory= in the call"), 1e6, 2_000_000, "needs 2 MB, over 1 MB")
    d = decide(quiet, None, memory=over)
    assert (d.verdict, d.reason) == ("over-memory", "needs 2 MB, over 1 MB")
    d = decide(quiet, 0.5, first_utilization=0.3, baseline=_Gate(True), memory=over)  # on top of a failure
    assert d.verdict == "fail" and "dropped 50.0%" in d.reason and d.reason.endswith("; needs 2 MB, over 1 MB")


def test_below_its_threshold_with_counts_that_are_a_lower_bound_is_not_judged_never_failed() -> None:
    """The diffrax solve of the issue: 35 MFLOP counted of about 1 GFLOP run read 1.2% and failed."""
    counted_low = Figures(0.012, 0.012, "memory", 1.0, 10.0, (0.011, 0.013), lower_bound=True)
    decision = decide(counted_low, 0.5)
    assert (decision.verdict, decision.warning, decision.fails, decision.confirm) == ("lower-bound", True, False, False)
    assert decision.reason == ("utilization 1.2% is below its threshold 50%, but not judged: its counts are a lower "
                               "bound (give flops=/bytes=)")
    assert decide(replace(counted_low, utilization=0.6, interval=(0.55, 0.65)), 0.5).verdict == "pass"
    # Given flops= but not bytes=: it names only what is missing, never what the test already gives.
    assert decide(replace(counted_low, missing_counts="bytes="), 0.5).reason.endswith("lower bound (give bytes=)")


def test_a_lower_bound_below_its_threshold_even_at_the_top_of_its_range_fails_with_both_figures() -> None:
    """Made-up figures of a CMA-ES generation whose eigh's iterations are uncounted: 0.1% against 10%. Its counts'
    range tops out at 0.6% (eigh at 9 n^3): no count of the iterations could reach the threshold, so it fails (before:
    a lower-bound warning, whatever the shortfall). Where the top reaches the threshold, it stays lower-bound."""
    top_why = "eigh at 9 n^3, the most its iterations can do"
    low = Figures(0.001, 0.001, "compute", 1.0, 10.0, (0.0009, 0.0011), lower_bound=True, counts_top=0.006,
                  counts_top_why=top_why)
    decision = decide(low, 0.1)  # far below: one measurement
    assert (decision.verdict, decision.fails) == ("fail", True)
    assert decision.reason.endswith("; its counts are a lower bound, but it is below its threshold even at the top of "
                                    f"their range: 0.6% ({top_why})")
    near = replace(low, counts_top=0.08)
    assert decide(near, 0.1).confirm  # within reach of the noise: measured again first
    assert decide(near, 0.1, first_utilization=0.001).verdict == "fail"
    reached = decide(replace(low, counts_top=0.2), 0.1)
    assert reached.verdict == "lower-bound" and "lower bound; 20.0% at the top of their range" in reached.reason


def test_the_top_of_a_range_counts_only_library_calls_counted_in_part() -> None:
    """Made-up counts: an eigh counted in part gives a top; a loop of unknown trips or a call nobody counted does not
    (no count of their work is known), nor do counts the user gave."""
    from pytest_roofline.analysis.program.counts import Counts, work_of

    partly = Counts(1e6, 0.0, 1e6, {}, True, (), dot_precisions=(), flops_top_extra=5e6,
                    uncounted=("custom-call.1 (lapack_ssyevd_ffi: eigh, its reduction counted, not its iterations)",))
    work = work_of(partly, None, None, None)
    assert work.flops_top == 6e6 and work.top_text == "eigh at 9 n^3, the most its iterations can do"
    assert work_of(replace(partly, uncounted=(*partly.uncounted, "mystery (t)")), None, None, None).flops_top is None
    assert work_of(replace(partly, loops=("while.1: trip count unknown",)), None, None, None).flops_top is None
    assert work_of(partly, 2e6, None, None).flops_top is None


def test_a_lower_bound_asks_only_for_the_counts_not_given() -> None:
    """Made-up counts with a custom call nobody counted: the remedy names the keywords the test has not given."""
    from pytest_roofline.analysis.program.counts import Counts, work_of

    looped = Counts(1e6, 0.0, 1e6, {}, True, (), dot_precisions=(), uncounted=("mystery (my_target)",))
    assert work_of(looped, 2e6, None, None).lower_bound_reason.endswith("; give bytes= to the test")
    assert work_of(looped, None, None, None).lower_bound_reason.endswith("; give flops=/bytes= to the test")
    assert work_of(looped, None, None, None).missing_counts == "flops=/bytes="
    assert work_of(looped, 2e6, None, None).missing_counts == "bytes="
    assert work_of(looped, None, 4e6, None).missing_counts == "flops="
    assert not work_of(looped, 2e6, 4e6, None).counts_lower_bound  # both given: no lower bound left


@pytest.mark.parametrize("threshold", [None, 0.5, 0.9])
def test_above_the_roofline_against_figures_known_to_be_unsure_is_unjudged_never_impossible(
        threshold: float | None) -> None:
    """Ceilings calibrated beside other work are known to be low, and a conditional counted at its dearest branch is
    an upper end: above 105% against them proves nothing about the kernel (dm-haiku's remat gradient read 128-154%
    "impossible" beside a neighbour; a lax.cond's cheap branch 1092%)."""
    why = "its ceilings were calibrated while other processes used 59% of the CPUs, so they are low"
    unsure = replace(figures(1.5, interval=(1.3, 1.6)), unsure=why)
    assert unsure.unjudged and not unsure.impossible
    d = decide(unsure, threshold, expected_bound="compute")
    assert d.verdict == "unjudged" and d.warning and not d.fails and not d.confirm
    assert d.reason == f"utilization 150.0% is above the roofline, but cannot judge: {why}"
    # Within the roofline the same figures are judged as any other.
    assert decide(replace(figures(0.4), unsure=why), 0.5, first_utilization=0.4).verdict == "fail"
    assert decide(replace(figures(1.5, interval=(1.3, 1.6))), threshold).verdict == "impossible"


def test_an_uncounted_call_never_sets_the_bound() -> None:
    """A custom call nobody can count adds no FLOP: the counted work may read memory-bound where the program is
    compute-bound, so bound= is not judged on it (a kernel below its threshold is still judged on the rest)."""
    unknown = replace(figures(0.9, bound="memory"), bound_unsure=True)
    assert decide(unknown, 0.5, expected_bound="compute").verdict == "pass"
    assert decide(figures(0.9, bound="memory"), 0.5, expected_bound="compute").verdict == "wrong-bound"


def test_the_summary_marks_a_bound_an_uncounted_call_may_change() -> None:
    from fakes import fake_result, record_of

    from pytest_roofline.report.text import summary_lines

    base = fake_result(0.5)
    uncounted = replace(base, work=replace(base.work, uncounted=("cc.1 (my_library_call)",)))
    assert uncounted.work.bound_unsure and not base.work.bound_unsure
    assert "memory-bound as counted (an uncounted call may change it)" in str(uncounted)
    lines = summary_lines([record_of("t.py::test_a", "a", uncounted, "pass", 0.4, "marker")])
    assert any("memory?" in line and "[bound?]" in line for line in lines)
    assert any(line.startswith("[bound?]: a custom call's work is missing from the counts") for line in lines)
    partly = replace(base, work=replace(base.work, uncounted=("eigh.0 (lapack_ssyevd_ffi: eigh, its reduction counted, "
                                                               "not its iterations)",)))
    assert not partly.work.bound_unsure  # counted in part: its FLOPs are there
