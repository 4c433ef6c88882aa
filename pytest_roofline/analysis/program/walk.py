"""The ops one run of a program executes, in one walk used by the per-op model and the timing's trace cap.

The entry computation's ops run once; a while loop's body and condition run ``known_trip_count`` times (once
when the trip count is unknown); a call's computation runs once; a conditional runs the branches the trace showed,
as often as it showed them, or else its costliest branch (:func:`~.xla_costs.branch_runs`, as
:func:`~.xla_costs.instruction_cost` counts them), so that op rows, op counts and program counts agree.
Bookkeeping ops (parameters, tuples, bitcasts) are not executed ops. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from .hlo_reader import Computation, HloModule, Instruction
from .xla_costs import FREE_OPS, branch_runs

__all__ = ["Executed", "CONTAINER_OPS", "executed", "executed_containers", "executed_op_count", "does_no_work",
           "empty_inputs_note",
           "constant_bytes"]

CONTAINER_OPS = frozenset({"while", "call", "conditional"})
_MAX_DEPTH = 16


class Executed(NamedTuple):
    computation: Computation
    instruction: Instruction
    times: int  # per run


def executed(module: HloModule, within: Computation | None = None) -> Iterator[Executed]:
    """Every executed op with how many times one run executes it (``within``: one run of that computation)."""
    yield from (e for e, container in _walk(module, within or module.entry, 1, 0) if not container)


def executed_containers(module: HloModule) -> Iterator[Executed]:
    """Every executed loop, call and conditional with how many times one run executes it."""
    yield from (e for e, container in _walk(module, module.entry, 1, 0) if container)


def _walk(module: HloModule, comp: Computation, times: int, depth: int) -> Iterator[tuple[Executed, bool]]:
    for inst in comp.instructions:
        if inst.opcode in FREE_OPS:
            continue
        if inst.opcode not in CONTAINER_OPS or depth >= _MAX_DEPTH:
            yield Executed(comp, inst, times), False
            continue
        yield Executed(comp, inst, times), True
        if inst.opcode == "while":
            trips = inst.known_trip_count  # none (a loop that ran no iteration): neither counts
            runs = [(name, times * (trips if trips is not None else 1)) for name in inst.called]  # body, condition
        elif inst.opcode == "conditional":
            runs = [(name, round(times * share)) for name, share in branch_runs(module, inst)]
        else:
            runs = [(name, times) for name in inst.called]
        for name, count in runs:
            sub = module.computations.get(name)
            if sub is not None and count > 0:
                yield from _walk(module, sub, count, depth + 1)


# Ops that compute nothing: a program made only of them (and copies of constants) returns a constant or nothing.
_NOTHING_OPS = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all"})


def does_no_work(module: HloModule) -> bool:
    """Whether the program computes nothing: its entry holds only parameters, constants and views of them, and
    copies nothing but constants (a kernel that returns None or a Python number). A copy of an input is work:
    a copy kernel moves its bytes."""
    reads_input: set[str] = set()
    for inst in module.entry.instructions:
        from_input = inst.opcode == "parameter" or any(o in reads_input for o in inst.operands)
        if inst.opcode == "copy" and from_input:
            return False
        if inst.opcode not in _NOTHING_OPS and inst.opcode != "copy":
            return False
        if from_input:
            reads_input.add(inst.name)
    return True


def executed_op_count(module: HloModule) -> int:
    """How many ops one run executes: each is one event in a CPU trace, which caps the profiled runs."""
    return sum(e.times for e in executed(module))


def constant_bytes(module: HloModule) -> int:
    """The bytes of the constants compiled into the program: arrays a kernel closes over instead of taking as
    arguments (a model object's weights) are constants of its program."""
    return sum(i.shape.bytes for c in module.computations.values() for i in c.instructions if i.opcode == "constant")


def empty_inputs_note(module: HloModule, computes: bool = False) -> list[str]:
    """The note for a program whose inputs hold no element (shape (0,) or (8, 0)), naming them: it computes nothing on
    them, or (``computes``) what it does (making or copying what it returns) is not work on them; none where no input
    is empty."""
    empty = [f"input {inst.literal or inst.name} ({inst.shape.dtype}[{','.join(str(d) for d in inst.shape.dims)}])"
             for inst in module.entry.instructions
             if inst.opcode == "parameter" and not inst.shape.is_tuple and inst.shape.num_elements == 0]
    if not empty:
        return []
    them = "it" if len(empty) == 1 else "them"
    what = (f"what the program does (making or copying what it returns) is not work on {them}: its figures say nothing "
            f"of the kernel on real data" if computes else f"the program computes nothing on {them}")
    return [f"empty input: {', '.join(empty)} hold{'s' if len(empty) == 1 else ''} no element (inputs are "
            f"counted from 0, in the order the program takes them), so {what}"]
