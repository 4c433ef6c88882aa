"""The report's readers (the failure message, the summary, the HTML report) on made-up records
(tests/support/fakes.py, tests/support/rich_fakes.py): what each shows, within 120 columns."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fakes import fake_result, record_of
from rich_fakes import rich_record

from pytest_roofline.analysis.model.cache_state import plan_cache
from pytest_roofline.analysis.verdict.regressions import gate
from pytest_roofline.records.kernel_record import Artifacts, KernelRecord
from pytest_roofline.records.series_judgement import BaselineCheck, NoBaseline
from pytest_roofline.report.failure import failure_message
from pytest_roofline.report.text import summary_lines


def test_the_failure_message_names_only_the_trace_files_that_were_written() -> None:
    record = rich_record()
    traced = failure_message(replace(record, artifacts=Artifacts("/t/k", "/t/k/hlo.txt", "/t/k/p.json.gz",
                                                                 "/t/k/plugins/profile/1/h.xplane.pb")), "why",
                             full=True)
    assert "  trace         /t/k\n" in traced + "\n"
    assert ("Perfetto: open /t/k/p.json.gz at https://ui.perfetto.dev ; TensorBoard/XProf: tensorboard --logdir "
            "/t/k ; HLO: /t/k/hlo.txt") in traced
    # Timed by the wall clock (no profiler trace): the directory holds the HLO only, and the message says so.
    untraced = failure_message(replace(record, artifacts=Artifacts("/t/k", "/t/k/hlo.txt")), "why", full=True)
    assert "  trace         /t/k (no profiler trace: the wall clock was used)" in untraced
    assert "Perfetto" not in untraced and "tensorboard" not in untraced and "HLO: /t/k/hlo.txt" in untraced


def test_the_cache_state_shows_in_the_message_the_summary_and_the_json() -> None:
    """Fake results with made-up cache states: one cold whose cold runs were slower than its warm check, one cold
    whose were not, one warm."""
    cold, _ = plan_cache("auto", "cpu", 4 * 2**20, 32 * 2**20, "as the system reports it")
    took = replace(fake_result(0.5), cache=cold.with_check(2e-3, 1e-3))
    flat = replace(fake_result(0.6), cache=cold.with_check(1e-3, 1e-3))
    warm = replace(fake_result(0.7), cache=plan_cache("warm", "cpu", 4 * 2**20, 32 * 2**20, "x")[0])
    records = [record_of(f"t.py::test_{i}", "k", r, "measured") for i, r in enumerate((took, flat, warm))]
    assert [r.result.cache for r in records] == [took.cache, flat.cache, warm.cache]  # through the JSON
    lines = summary_lines(records, wide=True)
    assert lines[0].split()[5] == "cache"  # after "test [kernel]", bound, intensity, device
    cells = [line[lines[0].index("cache"):].split()[0] for line in lines[1:4]]
    assert cells == ["cold", "cold?", "warm"]
    footnotes = " ".join(line.strip() for line in lines[4:])
    assert "cache: 2 kernel(s) measured cold" in footnotes and "cold? : cold runs were not slower" in footnotes
    message = failure_message(records[0], "below", full=True)
    assert ("  cache         cold: the 33.6 MB last-level cache (as the system reports it) evicted before every timed "
            "run (67.1 MB written, outside the timing); auto: the working set 4.19 MB fits the cache, where warm and "
            "cold differ; cold runs 2 ms vs warm 1 ms (2.00x)") in message.splitlines()


def test_a_kernel_the_baseline_cannot_judge_is_marked_and_counted_in_the_summary() -> None:
    """Made-up baselines: one whose gate is wider than the baseline (nights from 25% to 100%), one whose noise hides
    a 31% drop. Neither is a regression or a silent pass: the summary marks both and counts them."""
    wild = BaselineCheck(record_of("t.py::a", "a", fake_result(0.1), "pass").key, 0.1,
                         gate([0.30, 0.95, 0.42, 1.0, 0.25, 0.8]), "6 runs in hist", "the default")
    noisy = BaselineCheck(record_of("t.py::b", "b", fake_result(0.42), "pass").key, 0.42,
                          gate([0.60, 0.70, 0.55, 0.66, 0.50, 0.62]), "6 runs in hist", "the default")
    assert (wild.state, noisy.state) == ("too noisy", "undecided") and not wild.regressed and not noisy.regressed
    records = [record_of("t.py::a", "a", fake_result(0.1), "pass", baseline=wild),
               record_of("t.py::b", "b", fake_result(0.42), "pass", baseline=noisy)]
    summary = "\n".join(summary_lines(records))
    assert "[baseline too noisy]" in summary and "[baseline undecided]" in summary
    assert "baseline: 1 kernel(s) too noisy to judge (a gate as wide as the baseline), 1 undecided" in summary
    assert wild.message().startswith("too noisy to judge (gate ")
    again = KernelRecord.from_dict(records[1].to_dict())
    assert isinstance(again.baseline, BaselineCheck) and again.baseline.state == "undecided"


def test_a_failure_is_read_in_ten_seconds_and_in_full_with_vv() -> None:
    """A made-up record with every part (tests/support/fakes.py) and a long reason: by default at most 12 lines of at
    most 120 characters, with the verdict, why, the ops, the first hint and where the rest is; the full block (-vv) has
    the ceilings' sources and every note, each once."""
    from pytest_roofline.report.failure import MORE

    record = rich_record()
    util = f"{record.utilization:.1%}"
    reason = (
        f"utilization {util}, 95% interval 28.0%-31.0% is below its threshold 50% (measured twice: 58.0%, then "
        f"{util}); dropped 50.0% from the baseline's 60.0%, beyond its gate 5.0% (floor 5%; noise 0.0% over 3 runs)"
    )
    short = failure_message(record, reason).splitlines()
    assert 4 <= len(short) <= 12 and all(len(line) <= 120 for line in short), short
    assert short[0].startswith(f"roofline: kernel 'k': utilization {util}, 95% interval 28.0%-31.0%")
    assert any(line.startswith("  why       memory-bound: ") and "lost per run" in line for line in short)
    assert "utilization" not in next(line for line in short if line.startswith("  why"))  # said once
    assert any(line.startswith("  top ops   fusion.1 (") for line in short)
    assert short[-2].startswith("  more      pytest -vv") and MORE.split(";")[0][:40] in short[-2]
    assert short[-1] == "  trace     /traces/k"
    assert "calibration" not in "\n".join(short) and "hardware" not in "\n".join(short)
    full = failure_message(record, reason, full=True)
    assert full.startswith(f"roofline: kernel 'k' of t.py::test_k: utilization {util}")
    assert "  hardware      fake CPU" in full and "  threshold     50% (marker)" in full
    assert "  utilization   " not in full  # the verdict's line gave it
    lines = full.splitlines()
    assert len(lines) == len(set(lines)), "a line of the full block is repeated"


