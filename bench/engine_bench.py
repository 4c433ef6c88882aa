"""Benchmark of the core engine on this machine: utilization reached, profiler vs wall clock, stability.

Run: python bench/engine_bench.py   (prints a table; nothing here is asserted)

What it is read against (docs/measurements.md has what it showed on a 2-core AMD EPYC Zen 4 VM): both
matmuls >= 0.8 of the calibrated ceiling,
donated streaming >= 0.7, profiler device time within 10% of the wall-clock minimum for kernels over
5 ms, and ten back-to-back measurements of one kernel within 5% (max-min over median).
"""

from __future__ import annotations

import statistics
import sys
import time

import jax
import jax.numpy as jnp

from pytest_roofline import measure


def slow_rowwise(x):
    # Deliberately slow: a sequential loop over rows, each a tiny op (dispatch-bound).
    def body(i, acc):
        return acc.at[i].set(jnp.sin(x[i]).sum())

    return jax.lax.fori_loop(0, x.shape[0], body, jnp.zeros(x.shape[0], x.dtype))


def kernels():
    key = jax.random.key(0)
    a32 = jax.random.normal(key, (2048, 2048), jnp.float32)
    a16 = a32.astype(jnp.bfloat16)
    big = jnp.ones((64 * 1024 * 1024,), jnp.float32)  # 256 MiB
    logits = jax.random.normal(key, (8192, 4096), jnp.float32)
    rows = jax.random.normal(key, (4096, 64), jnp.float32)
    return [
        ("f32 matmul 2048", lambda x, y: x @ y, (a32, a32)),
        ("bf16 matmul 2048", lambda x, y: x @ y, (a16, a16)),
        ("f32 scale 256MB donated", jax.jit(lambda v: v * 1.5, donate_argnums=0), (big,)),
        ("f32 scale 256MB", lambda v: v * 1.5, (big,)),
        ("softmax 8192x4096", lambda v: jax.nn.softmax(v, axis=-1), (logits,)),
        ("slow: row loop 4096", slow_rowwise, (rows,)),
    ]


def main() -> int:
    print(f"jax {jax.__version__} on {jax.devices()[0].device_kind} ({jax.devices()[0].platform})")
    print("times in ms; min/min = profiler device minimum / host wall-clock minimum; util against the median")
    t0 = time.perf_counter()
    header = (f"{'kernel':26} {'bound':8} {'util':>6} {'device med':>10} {'device min':>10} {'wall min':>9} "
              f"{'min/min':>7} {'spread':>7} {'runs':>4} {'timer':9} {'s':>5}")
    print(header)
    print("-" * len(header))
    results = {}
    for name, fn, args in kernels():
        start = time.perf_counter()
        r = measure(fn, *args, name=name)
        took = time.perf_counter() - start
        results[name] = r
        print(f"{name:26} {r.bound:8} {r.utilization:6.3f} {r.device_time_s * 1e3:10.2f} {r.min_s * 1e3:10.2f} "
              f"{r.wall_min_s * 1e3:9.2f} {r.min_s / r.wall_min_s:7.3f} {r.spread:7.1%} {r.runs:4d} {r.timer:9} "
              f"{took:5.1f}")
    hw = next(iter(results.values())).hardware
    print(f"\nhardware: {hw.summary()}")
    for key, c in hw.peaks.items():
        print(f"  {key}: {c.value / 1e9:.1f} GFLOP/s  ({c.source})")
    for key, c in hw.theoretical.items():
        print(f"  theoretical {key}: {c.value / 1e9:.1f} GFLOP/s  ({c.source})")
    for note in hw.notes:
        print(f"  note: {note}")

    print("\nstability: ten back-to-back measurements of the f32 matmul 2048")
    name, fn, args = kernels()[0]
    results_10 = [measure(fn, *args) for _ in range(10)]
    for label, values in (
        ("median", [r.device_time_s for r in results_10]),
        ("minimum", [r.min_s for r in results_10]),
    ):
        mid = statistics.median(values)
        print(f"  device time {label:7} (ms): " + " ".join(f"{t * 1e3:.2f}" for t in values)
              + f"   (max - min) / median = {(max(values) - min(values)) / mid:.1%}")

    print("\nstability: ten measurements of a ~1 ms kernel (f32 matmul 512) and the time each took")
    a = jnp.ones((512, 512), jnp.float32)
    times, took = [], []
    for _ in range(10):
        s = time.perf_counter()
        times.append(measure(lambda x: x @ x, a).device_time_s)
        took.append(time.perf_counter() - s)
    med = statistics.median(times)
    print(f"  median {med * 1e3:.2f} ms, (max - min) / median = {(max(times) - min(times)) / med:.1%}, "
          f"whole measure() call {min(took):.2f}-{max(took):.2f} s")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
