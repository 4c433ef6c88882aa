"""Plain-language reasons a kernel may be slow, drawn from what the HLO and the trace show. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass

from ..model.per_op import OpRow
from ..program.counts import RAN_FROM_TRACE
from ..runs.idle import IDLE_HINT, IdleTime

__all__ = ["hints", "RunFacts"]

_LAYOUT_OPS = frozenset({"copy", "transpose", "copy-start"})


@dataclass(frozen=True)
class RunFacts:
    """What the hints read of a program and its runs besides its op rows."""

    platform: str
    device_time_s: float  # a run's median
    bound: str  # the program's roofline bound
    _: KW_ONLY
    donated: bool = False  # an input is donated (the output may reuse its memory)
    donate_with: str = ""  # how the author's own jit donates an input, where not by jax.jit's donate_argnums
    output_bytes: float = 0.0
    working_set_bytes: float = 0.0
    has_loops: bool = False
    idle: IdleTime | None = None  # where the trace shows it
    loops_ran: Sequence[str] = ()  # the loops counted as they ran (their iterations from the trace)
    cache_bytes: int | None = None  # the last-level cache as the system reports it (CPU), else 32 MiB is assumed
    # The roofline already holds bytes that fit the cache to its bandwidth (a note says so): no hint that the DRAM
    # roofline does not bound them.
    cache_modelled: bool = False


def hints(rows: Sequence[OpRow], facts: RunFacts) -> list[str]:
    """Plain-language reasons a kernel may be slow, drawn from what the HLO and the trace show."""
    platform, idle, output_bytes, working_set_bytes = facts.platform, facts.idle, facts.output_bytes, \
        facts.working_set_bytes
    out: list[str] = []
    measured = [r for r in rows if r.measured_s]
    total = sum(r.measured_s or 0.0 for r in measured) or facts.device_time_s
    layout = [r for r in measured
              if r.opcode in _LAYOUT_OPS or r.family == "copy" or (r.fusion_kind and "transpose" in r.name)]
    layout_time = sum(r.measured_s or 0.0 for r in layout)
    if layout and layout_time > 0.1 * total:
        names = ", ".join(r.name for r in sorted(layout, key=lambda r: -(r.measured_s or 0))[:3])
        out.append(f"layout changes: copy/transpose ops ({names}) take {layout_time / total:.0%} of the time; "
                   f"a different input layout or einsum order may avoid them")
    executed = sum(r.executions for r in rows)
    if executed >= 100 and total / max(executed, 1) < 20e-6:
        out.append(f"many tiny ops: {executed} ops per run averaging {total / executed * 1e6:.1f} us each; "
                   f"dispatch/launch overhead dominates: batch or vectorize the work (e.g. vmap instead of a loop)")
    if facts.has_loops:
        loops = sorted({r.computation for r in rows if r.computation != "main"})
        trips = max((r.executions for r in rows), default=1)
        if facts.loops_ran:
            counted = "; ".join(loop.removesuffix(RAN_FROM_TRACE) for loop in facts.loops_ran)
            out.append(f"while loops whose trip count depends on the data ran one iteration after another (iterations "
                       f"per run from the trace, inner loops per iteration of the outer: {counted})")
        else:
            out.append(f"a while loop ({', '.join(loops)[:80]}) runs up to {trips} iterations one after another")
    cache = facts.cache_bytes or 32 * 2**20
    if platform == "cpu" and facts.bound == "memory" and 0 < working_set_bytes <= cache and not facts.cache_modelled:
        told = "as the system reports it" if facts.cache_bytes else "assumed"
        out.append(f"the working set ({working_set_bytes / 2**20:.1f} MiB) fits in the last-level cache "
                   f"({cache / 2**20:.0f} MiB, {told}): part of it may be served from cache, so the DRAM roofline "
                   f"does not bound it (use inputs several times larger than the cache to test main memory)")
    if platform == "cpu" and not facts.donated and output_bytes >= 16 * 2**20:
        out.append(f"a fresh {output_bytes / 2**20:.0f} MiB output buffer is allocated and page-faulted on every "
                   f"call: donate the input ({facts.donate_with or 'jax.jit(..., donate_argnums=...)'}) so the "
                   f"output reuses its memory")
    if idle is not None and idle.idle_fraction > IDLE_HINT:
        cure = ("the host launches ops more slowly than the device runs them: fewer, larger ops (vmap or scan "
                "instead of a Python or fori loop of small steps)" if idle.host_s >= idle.other_s else
                "the device waits on itself (transfers, synchronization, other devices)")
        out.append(f"idle device: {idle.text()}; {cure}")
    return out

