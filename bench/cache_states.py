"""Cold against warm: each kernel measured with cache="cold" (the last-level cache evicted before every timed
run, outside the timing) and cache="warm" (runs back to back), with what the cache sizes predict: a working set
that fits the last-level cache runs slower cold than warm (its bytes come from main memory instead of the cache);
one several times larger runs the same either way (each run evicts its own data), and so does a compute-bound
kernel. Utilization is against the
roofline of each state: cold holds the bytes to main memory, warm to the cache's measured bandwidth where the
working set fits half of it.

Run: python bench/cache_states.py   (prints a table; nothing here is asserted)
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from pytest_roofline import measure
from pytest_roofline.analysis.model.work_shares import CACHE_SIDE_MAX
from pytest_roofline.base.units import format_quantity, format_seconds
from pytest_roofline.hardware.cpu import last_level_cache_bytes

MiB = 2**20


def kernels() -> list[tuple[str, Any, tuple[Any, ...]]]:
    key = jax.random.key(0)
    out: list[tuple[str, Any, tuple[Any, ...]]] = []
    for mib in (1, 4, 16, 128):
        x = jax.random.normal(key, (mib * MiB // 4,), jnp.float32)
        out.append((f"scale {mib} MiB, donated", jax.jit(lambda a: a * 1.5 + 0.25, donate_argnums=0), (x,)))
    x4 = jax.random.normal(key, (MiB,), jnp.float32)
    out.append(("scale 4 MiB, fresh output", lambda a: a * 1.5 + 0.25, (x4,)))
    a = jax.random.normal(key, (512, 512), jnp.float32)
    out.append(("matmul 512x512 f32", lambda p, q: p @ q, (a, a)))
    return out


def _util(r: Any) -> str:
    low, high = r.utilization_interval
    return f"{r.utilization:.1%} [{low:.0%}-{high:.0%}]"


def main() -> None:
    llc = last_level_cache_bytes()
    usable = min(llc or CACHE_SIDE_MAX, CACHE_SIDE_MAX)
    print(f"last-level cache {format_quantity(llc, 'B') if llc else 'unknown'} as the system reports it; "
          f"{format_quantity(usable, 'B')} counted as this machine's; jax {jax.__version__}, "
          f"{jax.devices()[0].device_kind}")
    rows = [("kernel", "working set", "fits", "warm", "cold", "cold/warm", "predicted", "util warm", "util cold",
             "eviction check")]
    for name, fn, args in kernels():
        warm = measure(fn, *args, name=name, cache="warm")
        cold = measure(fn, *args, name=name, cache="cold")
        ws = cold.memory.peak_bytes if cold.memory is not None else 0
        fits = ws <= usable
        ratio = cold.device_time_s / warm.device_time_s
        check = cold.cache
        checked = ("-" if check is None or check.took is None else
                   f"{check.cold_s / check.warm_s:.2f}x" + ("" if check.took else " NOT SLOWER"))
        rows.append((name, format_quantity(ws, "B"), "yes" if fits else "no", format_seconds(warm.device_time_s),
                     format_seconds(cold.device_time_s), f"{ratio:.2f}",
                     "cold slower" if fits and cold.bound == "memory" else "same",
                     _util(warm), _util(cold), checked))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
    print("eviction check: the cold measurement's own warm runs after its cold ones (cold/warm median), where the "
          "working set fits the cache")


if __name__ == "__main__":
    main()
