"""The fixture's logic (threshold precedence, confirmation, verdicts, records, failures) and the session's
re-calibration rules, with a fake measure(): no JAX, no timing, no pytest run."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CPU, FakeMeasure, fake_result
from harness import NODE, Failed, Harness, kernel

from pytest_roofline.analysis.verdict.decide import decide
from pytest_roofline.base.calls import KernelCall
from pytest_roofline.hardware.per_device import Threshold
from pytest_roofline.hardware.spec import Ceiling
from pytest_roofline.measurement.options import GivenSettings
from pytest_roofline.plugin.fixture import RooflineFixture
from pytest_roofline.plugin.session import RooflineSession, default_trace_root
from pytest_roofline.plugin.settings import Settings
from pytest_roofline.records.kernel_record import Artifacts


def test_passing_kernel_is_measured_once_and_recorded() -> None:
    h = Harness(0.9)
    r = h.fixture(kernel, 1, min=0.8)
    assert r.utilization == pytest.approx(0.9) and len(h.measure.calls) == 1
    (rec,) = h.records
    assert (rec.verdict, rec.threshold, rec.label, rec.model) == ("pass", 0.8, "kernel", "program")
    assert rec.threshold_origin == f"min= in the roofline() call of {NODE}"
    assert ("roofline[kernel].verdict", "pass") in h.properties and not h.saved


def test_failing_kernel_is_measured_twice_then_fails_with_both_figures_and_its_trace() -> None:
    h = Harness(0.5, 0.4)
    with pytest.raises(Failed) as info:
        h.fixture(kernel, 1, min=0.8)
    assert len(h.measure.calls) == 2
    message = str(info.value)
    assert message.startswith(f"roofline: kernel 'kernel' of {NODE}: utilization 40.0%, 95% interval 40.0%-40.0% is "
                              f"below its threshold 80% (measured twice: 50.0%, then 40.0%)")
    assert h.measure.calls[0].threshold == Threshold(0.8, f"min= in the roofline() call of {NODE}")
    assert h.measure.calls[0].sample_to_threshold  # sampling went on while the interval straddled it
    assert "re-measured   first run 50.0%, second 40.0%" in message and "trace         /traces/kernel" in message
    assert h.records[0].verdict == "fail" and h.records[0].first_utilization == pytest.approx(0.5)
    assert h.saved == ["kernel"]


def test_a_second_measurement_that_passes_passes() -> None:
    h = Harness(0.5, 0.9)
    h.fixture(kernel, 1, min=0.8)
    assert h.records[0].verdict == "pass" and h.records[0].first_utilization == pytest.approx(0.5)


def test_an_impossible_result_without_a_threshold_is_a_warning_not_a_silent_pass() -> None:
    for call in ("measure", "assert"):
        h = Harness(1.5)
        result = h.fixture.measure(kernel, 1) if call == "measure" else h.fixture(kernel, 1)
        assert result.impossible and h.records[0].verdict == "impossible"
        assert len(h.warnings) == 1 and "impossible (above 105%: a peak or a count is wrong)" in h.warnings[0]
        assert "IMPOSSIBLE    utilization above 105%: suspect" in h.warnings[0]


def test_ceilings_from_the_marker_and_the_call_reach_measure() -> None:
    h = Harness(0.5, 0.5, marker={"ceilings": "live"})
    h.fixture(kernel, 1)
    h.fixture(kernel, 1, ceilings="calibrated")  # the call's keyword wins over the marker's
    assert [c.hardware.ceilings for c in h.measure.calls] == ["live", "calibrated"]


def test_warn_only_warns_instead_of_failing() -> None:
    h = Harness(0.1, 0.1, settings=Settings(warn_only=True))
    h.fixture(kernel, 1, min=0.8)
    assert len(h.warnings) == 1 and "below its threshold 80%" in h.warnings[0]
    assert h.records[0].warn_only is True


def test_measure_method_records_and_never_fails() -> None:
    h = Harness(0.01, settings=Settings(min=Threshold(0.9, "cli")))
    h.fixture.measure(kernel, 1)
    assert h.records[0].verdict == "measured" and h.records[0].threshold is None


def test_impossible_fails_with_a_threshold_and_is_only_reported_without() -> None:
    h = Harness(1.5, 1.5, ceilings="datasheet")  # a datasheet is not re-calibrated
    h.fixture(kernel, 1)  # no threshold anywhere
    assert h.records[0].verdict == "impossible"
    with pytest.raises(Failed, match=r"utilization 150.0% is impossible \(above 105%: a peak or a count is wrong\)"):
        h.fixture(kernel, 1, min=0.5)
    assert len(h.measure.calls) == 2  # no confirmation run for an impossible result


def test_wrong_bound_from_the_marker_and_from_the_call() -> None:
    h = Harness(0.9, 0.9, marker={"bound": "compute"})
    with pytest.raises(Failed, match="expected compute-bound, but it is memory-bound"):
        h.fixture(kernel, 1)
    h.fixture(kernel, 1, bound="memory")  # the call's keyword wins over the marker
    assert [r.verdict for r in h.records] == ["wrong-bound", "measured"]


def test_threshold_precedence_call_marker_pattern_suite() -> None:
    settings = Settings(min=Threshold(0.1, "suite"), patterns=(("*::test_a", Threshold(0.2, "pattern")),))
    h = Harness(0.9, 0.9, 0.9, 0.9, settings=settings, marker={"min": 0.3})
    h.fixture(kernel, 1, min=0.4)
    h.fixture(kernel, 1)
    assert [r.threshold for r in h.records] == [0.4, 0.3]
    h2 = Harness(0.9, 0.9, settings=settings)
    h2.fixture(kernel, 1)
    assert h2.records[0].threshold == 0.2
    h3 = Harness(0.9, settings=Settings(min=Threshold(0.1, "suite")))
    h3.fixture(kernel, 1)
    assert h3.records[0].threshold == 0.1


def test_model_precedence_call_marker_settings() -> None:
    h = Harness(0.9, 0.9, 0.9, settings=Settings(model="ops"), marker={"model": "program"})
    h.fixture(kernel, 1, model="ops")
    h.fixture(kernel, 1)
    assert [r.model for r in h.records] == ["ops", "program"]
    h2 = Harness(0.9, settings=Settings(model="ops"))
    h2.fixture(kernel, 1)
    assert h2.records[0].model == "ops"


def test_marker_and_call_keywords_reach_measure() -> None:
    h = Harness(0.9, marker={"flops": 1e9, "min_runs": 3})
    h.fixture(kernel, 1, min_runs=4, timer="wallclock")
    call = h.measure.calls[0]
    assert (call.counts.flops, call.timing.min_runs, call.timing.timer, call.name) == (1e9, 4, "wallclock", "kernel")


def test_labels_are_unique_within_a_test() -> None:
    h = Harness(0.9, 0.9, 0.9)
    h.fixture.measure(kernel, 1)
    h.fixture.measure(kernel, 1)
    h.fixture.measure(kernel, 1, name="mine")
    assert [r.label for r in h.records] == ["kernel", "kernel#2", "mine"]


@pytest.mark.parametrize("keywords,fragment", [
    ({"bound": "gpu"}, "bound='gpu': must be one of 'compute', 'memory', got 'gpu'"),
    ({"min": 2}, "min=2: must be in (0, 1]"),
    ({"model": "sum"}, "model='sum': must be one of 'program', 'ops', got 'sum'"),
])
def test_bad_call_keywords_fail_cleanly_before_measuring(keywords: dict[str, Any], fragment: str) -> None:
    h = Harness()
    with pytest.raises(Failed) as info:
        h.fixture(kernel, 1, **keywords)
    assert str(info.value) == f"roofline: roofline(...) in {NODE}: {fragment}" and not h.measure.calls


def _measuring(measure: Any, traceback_style: str = "auto") -> Harness:
    """A harness whose session measures with ``measure`` (a fake that raises), with pytest's --tb style."""
    h = Harness()
    h.session = RooflineSession(Settings(), measure=measure)
    h.fixture = RooflineFixture(h.session, NODE, None, h._fail, h.warnings.append, lambda k, v: None,
                                traceback_style=traceback_style)
    return h


