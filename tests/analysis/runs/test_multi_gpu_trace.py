"""A CONSTRUCTED profile shaped like a real 8-GPU ROCm profile of one jitted program run 5 times (no such file is
in tests/data): each device has its own host thread ``py_xla_execute/<id>`` with exactly five
``GpuExecutable::ExecuteThunks`` windows, the windows of different devices overlap (from the second run on all
eight open within 0.5 ms of each other), and each kernel is launched (``hipExtModuleLaunchKernel``, matched by
``correlation_id``) from its own device's thread. A kernel belongs to the window of the thread that launched it,
never to an overlapping window of another device's thread."""

from __future__ import annotations

import pytest

from pytest_roofline.analysis.runs.program_runs import run_times
from pytest_roofline.analysis.runs.trace_events import TraceEvent

MODULE = "jit_step"
DEVICES, RUNS = 8, 5
US = 1_000.0  # ns


def kernel_us(device: int, run: int) -> float:
    """Made-up kernel time of ``device`` in ``run``: device 5 is the slowest in run 2, device 3 otherwise."""
    return 100.0 + (60.0 if (device, run) == (5, 2) else 0.0) + (30.0 if device == 3 else 0.0) + 2.0 * run


def launched_kernels(device: int, run: int, first_id: int, launches: list[tuple[str, float]],
                     start: float) -> list[TraceEvent]:
    """The run's two kernels on ``device``, one after the other from ``start``, each with its launch call (on the
    host ``line`` at the time given in ``launches``) joined by ``correlation_id`` (``first_id``, then the next)."""
    events: list[TraceEvent] = []
    for k, (op, (line, launch)) in enumerate(zip(("fusion.1", "fusion.2"), launches, strict=True)):
        correlation = first_id + k
        events.append(TraceEvent("/host:CPU", line, "hipExtModuleLaunchKernel", launch, launch + 1 * US,
                                 {"correlation_id": correlation}))
        length = kernel_us(device, run) / 2 * US
        events.append(TraceEvent(f"/device:GPU:{device}", "Stream #1(Kernel)", op, start, start + length,
                                 {"hlo_module": MODULE, "hlo_op": op, "program_id": 7, "correlation_id": correlation}))
        start += length
    return events


def constructed_profile(launch_lines: str = "own") -> list[TraceEvent]:
    """``launch_lines``: "own", each launch on its device's execute thread; "tracer", on a line of its own
    ("Host Threads/<tid>", as ROCm's and CUPTI's API tracers record them), so only time ties it to a window."""
    events: list[TraceEvent] = []
    correlation = 0
    for run in range(RUNS):
        # The first run: threads start 1 ms apart (compilation, warm-up); later runs: within 0.5 ms.
        run_start = 10_000 * US * run
        for device in range(DEVICES):
            thread = f"py_xla_execute/{1000 + device}"
            opens = run_start + (device * 1_000 * US if run == 0 else device * 60 * US)
            window = (opens, opens + 400 * US)
            events.append(TraceEvent("/host:CPU", thread, "GpuExecutable::ExecuteThunks", *window,
                                     {"module_name": MODULE}))
            line = thread if launch_lines == "own" else f"Host Threads/{2000 + device}"
            launches = [(line, opens + (10 + 5 * k) * US) for k in range(2)]
            events += launched_kernels(device, run, correlation + 1, launches, opens + 50 * US)
            correlation += 2
    return events


def test_the_constructed_profile_has_the_shape_of_the_real_one() -> None:
    events = constructed_profile()
    windows = [e for e in events if e.name == "GpuExecutable::ExecuteThunks"]
    assert sorted({e.line for e in windows}) == [f"py_xla_execute/{1000 + d}" for d in range(DEVICES)]
    assert all(sum(e.line == line for e in windows) == RUNS for line in {e.line for e in windows})
    for run in range(1, RUNS):
        opens = sorted(e.start_ns for e in windows)[run * DEVICES:(run + 1) * DEVICES]
        assert opens[-1] - opens[0] <= 0.5e6  # all eight within 0.5 ms
    starts = sorted((e.start_ns, e.end_ns) for e in windows)
    assert any(b[0] < a[1] for a, b in zip(starts, starts[1:], strict=False))  # windows of devices overlap


@pytest.mark.parametrize("launch_lines", ["own", "tracer"])
def test_each_device_has_five_runs_and_a_run_takes_its_slowest_device(launch_lines: str) -> None:
    """With the launches on a tracer's own lines, the first run (windows apart) tells which thread runs which
    device; the overlapping windows of later runs are then resolved by it."""
    found = run_times(constructed_profile(launch_lines), MODULE, "gpu", expected_runs=RUNS)
    assert len(found.per_device_s) == DEVICES
    assert all(len(times) == RUNS for times in found.per_device_s.values())
    for device in range(DEVICES):
        assert found.per_device_s[f"/device:GPU:{device}"] == pytest.approx(
            [kernel_us(device, run) * 1e-6 for run in range(RUNS)])
    slowest = [max(kernel_us(d, run) for d in range(DEVICES)) * 1e-6 for run in range(RUNS)]
    assert found.per_run_s == pytest.approx(slowest)
    assert found.per_run_s[2] == pytest.approx(kernel_us(5, 2) * 1e-6)  # device 5 decided run 2
    assert "each kernel in the window of the host thread that launched it" in found.method
    assert "8 devices timed separately, the slowest per run" in found.method


def skewed_profile() -> list[TraceEvent]:
    """A CONSTRUCTED 8-GPU profile with no execute windows, only one ``PjitFunction(step)`` per run on the host,
    every kernel launched inside it, and devices that run behind their launches: device d's kernels start
    d x 140 us after the launch (runs are launched 1 ms apart, a kernel takes 50-95 us), so device 7's second
    kernel of a run starts after the next run was launched."""
    events: list[TraceEvent] = []
    correlation = 0
    for run in range(RUNS):
        launched = run * 1_000 * US
        events.append(TraceEvent("/host:CPU", "python", "PjitFunction(step)", launched, launched + 100 * US, {}))
        for device in range(DEVICES):
            launches = [("python", launched + (5 + device + k) * US) for k in range(2)]
            events += launched_kernels(device, run, correlation + 1, launches, launched + device * 140 * US)
            correlation += 2
    return events


def test_a_run_is_the_kernels_its_launch_started_on_every_device_not_those_after_it_in_time() -> None:
    """Matched by the time a kernel started, device 7's second kernel of run k would fall in run k+1's window and
    stretch that run's span over two runs (to about 1 ms); matched by their launches, each device's run is its own
    kernels and the run takes the slowest device's own span."""
    found = run_times(skewed_profile(), MODULE, "gpu", expected_runs=RUNS)
    for device in range(DEVICES):
        assert found.per_device_s[f"/device:GPU:{device}"] == pytest.approx(
            [kernel_us(device, run) * 1e-6 for run in range(RUNS)])
    assert found.per_run_s == pytest.approx([max(kernel_us(d, run) for d in range(DEVICES)) * 1e-6
                                             for run in range(RUNS)])
    assert "kernel launches (correlation_id)" in found.method
