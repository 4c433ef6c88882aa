"""Where a profiled loop's time went on the device (analysis/runs/timeline.py): the program's own device time, other
device work, idle time. On a constructed GPU trace (a fake: exact numbers) and on a real MI300X profile (its
device activity checked against a second route through jax.profiler.ProfileData)."""

from __future__ import annotations

import pytest
from paths import DATA
from real_profiles import real_events

from pytest_roofline.analysis.runs.program_runs import run_times
from pytest_roofline.analysis.runs.timeline import device_timeline, union_ns
from pytest_roofline.analysis.runs.trace_events import RunTimes, TraceEvent, programs

GEMM = DATA / "rocm_mi300x_jax08_gemm.xplane.pb"
MS = 1e6  # ns


def test_union_of_intervals() -> None:
    assert union_ns([(0, 10), (5, 15), (20, 30), (21, 22)]) == 25
    assert union_ns([]) == 0


def _kernel(start_ms: float, end_ms: float, module: str = "jit_f") -> TraceEvent:
    return TraceEvent("/device:GPU:0", "Stream #7(Kernel)", "gemm", start_ms * MS, end_ms * MS,
                      {"hlo_module": module, "program_id": 3})


def test_constructed_gpu_loop_splits_the_wall_clock() -> None:
    # A fake GPU loop of two calls: each 1 ms of the program (the first with a 0.2 ms gap between its two kernels,
    # part of its run's time), a 0.1 ms memset the reader does not count after each, and 0.2 ms idle before the
    # next call; the wall clock read 2.8 ms for the two calls.
    ops = [_kernel(0, 0.4), _kernel(0.6, 1.0), _kernel(1.3, 2.3)]
    others = [_kernel(1.0, 1.1, module="memset"), _kernel(2.3, 2.4, module="memset")]
    summary = TraceEvent("/device:GPU:0", "XLA Modules", "jit_f(3)", 0, 2.4 * MS, {})
    runs = RunTimes((1e-3, 1e-3), "constructed", tuple(ops), {0: 0, 1: 0, 2: 1})
    t = device_timeline([*ops, *others, summary], "gpu", runs)
    assert (t.program_s, t.busy_s, t.span_s, t.other_s, t.own_s, t.idle_s) == pytest.approx(
        (2e-3, 2.0e-3, 2.4e-3, 0.2e-3, 1.8e-3, 0.2e-3))
    assert t.lines(2.8e-3)[1] == ("wall clock 1.400 ms per call: +40.0% over the program's device time, of which "
                                  "other device work +10.0%, device idle +10.0%, outside the device's span +20.0%")


def test_real_gpu_profile_activity_is_every_kernel_on_the_device() -> None:
    jax = pytest.importorskip("jax")
    events = list(real_events(GEMM))
    raw = [(e.start_ns, e.start_ns + e.duration_ns) for plane in jax.profiler.ProfileData.from_file(str(GEMM)).planes
           if plane.name.startswith("/device:GPU") for line in plane.lines if line.name.startswith("Stream")
           for e in line.events]
    keys = programs(events, "gpu")
    assert keys
    own_total = 0.0
    for key in keys:
        runs = run_times(events, key.module, "gpu", program_id=key.program_id)
        t = device_timeline(events, "gpu", runs)
        assert t.program_s == pytest.approx(sum(runs.per_run_s))
        assert t.busy_s == pytest.approx(union_ns(raw) * 1e-9)  # the same device activity, by a second route
        assert t.other_s <= t.busy_s <= t.span_s
        own_total += t.busy_s - t.other_s
    assert t.busy_s - own_total >= -1e-9  # what no program holds: the profile's own unattributed work
