"""Idle time inside a program's runs (analysis/runs/idle.py): on constructed GPU runs (fakes: exact numbers) whose gaps
waited on the host or not, on the real MI300X and TPU v6e profiles (checked against a reading by hand), and on a
real CPU measurement: a loop of small ops against the same work fused."""

from __future__ import annotations

from typing import Any

import pytest
from paths import DATA
from real_profiles import real_events

from pytest_roofline.analysis.runs.idle import IdleTime, idle_time
from pytest_roofline.analysis.runs.program_runs import run_times
from pytest_roofline.analysis.runs.trace_events import RunTimes, TraceEvent, programs

DATA = DATA
US = 1e3  # ns


def _kernel(start_us: float, end_us: float, op: str, device: str = "/device:GPU:0") -> TraceEvent:
    return TraceEvent(device, "Stream #7(Kernel)", op, start_us * US, end_us * US, {"hlo_op": op})


def test_fake_gpu_run_a_late_launch_is_waiting_on_the_host() -> None:
    """A fake GPU run of three kernels (0-10, 30-40, 45-55 us): the second was launched at 25 us, 15 us after the
    first ended (15 of its 20 us gap waited on the host, 5 us was launch latency); the third was launched at 20 us,
    long before its gap (5 us, none of it the host's)."""
    ops = (_kernel(0, 10, "a"), _kernel(30, 40, "b"), _kernel(45, 55, "c"))
    runs = RunTimes((55e-6,), "constructed", ops, {0: 0, 1: 0, 2: 0}, launched_ns={0: -5 * US, 1: 25 * US, 2: 20 * US})
    idle = idle_time(runs, "gpu")
    assert idle is not None
    assert (idle.run_s, idle.idle_s, idle.host_s, idle.other_s, idle.gaps) == pytest.approx(
        (55e-6, 25e-6, 15e-6, 10e-6, 2))
    assert idle.text() == ("the device ran no op for 45% of each run (25 us of 55 us, 2 gaps): 27% waiting on the "
                           "host, 18% other")
    assert IdleTime.from_dict(idle.to_dict()) == idle


def test_fake_gpu_overlapping_kernels_are_busy_once_and_the_median_is_over_runs() -> None:
    """Two fake runs: the first's kernels overlap on two streams (no gap), the second has one 10 us gap; the
    median of 0 and 10 us is 5 us. Without launch times no gap is the host's."""
    ops = (_kernel(0, 20, "a"), _kernel(5, 30, "b"), _kernel(100, 110, "a"), _kernel(120, 130, "b"))
    runs = RunTimes((30e-6, 30e-6), "constructed", ops, {0: 0, 1: 0, 2: 1, 3: 1})
    idle = idle_time(runs, "gpu")
    assert idle is not None and idle.idle_s == pytest.approx(5e-6) and idle.host_s == 0


def test_a_container_and_an_event_without_an_op_are_not_busy_time() -> None:
    ops = (TraceEvent("/host:CPU", "t", "while", 0, 100 * US, {"hlo_op": "while.1"}), _kernel(0, 10, "a"),
           _kernel(90, 100, "b"), TraceEvent("/host:CPU", "t", "x", 10 * US, 90 * US, {}))
    for index in (0, 3):  # the loop's own span, and an event with no hlo_op
        assert ops[index].stats.get("hlo_op") in ("while.1", None)
    runs = RunTimes((100e-6,), "constructed", ops, {0: 0, 1: 0, 2: 0, 3: 0})
    idle = idle_time(runs, "cpu", containers=frozenset({"while.1"}))
    assert idle is not None and idle.idle_s == pytest.approx(80e-6) and idle.host_s == pytest.approx(80e-6)


