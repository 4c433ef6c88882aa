"""Running a compiled program N times under the profiler and turning the trace into device times.

One profiler session covers all timed runs. Runs stop adaptively: after ``min_runs`` and ``min_time_s``, as
soon as the relative interquartile range of the wall-clock times is within ``target_spread``, or when
``budget_s`` of running (untimed input copies included) is spent, or at ``max_runs``. Device times then come
from the trace (:mod:`pytest_roofline.analysis.trace`); the host wall clock around each call
(``block_until_ready``) is kept beside them and is the fallback when the profiler cannot be used, with the
reason recorded. Imports JAX only to open the profiler and read its trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..analysis.runs import Timing, relative_iqr
from ..analysis.trace import RunTimes, TraceError, flatten, run_times
from .settings import TimingSettings

__all__ = ["Timed", "time_program"]


@dataclass(frozen=True)
class Timed:
    """The timing of a program, and what the profiler recorded: the serialized trace and this program's
    events grouped by run (None when the wall clock was used)."""

    timing: Timing
    xspace: bytes = b""
    events: RunTimes | None = None


def _run_adaptively(prepare: Callable[[], Any], execute: Callable[[Any], Any],
                    settings: TimingSettings, max_runs: int | None = None) -> list[float]:
    walls: list[float] = []
    started = time.perf_counter()
    while len(walls) < (max_runs or settings.max_runs):
        args = prepare()
        t0 = time.perf_counter()
        outputs = execute(args)
        wall = time.perf_counter() - t0
        # Freeing a large output (munmap on a CPU) is host work of the harness: keep it out of the clock.
        del outputs, args
        walls.append(wall)
        # The budget counts everything the loop spends, fresh donated copies included.
        spent = time.perf_counter() - started
        if len(walls) >= settings.min_runs:
            settled = spent >= settings.min_time_s and relative_iqr(walls) <= settings.target_spread
            if spent >= settings.budget_s or settled:
                break
    return walls


def time_program(prepare: Callable[[], Any], execute: Callable[[Any], Any], module_name: str,
                 platform: str, settings: TimingSettings) -> Timed:
    """Warm up, then time ``execute(prepare())`` runs; ``prepare`` (fresh donated inputs) is not timed.

    ``execute`` must block until the program's outputs are ready, and return them: they are freed after
    the clock stops.
    """
    for _ in range(settings.warmup):
        execute(prepare())
    if settings.timer == "wallclock":
        walls = _run_adaptively(prepare, execute, settings)
        return _wallclock(walls, "wall clock requested (timer='wallclock')")

    from .profiler import ProfilerSession, ProfilerUnavailable

    try:
        session = ProfilerSession()
    except ProfilerUnavailable as exc:
        if settings.timer == "profiler":
            raise
        walls = _run_adaptively(prepare, execute, settings)
        return _wallclock(walls, str(exc))
    try:
        walls = _run_adaptively(prepare, execute, settings, settings.profiled_max_runs())
    except BaseException:
        session.discard()  # never leave a profiler session open, also when the kernel raises
        raise
    try:
        xspace = session.stop()
    except ProfilerUnavailable as exc:
        if settings.timer == "profiler":
            raise
        return _wallclock(walls, str(exc))

    try:
        from jax.profiler import ProfileData

        profile = ProfileData.from_serialized_xspace(xspace)
        found: RunTimes = run_times(flatten(profile), module_name, platform, len(walls))
    except TraceError as exc:
        if settings.timer == "profiler":
            raise ProfilerUnavailable(f"trace unusable: {exc}") from None
        return _wallclock(walls, f"trace unusable: {exc}")
    return Timed(Timing(found.per_run_s, tuple(walls), "profiler", "", found.method), xspace, found)


def _wallclock(walls: list[float], reason: str) -> Timed:
    return Timed(Timing(tuple(walls), tuple(walls), "wallclock", reason))
