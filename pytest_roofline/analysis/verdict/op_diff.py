"""What two compiled programs of one kernel do differently, op by op: the ops of a base and a head result matched by
their HLO identity, and each one's share of the change in the kernel's time. Pure: reads :class:`~..model.per_op.OpRow`.

XLA renumbers instructions whenever a program changes (``fusion.3`` becomes ``fusion.7``), so names alone match
little. Ops are matched in passes, each on what is left by the one before, in program order within a pass:

1. the same name and the same structure (opcode, fusion kind, result and operand shapes, where it lives, how often
   it runs per run);
2. the same structure under another name (renumbered);
3. the same opcode, fusion kind and result shape with other operands (a fusion that now reads something else, or
   the part of a split fusion that still writes the old result);
4. the same name with another shape (an op resized in place).

What is left is added (head only) or removed (base only). Each change's share is its time gained or lost over the
kernel's change in device time; what the ops' own times do not cover (gaps between ops) is the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ...base.units import format_bytes, format_seconds
from ..model.per_op import OpRow
from .census import census, census_change

__all__ = ["OpChange", "OpDiff", "ChangeKind", "MatchedBy", "diff_ops", "match_ops", "op_label", "SAME_TIME"]

ChangeKind = Literal["added", "removed", "slower", "faster", "same time"]
MatchedBy = Literal["name", "structure", "result shape", "name only", ""]

# A matched op whose time moved by less than this share of the kernel's time (the larger side) is "same time":
# the ops' own times are medians over runs, and moves this small are within what two measurements of one program
# differ by (docs/measurements.md).
SAME_TIME = 0.02


def op_label(row: OpRow) -> str:
    """What an op is: opcode, fusion kind, operands and result, e.g. ``fusion (kLoop) f32[1024,1024] ->
    f32[1024]``, ``fusion (kCustom) matmul f32[768,768], f32[768,768] -> f32[768,768]`` or ``copy f32[4096,4096] ->
    f32[4096,4096]``."""
    kind = f" ({row.fusion_kind})" if row.fusion_kind else ""
    if row.kind.startswith(f"{row.family}: "):
        kind += f" {row.family}"
    where = "" if row.computation == "main" else f" in {row.computation}"
    shown = list(row.operand_shapes[:3]) + ([f"{len(row.operand_shapes) - 3} more"] if len(row.operand_shapes) > 3
                                            else [])
    reads = f"{', '.join(shown)} -> " if shown else ""
    return f"{row.opcode}{kind} {reads}{row.shape}{where}"


@dataclass(frozen=True)
class OpChange:
    """One op on either side or both: ``base`` None when the head added it, ``head`` None when it was removed."""

    kind: ChangeKind
    base: OpRow | None
    head: OpRow | None
    matched_by: MatchedBy = ""

    @property
    def base_s(self) -> float:
        return (self.base.measured_s or 0.0) if self.base is not None else 0.0

    @property
    def head_s(self) -> float:
        return (self.head.measured_s or 0.0) if self.head is not None else 0.0

    @property
    def delta_s(self) -> float:
        """Time gained (negative) or lost (positive) per run."""
        return self.head_s - self.base_s

    @property
    def name(self) -> str:
        base, head = self.base.name if self.base else "", self.head.name if self.head else ""
        return head if base in ("", head) else base if not head else f"{base} -> {head}"

    @property
    def label(self) -> str:
        row = self.head if self.head is not None else self.base
        assert row is not None
        return op_label(row)

    @property
    def program_changed(self) -> bool:
        """Whether the compiled op itself differs (added, removed, or matched on less than its whole structure)."""
        return self.base is None or self.head is None or self.matched_by not in ("name", "structure")

    def to_dict(self) -> dict[str, Any]:
        def side(row: OpRow | None) -> dict[str, Any] | None:
            if row is None:
                return None
            return {"name": row.name, "measured_s": row.measured_s, "flops": row.flops, "bytes": row.bytes,
                    "roofline_time_s": row.roofline_time_s, "roofline_fraction": row.utilization}

        return {"kind": self.kind, "op": self.label, "name": self.name, "matched_by": self.matched_by or None,
                "delta_s": self.delta_s, "base": side(self.base), "head": side(self.head)}


@dataclass(frozen=True)
class OpDiff:
    """The ops of one kernel on two sides, largest move in time first, and the kernel's device time per run on
    each side (the ops' shares are of the change between these)."""

    changes: tuple[OpChange, ...]
    base_time_s: float
    head_time_s: float

    @property
    def change_s(self) -> float:
        return self.head_time_s - self.base_time_s

    @property
    def program_changed(self) -> bool:
        return any(c.program_changed for c in self.changes)

    @property
    def between_ops_s(self) -> float:
        """The part of the kernel's change that no op's own time holds: gaps between ops, launch and idle time."""
        return self.change_s - sum(c.delta_s for c in self.changes)

    def share(self, change: OpChange) -> float | None:
        """The fraction of the kernel's change this op explains (None where the kernel's time did not move)."""
        return change.delta_s / self.change_s if self.change_s else None

    @property
    def census_change(self) -> str:
        """How the kernel census moved (``device ops per run 12 -> 14: +2 copy``); "" where it did not, or where a
        side's rows predate op families (a report of an older version)."""
        base = [c.base for c in self.changes if c.base is not None]
        head = [c.head for c in self.changes if c.head is not None]
        if not all(r.family for r in (*base, *head)):
            return ""
        return census_change(census(base), census(head))

    @property
    def noise_s(self) -> float:
        """A move smaller than this is "same time" (:data:`SAME_TIME` of the kernel's time, the larger side)."""
        return SAME_TIME * max(self.base_time_s, self.head_time_s)

    @property
    def moved(self) -> tuple[OpChange, ...]:
        """The ops whose time moved by more than the noise, largest first."""
        return tuple(c for c in self.changes if abs(c.delta_s) >= self.noise_s)

    @property
    def free(self) -> tuple[OpChange, ...]:
        """Changes of the compiled program that cost no time (an op added, removed or rebuilt within the noise)."""
        return tuple(c for c in self.changes if abs(c.delta_s) < self.noise_s and c.program_changed)

    def to_dict(self) -> dict[str, Any]:
        return {"base_time_s": self.base_time_s, "head_time_s": self.head_time_s, "change_s": self.change_s,
                "between_ops_s": self.between_ops_s, "program_changed": self.program_changed,
                "census_change": self.census_change or None,
                "changes": [dict(c.to_dict(), share=self.share(c)) for c in self.moved],
                "at_no_cost": [c.to_dict() for c in self.free]}

    def summary(self) -> str:
        """One line: how the program changed, e.g. ``the head's program: 1 op added, 2 changed, 9 the same``."""
        counts: dict[str, int] = {}
        for c in self.changes:
            key = ("added" if c.base is None else "removed" if c.head is None
                   else "changed" if c.program_changed else "the same")
            counts[key] = counts.get(key, 0) + 1
        parts = [f"{counts[k]} {('op ' if counts[k] == 1 else 'ops ') if i == 0 else ''}{k}" for i, k in
                 enumerate(k for k in ("added", "removed", "changed", "the same") if counts.get(k))]
        return "the head's program: " + (", ".join(parts) if parts else "no ops")

    def lines(self, limit: int = 5) -> list[str]:
        """The ops that moved most, each with its time on both sides, roofline fraction and share of the change;
        then the program's changes that cost no time, by name."""
        out = [f"{self.summary()}; device time {format_seconds(self.base_time_s)} -> "
               f"{format_seconds(self.head_time_s)} per run ({_signed(self.change_s)})"]
        if self.census_change:
            out.append(f"  census: {self.census_change}")
        moved, free = self.moved, self.free
        for c in moved[:limit]:
            out.append("  " + self._line(c))
        if len(moved) > limit:
            out.append(f"  ... {len(moved) - limit} more ops moved")
        if self.change_s and abs(self.between_ops_s) >= self.noise_s:
            out.append(f"  between ops (gaps, launches): {_signed(self.between_ops_s)}"
                       f"{_share_text(self.between_ops_s / self.change_s)}")
        if free:
            names = [f"{'added' if c.base is None else 'removed' if c.head is None else 'rebuilt'} {c.name}"
                     for c in free]
            shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
            out.append(f"  {'the compiled program changed' if not moved else 'also changed'} at no cost in time "
                       f"(under {format_seconds(self.noise_s)} each): {shown}")
        elif not moved:
            out.append("  no op moved by more than its noise")
        return out

    def _line(self, c: OpChange) -> str:
        share = self.share(c)
        share_text = _share_text(share) if c.kind != "same time" and share is not None else ""
        if c.base is None:
            assert c.head is not None
            return (f"added {c.name}, {c.label}: {format_seconds(c.head_s)}, {_of_run(c.head_s, self.head_time_s)}, "
                    f"{_work(c.head)}{share_text}")
        if c.head is None:
            return (f"removed {c.name}, {c.label}: was {format_seconds(c.base_s)}, "
                    f"{_of_run(c.base_s, self.base_time_s)}, {_work(c.base)}{share_text}")
        how = "" if c.matched_by in ("name", "structure") else f" (matched by {c.matched_by}: other operands)" \
            if c.matched_by == "result shape" else " (matched by name: other shapes)"
        return (f"{c.kind} {c.name}, {c.label}{how}: {format_seconds(c.base_s)} -> {format_seconds(c.head_s)} "
                f"({_signed(c.delta_s)}), roofline fraction {_fraction(c.base)} -> {_fraction(c.head)}{share_text}")


def _signed(seconds: float) -> str:
    return ("+" if seconds >= 0 else "-") + format_seconds(abs(seconds))


def _share_text(share: float | None) -> str:
    return f"; {share:.0%} of the change" if share is not None else ""


def _of_run(seconds: float, total: float) -> str:
    return f"{seconds / total:.0%} of the run" if total > 0 else "? of the run"


def _work(row: OpRow) -> str:
    return f"{format_bytes(row.bytes)} moved, roofline fraction {_fraction(row)}"


def _fraction(row: OpRow) -> str:
    value = row.utilization
    return f"{value:.0%}" if value is not None else "-"


def _structure(row: OpRow) -> tuple[Hashable, ...]:
    return (row.opcode, row.fusion_kind, row.shape, row.operand_shapes, row.computation == "main", row.executions)


_PASSES: tuple[tuple[MatchedBy, Callable[[OpRow], Hashable]], ...] = (
    ("name", lambda r: (r.name, _structure(r))),
    ("structure", _structure),
    ("result shape", lambda r: (r.opcode, r.fusion_kind, r.shape)),
    ("name only", lambda r: (r.name, r.opcode)),
)


def match_ops(base: Sequence[OpRow], head: Sequence[OpRow]) -> list[tuple[OpRow | None, OpRow | None, MatchedBy]]:
    """Base and head ops paired by the passes of the module docstring; the unpaired ones with None on the other
    side. Pairs come in the head's program order, removed ops after them."""
    left_base = list(range(len(base)))
    left_head = list(range(len(head)))
    paired: dict[int, tuple[int, MatchedBy]] = {}  # head index -> (base index, pass)
    for how, key in _PASSES:
        waiting: dict[Hashable, list[int]] = {}
        for i in left_base:
            waiting.setdefault(key(base[i]), []).append(i)
        still = []
        for j in left_head:
            queue = waiting.get(key(head[j]))
            if queue:
                paired[j] = (queue.pop(0), how)
            else:
                still.append(j)
        used = {i for i, _ in paired.values()}
        left_base = [i for i in left_base if i not in used]
        left_head = still
    out: list[tuple[OpRow | None, OpRow | None, MatchedBy]] = []
    for j, row in enumerate(head):
        if j in paired:
            i, how = paired[j]
            out.append((base[i], row, how))
        else:
            out.append((None, row, ""))
    out.extend((base[i], None, "") for i in left_base)
    return out


def diff_ops(base: Sequence[OpRow], head: Sequence[OpRow], base_time_s: float, head_time_s: float) -> OpDiff:
    """The op-by-op difference of two results of one kernel (their per-op rows, measured, and device times per
    run), largest move in time first."""
    noise = SAME_TIME * max(base_time_s, head_time_s)
    changes = []
    for b, h, how in match_ops(base, head):
        if b is None or h is None:
            kind: ChangeKind = "added" if b is None else "removed"
        else:
            delta = (h.measured_s or 0.0) - (b.measured_s or 0.0)
            kind = "same time" if abs(delta) < noise else "slower" if delta > 0 else "faster"
        changes.append(OpChange(kind, b, h, how))
    changes.sort(key=lambda c: -abs(c.delta_s))
    return OpDiff(tuple(changes), base_time_s, head_time_s)