def test_a_kernel_that_cannot_be_measured_fails_naming_test_and_kernel() -> None:
    from pytest_roofline.base.errors import MeasureError

    def broken(call: KernelCall, options: Any, keep: Any) -> Any:
        raise MeasureError("kernel: compilation failed: boom")

    h = _measuring(broken)
    with pytest.raises(Failed) as info:
        h.fixture(kernel, 1)
    assert (
        str(info.value) == f"roofline: kernel 'kernel' of {NODE} cannot be measured: kernel: compilation failed: boom"
    )
    assert info.value.__context__ is None  # raised outside the except block: no chained traceback


def _library_raises() -> None:
    raise KeyError("unknown flag 'tb'")


@pytest.mark.parametrize("style, lines", [("long", 6), ("short", 4), ("no", 1)])
def test_an_error_from_inside_the_kernel_shows_its_frames_as_tb_asks(style: str, lines: int) -> None:
    from pytest_roofline.base.errors import MeasureError

    def broken(call: KernelCall, options: Any, keep: Any) -> Any:
        try:
            _library_raises()
        except KeyError as exc:
            raise MeasureError("kernel: tracing/lowering failed: KeyError: unknown flag 'tb'") from exc

    h = _measuring(broken, traceback_style=style)
    with pytest.raises(Failed) as info:
        h.fixture(kernel, 1)
    text = str(info.value).splitlines()
    assert text[0].endswith("cannot be measured: kernel: tracing/lowering failed: KeyError: unknown flag 'tb'")
    assert len(text) == lines and (lines == 1 or "_library_raises" in text[-1 if style == "short" else -2])
    assert [u.label for u in h.session.unmeasured] == ["kernel"]


