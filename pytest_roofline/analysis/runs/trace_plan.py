"""How many runs to read from the profiler's trace: every timed run, or, for a program of so many events a run that
reading them would cost more than running them, one warm-up run (its per-op times and what ran), the timed runs
then running without the profiler, each timed by the wall clock around it. Pure: the rule and its words.

A trace costs about :data:`READ_S_PER_EVENT` per event to stop, parse and match (``bench/trace_reading.py`` prints
it); a program of nested loops records tens of thousands of events a run (mctx's MuZero search: 155,000), so
reading five runs took fifteen seconds for half a second of running. The wall clock around a blocked call holds
the device time and the call's own dispatch (tens of microseconds), so it can only read a run as slower than the
trace would: never a run above the roofline that was not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import Literal

from ...base.units import format_seconds

__all__ = ["READ_S_PER_EVENT", "READ_FLOOR_S", "TracePlan", "EVERY_RUN", "trace_plan", "TimerKind", "choose_timer"]

# Stopping the profiler, parsing, flattening and matching, per event recorded (2-core AMD EPYC Zen 4: 21-22 us).
READ_S_PER_EVENT = 20e-6
# Reading every run is always worth this much time: a small program is timed from the trace, whatever its runs.
READ_FLOOR_S = 0.5


@dataclass(frozen=True)
class TracePlan:
    """``traced``: how many timed runs the trace holds (None: every one); ``events``: the events one run recorded
    (None: not probed); ``reading_s``: what reading one run would cost."""

    traced: int | None = None
    events: int | None = None
    reading_s: float = 0.0
    traced_wall_s: float | None = None  # the wall clock of the traced run (the last warm-up run, under the profiler)

    def reason(self, device_s: float, timed_walls: Sequence[float]) -> str:
        """Why the runs are timed by the wall clock: the traced run's device time, and how much the profiler slowed
        it against the runs timed without it (``timed_walls``)."""
        if self.traced is None:
            return ""
        slowed = ""
        if self.traced_wall_s is not None and timed_walls and median(timed_walls) > 0:
            slowed = f"; the profiler slowed that run {self.traced_wall_s / median(timed_walls):.2g}x"
        return (f"this program records {self.events:,} trace events a run, whose reading would take about "
                f"{format_seconds(self.reading_s)} a run: the last warm-up run was profiled for the per-op times and "
                f"what ran (device time {format_seconds(device_s)}{slowed}), and the timed runs ran without the "
                f"profiler, each timed by the wall clock around it, which can only read a run as slower than the "
                f"device")


EVERY_RUN = TracePlan()


def trace_plan(events: int | None, run_wall_s: float, most_runs: int, *, forced: bool) -> TracePlan:
    """The plan for a program that recorded ``events`` events in one run of ``run_wall_s`` (None: not probed),
    timed in at most ``most_runs`` runs. ``forced``: the profiler must time every run (``timer="profiler"``, or a
    program whose processes match their device times run by run)."""
    if events is None or forced:
        return EVERY_RUN
    reading = events * READ_S_PER_EVENT
    if reading <= run_wall_s or reading * most_runs <= READ_FLOOR_S:
        return TracePlan(None, events, reading)
    return TracePlan(1, events, reading)


TimerKind = Literal["wall clock", "every run traced", "one run traced", "processes in lockstep"]
"""How a program's runs are timed: each by the wall clock around it; each read from the trace of a profiler session
around them all; by the wall clock, with one run (the last warm-up run) traced for its ops and what ran (too many
events to read every run); or every run traced in every process of a program that spans processes, which stop
together."""


def choose_timer(asked: str, lockstep: bool, plan: TracePlan) -> TimerKind:
    """The timer, chosen once: the wall clock where asked (``timer="wallclock"``), in lockstep where the program's
    processes decide together, one run traced where ``plan`` (from the probed warm-up run) says reading every run
    would cost too much, else every run traced."""
    if asked == "wallclock":
        return "wall clock"
    if lockstep:
        return "processes in lockstep"
    return "one run traced" if plan.traced is not None else "every run traced"