def test_counted_leaves_out_the_runs_after_the_timed_ones() -> None:
    ops = (_kernel(0, 10, "a"), _kernel(100, 105, "a"), _kernel(110, 115, "b"))
    runs = RunTimes((10e-6, 15e-6), "constructed", ops, {0: 0, 1: 1, 2: 1})
    assert idle_time(runs, "gpu", counted=1) == IdleTime(10e-6, 0.0, 0.0, idle_time(runs, "gpu").basis, 0)  # type: ignore[union-attr]


def _events(name: str) -> tuple[TraceEvent, ...]:
    return real_events(DATA / name)


def test_real_mi300x_kernels_run_back_to_back_inside_a_run() -> None:
    """jit__mean (two kernels per run): each kernel was launched about 15 us before the device reached it, and the
    second starts where the first ends (38.52 us into the first run): no idle time inside its runs."""
    events = list(_events("rocm_mi300x_jax08_elementwise.xplane.pb"))
    key = next(k for k in programs(events, "gpu") if k.module == "jit__mean")
    runs = run_times(events, key.module, "gpu", program_id=key.program_id)
    assert len(runs.launched_ns) == 10  # every kernel's launch is known
    idle = idle_time(runs, "gpu")
    assert idle is not None and idle.idle_s == 0 and idle.gaps == 0


def test_real_tpu_all_reduce_the_chips_wait_outside_the_op() -> None:
    """jit__psum on 4 TPU v6e chips: the all-reduce op is 121.7 ms on every chip, the runs (the slowest chip's
    module event) 462.7, 153.1 and 146.2 ms: idle 341.0, 31.4 and 24.5 ms, median 31.4 ms, none of it the host's
    (one launch per run)."""
    runs = run_times(list(_events("tpu_v6e_x4_inference.xplane.pb")), "jit__psum", "tpu", expected_runs=3)
    idle = idle_time(runs, "tpu")
    assert idle is not None
    assert idle.run_s == pytest.approx(153.08e-3, abs=0.01e-3)
    assert idle.idle_s == pytest.approx(153.08e-3 - 121.69e-3, abs=0.02e-3)
    assert idle.host_s == 0 and "one launch per program run" in idle.basis


@pytest.mark.slow  # two measurements
def test_real_cpu_a_loop_of_small_ops_idles_between_them_a_fused_kernel_does_not() -> None:
    """Measured on this CPU: a softmax row by row in a fori_loop (512 iterations of a few tiny ops) leaves gaps
    between its ops, every one of them the runtime's own work; the same softmax fused has a handful. Counts are
    exact (a gap at least per iteration); idle times are compared with a wide margin (the fused kernel's few gaps
    widen on a busy machine: 9% of its 0.3 ms run once, against the loop's 10%)."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from pytest_roofline import measure

    rows, cols = 512, 256

    def row_by_row(x: Any) -> Any:
        return jax.lax.fori_loop(0, rows, lambda i, out: out.at[i].set(jax.nn.softmax(x[i])), jnp.zeros_like(x))

    x = jnp.ones((rows, cols), jnp.float32)
    fast = {"min_runs": 3, "max_runs": 5, "budget_s": 0.3, "warmup": 1, "ceilings": "calibrated"}
    # Every run profiled: its ~3,000 events a run would otherwise be read from one warm-up run, without idle time.
    looped = measure(row_by_row, x, name="row_by_row", bytes=2 * x.nbytes, timer="profiler", **fast).idle
    fused = measure(lambda x: jax.nn.softmax(x, axis=-1), x, name="fused", bytes=2 * x.nbytes, **fast).idle
    assert looped is not None and fused is not None
    assert looped.gaps >= rows and fused.gaps < 50
    # A CPU: every gap between ops is the runtime's own work. The idle time also holds the run's two edges (before
    # its first op, after its last), which no gap covers: 93.3% of it was between ops once on a quiet Zen 4 VM.
    assert 0.8 * looped.idle_s <= looped.host_s <= looped.idle_s
    assert looped.idle_s > 5 * fused.idle_s  # measured: 1.5 ms against 29 us on a busy 2-core machine
