"""Runs of one measurement matched across the processes of a multi-controller program. Pure.

Every process times the same runs in the same order (the measurement runs in lockstep), and reads its own
devices' time for each run from its own trace. Run ``k`` of every device of every process is the same run of
the global program; its time is its slowest device's, and that device decided it. Matched by order, not by
clock: hosts' clocks differ, the order of lockstep runs does not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from statistics import median
from typing import Any

from ...base.units import format_quantity
from .hosts import HostTraffic

__all__ = ["Decider", "MatchError", "MatchedRuns", "ProcessTimes", "Processes", "match_runs", "per_device_medians"]


class MatchError(ValueError):
    """The processes' runs cannot be matched (different run counts, no devices)."""


@dataclass(frozen=True)
class ProcessTimes:
    """One process's device times: device name -> its time for each run, in run order."""

    process: int
    per_device_s: Mapping[str, tuple[float, ...]]

    def to_dict(self) -> dict[str, object]:
        return {"process": self.process, "per_device_s": {d: list(t) for d, t in self.per_device_s.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ProcessTimes:
        per = data["per_device_s"]
        assert isinstance(per, Mapping)
        return cls(int(str(data["process"])), {str(d): tuple(float(x) for x in t) for d, t in per.items()})


@dataclass(frozen=True)
class Decider:
    process: int
    device: str

    def __str__(self) -> str:
        return f"process {self.process}, device {self.device}"


@dataclass(frozen=True)
class MatchedRuns:
    """Each run's time (its slowest device across all processes) and which device that was."""

    per_run_s: tuple[float, ...]
    deciders: tuple[Decider, ...]
    per_process_median_s: Mapping[int, float]  # each process's slowest device, median over runs

    @property
    def decided_by(self) -> Decider:
        """The device that was slowest in the most runs (ties: the one with the larger median)."""
        counts = Counter(self.deciders)
        return max(counts, key=lambda d: (counts[d], self.per_process_median_s.get(d.process, 0.0)))

    @property
    def decided_share(self) -> float:
        return Counter(self.deciders)[self.decided_by] / len(self.deciders)

    def describe(self) -> str:
        d = self.decided_by
        return f"slowest device: {d} in {self.decided_share:.0%} of {len(self.per_run_s)} runs"


def match_runs(processes: Sequence[ProcessTimes]) -> MatchedRuns:
    """Match run ``k`` across every device of every process; raise :class:`MatchError` when the run counts differ
    (a process timed other runs than the others: the lockstep broke) or a process timed no device."""
    if not processes:
        raise MatchError("no process reported device times")
    counts = {(p.process, d): len(t) for p in processes for d, t in p.per_device_s.items()}
    empty = [p.process for p in processes if not p.per_device_s]
    if empty:
        raise MatchError(f"process {empty[0]} reported no device times")
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"process {p} device {d}: {n}" for (p, d), n in sorted(counts.items()))
        raise MatchError(f"the processes timed different numbers of runs ({listed}): runs cannot be matched")
    n_runs = next(iter(counts.values()))
    per_run, deciders = [], []
    for k in range(n_runs):
        t, who = max(((times[k], Decider(p.process, d)) for p in processes for d, times in p.per_device_s.items()),
                     key=lambda pair: pair[0])
        per_run.append(t)
        deciders.append(who)
    medians = {p.process: median(max(t[k] for t in p.per_device_s.values()) for k in range(n_runs))
               for p in processes} if n_runs else {}
    return MatchedRuns(tuple(per_run), tuple(deciders), medians)


@dataclass(frozen=True)
class Processes:
    """A measurement of a program that spans processes: how many, which one this is, the topology, each
    process's device times (median over runs of its slowest device, and of each device), the device that decided,
    the collectives' split between links, and the global program's work (per device times devices)."""

    count: int
    index: int
    topology: str
    per_process_median_s: Mapping[int, float]
    per_device_median_s: Mapping[str, float]  # "process P device D" -> median over runs
    decided_by: Decider
    _: KW_ONLY  # fields from the seventh on are given by keyword
    decided_share: float
    global_flops: float
    global_bytes: float
    hosts: HostTraffic | None = None

    def text(self) -> str:
        times = ", ".join(f"process {p} {t * 1e3:.3g} ms" for p, t in sorted(self.per_process_median_s.items()))
        line = (f"{self.topology}; slowest device {self.decided_by} in {self.decided_share:.0%} of the runs "
                f"(medians: {times})")
        if self.hosts is not None:
            line += (
                f"; collectives {format_quantity(self.hosts.local_bytes, 'B')} within a host, "
                f"{format_quantity(self.hosts.host_bytes, 'B')} across hosts"
                + (
                    " (a link without a known bandwidth: the interconnect term is a lower bound)"
                    if self.hosts.lower_bound
                    else ""
                )
            )
        return line

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "index": self.index, "topology": self.topology,
                "per_process_median_s": {str(p): t for p, t in self.per_process_median_s.items()},
                "per_device_median_s": dict(self.per_device_median_s),
                "decided_by": {"process": self.decided_by.process, "device": self.decided_by.device},
                "decided_share": self.decided_share, "global_flops": self.global_flops,
                "global_bytes": self.global_bytes, "hosts": self.hosts.to_dict() if self.hosts else None,
                "text": self.text()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Processes:
        decided = data["decided_by"]
        return cls(int(data["count"]), int(data["index"]), str(data["topology"]),
                   {int(p): float(t) for p, t in data["per_process_median_s"].items()},
                   {str(d): float(t) for d, t in data["per_device_median_s"].items()},
                   Decider(int(decided["process"]), str(decided["device"])), decided_share=float(data["decided_share"]),
                   global_flops=float(data["global_flops"]), global_bytes=float(data["global_bytes"]),
                   hosts=HostTraffic.from_dict(data["hosts"]) if data.get("hosts") else None)


def per_device_medians(processes: Sequence[ProcessTimes]) -> dict[str, float]:
    return {f"process {p.process} device {d}": median(t) for p in processes for d, t in p.per_device_s.items() if t}
