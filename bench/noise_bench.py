"""Noise benchmark: does a kernel get the same utilization on a quiet machine and beside a busy neighbour?

Run: python bench/noise_bench.py [--repeats 10] [--only NAME]   (prints two tables; nothing here is asserted)

For a compute-bound matmul, a memory-bound reduction, softmax, naive attention, and kernels that write a fresh
64-256 MiB output (an a*x+y, a layer norm, an RMS norm), each measured

* quiet, beside a busy-loop neighbour, and beside a memory-copy neighbour (bench/neighbours.py starts and
  stops them; each is time-limited): utilization with live ceilings, utilization against the calibration alone,
  and a pytest-benchmark-style figure (roofline time / median wall clock of the kernel alone, 20 runs), with the
  shift of each from quiet;
* ``--repeats`` times back to back on the quiet machine: (max - min) / median of each figure.

"live" is the default (the roofline includes the first touch of fresh pages, each run paired with a reference
in the kernel's conditions); "excl" is the same measurement with ``first_touch="exclude"``: main memory and
compute alone, paired with a donated stream, as pytest-roofline measured before the first-touch term. Goals:
live shifts of 5% or less under a neighbour (goal 3%), and back-to-back (max - min) / median of 5% or less.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).parent))
from neighbours import neighbour  # noqa: E402

from pytest_roofline import measure  # noqa: E402


def naive_attention(q: Any, k: Any, v: Any) -> Any:
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)


def kernels() -> list[tuple[str, Any, tuple[Any, ...]]]:
    key = jax.random.key(0)
    a = jax.random.normal(key, (256, 4096), jnp.float32)
    b = jax.random.normal(key, (4096, 8192), jnp.float32)
    rows = jax.random.normal(key, (16384, 4096), jnp.float32)  # 256 MiB
    logits = jax.random.normal(key, (8192, 4096), jnp.float32)  # 128 MiB
    q = jax.random.normal(key, (4, 1024, 8, 64), jnp.float32)
    x32 = jax.random.normal(key, (32 * 2**20,), jnp.float32)  # 128 MiB
    return [
        ("matmul 256x4096x8192 f32", lambda x, y: x @ y, (a, b)),
        ("row sum 256 MiB", lambda x: x.sum(axis=-1), (rows,)),
        ("softmax 8192x4096", lambda x: jax.nn.softmax(x, axis=-1), (logits,)),
        ("naive attention 4x1024x8x64", naive_attention, (q, q, q)),
        ("a*x+y 32M f32, fresh output", lambda x, y: 1.5 * x + y, (x32, x32)),
        ("layer norm 8192x4096, fresh", layer_norm, (logits,)),
        ("rms norm 16384x4096, fresh", rms_norm, (rows,)),
    ]


def layer_norm(x: Any) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5)


def rms_norm(x: Any) -> Any:
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)


def wall_utilization(fn: Any, args: tuple[Any, ...], roofline_s: float, runs: int = 20) -> float:
    """What a wall-clock benchmark sees: the median of ``runs`` calls (after a warm-up), against the roofline."""
    jitted = jax.jit(fn)
    jax.block_until_ready(jitted(*args))
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        jax.block_until_ready(jitted(*args))
        times.append(time.perf_counter() - t0)
    return roofline_s / statistics.median(times)


def figures(name: str, fn: Any, args: tuple[Any, ...]) -> tuple[float, float, float, float, float, float]:
    t0 = time.perf_counter()
    r = measure(fn, *args, name=name, ceilings="live")
    took = time.perf_counter() - t0
    excluded = measure(fn, *args, name=name, ceilings="live", first_touch="exclude")
    return (r.utilization, excluded.utilization, r.utilization_calibrated,
            wall_utilization(fn, args, r.roofline_time_s), r.drift or 1.0, took)


def shift(value: float, quiet: float) -> str:
    return f"{(value - quiet) / quiet:+.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--only", default="", help="run the kernels whose name contains this")
    options = parser.parse_args()
    cases = [case for case in kernels() if options.only in case[0]]
    measure(lambda x: x + 1, jnp.ones(8), ceilings="live")  # calibrate (or read the cache) before timing
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}; live = utilization with live ceilings, "
          f"excl = live with first_touch='exclude' (as before the first-touch term), calib = against the "
          f"calibration alone, wall = roofline / median wall clock (pytest-benchmark style)\n")
    header = (f"{'kernel':30} {'condition':9} {'live':>7} {'shift':>7} {'excl':>7} {'shift':>7} {'calib':>7} "
              f"{'shift':>7} {'wall':>7} {'shift':>7} {'drift':>6} {'took':>6}")
    print(header)
    print("-" * len(header))
    for name, fn, args in cases:
        quiet = figures(name, fn, args)
        rows = [("quiet", quiet)]
        for kind in ("busy", "memcopy"):
            with neighbour(kind, seconds=60):
                time.sleep(0.5)  # let the neighbour get going
                rows.append((kind, figures(name, fn, args)))
        for condition, (live, excl, calib, wall, drift, took) in rows:
            print(f"{name:30} {condition:9} {live:7.1%} {shift(live, quiet[0]):>7} {excl:7.1%} "
                  f"{shift(excl, quiet[1]):>7} {calib:7.1%} {shift(calib, quiet[2]):>7} {wall:7.1%} "
                  f"{shift(wall, quiet[3]):>7} {drift:6.0%} {took:5.1f}s", flush=True)
    print(f"\n{options.repeats} back-to-back measurements on the quiet machine: min / median / max and (max - min) / median")
    header = f"{'kernel':30} {'figure':6} {'min':>7} {'median':>7} {'max':>7} {'range':>7}"
    print(header)
    print("-" * len(header))
    for name, fn, args in cases:
        series = [figures(name, fn, args) for _ in range(options.repeats)]
        for index, label in ((0, "live"), (1, "excl"), (2, "calib"), (3, "wall")):
            values = [s[index] for s in series]
            mid = statistics.median(values)
            print(f"{name:30} {label:6} {min(values):7.1%} {mid:7.1%} {max(values):7.1%} "
                  f"{(max(values) - min(values)) / mid:7.1%}", flush=True)


if __name__ == "__main__":
    main()
