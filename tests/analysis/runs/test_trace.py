"""Trace reading: a real CPU trace from this machine, and constructed (fake) GPU and TPU traces."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_roofline.analysis.runs.program_runs import run_times
from pytest_roofline.analysis.runs.trace_events import (
    KERNEL_RUN_MARKER,
    REFERENCE_RUN_MARKER,
    TraceError,
    flatten,
)


# --- constructed traces: objects shaped like jax.profiler.ProfileData (planes -> lines -> events) ---
@dataclass
class FakeEvent:
    name: str
    start_ns: float
    duration_ns: float
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeLine:
    name: str
    events: list[FakeEvent]


@dataclass
class FakePlane:
    name: str
    lines: list[FakeLine]


@dataclass
class FakeProfile:
    planes: list[FakePlane]


def fake_gpu_trace(with_run_id: bool) -> FakeProfile:
    """Constructed GPU trace: 3 runs of jit_f, two kernels each on one stream, plus another program's copy."""
    host, kernels = [], []
    for run in range(3):
        t0 = run * 1_000_000
        host.append(FakeEvent("PjitFunction(jit_f)", t0, 20_000))
        for k, (offset, dur) in enumerate(((50_000, 100_000), (160_000, 40_000))):
            stats = {"hlo_module": "jit_f", "hlo_op": f"fusion.{k}", "program_id": 7, "correlation_id": run * 10 + k}
            if with_run_id:
                stats["run_id"] = 100 + run
            kernels.append(FakeEvent(f"fusion_{k}_kernel", t0 + offset, dur, stats))
    other = FakeEvent("MemcpyD2D", 500_000, 10_000, {"hlo_module": "jit_copy", "hlo_op": "copy"})
    return FakeProfile([
        FakePlane("/host:CPU", [FakeLine("python", host)]),
        FakePlane("/device:GPU:0", [FakeLine("Stream #13(Compute)", kernels + [other])]),
    ])


def fake_tpu_trace() -> FakeProfile:
    """Constructed TPU trace: 'XLA Modules' line with one event per run, 'XLA Ops' without module stats."""
    modules, ops = [], []
    for run in range(4):
        t0 = run * 2_000_000
        modules.append(FakeEvent("jit_f(42)", t0, 900_000, {"run_id": run}))
        ops.append(FakeEvent("fusion.1", t0 + 10_000, 500_000))
        ops.append(FakeEvent("convolution.2", t0 + 520_000, 300_000))
    modules.append(FakeEvent("jit_other(43)", 9_000_000, 100_000))
    return FakeProfile([FakePlane("/device:TPU:0", [FakeLine("XLA Modules", modules), FakeLine("XLA Ops", ops)])])


@pytest.mark.parametrize("with_run_id", [True, False])
def test_constructed_gpu_trace(with_run_id: bool) -> None:
    found = run_times(flatten(fake_gpu_trace(with_run_id)), "jit_f", "gpu", expected_runs=3)
    # First kernel start (50 us) to last kernel end (200 us) of each run.
    assert found.per_run_s == pytest.approx((150e-6,) * 3)
    assert ("run_id" in found.method) == with_run_id
    if not with_run_id:
        assert "host launch" in found.method
    assert all(e.module == "jit_f" for e in found.op_events)


def test_constructed_tpu_trace() -> None:
    found = run_times(flatten(fake_tpu_trace()), "jit_f", "tpu", expected_runs=4)
    # A chip's run is its module event (the time the caller waits), not the span of its ops (10 .. 820 us).
    assert found.per_run_s == pytest.approx((900e-6,) * 4)
    assert found.method.startswith("XLA Modules events")
    assert len(found.op_events) == 8


def test_missing_plane_program_and_run_count_are_errors() -> None:
    events = flatten(fake_gpu_trace(True))
    with pytest.raises(TraceError, match=r"no /device:TPU:\* plane"):
        run_times(events, "jit_f", "tpu", 3)
    with pytest.raises(TraceError, match="programs seen: jit_copy, jit_f"):
        run_times(events, "jit_g", "gpu", 3)
    with pytest.raises(TraceError, match="found 3 runs"):
        run_times(events, "jit_f", "gpu", 5)