def test_an_unexpected_error_while_measuring_is_a_kernel_that_could_not_be_measured_not_a_traceback() -> None:
    def crashes(call: KernelCall, options: Any, keep: Any) -> Any:
        raise AttributeError("'Lowered' object has no attribute 'args_info'")

    h = _measuring(crashes)
    with pytest.raises(Failed) as info:
        h.fixture(kernel, 1)
    first, *frames = str(info.value).splitlines()
    assert first == (f"roofline: kernel 'kernel' of {NODE} cannot be measured: kernel: pytest-roofline failed while "
                     f"measuring it (please report it): AttributeError: 'Lowered' object has no attribute 'args_info'")
    shown = "\n".join(frames)
    assert "in crashes" in shown and "pytest_roofline/plugin/session.py" in shown  # its own frames too
    assert info.value.__context__ is None
    (missing,) = h.session.unmeasured
    assert missing.label == "kernel" and "args_info" in missing.error


def test_trace_all_saves_every_kernel() -> None:
    h = Harness(0.9, settings=Settings(trace_all=True))
    h.fixture(kernel, 1)
    assert h.saved == ["kernel"] and h.records[0].artifacts == Artifacts("/traces/kernel")


# --- the session ---
def test_calibrate_setting_recalibrates_only_the_first_measurement() -> None:
    fake = FakeMeasure(0.5, 0.5, 0.5)
    session = RooflineSession(Settings(calibrate=True), measure=fake)
    for _ in range(2):
        session.measure(KernelCall(kernel, (1,)), session.options(GivenSettings()))
    assert [c.hardware.recalibrate for c in fake.calls] == [True, False]


def test_a_kernel_that_beats_the_calibration_never_recalibrates_it() -> None:
    # Re-calibrating and keeping the best whenever a kernel came out impossible let cache-resident
    # kernels push the cached memory ceiling from 63 to 110 GB/s. Now the impossible result stands.
    fake = FakeMeasure(2.0, 2.0)
    session = RooflineSession(Settings(), measure=fake)
    assert session.measure(KernelCall(kernel, (1,)), session.options(GivenSettings())).impossible
    assert session.measure(KernelCall(kernel, (1,)), session.options(GivenSettings())).impossible
    assert [c.hardware.recalibrate for c in fake.calls] == [False, False]


def test_session_passes_its_hardware_settings() -> None:
    fake = FakeMeasure(0.5)
    session = RooflineSession(Settings(hardware="H100 SXM", config="r.yaml", ceilings="datasheet", cache="warm"),
                              measure=fake)
    session.measure(KernelCall(kernel, (1,)), session.options(GivenSettings(name="k")))
    call = fake.calls[0]
    assert (call.hardware.name, call.hardware.file, call.hardware.ceilings, call.name, call.cache) == (
        "H100 SXM", "r.yaml", "datasheet", "k", "warm")


def test_default_trace_root_is_per_user_under_the_temp_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(os, "getuid", lambda: 1000)
    mine = default_trace_root()
    monkeypatch.setattr(os, "getuid", lambda: 1001)
    theirs = default_trace_root()
    assert mine != theirs  # two users of one machine never replace each other's traces
    for root in (mine, theirs):
        assert Path(root).parent.parent == tmp_path and Path(root).name == "traces"
    assert default_trace_root() == theirs  # fixed: a later run replaces its own traces instead of piling up


