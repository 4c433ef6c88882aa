"""Idle time inside a program's runs: the part of each run in which its device executes no op, and how much of it
the device spent waiting on the host. Pure: reads one program's runs (:class:`~.trace_events.RunTimes`).

A run lasts from its first op's start to its last op's end (GPU, CPU), or its module event (TPU: the time the
caller waits). The ops' union is the busy time; the rest is idle, gap by gap on the run's slowest device. What a
gap waited for depends on who launches the ops:

* **GPU**: each kernel has a host launch (joined by ``correlation_id``). A gap before a kernel whose launch call
  started after the previous kernel ended waited on the host for that long: the host had not yet asked for the
  work (Python, dispatch, a launch per op). The rest of the gap (launch latency, synchronization) is "other".
* **CPU**: the host runs the ops itself, so every gap between them is the runtime's own work (dispatching the
  next op, loop control): all of it is waiting on the host.
* **TPU**: the host launches a whole program once; gaps inside a run are the device's own (waits on DMA,
  synchronization with other chips): none of it is the host's.

On a program of several devices, a device's time before its first op or after its last in a run is spent
waiting for the others: it is idle, and "other".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from statistics import median
from typing import Any

from ...base.units import format_seconds
from .trace_events import RunTimes, device_of

__all__ = ["IdleTime", "idle_time", "IDLE_HINT"]

# Idle beyond this share of the run is a hint (and is shown in a failure message)
IDLE_HINT = 0.3

_EDGES = "; a device's time before its first op or after its last in a run (waiting for other devices) is other"
_BASIS = {
    "gpu": "kernel launches (correlation_id): a gap waited on the host where the next kernel's launch call started "
           "after the previous kernel ended" + _EDGES,
    "cpu": "the CPU runs the ops itself: every gap between them is the runtime's own work (dispatch, loop "
           "control)" + _EDGES,
    "tpu": "one launch per program run: gaps inside a run are the device's own (DMA, synchronization)",
}


@dataclass(frozen=True)
class IdleTime:
    """Per run (median over runs): the run's time, its idle time, and the part of that spent waiting on the host."""

    run_s: float
    idle_s: float
    host_s: float
    basis: str  # how waiting on the host was told apart
    gaps: float = 0.0  # gaps per run (median)

    @property
    def idle_fraction(self) -> float:
        return self.idle_s / self.run_s if self.run_s > 0 else 0.0

    @property
    def host_fraction(self) -> float:
        return self.host_s / self.run_s if self.run_s > 0 else 0.0

    @property
    def other_s(self) -> float:
        return max(self.idle_s - self.host_s, 0.0)

    def text(self) -> str:
        """E.g. ``the device ran no op for 62% of each run (3.1 ms of 5 ms, 2047 gaps): 60% waiting on the host,
        2% other``."""
        other = self.other_s / self.run_s if self.run_s > 0 else 0.0
        return (f"the device ran no op for {self.idle_fraction:.0%} of each run ({format_seconds(self.idle_s)} of "
                f"{format_seconds(self.run_s)}, {self.gaps:.0f} gap{'' if self.gaps == 1 else 's'}): "
                f"{self.host_fraction:.0%} waiting on the host, "
                f"{other:.0%} other")

    def to_dict(self) -> dict[str, Any]:
        return {"run_s": self.run_s, "idle_s": self.idle_s, "host_s": self.host_s, "other_s": self.other_s,
                "idle_fraction": self.idle_fraction, "host_fraction": self.host_fraction, "gaps": self.gaps,
                "basis": self.basis, "text": self.text()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IdleTime:
        return cls(float(data["run_s"]), float(data["idle_s"]), float(data["host_s"]), str(data["basis"]),
                   float(data.get("gaps") or 0.0))


def _segments(intervals: list[tuple[float, float, int]]) -> list[tuple[float, float, int]]:
    """The union of ``(start, end, event index)`` intervals as segments, each with the event that opened it."""
    out: list[tuple[float, float, int]] = []
    for start, end, index in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end), out[-1][2])
        else:
            out.append((start, end, index))
    return out


def _one_run(segments: list[tuple[float, float, int]], span_s: float, platform: str,
             launched_ns: Mapping[int, float]) -> tuple[float, float, int]:
    """A run's idle and host-waiting seconds and its number of gaps, from its device's busy segments."""
    busy = sum(end - start for start, end, _ in segments) / 1e9
    host = 0.0
    for (_, gap_start, _), (gap_end, _, opened_by) in zip(segments, segments[1:], strict=False):
        if platform == "cpu":
            host += gap_end - gap_start
        elif platform == "gpu" and opened_by in launched_ns:
            host += min(max(launched_ns[opened_by] - gap_start, 0.0), gap_end - gap_start)
    idle = max(span_s - busy, 0.0)
    return idle, min(host / 1e9, idle), max(len(segments) - 1, 0)


def idle_time(runs: RunTimes, platform: str, containers: frozenset[str] = frozenset(),
              counted: int | None = None) -> IdleTime | None:
    """The idle time of a program's runs, on the device that idled most in each run; None where the trace has no
    op events. ``containers``: ops whose events span other ops (a while loop's thunk on a CPU), not busy time."""
    per_run: dict[tuple[int, Any], list[tuple[float, float, int]]] = {}
    for index, ev in enumerate(runs.op_events):
        run = runs.run_of_event.get(index)
        if run is None or "hlo_op" not in ev.stats or str(ev.stats["hlo_op"]) in containers:
            continue
        per_run.setdefault((run, device_of(ev)), []).append((ev.start_ns, ev.end_ns, index))
    if not per_run:
        return None
    figures = []
    for run, run_s in enumerate(runs.per_run_s[:counted]):
        devices = [(sum(e - s for s, e, _ in _segments(found)), found) for (r, _), found in per_run.items()
                   if r == run]
        if not devices:
            continue
        _, slowest = min(devices, key=lambda d: d[0])  # the least busy device of the run is the one that idled most
        figures.append((run_s, *_one_run(_segments(slowest), run_s, platform, runs.launched_ns)))
    if not figures:
        return None
    return IdleTime(median(f[0] for f in figures), median(f[1] for f in figures), median(f[2] for f in figures),
                    _BASIS.get(platform, _BASIS["tpu"]), median(f[3] for f in figures))

