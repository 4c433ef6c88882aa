"""Plain-language reasons a kernel may be slow, drawn from what the HLO and the trace show, and the busy time
(the part of a run covered by op events) they use. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import median

from .ops import OpRow
from .trace import TraceEvent

__all__ = ["hints", "busy_time"]

_LAYOUT_OPS = frozenset({"copy", "transpose", "copy-start"})


def hints(rows: Sequence[OpRow], *, platform: str, device_time_s: float, bound: str, donated: bool,
          output_bytes: float, working_set_bytes: float, has_loops: bool, busy_s: float | None,
          cache_bytes: int | None = None, cache_modelled: bool = False) -> list[str]:
    """Plain-language reasons a kernel may be slow, drawn from what the HLO and the trace show.

    ``cache_bytes``: the last-level cache as the system reports it (CPU), else 32 MiB is assumed.
    ``cache_modelled``: the roofline already holds bytes that fit the cache to its bandwidth (a note says so), so
    no hint that the DRAM roofline does not bound them."""
    out: list[str] = []
    measured = [r for r in rows if r.measured_s]
    total = sum(r.measured_s or 0.0 for r in measured) or device_time_s
    layout = [r for r in measured if r.opcode in _LAYOUT_OPS or (r.fusion_kind and "transpose" in r.name)]
    layout_time = sum(r.measured_s or 0.0 for r in layout)
    if layout and layout_time > 0.1 * total:
        names = ", ".join(r.name for r in sorted(layout, key=lambda r: -(r.measured_s or 0))[:3])
        out.append(f"layout changes: copy/transpose ops ({names}) take {layout_time / total:.0%} of the time; "
                   f"a different input layout or einsum order may avoid them")
    executed = sum(r.executions for r in rows)
    if executed >= 100 and total / max(executed, 1) < 20e-6:
        out.append(f"many tiny ops: {executed} ops per run averaging {total / executed * 1e6:.1f} us each; "
                   f"dispatch/launch overhead dominates: batch or vectorize the work (e.g. vmap instead of a loop)")
    if has_loops:
        loops = sorted({r.computation for r in rows if r.computation != "main"})
        trips = max((r.executions for r in rows), default=1)
        out.append(f"a while loop ({', '.join(loops)[:80]}) runs up to {trips} iterations one after another")
    cache = cache_bytes or 32 * 2**20
    if platform == "cpu" and bound == "memory" and 0 < working_set_bytes <= cache and not cache_modelled:
        told = "as the system reports it" if cache_bytes else "assumed"
        out.append(f"the working set ({working_set_bytes / 2**20:.1f} MiB) fits in the last-level cache "
                   f"({cache / 2**20:.0f} MiB, {told}): part of it may be served from cache, so the DRAM roofline "
                   f"does not bound it (use inputs several times larger than the cache to test main memory)")
    if platform == "cpu" and not donated and output_bytes >= 16 * 2**20:
        out.append(f"a fresh {output_bytes / 2**20:.0f} MiB output buffer is allocated and page-faulted on every "
                   f"call: donate the input (jax.jit(..., donate_argnums=...)) so the output reuses its memory")
    if busy_s is not None and device_time_s > 0 and busy_s < 0.7 * device_time_s:
        out.append(f"gaps between ops: ops are busy {busy_s / device_time_s:.0%} of the run time; the rest is "
                   f"waiting (host dispatch, synchronization, callbacks)")
    return out


def busy_time(events: Sequence[TraceEvent], run_of_event: Mapping[int, int], runs: int,
              containers: frozenset[str] = frozenset()) -> float | None:
    """Median over runs of the time covered by at least one leaf op event (the rest of a run is gaps).

    ``containers`` are ops whose event spans other ops (a while loop's thunk on a CPU): not counted.
    """
    per_run: dict[int, list[tuple[float, float]]] = {}
    for index, ev in enumerate(events):
        run = run_of_event.get(index)
        if run is not None and "hlo_op" in ev.stats and str(ev.stats["hlo_op"]) not in containers:
            per_run.setdefault(run, []).append((ev.start_ns, ev.end_ns))
    if not per_run:
        return None
    covered = []
    for intervals in per_run.values():
        intervals.sort()
        total, cur_start, cur_end = 0.0, intervals[0][0], intervals[0][1]
        for start, end in intervals[1:]:
            if start > cur_end:
                total += cur_end - cur_start
                cur_start, cur_end = start, end
            else:
                cur_end = max(cur_end, end)
        covered.append((total + cur_end - cur_start) / 1e9)
    return median(covered)
