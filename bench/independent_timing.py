"""The device time pytest-roofline reads from the profiler trace, against independent timings of the same program,
and where the difference goes.

    python bench/independent_timing.py [--shrink N] [--repeats R]

For a bf16 matmul and a 1 GiB copy:

1. ``measure()`` gives the device time per run from the trace (its short runs, with pauses between them).
2. The same jitted function is enqueued R times back to back, 5 times: the wall clock from the first call to the
   last result, divided by R (with the queue full, launch overhead overlaps the device work).
3. One more loop of R calls runs under the profiler, and its trace is split (analysis/runs/timeline.py): the
   program's own device time per call in the loop, any other device work the trace reader does not count (a
   kernel, copy or memset of no program), and the device's idle time between calls; beside it, the loop's wall
   clock. On a GPU the profiler's device records come from CUPTI, the same source as CUDA-event timing without its
   stream-ordering caveats, so the split says which of three explanations holds for a wall clock above the
   trace: the device idles between calls (the host's share), the device does work the reader misses, or the
   kernels themselves run longer in a long loop than in measure()'s runs (a GPU at its power limit lowers its
   clocks: the NVML readings before and after each loop are printed where nvidia-ml-py is installed).
4. R calls each followed by a wait for its result: the wall clock per call of a device that idles between calls.

Nothing is asserted: docs/gpu.md keeps the output. On a CPU it runs too (use --shrink 8), where the wall clock
includes dispatch and the comparison says little about accelerators.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import jax
import jax.numpy as jnp

from pytest_roofline import measure
from pytest_roofline.analysis.runs.program_runs import run_times
from pytest_roofline.analysis.runs.timeline import device_timeline
from pytest_roofline.analysis.runs.trace_events import flatten, programs
from pytest_roofline.analysis.runs.xspace import read_xspace
from pytest_roofline.measurement.machine.clock_readings import ClockWatch
from pytest_roofline.measurement.profiler import ProfilerSession


def loop(fn: Any, args: tuple[Any, ...], repeats: int) -> float:
    """Wall clock of ``repeats`` back-to-back calls, to the last result."""
    start = time.perf_counter()
    out = None
    for _ in range(repeats):
        out = fn(*args)
    jax.block_until_ready(out)
    return time.perf_counter() - start


def wall_per_run(fn: Any, args: tuple[Any, ...], repeats: int) -> float:
    """Median over 5 batches of (wall clock of ``repeats`` back-to-back calls) / repeats."""
    jax.block_until_ready(fn(*args))
    return statistics.median(loop(fn, args, repeats) / repeats for _ in range(5))


def synced_per_run(fn: Any, args: tuple[Any, ...], repeats: int) -> float:
    """Median wall clock of one call and the wait for its result."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def profiled_loop(fn: Any, args: tuple[Any, ...], repeats: int, platform: str) -> list[str]:
    """The timeline of one profiled loop of ``repeats`` calls, in words."""
    session = ProfilerSession()
    try:
        wall = loop(fn, args, repeats)
    finally:
        xspace = session.stop()
    events = flatten(read_xspace(xspace, "the loop's profile"))
    found = [run_times(events, k.module, platform, program_id=k.program_id) for k in programs(events, platform)]
    if not found:
        return ["no program in the loop's profile: nothing to split"]
    runs = max(found, key=lambda r: len(r.per_run_s))  # the loop's program: the one that ran most often
    return device_timeline(events, platform, runs).lines(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shrink", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    n = 8192 // args.shrink
    elements = 256 * 1024 * 1024 // args.shrink**3  # f32: 1 GiB at shrink 1
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.bfloat16)
    x = jnp.ones((elements,), jnp.float32)
    cases = [
        (f"bf16 matmul {n}", jax.jit(lambda p, q: p @ q), (a, a), {"flops": 2.0 * n**3, "bytes": 6.0 * n * n}),
        (f"copy {elements * 4 / 2**20:.0f} MiB", jax.jit(lambda v: v + 1.0), (x,), {"flops": float(elements),
                                                                                  "bytes": 8.0 * elements}),
    ]
    device = jax.devices()[0]
    watch = ClockWatch(device)
    print(f"jax {jax.__version__}, {device.device_kind} ({device.platform}); clocks: "
          f"{watch.unavailable or 'NVML'}")
    print(f"{'kernel':<20} {'trace (ms)':>11} {'timer':<10} {'wall/run (ms)':>14} {'wall/trace':>10} "
          f"{'synced (ms)':>12} {'util':>7}")
    for name, fn, fargs, counts in cases:
        r = measure(fn, *fargs, name=name, **counts)
        before = watch.read()
        wall = wall_per_run(fn, fargs, args.repeats)
        after = watch.read()
        synced = synced_per_run(fn, fargs, args.repeats)
        print(f"{name:<20} {r.device_time_s * 1e3:>11.3f} {r.timer:<10} {wall * 1e3:>14.3f} "
              f"{wall / r.device_time_s:>10.3f} {synced * 1e3:>12.3f} {r.utilization:>7.1%}")
        if r.clocks is not None:
            print(f"  measure()'s runs: {r.clocks.text()}")
        if before is not None and after is not None:
            print(f"  the wall-clock loops: before {before.text()}; after {after.text()}")
        for line in profiled_loop(fn, fargs, args.repeats, device.platform):
            print(f"  profiled loop: {line}")


if __name__ == "__main__":
    main()