# The JSON keys users read (schema_version 1): the Result's parts must flatten to exactly these.
RESULT_KEYS = {
    "name", "hardware", "ceilings", "ceilings_used", "device_kind", "module_name", "flops", "transcendentals",
    "bytes_accessed", "flops_source", "bytes_source", "matrix_flops", "counts_lower_bound", "loops", "intensity",
    "critical_intensity", "bound", "compute_time_s", "memory_time_s", "comms_time_s", "collective_bytes",
    "roofline_time_s", "device_time_s", "per_run_s", "min_s", "spread", "runs", "timer", "timer_fallback_reason",
    "trace_method", "wall_min_s", "wall_per_run_s", "compile_time_s", "utilization", "impossible", "suspect", "notes",
    "versions", "ops_roofline_time_s", "ops_utilization", "ops_check", "hints", "ops",
}
# Added within schema 1 (new keys only; none renamed or removed).
RESULT_KEYS |= {"transcendental_time_s", "utilization_calibrated", "utilization_interval", "drift", "live",
                "threshold", "marginal"}
RESULT_KEYS |= {"uncounted_custom_calls", "counts_lower_bound_reason"}
RESULT_KEYS |= {"peak_memory_bytes", "memory", "counts_from_cost_estimate"}
RESULT_KEYS |= {"first_touch_time_s", "faults_per_run", "first_touch", "first_touch_charged",
                "utilization_with_first_touch", "utilization_without_first_touch", "first_touch_beaten",
                "waiting_per_run", "cpu_waiting", "others_cpu_share", "contended", "utilization_on_cpu", "no_work"}
RESULT_KEYS |= {"compile_cached", "cache", "clocks", "utilization_at_clocks"}
RESULT_KEYS |= {"processes"}  # a program that spans processes (null for one)
RESULT_KEYS |= {"idle"}  # the time in a run the device ran no op (null without op events)
RESULT_KEYS |= {"census"}  # device ops per run, by family
RESULT_KEYS |= {"exposure"}  # the collectives' time no compute overlapped (null without collectives)
RESULT_KEYS |= {"static_arguments"}  # the arguments compiled in (not arrays)
RESULT_KEYS |= {"source_work", "source_flops", "compiled_over_source"}  # the work the source asks for
RESULT_KEYS |= {"ops_times_from"}  # where the per-op times come from (a second pass with command buffers off)
RESULT_KEYS |= {"on_cpu_rejected"}  # contended, but taking the waiting out would put it above the roofline
RESULT_KEYS |= {"int_ops"}  # elementwise integer and boolean ops, apart from the FLOPs
RESULT_KEYS |= {"bound_unsure"}  # a custom call's work is missing: the bound is not known
RESULT_KEYS |= {"counts_if_cheapest_branches"}  # the low end of counts taken at a conditional's dearest branch
RESULT_KEYS |= {"flops_range_top"}  # the top of counts that are a lower bound only by library calls counted in part
RESULT_KEYS |= {"program_fingerprint"}  # the compiled program, device, versions and settings hashed


RESULT_KEYS |= {"conditionals", "conditional_counted_at_dearest"}  # which branch ran how often, or the dearest
def test_result_json_keeps_the_schema_1_keys() -> None:
    data = fake_result(0.5).to_dict()
    assert set(data) == RESULT_KEYS
    assert data["device_time_s"] == 1e-3 and data["runs"] == 5 and data["bound"] == "memory"
    impossible = fake_result(1.5, bound="compute").to_dict()
    assert impossible["impossible"] and impossible["suspect"].startswith("the compute peak is too low")


# --- kernel keywords: a keyword the kernel names reaches it; roofline_<setting>= is always the setting ---
def test_a_kernel_parameter_named_like_a_setting_reaches_the_kernel_and_the_namespaced_setting_the_plugin() -> None:
    def scaled(x: Any, warmup: int) -> Any:
        return x * warmup

    h = Harness(0.9)
    h.fixture(scaled, 1, warmup=3, roofline_warmup=0, min=0.5)
    (options,), (call,) = h.measure.calls, h.measure.kernel_calls
    assert (call.args, call.kwargs, options.timing.warmup) == ((1,), {"warmup": 3}, 0)
    assert call.readings == ("warmup= went to kernel 'scaled', a parameter of it, not to the setting warmup= "
                             "(write roofline_warmup= for the setting)",)


