"""How a program's timed runs are timed, chosen once (:func:`time_program`): the warm-up, its last run probed under the
profiler; then the pure rule (:func:`~pytest_roofline.analysis.runs.trace_plan.choose_timer`) picks one timer, an
object with one method, ``time(loop)``: :class:`WallClock`, :class:`EveryRunTraced` (also for processes in
lockstep) or :class:`OneRunTraced`. The runs themselves are :class:`Loop`'s, the one place they are made
(:mod:`.timing` holds the loop, the runs' records and the trace reading). Imports JAX only to open the profiler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..analysis.runs.time_spent import phase
from ..analysis.runs.trace_plan import EVERY_RUN, TimerKind, TracePlan, choose_timer, trace_plan
from .options import TimingSettings
from .timing import (
    WARM_RUNS,
    Agree,
    Beside,
    CacheRuns,
    Runs,
    Settled,
    Timed,
    by_wall_clock,
    from_trace,
    run_adaptively,
    warm_up,
)

if TYPE_CHECKING:
    from .profiler import Probe

__all__ = ["Loop", "Timer", "WallClock", "EveryRunTraced", "OneRunTraced", "time_program", "timer_for"]


@dataclass(frozen=True)
class Loop:
    """A program's runs, as every timer makes them: ``prepare`` (fresh donated inputs, untimed) and ``execute``
    (blocks until the outputs are ready, and returns them: they are freed after the clock stops), its name in the
    trace, the platform, the settings; ``beside``: a reference kernel run before the first run, after a run once its
    ``every_s`` has passed, and after the last; ``settled``: when the runs may stop; ``cache``: the eviction before
    each run and the warm runs that check it; ``agree``: the processes of a multi-process program decide together
    when the runs stop, so that each runs the same number."""

    prepare: Callable[[], Any]
    execute: Callable[[Any], Any]
    module_name: str
    platform: str
    settings: TimingSettings
    _: KW_ONLY
    beside: Beside | None = None
    settled: Settled | None = None
    cache: CacheRuns = WARM_RUNS
    agree: Agree | None = None

    def runs(self, max_runs: int | None = None) -> Runs:
        """The timed runs (at most ``max_runs``, else the settings' maximum)."""
        return run_adaptively(self.prepare, self.execute, self.settings, max_runs, self.beside, self.settled,
                               cache=self.cache, agree=self.agree, label=self.module_name)

    def read(self, xspace: bytes, runs: Runs, *, plan: TracePlan = EVERY_RUN, profile: Any = None) -> Timed:
        """The runs' device times read from a trace (see :func:`.timing.from_trace`)."""
        with phase("trace reading"):
            return from_trace(xspace, runs, self.module_name, self.platform, self.settings, self.beside, plan=plan,
                               profile=profile)


class Timer(Protocol):
    """One way to time a :class:`Loop`: ``kind`` names it, ``time`` makes the runs and says what they took."""

    @property
    def kind(self) -> TimerKind: ...

    def time(self, loop: Loop) -> Timed: ...


@dataclass(frozen=True)
class WallClock:
    """Each run timed by the wall clock around it; ``reason``: why, as the result says it."""

    reason: str
    kind: TimerKind = "wall clock"

    def time(self, loop: Loop) -> Timed:
        return by_wall_clock(loop.runs(), self.reason)


@dataclass(frozen=True)
class OneRunTraced:
    """The runs timed by the wall clock, the probed warm-up run's trace read for the ops and what ran: every run's
    trace would take too long to read (``plan`` says how long)."""

    probe: Probe
    plan: TracePlan
    kind: TimerKind = "one run traced"

    def time(self, loop: Loop) -> Timed:
        runs = loop.runs()
        return loop.read(self.probe.xspace, runs, plan=replace(self.plan, traced_wall_s=self.probe.wall),
                         profile=self.probe.profile)


@dataclass(frozen=True)
class EveryRunTraced:
    """One profiler session around every timed run, each run's device time read from its trace; the wall clock
    where the profiler cannot be used or its trace read (unless ``required``: ``timer="profiler"``), with why. In
    lockstep (``kind``), every process of the program times its runs so, stopping together."""

    required: bool
    kind: TimerKind = "every run traced"

    def time(self, loop: Loop) -> Timed:
        from .profiler import ProfilerSession, ProfilerUnavailable

        try:
            with phase("profiler"):
                session = ProfilerSession()
        except ProfilerUnavailable as exc:
            if self.required:
                raise
            return WallClock(str(exc)).time(loop)
        try:
            runs = loop.runs(loop.settings.profiled_max_runs())
        except BaseException:
            session.discard()  # never leave a profiler session open, also when the kernel raises
            raise
        try:
            with phase("profiler"):
                xspace = session.stop()
        except ProfilerUnavailable as exc:
            if self.required:
                raise
            return by_wall_clock(runs, str(exc))
        timed = loop.read(xspace, runs)
        return replace(timed, timer=self.kind) if timed.timer == "every run traced" else timed


def timer_for(kind: TimerKind, loop: Loop, probe: Probe | None, plan: TracePlan) -> Timer:
    """The timer object of ``kind``."""
    if kind == "wall clock":
        return WallClock("wall clock requested (timer='wallclock')")
    if kind == "one run traced" and probe is not None:
        return OneRunTraced(probe, plan)
    return EveryRunTraced(loop.settings.timer == "profiler",
                          "processes in lockstep" if kind == "processes in lockstep" else "every run traced")


def time_program(loop: Loop) -> Timed:
    """Warm up (the last warm-up run profiled to count its events, :mod:`~pytest_roofline.analysis.runs.trace_plan`),
    choose the timer once, and time the runs with it."""
    settings = loop.settings
    asked, lockstep = settings.timer, loop.agree is not None
    probe = warm_up(loop.prepare, loop.execute, settings, loop.beside, probe=asked != "wallclock" and not lockstep,
                     label=loop.module_name)
    plan = trace_plan(probe.events if probe else None, probe.wall if probe else 0.0, settings.profiled_max_runs(),
                      forced=asked == "profiler" or lockstep)
    return timer_for(choose_timer(asked, lockstep, plan), loop, probe, plan).time(loop)
