"""The device time pytest-roofline reads from the profiler trace, against an independent timing of the same program.

    python bench/independent_timing.py [--shrink N] [--repeats R]

For a bf16 matmul and a 1 GiB copy: ``measure()`` gives the device time from the trace; independently, the same
jitted function is enqueued R times back to back and the wall clock from the first call to the last result,
divided by R, is the time per run (with the queue full, launch overhead overlaps the device work; on a kernel
of a millisecond or more the difference is the host's share). It prints both and their ratio. Nothing is
asserted: docs/gpu.md keeps the output. On a CPU it runs too (use --shrink 8), where the wall clock includes
dispatch and the comparison says little about accelerators.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import jax
import jax.numpy as jnp

from pytest_roofline import measure


def wall_per_run(fn: Any, args: tuple[Any, ...], repeats: int) -> float:
    """Median over 5 batches of (wall clock of ``repeats`` back-to-back calls) / repeats."""
    jax.block_until_ready(fn(*args))
    batches = []
    for _ in range(5):
        start = time.perf_counter()
        out = None
        for _ in range(repeats):
            out = fn(*args)
        jax.block_until_ready(out)
        batches.append((time.perf_counter() - start) / repeats)
    return statistics.median(batches)


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
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind} ({jax.devices()[0].platform})")
    print(f"{'kernel':<20} {'trace (ms)':>11} {'timer':<10} {'wall/run (ms)':>14} {'wall/trace':>10} {'util':>7}")
    for name, fn, fargs, counts in cases:
        r = measure(fn, *fargs, name=name, **counts)
        wall = wall_per_run(fn, fargs, args.repeats)
        print(f"{name:<20} {r.device_time_s * 1e3:>11.3f} {r.timer:<10} {wall * 1e3:>14.3f} "
              f"{wall / r.device_time_s:>10.3f} {r.utilization:>7.1%}")


if __name__ == "__main__":
    main()
