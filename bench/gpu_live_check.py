"""Datasheet, calibrated and live ceilings side by side on an accelerator (run it on a GPU or TPU machine).

    python bench/gpu_live_check.py [--save DIR] [--shrink N]

A bf16 matmul with analytic counts and the same matmul counted from its program (on GPUs XLA's cost analysis
returns -1 for cuBLAS custom calls, which pytest-roofline then counts from the HLO), a donated 1 GiB scale and a
softmax, each measured with ceilings="datasheet", "calibrated" and "live". It prints the ceilings each mode used
(bf16 and f32 peaks, memory bandwidth, with their origin), then one row per kernel and mode: timer, runs, device
time, utilization, for live ceilings the range of the drift (the machine's speed during the runs over its
calibrated speed), the FLOPs and where they came from; then each result in full. Nothing here is asserted. With
--save the same text goes to DIR/gpu_live_check-<date>-<device>.txt, headed by the date, the hardware and the
command: how docs/gpu.md keeps the raw output of every GPU run. On a CPU-only machine it runs too, on the CPU,
which says nothing about accelerators.
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from pytest_roofline import MeasureError, Result, measure
from pytest_roofline.base.units import format_quantity

MODES = ("datasheet", "calibrated", "live")


def cases(shrink: int) -> list[tuple[str, Any, tuple[Any, ...], dict[str, float]]]:
    key = jax.random.key(0)
    n, elements, rows = 8192 // shrink, 256 * 1024 * 1024 // shrink**3, 16384 // shrink
    a = jax.random.normal(key, (n, n), jnp.bfloat16)
    x = jax.random.normal(key, (elements,), jnp.float32)
    logits = jax.random.normal(key, (rows, 8192 // shrink), jnp.float32)
    return [
        (f"bf16 matmul {n}", lambda p, q: p @ q, (a, a), {"flops": 2.0 * n**3, "bytes": 3.0 * 2 * n * n}),
        # The same without counts: on a GPU they come from the cuBLAS call in the HLO (should equal 2 n^3).
        (f"bf16 matmul {n} hlo", lambda p, q: p @ q, (a, a), {}),
        (f"scale {elements * 4 / 2**20:.0f} MiB donated", jax.jit(lambda v: v * 1.5, donate_argnums=0), (x,), {}),
        (f"softmax {rows}x{8192 // shrink}", lambda v: jax.nn.softmax(v, -1), (logits,), {}),
    ]


def ceilings_line(mode: str, r: Result) -> str:
    hw = r.hardware
    peaks = ", ".join(f"{k} {format_quantity(c.value, 'FLOP/s')} ({c.origin})" for k, c in sorted(hw.peaks.items())
                      if k in ("bf16", "f32", "tf32"))
    mem = hw.memory_bandwidth
    return f"{mode:<10}  {hw.name}: {peaks}; memory {format_quantity(mem.value, 'B/s')} ({mem.origin})"


def row(mode: str, name: str, r: Result, seconds: float) -> str:
    drift = "-"
    if r.live is not None and r.live.drift_per_run:
        drift = f"{min(r.live.drift_per_run):.1%}-{max(r.live.drift_per_run):.1%}"
    return (f"{mode:<10}  {name:<24} {r.timer:<9} {r.runs:>4} {r.device_time_s * 1e3:>10.3f} ms "
            f"{r.utilization:>7.1%}  {drift:<19} {format_quantity(r.flops, 'FLOP')} ({r.flops_source}) "
            f"[{seconds:.1f} s]")


def run(shrink: int) -> list[str]:
    out = [f"jax {jax.__version__}, devices {jax.devices()}"]
    results: list[tuple[str, str, Result, float]] = []
    for mode in MODES:
        for name, fn, args, counts in cases(shrink):
            t0 = time.time()
            try:
                r = measure(fn, *args, name=name, ceilings=mode, **counts)
            except (MeasureError, ValueError) as exc:
                out.append(f"FAILED {name} ({mode}): {type(exc).__name__}: {str(exc)[:600]}")
                continue
            results.append((mode, name, r, time.time() - t0))
    out.append("\nceilings each mode used")
    for mode in MODES:
        first = next((r for m, _, r, _ in results if m == mode), None)
        out.append(ceilings_line(mode, first) if first else f"{mode:<10}  (no result)")
    out.append(f"\n{'mode':<10}  {'kernel':<24} {'timer':<9} {'runs':>4} {'device':>13} {'util':>7}  "
               f"{'drift':<19} FLOPs (source)")
    out += [row(mode, name, r, s) for mode, name, r, s in results]
    out.append("\nresults in full")
    out += [f"[{mode}] {r}" for mode, _, r, _ in results]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--save", type=Path, help="also write the output, with date, hardware and command, here")
    parser.add_argument("--shrink", type=int, default=1,
                        help="divide the sizes by this (e.g. 8 for a quick try on a CPU); the GPU figures use 1")
    args = parser.parse_args()
    text = "\n".join(run(args.shrink))
    print(text)
    if args.save:
        now = datetime.datetime.now(datetime.UTC)
        device = jax.devices()[0].device_kind
        head = (
            f"date: {now:%Y-%m-%d %H:%M} UTC\nhardware: {device} x{jax.device_count()} ({jax.devices()[0].platform})"
            f"\ncommand: python {' '.join(sys.argv)}\n\n"
        )
        args.save.mkdir(parents=True, exist_ok=True)
        path = args.save / f"gpu_live_check-{now:%Y-%m-%d}-{re.sub(r'[^A-Za-z0-9]+', '-', device).strip('-')}.txt"
        path.write_text(head + text + "\n")
        print(f"saved to {path}")


if __name__ == "__main__":
    main()
