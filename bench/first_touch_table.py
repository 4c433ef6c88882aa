"""First-touch table: per kernel, the fresh pages its buffers need against the page faults the operating system
counted per run, the machine's calibrated first-touch rate, and how each kernel's time splits into the
roofline's terms, first touch and the rest.

Run: python bench/first_touch_table.py [--glibc-hugetlb]   (prints a table; nothing here is asserted)

``--glibc-hugetlb`` re-runs the table in a child process with ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` (glibc
2.35+: malloc asks for transparent huge pages on the buffers it maps): the setting that changes how many faults
XLA:CPU's fresh outputs take without changing what the program does. The child calibrates its own cache.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from typing import Any

import jax
import jax.numpy as jnp

from pytest_roofline import measure
from pytest_roofline.base.units import format_quantity, format_seconds


def kernels() -> list[tuple[str, Any, tuple[Any, ...]]]:
    key = jax.random.key(0)
    x = jax.random.normal(key, (8192, 4096), jnp.float32)  # 128 MiB
    flat = x.reshape(-1)
    other = flat + 1.0  # a second array: passed the same array twice, a*x+y reads it once but its count says twice
    w = jax.random.normal(key, (4096, 8192), jnp.bfloat16)
    v = jax.random.normal(key, (1, 4096), jnp.bfloat16)
    small = jax.random.normal(key, (512, 512), jnp.float32)
    return [
        ("scale 128 MiB, fresh output", lambda a: a * 1.5 + 0.25, (x,)),
        ("scale 128 MiB, donated", jax.jit(lambda a: a * 1.5 + 0.25, donate_argnums=0), (x,)),
        ("a*x+y 32M f32, fresh output", lambda a, b: 1.5 * a + b, (flat, other)),
        (
            "layer norm 8192x4096",
            lambda a: (a - a.mean(-1, keepdims=True)) * jax.lax.rsqrt(a.var(-1, keepdims=True) + 1e-5),
            (x,),
        ),
        ("softmax 8192x4096", lambda a: jax.nn.softmax(a, axis=-1), (x,)),
        ("row sum 8192x4096", lambda a: a.sum(axis=-1), (x,)),
        ("bf16 dense 1x4096x8192", lambda a, b: a @ b, (v, w)),
        ("f32 matmul 512^3", lambda a, b: a @ b, (small, small)),
    ]


def table() -> None:
    rows = []
    spec_line = ""
    for name, fn, args in kernels():
        r = measure(fn, *args, name=name)
        touch = r.first_touch
        if touch is None:
            print(f"{name}: no first-touch term on {r.hardware.name} (no calibrated rate)")
            continue
        spec_line = (f"{r.hardware.name}: first touch {format_quantity(touch.rate.value, 'B/s')}, "
                     f"{touch.bytes_per_fault:,.0f} bytes per fault ({touch.rate.source})")
        rest = r.device_time_s - r.roofline.core_time_s - touch.time_s
        counted = "n/a" if touch.counted_faults is None else f"{touch.counted_faults:,.0f}"
        rows.append((name, format_quantity(touch.fresh_bytes, "B"), f"{touch.expected_faults:,.0f}", counted,
                     format_seconds(r.device_time_s), format_seconds(r.roofline.core_time_s),
                     format_seconds(touch.time_s), format_seconds(max(rest, 0.0)),
                     f"{r.utilization_with_first_touch:.1%}", f"{r.utilization_without_first_touch:.1%}"))
    head = ("kernel", "fresh", "expected faults", "counted/run", "measured", "roofline", "first touch", "rest",
            "util with", "util w/o")
    widths = [max(len(str(row[i])) for row in [head, *rows]) for i in range(len(head))]
    print(spec_line)
    for row in [head, *rows]:
        print("  ".join(str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i]) for i, c in enumerate(row)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glibc-hugetlb", action="store_true", help="also run in a child with glibc.malloc.hugetlb=1")
    options = parser.parse_args()
    print(f"jax {jax.__version__}; GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '')!r}")
    table()
    if options.glibc_hugetlb:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1", "PYTEST_ROOFLINE_CACHE_DIR": cache}
            print("\nthe same with glibc.malloc.hugetlb=1 (its own calibration):", flush=True)
            subprocess.run([sys.executable, __file__], env=env, check=True)


if __name__ == "__main__":
    main()
