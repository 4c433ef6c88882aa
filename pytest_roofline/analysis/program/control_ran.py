"""What ran of a program's control flow, read from how often the trace shows each op per run: the iterations of while
loops whose trip count the compiler does not know (a solver's adaptive steps, a loop until convergence), and the
branches conditionals took (``lax.cond``/``lax.switch``, and those inside loop bodies: a stabilising step every
tenth iteration). Pure: reads the HLO and a count of events per op name.

A body op of such a loop shows ``iterations x (the known trip counts of the loops around it)`` events per run; the
outermost unknown loops are read first, then the loops inside them, once the outer counts are known. Where its body
shows nothing, its condition's ops (tested once more than the body runs) tell the iterations: none, where the
condition was tested once an execution. A branch's ops
show one event per execution that took that branch; a branch with no op that can show one (``lambda x: x``) took
the executions the other branches did not show. Where no branch shows an event the trace cannot tell (a GPU command
buffer, ops fused across the branch): the conditional keeps its costliest branch and is said to be unsure."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .hlo_reader import Computation, HloModule, Instruction, with_branch_shares, with_trip_counts
from .walk import executed, executed_containers
from .xla_costs import computation_cost

__all__ = ["trips_ran", "with_trips_ran", "branches_ran", "Ran", "with_control_ran", "Branches", "branches_of"]

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
    (``events_per_run``: op name -> events of one device per run); a loop whose body shows no event is left out.
    Library calls are read only where nothing else in the body shows: they may show several events an execution."""
    times = {e.instruction.name: e.times for e in executed(module)}
    found: dict[str, int] = {}
    for loop in _outermost_unknown(module, module.entry):
        body = module.computations.get(loop.attrs.get("body", "").lstrip("%"))
        if body is None:
            continue
        shown = [i for i in body.instructions if events_per_run.get(i.name) and times.get(i.name)]
        # A library call (a cuSOLVER LU, a cuBLAS call) may launch several kernels an execution, each an event of
        # its op; the body's own ops read the trips where they show (one event an execution), else the fewest.
        own = [i for i in shown if i.opcode != "custom-call"]
        seen = [events_per_run[i.name] / times[i.name] for i in (own or shown)]
        if seen:
            found[loop.name] = max(round(max(seen) if own else min(seen)), 0)
        elif (checks := _condition_checks(module, loop, events_per_run, times)) is not None:
            found[loop.name] = max(checks - 1, 0)  # the condition runs once more than the body
    return found


def _condition_checks(module: HloModule, loop: Instruction, events_per_run: Mapping[str, float],
                      times: Mapping[str, int]) -> int | None:
    """How many times an execution of ``loop`` tested its condition, from the condition's ops' events (None where
    none shows): a loop whose body showed nothing ran no iteration where its condition was tested once (a line
    search whose first step is accepted)."""
    cond = module.computations.get(loop.attrs.get("condition", "").lstrip("%"))
    if cond is None:
        return None
    seen = [events_per_run[i.name] / times[i.name] for i in cond.instructions
            if i.opcode != "custom-call" and events_per_run.get(i.name) and times.get(i.name)]
    return round(max(seen)) if seen else None


def branches_ran(module: HloModule, events_per_run: Mapping[str, float]) -> dict[str, tuple[float, ...]]:
    """Each executed conditional whose branches are not read yet -> the share of its executions each branch took,
    from its branches' ops' events per run; a conditional whose branches show no event is left out."""
    found: dict[str, tuple[float, ...]] = {}
    if not events_per_run:  # no trace: nothing can be told (an empty branch must not look as if it ran)
        return found
    for run in executed_containers(module):
        cond = run.instruction
        if cond.opcode != "conditional" or cond.branch_shares is not None or run.times <= 0:
            continue
        seen = [_branch_seen(module, name, events_per_run) for name in cond.called]
        shares = _shares(seen, run.times)
        if shares is not None:
            found[cond.name] = shares
    return found