def test_our_run_annotation_tells_runs_apart_when_other_programs_launch_in_between() -> None:
    # Constructed (fake) GPU trace of live ceilings: reference, kernel, reference, ... Each launch has its own
    # PjitFunction event, so PjitFunction events count 7, not 3; our annotations count 3 kernel runs and 4
    # reference runs, as a run on an H100 needed (docs/gpu.md).
    host, kernels = [], []
    for slot in range(7):
        t0 = slot * 1_000_000
        is_kernel = slot % 2 == 1
        marker = KERNEL_RUN_MARKER if is_kernel else REFERENCE_RUN_MARKER
        module = "jit_f" if is_kernel else "jit__roofline_reference_stream"
        host.append(FakeEvent(marker, t0, 300_000))
        host.append(FakeEvent(f"PjitFunction({module})", t0 + 1_000, 20_000))
        kernels.append(FakeEvent("kernel", t0 + 50_000, 100_000 if is_kernel else 200_000,
                                 {"hlo_module": module, "hlo_op": "fusion"}))
    events = flatten(FakeProfile([FakePlane("/host:CPU", [FakeLine("python", host)]),
                                  FakePlane("/device:GPU:0", [FakeLine("Stream #13(Compute)", kernels)])]))
    found = run_times(events, "jit_f", "gpu", 3, KERNEL_RUN_MARKER)
    assert found.per_run_s == pytest.approx((100e-6,) * 3) and KERNEL_RUN_MARKER in found.method
    refs = run_times(events, "jit__roofline_reference_stream", "gpu", 4, REFERENCE_RUN_MARKER)
    assert refs.per_run_s == pytest.approx((200e-6,) * 4)


def test_gpu_trace_without_run_boundaries_is_an_error() -> None:
    profile = fake_gpu_trace(False)
    profile.planes[0].lines[0].events.clear()  # no host launch events
    with pytest.raises(TraceError, match="nothing tells its runs apart"):
        run_times(flatten(profile), "jit_f", "gpu", 3)


class FakeEventOfPython312(FakeEvent):
    """A fake of jaxlib's ProfileData event under Python 3.12+: reading its stats warns as jaxlib's iterator type
    does ("builtin type event_stats has no __module__ attribute", seen on every GPU kernel with jax 0.11.2)."""

    @property
    def stats(self) -> dict[str, Any]:
        warnings.warn("builtin type event_stats has no __module__ attribute", DeprecationWarning, stacklevel=2)
        return {"hlo_module": "jit_f", "hlo_op": "fusion.0"}

    @stats.setter
    def stats(self, value: dict[str, Any]) -> None:
        pass


def test_reading_the_stats_of_jaxlib_events_raises_no_warning_of_theirs() -> None:
    event = FakeEventOfPython312("fusion_0_kernel", 0, 1000)
    profile = FakeProfile([FakePlane("/device:GPU:0", [FakeLine("Stream #13(Compute)", [event] * 3)])])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert event.stats  # the fake warns when read directly
        assert len(seen) == 1
        events = flatten(profile)
        warnings.warn("a warning of the caller's own", UserWarning, stacklevel=1)  # still seen after
    assert [e.stats["hlo_op"] for e in events] == ["fusion.0"] * 3
    assert [str(w.message) for w in seen[1:]] == ["a warning of the caller's own"]


def test_constructed_cpu_end_event_stamped_after_its_run_is_not_its_time() -> None:
    """Constructed CPU trace, shaped like a real one (ops on XLA's CPU client threads, each with its "end:" event
    tied by flow id): run 0's second op has its "end:" stamped 1.6 ms after run 0's host window closed, inside run
    1's (as once in CI under jax 0.9.0: its thread was descheduled after the result was handed over). It is not run
    0's time: run 0 spans its ops, 1.0 ms; without the window rule it read 2.6 ms, more than its 1.2 ms window."""
    host, ops = [], []
    for run in range(2):
        t0 = run * 2_000_000
        host.append(FakeEvent(KERNEL_RUN_MARKER, t0, 1_200_000, {"run": run}))
        for k, (offset, dur) in enumerate(((100_000, 600_000), (700_000, 400_000))):
            flow = 2**33 + 2 * run + k
            ops.append(FakeEvent(f"fusion.{k}", t0 + offset, dur, {"hlo_op": f"fusion.{k}", "hlo_module": "jit_f",
                                                                   "program_id": 4, "run_id": 50 + run, "_p": flow}))
            end = t0 + offset + dur - 1_000 if (run, k) != (0, 1) else 2_700_000
            ops.append(FakeEvent(f"end: fusion.{k}", end, 500, {"_c": flow}))
    profile = FakeProfile([FakePlane("/host:CPU", [FakeLine("python", host),
                                                   FakeLine("tf_XLAPjRtCpuClient/1", ops)])])
    found = run_times(flatten(profile), "jit_f", "cpu", expected_runs=2, launch_marker=KERNEL_RUN_MARKER)
    assert found.per_run_s == pytest.approx((1.0e-3, 1.0e-3))
    assert [e.name for e in found.op_events].count("end: fusion.1") == 1  # run 1's own, not run 0's late one
    # Without the marker windows (a profile recorded elsewhere) nothing tells the late event apart.
    assert run_times(flatten(profile), "jit_f", "cpu", expected_runs=2).per_run_s[0] == pytest.approx(2.6005e-3)


