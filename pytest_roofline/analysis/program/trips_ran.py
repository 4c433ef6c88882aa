"""The iterations that ran of while loops whose trip count the compiler does not know (a solver's adaptive steps, a
loop until convergence), read from how often the trace shows their body's ops per run. Pure: reads the HLO and a
count of events per op name.

A body op of such a loop shows ``iterations x (the known trip counts of the loops around it)`` events per run; the
outermost unknown loops are read first, then the loops inside them, once the outer counts are known."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from .hlo_reader import Computation, HloModule, Instruction, with_trip_counts
from .walk import executed

__all__ = ["trips_ran", "with_trips_ran"]

_MAX_NESTING = 8


def _outermost_unknown(module: HloModule, comp: Computation, depth: int = 0) -> Iterator[Instruction]:
    """The while loops of unknown trip count not inside another one (conditionals and calls looked through)."""
    if depth > _MAX_NESTING:
        return
    for inst in comp.instructions:
        if inst.opcode == "while" and inst.known_trip_count is None:
            yield inst
            continue
        if inst.opcode in ("while", "call", "conditional"):
            for name in inst.called:
                if (sub := module.computations.get(name)) is not None:
                    yield from _outermost_unknown(module, sub, depth + 1)


def trips_ran(module: HloModule, events_per_run: Mapping[str, float]) -> dict[str, int]:
    """Each outermost loop of unknown trip count -> the iterations one run made, from its body's ops' events per run
    (``events_per_run``: op name -> events of one device per run); a loop whose body shows no event is left out."""
    times = {e.instruction.name: e.times for e in executed(module)}
    found: dict[str, int] = {}
    for loop in _outermost_unknown(module, module.entry):
        body = module.computations.get(loop.attrs.get("body", "").lstrip("%"))
        if body is None:
            continue
        seen = [events_per_run[i.name] / times[i.name] for i in body.instructions
                if events_per_run.get(i.name) and times.get(i.name)]
        if seen:
            found[loop.name] = max(round(max(seen)), 0)
    return found


def with_trips_ran(module: HloModule, events_per_run: Mapping[str, float]) -> tuple[HloModule, dict[str, int]]:
    """``module`` with every loop of unknown trip count whose iterations the trace shows stated as their count
    (marked as from the trace), and those counts."""
    found: dict[str, int] = {}
    for _ in range(_MAX_NESTING):
        trips = trips_ran(module, events_per_run)
        if not trips:
            break
        module = with_trip_counts(module, trips, "trace")
        found.update(trips)
    return module, found
