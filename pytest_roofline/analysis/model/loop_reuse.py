"""Data re-read from a cache inside a loop: a while loop whose state (the values it carries and the operands its
body reads, which XLA passes in the loop's tuple) fits the last-level cache reads it from main memory in its first
iteration and from the cache in every later one. Those later iterations' bytes meet the cache's bandwidth, not main
memory's: an iterative solver on a 4 MB matrix re-reads it 49 times from the cache in 50 iterations. Pure.

Only where a cache bandwidth is known (a CPU's calibration); a loop whose state does not fit is looked into for
loops inside it that do. Loops of unknown trip count (counted once) re-read nothing here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ...base.units import format_quantity
from ...hardware.spec import Ceiling, HardwareSpec
from ..program.hlo_reader import Computation, HloModule, Instruction
from ..program.xla_costs import branch_runs, computation_cost
from .per_op import OpRow
from .work_shares import CACHE_SIDE_MAX, MemoryLevel

__all__ = ["Reuse", "loop_reuse", "with_reuse", "rows_with_reuse", "REREAD"]

_MAX_DEPTH = 8


@dataclass(frozen=True)
class Reuse:
    """The bytes one run re-reads from the cache inside loops, which computations' ops re-read what share of their
    bytes, and one line per loop."""

    bytes: float = 0.0
    share_by_computation: Mapping[str, float] = field(default_factory=dict)
    lines: tuple[str, ...] = ()


def loop_reuse(module: HloModule, spec: HardwareSpec) -> Reuse:
    """What one run of ``module`` re-reads from the last-level cache inside its loops on ``spec`` (nothing where
    the cache's bandwidth or size is unknown)."""
    if spec.cache_bandwidth is None or not spec.cache_bytes:
        return Reuse()
    fits = min(spec.cache_bytes, CACHE_SIDE_MAX) / 2
    found = _Found()
    _look(module, module.entry, 1, fits, found, 0)
    return Reuse(found.bytes, dict(found.shares), tuple(found.lines))


@dataclass
class _Found:
    bytes: float = 0.0
    shares: dict[str, float] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)


def _look(module: HloModule, comp: Computation, times: int, fits: float, found: _Found, depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    for inst in comp.instructions:
        if inst.opcode == "while":
            trips = inst.known_trip_count
            if trips is not None and trips > 1 and inst.shape.bytes <= fits:
                _cached(module, inst, times, trips, found)
                continue
            inner = times * (trips if trips is not None else 1)
        elif inst.opcode in ("call", "conditional"):
            inner = times
        else:
            continue
        called = ([(n, round(times * s)) for n, s in branch_runs(module, inst)] if inst.opcode == "conditional"
                  else [(n, inner) for n in inst.called])
        for name, count in called:
            sub = module.computations.get(name)
            if sub is not None and count > 0:
                _look(module, sub, count, fits, found, depth + 1)


def _cached(module: HloModule, loop: Instruction, times: int, trips: int, found: _Found) -> None:
    """A loop whose state fits the cache: every iteration after the first re-reads its bytes from the cache."""
    per_iteration = sum(computation_cost(module, name, multiply_loops=True).bytes for name in loop.called)
    again = times * (trips - 1) * per_iteration
    if again <= 0:
        return
    found.bytes += again
    share = (trips - 1) / trips
    for name in _under(module, loop.called):
        found.shares[name] = max(found.shares.get(name, 0.0), share)
    found.lines.append(f"{loop.name}: {trips - 1} of its {trips} iterations re-read its "
                       f"{format_quantity(loop.shape.bytes, 'B')} state from the cache "
                       f"({format_quantity(again, 'B')} per run)")


def _under(module: HloModule, names: tuple[str, ...], depth: int = 0) -> set[str]:
    """These computations and every one they call (where the re-read ops live)."""
    out: set[str] = set()
    for name in names:
        comp = module.computations.get(name)
        if comp is None or name in out or depth > _MAX_DEPTH:
            continue
        out.add(name)
        for inst in comp.instructions:
            if inst.opcode in ("while", "call", "conditional"):
                out |= _under(module, inst.called, depth + 1)
    return out


# How the bytes' ceiling note says that loops re-read from the cache (a figure above the roofline suspects it first).
REREAD = "re-read from the cache inside loops"


def with_reuse(level: MemoryLevel, reuse: Reuse, total: float, spec: HardwareSpec) -> MemoryLevel:
    """``level`` with the bytes loops re-read from the cache held to the cache's bandwidth (one effective bandwidth
    over all ``total`` bytes); ``level`` itself where nothing is re-read or it already is the cache."""
    cache = spec.cache_bandwidth
    if cache is None or level.in_cache or reuse.bytes <= 0 or total <= 0:
        return level
    again = min(reuse.bytes, total)
    base = level.ceiling
    effective = total / ((total - again) / base.value + again / cache.value)
    note = (f"{format_quantity(again, 'B')} of {format_quantity(total, 'B')} {REREAD} ("
            f"{'; '.join(reuse.lines)}), held to its bandwidth {format_quantity(cache.value, 'B/s')}; the rest to "
            f"{format_quantity(base.value, 'B/s')}: {format_quantity(effective, 'B/s')} over all bytes")
    joined = f"{level.note}; {note}" if level.note else note
    return MemoryLevel(Ceiling(effective, base.origin, f"{base.source}; {note}", base.date), False, joined)


def rows_with_reuse(rows: list[OpRow], reuse: Reuse, bandwidth: float, spec: HardwareSpec) -> list[OpRow]:
    """The op rows whose ops re-read their bytes from the cache in later iterations, their memory time split
    between ``bandwidth`` (the first iteration) and the cache's (the rest)."""
    cache = spec.cache_bandwidth
    if cache is None or not reuse.share_by_computation:
        return rows
    out = []
    for row in rows:
        share = reuse.share_by_computation.get(row.computation, 0.0)
        if share > 0:
            row = replace(row, memory_time_s=row.bytes * (1 - share) / bandwidth + row.bytes * share / cache.value)
        out.append(row)
    return out
