"""Bytes a collective sends over the interconnect, per device, in the ring model. Pure.

all-reduce: 2(n-1)/n of its buffer; all-gather: (n-1)/n of the gathered result; reduce-scatter and
all-to-all: (n-1)/n of the operand; collective-permute: the buffer. ``n`` is the replica-group size.
"""

from __future__ import annotations

from .hlo_reader import Computation, Instruction

__all__ = ["COLLECTIVE_OPS", "COLLECTIVE_KINDS", "collective_kind", "collective_bytes"]

COLLECTIVE_OPS = frozenset({
    "all-reduce", "all-reduce-start", "all-gather", "all-gather-start", "reduce-scatter", "all-to-all",
    "collective-permute", "collective-permute-start",
})
# The collectives themselves, without their async suffixes
COLLECTIVE_KINDS = frozenset(c.removesuffix("-start") for c in COLLECTIVE_OPS)


def collective_kind(opcode: str) -> str | None:
    """The collective an opcode is, its async ``-start`` and ``-done`` halves included (``all-reduce-done`` ->
    ``all-reduce``); None for any other op."""
    kind = opcode.removesuffix("-start").removesuffix("-done")
    return kind if kind in COLLECTIVE_KINDS else None


def _group_size(inst: Instruction, default: int) -> int:
    raw = inst.attrs.get("replica_groups", "").strip()
    if not raw or raw == "{}":
        return default
    if raw.startswith("["):  # iota form: [groups,size]<=[...]
        try:
            return int(raw[1:raw.index("]")].split(",")[-1])
        except (ValueError, IndexError):
            return default
    first = raw.strip("{}").split("},{")[0]
    return max(len([x for x in first.split(",") if x.strip()]), 1)


def collective_bytes(comp: Computation, inst: Instruction, devices: int = 1) -> float:
    """Bytes one device sends over the interconnect, ring model: all-reduce 2(n-1)/n of its buffer,
    all-gather / reduce-scatter / all-to-all (n-1)/n of the full buffer, collective-permute the buffer."""
    op = inst.opcode.removesuffix("-start")
    if op not in COLLECTIVE_KINDS:
        return 0.0
    n = _group_size(inst, devices)
    first = comp.by_name.get(inst.operands[0]) if inst.operands else None
    operand = first.shape.bytes if first is not None else 0
    result = inst.shape.bytes if not inst.shape.is_tuple else max((s.bytes for s in inst.shape.leaves()), default=0)
    if op == "collective-permute":
        return float(operand)
    if n <= 1:
        return 0.0
    if op == "all-reduce":
        return 2.0 * (n - 1) / n * operand
    if op == "all-gather":
        return (n - 1) / n * result
    if op == "reduce-scatter":
        return (n - 1) / n * operand
    return (n - 1) / n * operand  # all-to-all
