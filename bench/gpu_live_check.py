"""Datasheet, calibrated and live ceilings side by side on an accelerator (run it on a GPU or TPU machine).

Run: python bench/gpu_live_check.py   (prints one result per kernel and mode; nothing here is asserted)

A bf16 matmul (with analytic counts: on GPUs XLA's cost analysis returns -1 for cuBLAS custom calls), a donated
1 GiB scale and a softmax, each measured with ceilings="datasheet", "calibrated" and "live"; for live results
also the reference kernel, its run count and the first drift values. On a CPU-only machine it runs too, on the
CPU (auto/live ceilings), which says nothing about accelerators.
"""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp

from pytest_roofline import MeasureError, measure


def main() -> None:
    print(jax.__version__, jax.devices())
    key = jax.random.key(0)
    n = 8192
    a = jax.random.normal(key, (n, n), jnp.bfloat16)
    x = jax.random.normal(key, (256 * 1024 * 1024,), jnp.float32)
    logits = jax.random.normal(key, (16384, 8192), jnp.float32)
    cases: list[tuple[str, Any, tuple[Any, ...], dict[str, float]]] = [
        ("bf16 matmul 8192", lambda p, q: p @ q, (a, a), {"flops": 2.0 * n**3, "bytes": 3.0 * 2 * n * n}),
        ("scale 1 GiB donated", jax.jit(lambda v: v * 1.5, donate_argnums=0), (x,), {}),
        ("softmax 16384x8192", lambda v: jax.nn.softmax(v, -1), (logits,), {}),
    ]
    for ceilings in ("datasheet", "calibrated", "live"):
        for name, fn, args, counts in cases:
            t0 = time.time()
            try:
                r = measure(fn, *args, name=name, ceilings=ceilings, **counts)
            except (MeasureError, ValueError) as exc:
                print("FAILED", name, ceilings, type(exc).__name__, str(exc)[:600])
                continue
            print(f"[{time.time() - t0:.1f}s]", r)
            if r.live:
                print("   live:", r.live.reference, "runs", r.runs, "reference runs", len(r.live.reference_s),
                      "drift per run", [round(d, 3) for d in r.live.drift_per_run[:8]])


if __name__ == "__main__":
    main()
