"""The kernel census of a program: how many device ops one run executes and of which family (XLA fusions, library
calls such as cuBLAS and cuDNN, Triton, Pallas, copies, collectives), the ``max_ops=`` limit it is held to, and
what changed between two censuses. Pure: reads :class:`~..model.per_op.OpRow` rows (each with its family,
:mod:`..model.op_family`).

An op's count per run is its events per run in the trace where the trace has them (a GPU kernel per launch, a
CPU thunk per execution), else how often the HLO runs it (loop bodies times their trip count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model.op_family import FAMILIES
from ..model.per_op import OpRow

__all__ = ["Census", "census", "OpsLimit", "CensusCheck", "parse_max_ops", "check_ops", "census_change"]

def _count(n: float) -> str:
    """A count per run as people read it: ``26,626``, or ``2.5`` where runs differ."""
    return f"{n:,.0f}" if n == int(n) else f"{n:,.3g}"


def _per_run(row: OpRow) -> float:
    return row.events_per_run if row.events_per_run else float(row.executions)


@dataclass(frozen=True)
class Census:
    """Device ops per run, in all and per family (largest first); ``source``: "trace" where any op's count came
    from its events, else "HLO"."""

    ops_per_run: float
    families: tuple[tuple[str, float], ...]
    source: str

    def count(self, family: str) -> float:
        return dict(self.families).get(family, 0.0)

    def text(self) -> str:
        """E.g. ``14 device ops per run (trace): 12 XLA fusion, 2 cuBLAS``."""
        parts = ", ".join(f"{_count(n)} {family}" for family, n in self.families)
        return f"{_count(self.ops_per_run)} device ops per run ({self.source}): {parts or 'none'}"

    def to_dict(self) -> dict[str, Any]:
        return {"ops_per_run": self.ops_per_run, "families": dict(self.families), "source": self.source}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Census:
        families = {str(k): float(v) for k, v in (data.get("families") or {}).items()}
        return cls(float(data["ops_per_run"]), tuple(families.items()), str(data.get("source") or "HLO"))


def census(rows: Sequence[OpRow]) -> Census:
    counts: dict[str, float] = {}
    for row in rows:
        family = row.family or "XLA op"
        counts[family] = counts.get(family, 0.0) + _per_run(row)
    ordered = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    source = "trace" if any(r.events_per_run for r in rows) else "HLO"
    return Census(sum(counts.values()), ordered, source)


@dataclass(frozen=True)
class OpsLimit:
    """``max_ops=``: the most device ops per run, in all (``"total"``) and per family."""

    limits: tuple[tuple[str, float], ...]
    origin: str

    def to_dict(self) -> dict[str, Any]:
        return {"limits": dict(self.limits), "origin": self.origin}


def parse_max_ops(raw: Any, where: str, origin: str, error: type[Exception] = ValueError) -> OpsLimit:
    """An int (ops per run in all) or a mapping of ``"total"`` or a family to an int: ``{"total": 40, "copy":
    0}``."""
    problem = (f"{where}: max_ops must be a whole number of device ops per run, or a mapping of 'total' or a "
               f"family ({', '.join(FAMILIES)}) to one, got {raw!r}")
    mapping = raw if isinstance(raw, Mapping) else {"total": raw}
    limits = []
    for key, value in mapping.items():
        if key != "total" and key not in FAMILIES:
            raise error(f"{problem}: unknown family {key!r}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise error(problem)
        limits.append((str(key), float(value)))
    if not limits:
        raise error(problem)
    return OpsLimit(tuple(limits), origin)


@dataclass(frozen=True)
class CensusCheck:
    """A census against ``max_ops=``: why it fails ("" when it passes)."""

    limit: OpsLimit
    census: Census
    reason: str

    @property
    def ok(self) -> bool:
        return not self.reason

    def to_dict(self) -> dict[str, Any]:
        return {**self.limit.to_dict(), "census": self.census.to_dict(), "ok": self.ok, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CensusCheck:
        limits = tuple((str(k), float(v)) for k, v in (data.get("limits") or {}).items())
        return cls(OpsLimit(limits, str(data.get("origin") or "")), Census.from_dict(data["census"]),
                   str(data.get("reason") or ""))


def check_ops(rows: Sequence[OpRow], limit: OpsLimit) -> CensusCheck:
    """The program's census against ``limit``; a failure names the ops of each family over its limit (the
    largest count first)."""
    found = census(rows)
    over = []
    for family, most in limit.limits:
        have = found.ops_per_run if family == "total" else found.count(family)
        if have > most:
            members = [r for r in rows if family == "total" or (r.family or "XLA op") == family]
            names = ", ".join(f"{r.name} (x{_count(_per_run(r))})" if _per_run(r) != 1 else r.name
                              for r in sorted(members, key=lambda r: -_per_run(r))[:5])
            more = f" and {len(members) - 5} more" if len(members) > 5 else ""
            what = "device ops" if family == "total" else f"{family} ops"
            over.append(f"{_count(have)} {what} per run, over max_ops {_count(most)} ({limit.origin}): {names}{more}")
    return CensusCheck(limit, found, "; ".join(over))


def census_change(base: Census, head: Census) -> str:
    """What changed between two censuses, e.g. ``ops per run 12 -> 14: +2 copy``; "" when nothing did."""
    families = dict.fromkeys([f for f, _ in base.families] + [f for f, _ in head.families])
    moves = [(f, head.count(f) - base.count(f)) for f in families if head.count(f) != base.count(f)]
    if not moves:
        return ""
    parts = ", ".join(f"{'+' if delta > 0 else '-'}{_count(abs(delta))} {family}"
                      for family, delta in sorted(moves, key=lambda m: -abs(m[1])))
    return f"device ops per run {_count(base.ops_per_run)} -> {_count(head.ops_per_run)}: {parts}"