def test_the_explicit_form_hands_the_kernel_its_keywords_and_keeps_the_settings() -> None:
    def scaled(x: Any, warmup: int) -> Any:
        return x * warmup

    h = Harness(0.9)
    h.fixture(scaled, args=(1,), kwargs={"warmup": 3}, warmup=0, min=0.5, name="s")
    (options,), (call,) = h.measure.calls, h.measure.kernel_calls
    assert (call.args, call.kwargs, options.timing.warmup, options.name) == ((1,), {"warmup": 3}, 0, "s")
    assert h.records[0].threshold == 0.5


def test_record_only_measure_refuses_judging_keywords() -> None:
    h = Harness(0.9)
    with pytest.raises(Failed, match=r"roofline.measure\(...\) in .* only records: min= belongs to roofline"):
        h.fixture.measure(kernel, 1, min=0.5)


def test_a_prepared_test_defers_its_calls_and_replays_them_in_order_under_its_labels() -> None:
    """ab's preparing process (a fake measure, a fake fingerprint, ab's mode installed as its hook would): each call
    compiles and is kept, nothing is measured; the replay makes the same calls, in order, under the same labels, and
    stops where a run would (a kernel that cannot be measured fails the test)."""
    from pytest_roofline.plugin.ab.side_modes import AbMode, ProgramLog

    h = Harness(0.9, 0.3)
    log = ProgramLog(defer=True)
    mode = h.session.mode = AbMode(programs=log, fingerprint=lambda call, options: f"program of {options.name}",
                                   keeps=True)

    def broken(x: Any) -> Any:
        return x

    x = [1.0, 2.0]
    h.fixture(kernel, x, name="k", min=0.5)
    h.fixture(kernel, x, name="k", min=0.5)
    h.fixture(broken, x)
    h.fixture.measure(kernel, x)
    assert h.measure.calls == [] and h.records == []
    assert log.kernels == {NODE: {"k": "program of k", "k#2": "program of k#2", "broken": "program of broken",
                                  "kernel": "program of kernel"}}
    restart, calls = log.deferred[NODE]
    assert len(calls) == 4
    mode.programs = None
    restart()
    with pytest.raises(Failed, match="'broken' of test_k.py::test_a cannot be measured"):
        for call in calls:
            call()
    assert [r.label for r in h.records] == ["k", "k#2"]  # the last call never came: the test stopped
    assert [c.name for c in h.measure.calls] == ["k", "k#2", "broken"]
    assert h.measure.kernel_calls[0].args == (x,)  # the test's own inputs
    assert h.records[0].first_utilization is None and sorted(mode.kept) == [f"{NODE}::broken", f"{NODE}::k",
                                                                          f"{NODE}::k#2"]  # measured once, kept
    assert h.measure.keepers == [mode.kept[f"{NODE}::{k}"] for k in ("k", "k#2", "broken")]
    mode.release(NODE)  # the test done in this process: what it kept goes
    assert mode.kept == {}


def test_a_fake_cpu_calibrated_beside_other_work_never_calls_a_kernel_impossible() -> None:
    """A fake CPU whose ceilings say they were calibrated while other processes used 59% of the CPUs (the source
    hardware/calibration_cache.py writes): above its roofline a kernel is unjudged, with that reason."""
    low = Ceiling(1e10, "calibration", "stream on this machine; measured now while other processes used 59% of the "
                  "CPUs; this run only, not cached", "2026-11-27")
    busy = replace(FAKE_CPU, memory_bandwidth=low)
    assert busy.low_ceilings.startswith("its ceilings were calibrated while other processes used 59% of the CPUs")
    result = fake_result(1.5, hardware=busy)
    assert not result.impossible and result.figures.unjudged
    decision = decide(result.figures, 0.5)
    assert decision.verdict == "unjudged" and busy.low_ceilings in decision.reason and not decision.fails
    assert fake_result(1.5).impossible and FAKE_CPU.low_ceilings == ""


def test_impossible_names_the_counts_it_is_least_sure_of_before_the_hardware() -> None:
    result = fake_result(1.5)
    uncounted = replace(result, work=replace(result.work, uncounted=("lu.39 (lapack_sgetrf_ffi)",)))
    assert uncounted.impossible
    assert uncounted.suspect.startswith("first the counts it is least sure of: library calls counted from their "
                                        "shapes or not at all (lu.39 (lapack_sgetrf_ffi)); then the memory bandwidth")
    assert result.suspect.startswith("the memory bandwidth")