# --- a real trace from this machine ---
@pytest.mark.slow
def test_real_cpu_trace() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from pytest_roofline.analysis.runs.trace_events import KERNEL_RUN_MARKER
    from pytest_roofline.measurement.options import TimingSettings
    from pytest_roofline.measurement.timers import Loop, time_program

    x = jnp.ones((512, 512), jnp.float32)
    compiled = jax.jit(lambda a: jnp.tanh(a @ a).sum()).lower(x).compile()
    module_name = compiled.as_text().split()[1].rstrip(",")
    settings = TimingSettings(warmup=1, min_runs=4, max_runs=4, timer="profiler")
    timed = time_program(Loop(lambda: x, lambda a: compiled(a).block_until_ready(), module_name, "cpu", settings))
    timing = timed.timing
    assert timing.timer == "profiler" and timing.runs == 4
    assert "run_id" in timing.method
    profile = jax.profiler.ProfileData.from_serialized_xspace(timed.xspace)
    events = flatten(profile)
    # Re-read as the harness reads it, inside its run markers: without them a late "end:" event of one run (the
    # constructed CPU trace above) is counted in that run, and this equality failed once in CI under jax 0.9.0.
    found = run_times(events, module_name, "cpu", 4, KERNEL_RUN_MARKER)
    assert found.per_run_s == timing.per_run_s
    # Each run's op events lie inside the host annotation the harness put around that run, and its device time
    # inside the wall time around it (once in CI, under jax 0.9.0, an "end:" event stamped after its run's window
    # made a run read 3.49 ms of device time in 3.01 ms of wall time: see the constructed CPU trace above).
    windows = sorted((e.start_ns, e.end_ns) for e in events if e.name == KERNEL_RUN_MARKER)
    assert len(windows) == 4
    for i, op in enumerate(found.op_events):
        start, end = windows[found.run_of_event[i]]
        assert start <= op.start_ns and op.end_ns <= end, (op.name, found.run_of_event[i])
    for device, wall in zip(timing.per_run_s, timing.wall_per_run_s, strict=True):  # both in run order
        assert 0 < device <= wall
    ops = {e.stats.get("hlo_op") for e in found.op_events if "hlo_op" in e.stats}
    hlo = compiled.as_text()
    assert ops and all(op in hlo for op in ops)  # every op event names an instruction of this program
    assert set(found.run_of_event.values()) == {0, 1, 2, 3}


# --- constructed GPU traces for what the real ROCm profiles do not show ---
def _gpu_profile(host: list[FakeEvent], planes: dict[str, list[FakeEvent]]) -> FakeProfile:
    return FakeProfile([FakePlane("/host:CPU", [FakeLine("python", host)])]
                       + [FakePlane(name, [FakeLine("Stream #13(Kernel)", evs)]) for name, evs in planes.items()])


