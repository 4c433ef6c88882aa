"""Exposed communication: how much of each collective's time no compute on the same device overlaps, from the
trace. Pure: reads a program's runs (:class:`~..runs.trace_events.RunTimes`) and its op rows
(:class:`~..model.per_op.OpRow`).

A collective's time is its span on one device: from its ``-start`` event's start to its ``-done`` event's end where
XLA emits an async pair (paired in order per device and run; a ``-start`` without a ``-done`` event, as a GPU's NCCL
kernel may be, is its own event), else its own event. The compute that may hide it is
every other op event of that device in that run, except collectives and async ``-start``/``-done`` markers. What
no compute overlaps is exposed. Per collective: its time and exposed time per run (its instances in a run added,
the device that exposed most, median over runs), and its roofline time on the link (the ring model of
:mod:`..program.collectives`, from its row). On a CPU with forced host devices a collective runs on the host's own
threads, with no link to overlap: everything is exposed, and the result says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from ...base.units import format_seconds
from ..program.collectives import collective_kind
from ..runs.timeline import union_ns
from ..runs.trace_events import RunTimes, device_of
from .per_op import OpRow

__all__ = ["CollectiveTime", "Exposure", "exposure", "CPU_NOTE", "ExposedLimit", "parse_max_exposed", "ExposedCheck",
           "check_exposed"]

CPU_NOTE = ("a CPU's collectives between forced host devices run on the host's own threads, with no link to "
            "overlap: all of their time is exposed")


@dataclass(frozen=True)
class CollectiveTime:
    """One collective of the program, per run."""

    name: str  # its HLO op (the -start op of an async pair)
    opcode: str
    time_s: float
    exposed_s: float
    link_s: float  # its roofline time on the link (0: the hardware entry has no interconnect bandwidth)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "opcode": self.opcode, "time_s": self.time_s, "exposed_s": self.exposed_s,
                "link_s": self.link_s}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CollectiveTime:
        return cls(str(data["name"]), str(data["opcode"]), float(data["time_s"]), float(data["exposed_s"]),
                   float(data.get("link_s") or 0.0))


@dataclass(frozen=True)
class Exposure:
    """The program's collectives, most exposed first, against its run time."""

    collectives: tuple[CollectiveTime, ...]
    run_s: float
    note: str = ""

    @property
    def exposed_s(self) -> float:
        return sum(c.exposed_s for c in self.collectives)

    @property
    def exposed_fraction(self) -> float:
        return self.exposed_s / self.run_s if self.run_s > 0 else 0.0

    def lines(self) -> list[str]:
        """One line per collective: time, exposed time, its share of the run and its time on the link."""
        out = []
        for c in self.collectives:
            link = f", {format_seconds(c.link_s)} on the link (ring model)" if c.link_s else ", no link bandwidth"
            share = c.exposed_s / self.run_s if self.run_s > 0 else 0.0
            out.append(f"{c.name} ({c.opcode}): {format_seconds(c.time_s)} per run, {format_seconds(c.exposed_s)} "
                       f"exposed ({share:.0%} of the run){link}")
        if self.note:
            out.append(self.note)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"run_s": self.run_s, "exposed_s": self.exposed_s, "exposed_fraction": self.exposed_fraction,
                "note": self.note, "collectives": [c.to_dict() for c in self.collectives]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Exposure:
        return cls(tuple(CollectiveTime.from_dict(c) for c in data.get("collectives") or ()), float(data["run_s"]),
                   str(data.get("note") or ""))


def _kind(row: OpRow) -> str:
    return collective_kind(row.opcode) or row.opcode


Span = tuple[str, float, float]  # (collective op name, start, end)
Key = tuple[int, Any]  # (run, device)


