"""What a long-lived ``ab`` side holds on the device between rounds: TESTS kernels, each with its own input of
SIZE MiB, measured with ``measure_call(keep=...)`` as a serving side measures them, round after round. After each
test the table shows the live device arrays (``jax.live_arrays()``) and, where the device reports it, the
allocator's bytes in use (``memory_stats()["bytes_in_use"]``).

    python bench/kept_memory.py [--tests 20] [--size-mib 64] [--rounds 2]
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_roofline.base.calls import split_call  # noqa: E402
from pytest_roofline.measurement.options import MEASURE_OPTIONS, MeasureOptions  # noqa: E402
from pytest_roofline.measurement.pipeline import measure_call  # noqa: E402

FAST = {"min_runs": 2, "max_runs": 3, "budget_s": 0.2, "warmup": 1, "min_time_s": 0.0}


def _measure(i: int, elements: int) -> Any:
    x = jnp.full((elements + i,), float(i), jnp.float32)
    call, settings = split_call(lambda v: v * 2.0 + 1.0, (x,), FAST, MEASURE_OPTIONS, "measure()")
    return measure_call(call, MeasureOptions.from_keywords(settings), keep=f"kept_memory[{i}]")


def _in_use() -> str:
    stats = jax.devices()[0].memory_stats() or {}
    return f"{stats['bytes_in_use'] / 2**20:9.1f}" if "bytes_in_use" in stats else "      n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=20)
    parser.add_argument("--size-mib", type=float, default=64.0)
    parser.add_argument("--rounds", type=int, default=2)
    opts = parser.parse_args()
    elements = int(opts.size_mib * 2**20 / 4)
    print(f"{jax.devices()[0].device_kind}, jax {jax.__version__}: {opts.tests} tests of {opts.size_mib:g} MiB "
          f"inputs, {opts.rounds} rounds")
    print(f"{'round':>5} {'test':>4} {'live arrays':>11} {'live MiB':>9} {'in use MiB':>10}")
    for r in range(opts.rounds):
        for i in range(opts.tests):
            _measure(i, elements)
            gc.collect()
            live = jax.live_arrays()
            mib = sum(a.nbytes for a in live) / 2**20
            if i in (0, opts.tests // 2, opts.tests - 1):
                print(f"{r + 1:>5} {i + 1:>4} {len(live):>11} {mib:>9.1f} {_in_use():>10}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