def test_constructed_our_runs_are_tied_to_kernels_by_their_launch() -> None:
    # Constructed: each kernel runs after our annotation closed (asynchronous launch), so only its launch
    # (same correlation_id on the host) ties it to the run; a kernel of the same module with another
    # program id, launched outside our windows (a donated-input copy), is never counted.
    host, kernels = [], []
    for run in range(3):
        t0 = run * 1_000_000
        host.append(FakeEvent(KERNEL_RUN_MARKER, t0, 100_000, {"run": run}))
        host.append(FakeEvent("cuLaunchKernel", t0 + 10_000, 5_000, {"correlation_id": run}))
        kernels.append(FakeEvent("gemm", t0 + 200_000, 300_000, {"hlo_module": "jit_f", "hlo_op": "custom-call.1",
                                                                   "program_id": 7, "correlation_id": run}))
        host.append(FakeEvent("cuLaunchKernel", t0 + 600_000, 5_000, {"correlation_id": 100 + run}))
        kernels.append(FakeEvent("copy", t0 + 610_000, 50_000, {"hlo_module": "jit_f", "hlo_op": "copy",
                                                                  "program_id": 8, "correlation_id": 100 + run}))
    events = flatten(_gpu_profile(host, {"/device:GPU:0": kernels}))
    found = run_times(events, "jit_f", "gpu", 3, KERNEL_RUN_MARKER)
    assert found.per_run_s == pytest.approx((300e-6,) * 3)
    assert found.program_id == 7 and "correlation_id" in found.method
    assert not found.notes


def test_constructed_multi_gpu_run_is_its_slowest_device_not_a_span_across_devices() -> None:
    # Constructed: one run on two GPUs; GPU:1 is launched 5 ms after GPU:0 (launch skew). Each device is
    # timed on its own: 0.9 ms and 0.6 ms; the run is 0.9 ms (a span across devices would read 5.6 ms).
    host = [FakeEvent("GpuExecutable::ExecuteThunks", 0, 200_000, {"module_name": "jit_conv"}),
            FakeEvent("cuLaunchKernel", 10_000, 1_000, {"correlation_id": 1}),
            FakeEvent("GpuExecutable::ExecuteThunks", 5_000_000, 200_000, {"module_name": "jit_conv"}),
            FakeEvent("cuLaunchKernel", 5_010_000, 1_000, {"correlation_id": 2})]
    stats = {"hlo_module": "jit_conv", "hlo_op": "conv", "program_id": 3}
    planes = {"/device:GPU:0": [FakeEvent("conv", 20_000, 900_000, {**stats, "correlation_id": 1})],
              "/device:GPU:1": [FakeEvent("conv", 5_020_000, 600_000, {**stats, "correlation_id": 2})]}
    found = run_times(flatten(_gpu_profile(host, planes)), "jit_conv", "gpu", 1)
    assert found.per_run_s == pytest.approx((900e-6,))
    assert found.per_device_s == {"/device:GPU:0": pytest.approx((900e-6,)), "/device:GPU:1": pytest.approx((600e-6,))}


def test_constructed_command_buffer_hides_per_op_kernels_and_says_how_to_see_them() -> None:
    # Constructed: XLA ran the program as a CUDA graph: one cuGraphLaunch, kernels without hlo_op.
    host = [FakeEvent(KERNEL_RUN_MARKER, 0, 100_000, {"run": 0}),
            FakeEvent("cuGraphLaunch", 10_000, 5_000, {"correlation_id": 9})]
    kernels = [
        FakeEvent("fusion_kernel", 50_000, 40_000, {"hlo_module": "jit_f", "program_id": 1, "correlation_id": 9}),
        FakeEvent("gemm_kernel", 95_000, 60_000, {"hlo_module": "jit_f", "program_id": 1, "correlation_id": 9}),
    ]
    found = run_times(flatten(_gpu_profile(host, {"/device:GPU:0": kernels})), "jit_f", "gpu", 1, KERNEL_RUN_MARKER)
    assert found.per_run_s == pytest.approx((105e-6,))  # the program-level time is kept
    (note,) = found.notes
    assert "command buffers" in note and "XLA_FLAGS=--xla_gpu_enable_command_buffer=" in note


@pytest.mark.parametrize("enabled", [True, False])
def test_flatten_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    """Reading a trace pauses Python's cyclic collector (hundreds of thousands of new objects) and turns it back
    on only if it was on, also when the trace cannot be read (fake trace)."""
    import gc

    class Broken:
        @property
        def planes(self) -> list[Any]:
            raise RuntimeError("unreadable")

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert len(flatten(fake_gpu_trace(True))) == 10  # 3 host launches, 6 kernels, 1 copy
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError, match="unreadable"):
            flatten(Broken())
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