def test_the_summary_fits_120_columns_by_default_and_shows_every_column_with_v() -> None:
    """Made-up results under long test ids, one with two marks: every line within 120 columns, the shared folder
    left out, a too-long id cut in the middle (its file and its kernel kept), marks on the next line where they
    do not fit; with -v (wide) every column in full."""
    long_id = "suite/kernels/test_" + "very_" * 20 + "long.py::test_a_kernel_with_a_name_of_some_length[f32]"
    above = replace(fake_result(1.3), notes=())
    records = [record_of(long_id, "dense", fake_result(0.4), "fail", 0.8, "marker"),
               record_of("suite/kernels/test_b.py::test_b", "b", above, "impossible", 0.5, "marker", warn_only=True)]
    lines = summary_lines(records)
    assert all(len(line) <= 120 for line in lines), [len(line) for line in lines]
    assert lines[0].split() == ["test", "[kernel]", "bound", "util", "verdict"]
    cut = next(line for line in lines if "[dense]" in line)
    assert cut.startswith("test_very_very_") and "..." in cut and "[f32] [dense]" in cut
    assert any(line.startswith("test_b.py::test_b [b]") for line in lines)
    wide = summary_lines(records, wide=True)
    assert wide[0].split()[:6] == ["test", "[kernel]", "bound", "intensity", "device", "cache"]
    assert any(line.startswith(long_id) for line in wide) and any("[warn-only]" in line for line in wide)


def test_the_html_report_holds_every_kernels_figures_once() -> None:
    """The full block's figures (what -vv shows) for each kernel of a made-up run, in the HTML report."""
    pytest.importorskip("plotly")
    from pytest_roofline.history.reports import Run
    from pytest_roofline.report.html import html_report

    record = rich_record()
    page = html_report(Run("r.json", "2026-11-26T00:00:00", None, True, None, {}, records=(record,)))
    block = page[page.index("<h2>Every kernel's figures</h2>"):]
    assert "<details><summary>t.py::test_k [k]: regression</summary><pre>" in block
    assert "  hardware      fake CPU (cpu, calibrated ceilings" in block and "  counts        6 MFLOP" in block
    assert block.count("  hardware      ") == 1


def test_a_baseline_that_matches_no_kernel_says_nothing_was_compared() -> None:
    """Fake results against a baseline that holds none of them (--roofline-baseline of another suite)."""
    records = [replace(record_of(f"t.py::test_{n}", "k", fake_result(0.5), "measured"),
                       baseline=NoBaseline("no baseline for this kernel in base.json (a new kernel)")) for n in "ab"]
    assert any(line.startswith("baseline: nothing compared: no kernel of this run is in the baseline (2 new")
               for line in summary_lines(records))
    compared = record_of("t.py::test_c", "k", fake_result(0.5), "measured")
    compared = replace(compared, baseline=BaselineCheck(compared.key, 0.5, gate([0.5], 0.05), "base.json", "default"))
    assert not any("nothing compared" in line for line in summary_lines([records[0], compared]))
