"""The typed record: what the plugin keeps for a kernel is what a report file gives back, field for field, and
every reader shows the same text for both. Made-up results (tests/support/fakes.py) with every optional part set."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CPU, FAKE_FOOTPRINT, fake_result, record_of

from pytest_roofline.analysis.model.cache_state import plan_cache
from pytest_roofline.analysis.model.compiler_agreement import OpsCheck
from pytest_roofline.analysis.model.first_touch import FirstTouch
from pytest_roofline.analysis.model.live import Live
from pytest_roofline.analysis.model.per_op import OpRow, OpsModel
from pytest_roofline.analysis.program.memory import MemoryLimit, check_memory
from pytest_roofline.analysis.verdict.regressions import gate
from pytest_roofline.hardware.spec import Ceiling, HardwareSpec
from pytest_roofline.history.reports import ReportError, load_run
from pytest_roofline.records.kernel_record import Artifacts, KernelRecord
from pytest_roofline.records.recorded_result import RecordedResult
from pytest_roofline.records.series_judgement import BaselineCheck, NoBaseline
from pytest_roofline.report.document import report_document
from pytest_roofline.report.failure import failure_message
from pytest_roofline.report.text import summary_lines
from pytest_roofline.result.result import Result

RATE = Ceiling(4e9, "calibration", "made up", "2026-11-23")


def _op(name: str, measured: float | None) -> OpRow:
    return OpRow(name, "fusion", "kLoop", "main", "f32[1024]", ("f32[1024]", "f32[1024]"), dtype="vector",
                 executions=1, flops=1024.0, transcendentals=0.0,
                 bytes=8192.0, collective_bytes=0.0, compute_time_s=1e-8, memory_time_s=8e-7, comms_time_s=0.0,
                 measured_s=measured, events_per_run=1.0)


def rich_result() -> Result:
    """A made-up result with every optional part: live ceilings, first touch, per-op rows and a failing ops
    check, a device peak, contention, hints and notes."""
    base = fake_result(0.6, notes=("a note",), waiting=0.4)
    return replace(base, live=Live("f32 stream 64 MiB", "memory", (1e-3,) * 6, 1e10, (0.9, 0.95, 1.0, 0.92, 0.97)),
                   first_touch=FirstTouch(1_000_000, 500_000, RATE, 4096.0, 200.0),
                   ops_model=OpsModel((_op("fusion.1", 4e-4), _op("copy.2", None)),
                                      OpsCheck({"flops": 2.0}, {"flops": 1.0}, 0.02, ("flops: 2 vs 1",))),
                   memory=replace(FAKE_FOOTPRINT, device_peak=9_000_000, device_peak_note="allocator"),
                   hints=("donate the input",), timing=replace(base.timing, others_cpu_share=0.5))


def rich_record() -> KernelRecord:
    result = rich_result()
    check = BaselineCheck(record_of("t.py::test_k", "k", result, "fail").key, 0.6, gate([0.9]), "report r.json",
                          "the default")
    memory = check_memory(result.memory, MemoryLimit(0.5, True, "marker"), FAKE_CPU.memory_capacity, "fake CPU")
    return record_of("t.py::test_k", "k", result, "regression", 0.5, "marker", model="program",
                     expected_bound="memory", first_utilization=0.58, warn_only=True, baseline=check,
                     max_memory=memory, artifacts=Artifacts("/traces/k", "/traces/k/hlo.txt", "/traces/k/p.json.gz"))


def _through_json(record: KernelRecord) -> KernelRecord:
    return KernelRecord.from_dict(json.loads(json.dumps(record.to_dict())))


def test_a_record_read_back_from_json_equals_the_one_kept() -> None:
    record = rich_record()
    again = _through_json(record)
    assert again == record
    assert again.to_dict() == json.loads(json.dumps(record.to_dict()))
    # The optional parts came back typed, not as dicts.
    r = again.result
    assert isinstance(r.hardware, HardwareSpec) and r.hardware.memory_capacity == FAKE_CPU.memory_capacity
    assert r.live is not None and r.live.drift == pytest.approx(0.95)
    assert r.first_touch is not None and r.first_touch.charged_bytes == pytest.approx(200 * 4096)
    assert [op.name for op in r.ops] == ["fusion.1", "copy.2"] and r.ops[1].measured_s is None
    assert r.ops_check is not None and not r.ops_check.ok
    assert r.memory is not None and r.memory.device_peak == 9_000_000
    assert isinstance(again.baseline, BaselineCheck) and again.baseline.regressed
    assert again.baseline.message() == record.baseline.message()  # type: ignore[union-attr]
    assert again.max_memory is not None and again.max_memory.limit_bytes == pytest.approx(0.5e9)


def test_the_record_s_json_keys_are_the_schema_s() -> None:
    """Schema 1: the keys every report has had, plus the optional ones only where set."""
    plain = record_of("t.py::test_k", "k", fake_result(0.5), "measured").to_dict()
    assert set(plain) == {"nodeid", "label", "threshold", "threshold_origin", "verdict", "expected_bound",
                          "first_utilization", "warn_only", "model", "result"}
    assert plain["result"] == json.loads(json.dumps(fake_result(0.5).to_dict()))
    full = rich_record().to_dict()
    assert set(full) - set(plain) == {"baseline", "max_memory", "trace_dir", "hlo", "perfetto", "xplane"}
    assert full["baseline"]["regressed"] is True and full["max_memory"]["ok"] is True


def test_every_reader_shows_the_same_text_for_a_record_and_its_json() -> None:
    record = rich_record()
    again = _through_json(record)
    assert failure_message(again, "below", full=True) == failure_message(record, "below", full=True)
    assert summary_lines([again]) == summary_lines([record])
    message = failure_message(record, "below", full=True)
    for shown in ("live          the machine ran at 95%", "first touch", "contended", "baseline      utilization 60.0%",
                  "re-measured   first run 58.0%", "counts check  per-op sums differ", "hint          donate the input",
                  "note          a note", "trace         /traces/k", "device peak 9 MB (allocator)"):
        assert shown in message, shown


def test_one_place_says_which_utilization_a_record_was_judged_on() -> None:
    program = record_of("t.py::test_k", "k", fake_result(0.5), "pass", 0.4)
    ops = replace(program, model="ops")
    assert program.utilization == pytest.approx(0.5)
    assert ops.utilization == program.result.ops_utilization == 0.0  # the fake has no op rows
    assert program.key != ops.key and ops.key.model == "ops"


def test_a_missing_baseline_reads_back_as_the_reason() -> None:
    record = replace(rich_record(), baseline=NoBaseline("no baseline for this kernel in b.json (a new kernel)"))
    again = _through_json(record)
    assert isinstance(again.baseline, NoBaseline) and again.baseline.new_kernel


@pytest.mark.parametrize(("change", "named"), [
    (lambda d: d["result"].update(bound="sideways"), "bound 'sideways'"),
    (lambda d: d["result"].pop("device_time_s"), "device_time_s"),
    (lambda d: d.update(verdict="great"), "verdict 'great'"),
    (lambda d: d["result"]["hardware"].pop("memory_bandwidth_bytes_per_s"), "memory_bandwidth_bytes_per_s"),
    (lambda d: d["result"].update(impossible="no"), "impossible 'no'"),
    (lambda d: d["result"].update(timer="sundial"), "timer 'sundial'"),
])
def test_a_malformed_record_in_a_report_names_the_result_and_the_field(tmp_path: Path, change: Any,
                                                                        named: str) -> None:
    data = report_document([rich_record()], {}, "2026-11-23T00:00:00+00:00", {})
    change(data["results"][0])
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ReportError) as info:
        load_run(path)
    assert str(info.value).startswith(f"{path}: result 0 is malformed") and named in str(info.value)


def test_a_report_from_before_the_optional_fields_still_reads(tmp_path: Path) -> None:
    """An older report: no memory, first touch, contention, ops, live or versions keys in its results."""
    data = report_document([record_of("t.py::test_k", "k", fake_result(0.5, footprint=None), "pass", 0.4)], {},
                           "2026-11-23T00:00:00+00:00", {})
    for key in ("memory", "first_touch", "contended", "cpu_waiting", "ops", "live", "versions", "ops_check", "hints",
                "no_work", "utilization_interval", "first_touch_beaten", "suspect", "marginal"):
        data["results"][0]["result"].pop(key)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    (record,) = load_run(path).records
    assert record.utilization == pytest.approx(0.5) and record.key.jax == "?" and record.result.memory is None
    assert "roofline" in failure_message(record, "shown", full=True)


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


@pytest.mark.slow  # one real measurement: about 2 s
def test_a_record_of_a_real_result_is_what_its_json_reads_back() -> None:
    # The record is built from the typed result (no JSON inside the process); its JSON form, written only at the
    # file, reads back to the same figures. The hardware's JSON leaves out what only a live process has (the
    # device kinds it matched, the reference kernels' rates): compared as its JSON.
    import jax.numpy as jnp

    from pytest_roofline import measure

    result = measure(lambda x: jnp.tanh(x) @ x, jnp.ones((128, 128)), max_runs=6, name="real")
    kept = RecordedResult.of(result)
    again = RecordedResult.from_dict(json.loads(json.dumps(kept.to_dict())))
    assert kept.source is result and again.source is None
    assert replace(kept, hardware=again.hardware) == again
    assert kept.hardware.to_dict() == again.hardware.to_dict()
    assert kept.ops and kept.census is not None and kept.live is not None  # the optional parts were there to compare


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
    # A correction that stays under the roofline is still shown and judged on.
    modest = replace(fake_result(0.6, waiting=0.2), threshold=0.8)
    modest = replace(modest, timing=replace(modest.timing, others_cpu_share=0.5))
    assert modest.utilization_on_cpu == pytest.approx(0.75) and not modest.on_cpu_rejected
    assert decide(modest.figures, 0.8, first_utilization=0.6).verdict == "fail"


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


def test_a_failure_is_read_in_ten_seconds_and_in_full_with_vv() -> None:
    """A made-up record with every part (tests/support/fakes.py) and a long reason: by default at most 12 lines of at most
    120 characters, with the verdict, why, the ops, the first hint and where the rest is; the full block (-vv) has
    the ceilings' sources and every note, each once."""
    from pytest_roofline.report.failure import MORE

    record = rich_record()
    util = f"{record.utilization:.1%}"
    reason = (f"utilization {util}, 95% interval 28.0%-31.0% is below its threshold 50% (measured twice: 58.0%, then "
              f"{util}); dropped 50.0% from the baseline's 60.0%, beyond its gate 5.0% (floor 5%; noise 0.0% over 3 runs)")
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
