"""Running a compiled program N times under the profiler and turning the trace into device times.

One profiler session covers all timed runs. Runs stop adaptively: after ``min_runs`` and ``min_time_s``, as soon as
the relative interquartile range of the wall-clock times is within ``target_spread``, or when ``budget_s`` of
running (untimed input copies included) is spent, or at ``max_runs``. Device times then come from the trace
(:mod:`pytest_roofline.trace`); the host wall clock around each call (``block_until_ready``) is kept
beside them and is the fallback when the profiler cannot be used, with the reason recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from .trace import RunTimes, TraceError, flatten, run_times

__all__ = ["TimingSettings", "Timing", "ProfilerUnavailable", "time_program", "relative_iqr"]


def relative_iqr(values: Sequence[float]) -> float:
    """(75th - 25th percentile) / median: the spread figure reported for a measurement."""
    if len(values) < 2:
        return 0.0
    ordered = sorted(values)

    def quantile(q: float) -> float:
        pos = q * (len(ordered) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(ordered) - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

    mid = median(ordered)
    return (quantile(0.75) - quantile(0.25)) / mid if mid > 0 else 0.0


@dataclass(frozen=True)
class TimingSettings:
    """How to time a program. ``timer`` is "auto" (profiler, wall clock if it cannot be used),
    "profiler" (an error if it cannot be used) or "wallclock"."""

    warmup: int = 2
    min_runs: int = 5
    max_runs: int = 100
    budget_s: float = 1.0
    target_spread: float = 0.02
    timer: str = "auto"
    # Sample at least this long before the spread may stop the runs: a fast kernel's first few runs can
    # agree with each other inside one transient of a noisy machine.
    min_time_s: float = 0.2
    # Reading a trace costs about a second per 50k events: runs under the profiler are capped so that
    # runs x ops_per_run stays under this (never below min_runs).
    max_trace_events: int = 100_000
    ops_per_run: int = 1

    def profiled_max_runs(self) -> int:
        return max(self.min_runs, min(self.max_runs, self.max_trace_events // max(self.ops_per_run, 1)))

    def __post_init__(self) -> None:
        if self.warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {self.warmup}")
        if self.min_runs < 1:
            raise ValueError(f"min_runs must be >= 1, got {self.min_runs}")
        if self.max_runs < self.min_runs:
            raise ValueError(f"max_runs ({self.max_runs}) must be >= min_runs ({self.min_runs})")
        if not self.budget_s > 0:
            raise ValueError(f"budget_s must be > 0, got {self.budget_s}")
        if not self.min_time_s >= 0:
            raise ValueError(f"min_time_s must be >= 0, got {self.min_time_s}")
        if not self.target_spread >= 0:
            raise ValueError(f"target_spread must be >= 0, got {self.target_spread}")
        if self.timer not in ("auto", "profiler", "wallclock"):
            raise ValueError(f"timer must be 'auto', 'profiler' or 'wallclock', got {self.timer!r}")


@dataclass(frozen=True)
class Timing:
    per_run_s: tuple[float, ...]  # the times the result uses (device times, or wall times on fallback)
    wall_per_run_s: tuple[float, ...]  # host wall clock around each call, always recorded
    timer: str  # "profiler" or "wallclock"
    fallback_reason: str  # why the wall clock was used ("" when the profiler was)
    method: str  # how device times were read from the trace
    trace: Any = None  # the raw ProfileData when the profiler ran
    xspace: bytes = b""  # the serialized trace, for saving
    found: RunTimes | None = None  # this program's events grouped by run (per-op analysis)
    exporter: Callable[[bytes, str], None] | None = None  # writes TensorBoard/XProf files for an XSpace

    @property
    def runs(self) -> int:
        return len(self.per_run_s)

    @property
    def median_s(self) -> float:
        return median(self.per_run_s)

    @property
    def min_s(self) -> float:
        return min(self.per_run_s)

    @property
    def spread(self) -> float:
        return relative_iqr(self.per_run_s)

    @property
    def wall_min_s(self) -> float:
        return min(self.wall_per_run_s)


class ProfilerUnavailable(RuntimeError):
    """The profiler could not be used; the message is the reason."""


class _Session:
    """A JAX profiler session kept in memory; always stopped, also when the program raises."""

    def __init__(self) -> None:
        from jax._src.lib import _profiler  # private but stable since 0.4; see JAX_NOTES.md

        options = _profiler.ProfileOptions()
        options.python_tracer_level = 0  # the Python tracer costs time per call and adds nothing here
        options.host_tracer_level = 2
        options.raise_error_on_start_failure = True
        try:
            self._session = _profiler.ProfilerSession(options)
        except Exception as exc:  # noqa: BLE001 - the profiler raises its own runtime error types
            raise ProfilerUnavailable(f"the profiler could not start: {exc}") from None
        self._stopped = False

    def stop(self) -> bytes:
        self._stopped = True
        try:
            return bytes(self._session.stop())
        except Exception as exc:  # noqa: BLE001
            raise ProfilerUnavailable(f"the profiler could not stop: {exc}") from None

    def export(self, xspace: bytes, directory: str) -> None:
        """Write ``plugins/profile/<timestamp>/<host>.xplane.pb`` and ``.trace.json.gz`` under ``directory``."""
        self._session.export(xspace, directory)

    def discard(self) -> None:
        if not self._stopped:
            self._stopped = True
            try:
                self._session.stop()
            except Exception:  # noqa: BLE001 - already failing; the first error is the one to report
                pass


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
                 platform: str, settings: TimingSettings) -> Timing:
    """Warm up, then time ``execute(prepare())`` runs; ``prepare`` (fresh donated inputs) is not timed.

    ``execute`` must block until the program's outputs are ready, and return them: they are freed after
    the clock stops.
    """
    for _ in range(settings.warmup):
        execute(prepare())
    if settings.timer == "wallclock":
        walls = _run_adaptively(prepare, execute, settings)
        return Timing(tuple(walls), tuple(walls), "wallclock", "wall clock requested (timer='wallclock')", "")

    try:
        session = _Session()
    except ProfilerUnavailable as exc:
        if settings.timer == "profiler":
            raise
        walls = _run_adaptively(prepare, execute, settings)
        return Timing(tuple(walls), tuple(walls), "wallclock", str(exc), "")
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
        return Timing(tuple(walls), tuple(walls), "wallclock", str(exc), "")

    try:
        from jax.profiler import ProfileData

        profile = ProfileData.from_serialized_xspace(xspace)
        found: RunTimes = run_times(flatten(profile), module_name, platform, len(walls))
    except TraceError as exc:
        if settings.timer == "profiler":
            raise ProfilerUnavailable(f"trace unusable: {exc}") from None
        return Timing(tuple(walls), tuple(walls), "wallclock", f"trace unusable: {exc}", "")
    return Timing(found.per_run_s, tuple(walls), "profiler", "", found.method, profile, xspace, found,
                  session.export)
