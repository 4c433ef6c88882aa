"""Matmul size sweep: f32 and bf16 matmuls from 256 to 4096 on a side (and two rectangular shapes) against the
calibrated compute ceilings. A ceiling that a plain matmul beats beyond its interval is not the machine's
ceiling: the last column flags any such case.

Run: python bench/matmul_sweep.py [--ceilings calibrated|live]   (prints a table; nothing here is asserted)
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

from pytest_roofline import measure
from pytest_roofline.analysis.model.roofline import IMPOSSIBLE_ABOVE

SHAPES = [(n, n, n) for n in (256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)] + [(1024, 4096, 1024),
                                                                                     (256, 4096, 8192)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ceilings", default="calibrated", choices=("calibrated", "live"))
    options = parser.parse_args()
    key = jax.random.key(0)
    print(f"jax {jax.__version__}; ceilings={options.ceilings}")
    print(
        f"{'dtype':6} {'m x k x n':>16} {'GFLOP/s':>9} {'ceiling':>9} {'util':>7} {'95% interval':>15} "
        f"{'above 100%?':>12}"
    )
    for dtype in (jnp.float32, jnp.bfloat16):
        for m, k, n in SHAPES:
            a = jax.random.normal(key, (m, k), dtype)
            b = jax.random.normal(key, (k, n), dtype)
            r = measure(jnp.matmul, a, b, name=f"matmul {m}x{k}x{n}", ceilings=options.ceilings,
                        budget_s=3.0 if m * k * n < 2**33 else 8.0)
            low, high = r.utilization_interval
            flag = "IMPOSSIBLE" if low > IMPOSSIBLE_ABOVE else ("beyond" if low > 1.0 else "no")
            peak = r.roofline.effective_peak_flops
            print(f"{jnp.dtype(dtype).name:6} {f'{m}x{k}x{n}':>16} {r.flops / r.device_time_s / 1e9:9.1f} "
                  f"{peak / 1e9:9.1f} {r.utilization:7.1%} {f'{low:.1%}-{high:.1%}':>15} {flag:>12}", flush=True)


if __name__ == "__main__":
    main()