def _spans(runs: RunTimes, by_name: Mapping[str, OpRow], counted: int | None,
           containers: frozenset[str]) -> tuple[dict[Key, list[Span]], dict[Key, list[tuple[float, float]]]]:
    """Per run and device: the collectives' spans (async pairs joined in order) and the compute intervals."""
    spans: dict[Key, list[Span]] = {}
    compute: dict[Key, list[tuple[float, float]]] = {}
    waiting: dict[tuple[Key, str], list[int]] = {}  # the spans of -start events not yet joined to their -done
    order = sorted(range(len(runs.op_events)), key=lambda i: runs.op_events[i].start_ns)
    for index in order:
        ev, run = runs.op_events[index], runs.run_of_event.get(index)
        name = str(ev.stats.get("hlo_op", ""))
        row = by_name.get(name)
        if run is None or row is None or name in containers or (counted is not None and run >= counted):
            continue
        key = (run, device_of(ev))
        if row.opcode.endswith("-start") and row.family == "collective":
            # its own span (on a GPU the NCCL kernel itself), extended to its -done's end where one follows
            spans.setdefault(key, []).append((name, ev.start_ns, ev.end_ns))
            waiting.setdefault((key, _kind(row)), []).append(len(spans[key]) - 1)
        elif row.opcode.endswith("-done") and collective_kind(row.opcode) is not None:
            queue = waiting.get((key, _kind(row)))
            if queue:
                started, at, end = spans[key][queue[0]]
                spans[key][queue.pop(0)] = (started, at, max(end, ev.end_ns))
        elif row.family == "collective":
            spans.setdefault(key, []).append((name, ev.start_ns, ev.end_ns))
        elif not row.opcode.endswith(("-start", "-done")):
            compute.setdefault(key, []).append((ev.start_ns, ev.end_ns))
    return spans, compute


def _overlap_ns(start: float, end: float, intervals: Sequence[tuple[float, float]]) -> float:
    return union_ns((max(s, start), min(e, end)) for s, e in intervals if s < end and e > start)


def exposure(runs: RunTimes, rows: Sequence[OpRow], platform: str, counted: int | None = None,
             containers: frozenset[str] = frozenset()) -> Exposure | None:
    """The program's collectives and how much of each no compute overlaps; None where it runs none (or the trace
    shows none of their events)."""
    if not any(r.family == "collective" for r in rows):
        return None  # nothing to look for: no pass over the events (a loop's trace may hold hundreds of thousands)
    by_name = {r.name: r for r in rows}
    spans, compute = _spans(runs, by_name, counted, containers)
    if not spans:
        return None
    # (collective, run) -> per device: [time, exposed]
    per: dict[tuple[str, int], dict[Any, list[float]]] = {}
    for (run, device), found in spans.items():
        for name, start, end in found:
            figures = per.setdefault((name, run), {}).setdefault(device, [0.0, 0.0])
            figures[0] += end - start
            figures[1] += (end - start) - _overlap_ns(start, end, compute.get((run, device), ()))
    out = []
    for name in dict.fromkeys(n for n, _ in per):
        worst = [max(devices.values(), key=lambda f: f[1]) for (n, _), devices in per.items() if n == name]
        row = by_name[name]
        out.append(CollectiveTime(name, _kind(row), median(w[0] for w in worst) / 1e9,
                                  median(w[1] for w in worst) / 1e9, row.comms_time_s))
    out.sort(key=lambda c: -c.exposed_s)
    run_s = median(runs.per_run_s[:counted]) if runs.per_run_s[:counted] else 0.0
    return Exposure(tuple(out), run_s, CPU_NOTE if platform == "cpu" else "")


@dataclass(frozen=True)
class ExposedLimit:
    """``max_exposed=``: the largest share of a run that collectives may leave exposed, and where it was given."""

    value: float
    origin: str


def parse_max_exposed(raw: Any, where: str, origin: str, error: type[Exception] = ValueError) -> ExposedLimit:
    """A fraction of the run in [0, 1]."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 <= raw <= 1:
        raise error(f"{where}: max_exposed must be a fraction of the run in [0, 1] (e.g. 0.1), got {raw!r}")
    return ExposedLimit(float(raw), origin)


@dataclass(frozen=True)
class ExposedCheck:
    """Exposed communication against ``max_exposed=``: why it fails ("" when it passes)."""

    limit: float
    origin: str
    reason: str

    @property
    def ok(self) -> bool:
        return not self.reason

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "origin": self.origin, "ok": self.ok, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExposedCheck:
        return cls(float(data["limit"]), str(data.get("origin") or ""), str(data.get("reason") or ""))


def check_exposed(found: Exposure | None, given: ExposedLimit) -> ExposedCheck:
    """The program's exposed communication against ``given`` (a fraction of the run); a failure names the most
    exposed collectives. A program without collectives exposes none."""
    limit, origin = given.value, given.origin
    if found is None or found.exposed_fraction <= limit:
        return ExposedCheck(limit, origin, "")
    worst = "; ".join(found.lines()[:min(3, len(found.collectives))])
    note = f" ({found.note})" if found.note else ""
    return ExposedCheck(limit, origin, f"collectives left {found.exposed_fraction:.0%} of the run exposed, over "
                                       f"max_exposed {limit:.0%} ({origin}): {worst}{note}")
