"""Noise benchmark: does a kernel get the same utilization on a quiet machine and beside a busy neighbour?

Run: python bench/noise_bench.py [--repeats 8] [--beside 3] [--only NAME]   (prints two tables; nothing here is
asserted)

For a compute-bound matmul, a memory-bound reduction, softmax, naive attention, and kernels that write a fresh
64-256 MiB output (an a*x+y, a layer norm, an RMS norm), each measured

* ``--repeats`` times in a row on the quiet machine, then ``--beside`` times in a row beside a busy-loop
  neighbour and beside a memory-copy neighbour (bench/neighbours.py starts and stops them; each is
  time-limited): utilization with live ceilings, utilization against the calibration alone, and a
  pytest-benchmark-style figure (roofline time / median wall clock of the kernel alone, 20 runs); the median of
  each condition, and its shift from the quiet median (one quiet measurement is itself noisy: a shift from it
  mixes the neighbour's effect with the noise of one sample);
* the quiet measurements' (max - min) / median of each figure: their back-to-back spread;
* the share of their ready time the kernel's threads waited for a CPU (the scheduler's statistics), and the
  utilization against the calibration with that waiting taken out ("on-cpu"): what decides, for a kernel below
  its threshold on a contended machine, whether it fails or is only warned about.

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
    y32 = x32 + 1.0  # not x32 again: the same array twice is read once, but its count says twice
    return [
        ("matmul 256x4096x8192 f32", lambda x, y: x @ y, (a, b)),
        ("row sum 256 MiB", lambda x: x.sum(axis=-1), (rows,)),
        ("softmax 8192x4096", lambda x: jax.nn.softmax(x, axis=-1), (logits,)),
        ("naive attention 4x1024x8x64", naive_attention, (q, q, q)),
        ("a*x+y 32M f32, fresh output", lambda x, y: 1.5 * x + y, (x32, y32)),
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


# live, excl, calib, wall, on-CPU, CPU waiting share, drift, seconds taken
Figures = tuple[float, float, float, float, float, float, float, float]
FIGURES = ("live", "excl", "calib", "wall", "on-cpu")


def figures(name: str, fn: Any, args: tuple[Any, ...]) -> Figures:
    t0 = time.perf_counter()
    r = measure(fn, *args, name=name, ceilings="live")
    took = time.perf_counter() - t0
    excluded = measure(fn, *args, name=name, ceilings="live", first_touch="exclude")
    on_cpu = r.utilization_on_cpu
    return (r.utilization, excluded.utilization, r.utilization_calibrated,
            wall_utilization(fn, args, r.roofline_time_s), on_cpu if on_cpu is not None else float("nan"),
            r.cpu_waiting if r.cpu_waiting is not None else float("nan"), r.drift or 1.0, took)


def shift(value: float, quiet: float) -> str:
    return f"{(value - quiet) / quiet:+.1%}"


def series(name: str, fn: Any, args: tuple[Any, ...], count: int, kind: str | None) -> list[Figures]:
    """``count`` measurements in a row, on the quiet machine or beside a neighbour of ``kind``."""
    if kind is None:
        return [figures(name, fn, args) for _ in range(count)]
    with neighbour(kind, seconds=120):
        time.sleep(0.5)  # let the neighbour get going
        return [figures(name, fn, args) for _ in range(count)]


def medians(rows: list[Figures]) -> list[float]:
    return [statistics.median(r[i] for r in rows) for i in range(len(rows[0]))]


def print_shifts(name: str, by_condition: dict[str, list[Figures]]) -> None:
    quiet = medians(by_condition["quiet"])
    for condition, rows in by_condition.items():
        values = medians(rows)
        cells = " ".join(f"{values[i]:7.1%} {shift(values[i], quiet[i]):>7}" for i in range(len(FIGURES)))
        wait, drift, took = values[len(FIGURES):]
        print(f"{name:30} {condition:9} {cells} {wait:6.0%} {drift:6.0%} {took:5.1f}s", flush=True)


def print_ranges(name: str, rows: list[Figures]) -> None:
    for index, label in enumerate(FIGURES):
        values = [r[index] for r in rows]
        mid = statistics.median(values)
        print(f"{name:30} {label:6} {min(values):7.1%} {mid:7.1%} {max(values):7.1%} "
              f"{(max(values) - min(values)) / mid:7.1%}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=8, help="measurements in a row on the quiet machine")
    parser.add_argument("--beside", type=int, default=3, help="measurements in a row beside each neighbour")
    parser.add_argument("--only", default="", help="run the kernels whose name contains this")
    options = parser.parse_args()
    cases = [case for case in kernels() if options.only in case[0]]
    measure(lambda x: x + 1, jnp.ones(8), ceilings="live")  # calibrate (or read the cache) before timing
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}; live = utilization with live ceilings, "
          f"excl = live with first_touch='exclude' (as before the first-touch term), calib = against the "
          f"calibration alone, wall = roofline / median wall clock (pytest-benchmark style), on-cpu = against the "
          f"calibration with the time the kernel's threads waited for a CPU taken out, wait = that waiting share "
          f"of their ready time; each row is the "
          f"median of {options.repeats} measurements (quiet) or {options.beside} (beside a neighbour), the "
          f"shift is from the quiet median\n")
    header = (f"{'kernel':30} {'condition':9} " + " ".join(f"{f:>7} {'shift':>7}" for f in FIGURES)
              + f" {'wait':>6} {'drift':>6} {'took':>6}")
    quiet_rows: dict[str, list[Figures]] = {}
    print(header)
    print("-" * len(header))
    for name, fn, args in cases:
        by_condition = {"quiet": series(name, fn, args, options.repeats, None)}
        for kind in ("busy", "memcopy"):
            by_condition[kind] = series(name, fn, args, options.beside, kind)
        quiet_rows[name] = by_condition["quiet"]
        print_shifts(name, by_condition)
    print(f"\n{options.repeats} back-to-back measurements on the quiet machine: min / median / max and "
          f"(max - min) / median")
    header = f"{'kernel':30} {'figure':6} {'min':>7} {'median':>7} {'max':>7} {'range':>7}"
    print(header)
    print("-" * len(header))
    for name, rows in quiet_rows.items():
        print_ranges(name, rows)


if __name__ == "__main__":
    main()