def _branch_seen(module: HloModule, name: str, events_per_run: Mapping[str, float]) -> float | None:
    """How many executions of branch ``name`` one run made, from its ops' events (an op that runs k times in one
    execution of the branch shows k events each time); None where the branch holds no op that shows an event."""
    comp = module.computations.get(name)
    if comp is None:
        return None
    inside = [(e.instruction, e.times, e.computation is comp) for e in executed(module, within=comp)]
    if not inside:
        return None
    # A library call may show several events an execution: read it only where nothing else of the branch shows.
    own = [(i, t, top) for i, t, top in inside if i.opcode != "custom-call" and events_per_run.get(i.name)]
    calls = [(i, t, top) for i, t, top in inside if i.opcode == "custom-call" and events_per_run.get(i.name)]
    if own or not calls:
        direct = [events_per_run.get(i.name, 0.0) / t for i, t, top in (own or inside) if top and t > 0]
        if direct:
            return max(direct)
        return max((events_per_run.get(i.name, 0.0) / t for i, t, _ in (own or inside) if t > 0), default=0.0)
    return min((events_per_run[i.name] / t for i, t, _ in calls if t > 0), default=0.0)


def _shares(seen: list[float | None], executions: int) -> tuple[float, ...] | None:
    """Each branch's runs per execution of the conditional as the walk counts them (``executions`` per run), from
    what each showed (None: a branch that cannot show an event). Not scaled to sum to one: where the loops around it
    were read a little short, the branches' own events are the better count of what ran."""
    empty = [i for i, count in enumerate(seen) if count is None]
    counts = [count or 0.0 for count in seen]
    if len(empty) == 1:
        counts[empty[0]] = max(executions - sum(counts), 0.0)
    if sum(counts) <= 0:
        return None  # no branch showed an event, or several could not show one: the trace cannot tell
    return tuple(round(count / executions, 6) for count in counts)


@dataclass(frozen=True)
class Ran:
    """What the trace showed of a program's control flow: the iterations of loops of unknown trip count, the shares
    of their executions each conditional's branches took."""

    trips: Mapping[str, int]
    branches: Mapping[str, tuple[float, ...]]

    def __bool__(self) -> bool:
        return bool(self.trips or self.branches)


def with_control_ran(module: HloModule, events_per_run: Mapping[str, float]) -> tuple[HloModule, Ran]:
    """``module`` with the loops and conditionals the trace showed stated as they ran (outer first: a loop inside a
    branch is read once that branch is known to run, a conditional inside a loop once the loop's count is)."""
    trips: dict[str, int] = {}
    branches: dict[str, tuple[float, ...]] = {}
    for _ in range(_MAX_NESTING):
        module, more = with_trips_ran(module, events_per_run)
        trips.update(more)
        shares = branches_ran(module, events_per_run)
        if shares:
            module = with_branch_shares(module, shares)
            branches.update(shares)
        if not more and not shares:
            break
    return module, Ran(trips, branches)


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


@dataclass(frozen=True)
class Branches:
    """How a program's conditionals are counted, in words: one line each, and whether any was counted at its
    dearest branch without the trace telling which ran (its counts are then an upper end, not a count of what ran)."""

    lines: tuple[str, ...] = ()
    unsure: bool = False
    # What one run would count less had each conditional counted at its dearest taken its cheapest branch: the
    # other end of the counts' range (FLOPs, bytes)
    spare: tuple[float, float] = (0.0, 0.0)


def branches_of(module: HloModule) -> Branches:
    """The executed conditionals whose branches differ in work: those the trace read (which branch ran how often),
    and those counted at the dearest branch (the cheapest's work beside it)."""
    lines: list[str] = []
    unsure = False
    spare_flops = spare_bytes = 0.0
    for run in executed_containers(module):
        cond = run.instruction
        if cond.opcode != "conditional" or len(cond.called) < 2:
            continue
        costs = [computation_cost(module, name, multiply_loops=True) for name in cond.called]
        work = [c.flops + c.bytes for c in costs]
        shares = cond.branch_shares
        if shares is not None and len(shares) == len(cond.called):
            ran = ", ".join(f"branch {i} {round(share * run.times)}" for i, share in enumerate(shares) if share > 0)
            lines.append(f"{cond.name}: ran {ran} times per run (from the trace)")
        elif max(work) > 1.01 * min(work):
            unsure = True
            dear, cheap = costs[work.index(max(work))], costs[work.index(min(work))]
            spare_flops += run.times * max(dear.flops - cheap.flops, 0.0)
            spare_bytes += run.times * max(dear.bytes - cheap.bytes, 0.0)
            lines.append(f"{cond.name}: which of its {len(costs)} branches ran is unknown (the trace did not show): "
                         f"counted at the dearest ({dear.flops:.3g} FLOP, {dear.bytes:.3g} B per execution; the "
                         f"cheapest {cheap.flops:.3g} FLOP, {cheap.bytes:.3g} B)")
    return Branches(tuple(lines), unsure, (spare_flops, spare_bytes))
