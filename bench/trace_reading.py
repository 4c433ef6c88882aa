"""How fast a profiler trace is read, in events per second, and how many events a measurement reads.

Run: python bench/trace_reading.py [--iterations 2000 8000]   (prints a table)

A jitted ``fori_loop`` of a small matmul and a ``lax.cond`` records a dozen trace events an iteration on a CPU (each
op and its "end:" consumer), so its trip count sets the trace's size. For each size the bench runs the program once
under the profiler and times each step of reading its trace: stopping the profiler (XLA turns its buffers into an
XSpace), parsing it (``jax.profiler.ProfileData``), flattening the events, indexing them and matching the program's run.
Two reads: every event, as each timed run is read (the run's time needs the consumers' ends), and the per-op
read of a program whose events are too many to read every run, which leaves the consumers out. The last column
is the cost per event that ``pytest_roofline.analysis.runs.trace_plan.READ_S_PER_EVENT`` assumes. Nothing is
asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.profiler import ProfileData, TraceAnnotation  # noqa: E402

from pytest_roofline.analysis.runs.program_runs import run_times  # noqa: E402
from pytest_roofline.analysis.runs.trace_events import (  # noqa: E402
    CONSUMER_PREFIX,
    KERNEL_RUN_MARKER,
    TraceIndex,
    flatten,
)
from pytest_roofline.analysis.runs.trace_plan import READ_S_PER_EVENT  # noqa: E402
from pytest_roofline.measurement.profiler import ProfilerSession, events_recorded, parsed  # noqa: E402


def loop(iterations: int):  # noqa: ANN201 - a jitted function
    def body(i, v):  # noqa: ANN001, ANN202
        v = jnp.tanh(v @ v) + i.astype(v.dtype) * 1e-6
        return jax.lax.cond(v[0, 0] > 0, lambda w: w * 0.5, lambda w: w + 1.0, v)

    return jax.jit(lambda x: jax.lax.fori_loop(0, iterations, body, x))


def read(xspace: bytes, skip: tuple[str, ...]) -> tuple[int, dict[str, float]]:
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    profile = ProfileData.from_serialized_xspace(xspace)
    t1 = time.perf_counter()
    events = flatten(profile, skip=skip)
    t2 = time.perf_counter()
    index = TraceIndex.of(events, "cpu")
    t3 = time.perf_counter()
    run_times(index.events, "jit__lambda", "cpu", 1, KERNEL_RUN_MARKER, index=index)
    t4 = time.perf_counter()
    times.update(parse=t1 - t0, flatten=t2 - t1, index=t3 - t2, match=t4 - t3)
    return len(events), times


def row(iterations: int) -> None:
    fn = loop(iterations)
    x = jnp.linspace(-1.0, 1.0, 256).reshape(16, 16)
    fn(x).block_until_ready()
    session = ProfilerSession()
    with TraceAnnotation(KERNEL_RUN_MARKER, run=0):
        begun = time.perf_counter()
        fn(x).block_until_ready()
        run = time.perf_counter() - begun
    begun = time.perf_counter()
    xspace = session.stop()
    stop = time.perf_counter() - begun
    recorded = events_recorded(parsed(xspace))
    for name, skip in (("every event", ()), ("per-op read", (CONSUMER_PREFIX,))):
        kept, times = read(xspace, skip)
        total = stop + sum(times.values())
        cells = " ".join(f"{times[k]:7.3f}" for k in ("parse", "flatten", "index", "match"))
        print(f"{iterations:6d} {recorded:8,d} {name:12} {kept:8,d} {run:7.3f} {stop:7.3f} {cells} {total:7.3f} "
              f"{recorded / total:10,.0f} {total / recorded * 1e6:6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, nargs="+", default=[1000, 10000])
    args = parser.parse_args()
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}; assumed {READ_S_PER_EVENT * 1e6:.0f} us/event")
    print(f"{'iters':>6} {'recorded':>8} {'read':12} {'kept':>8} {'run s':>7} {'stop':>7} {'parse':>7} "
          f"{'flatten':>7} {'index':>7} {'match':>7} {'total':>7} {'events/s':>10} {'us/ev':>6}")
    for iterations in args.iterations:
        row(iterations)


if __name__ == "__main__":
    main()
