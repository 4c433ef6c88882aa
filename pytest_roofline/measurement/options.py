"""The settings of one measurement, grouped (:class:`MeasureOptions`), and how a program is timed
(:class:`TimingSettings` and its defaults, the one place they are written). No JAX."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from ..base import values
from ..base.kinds import (
    CACHE_MODES,
    CEILINGS_MODES,
    COUNTS_FROM,
    FIRST_TOUCH_MODES,
    TIMERS,
    CacheMode,
    CeilingsMode,
    CountsFrom,
    FirstTouchMode,
    Timer,
    choose,
)
from ..hardware.spec import HardwareSpec

__all__ = ["TimingSettings", "DEFAULT_TIMING", "TIMING_KEYWORDS", "MeasureOptions", "GivenCounts", "HardwareChoice",
           "MEASURE_OPTIONS", "OPTION_CHECKS", "check_options", "check_settings"]


# The fewest runs a profiled measurement makes when its program's events would fill the trace's budget sooner.
PROFILED_LEAST_RUNS = 3


@dataclass(frozen=True)
class TimingSettings:
    """How to time a program. ``timer`` is "auto" (profiler, wall clock if it cannot be used),
    "profiler" (an error if it cannot be used) or "wallclock"."""

    warmup: int = 1
    min_runs: int = 5
    max_runs: int = 100
    budget_s: float = 1.0
    target_spread: float = 0.02
    timer: Timer = "auto"
    # Sample at least this long before the spread may stop the runs: a fast kernel's first few runs can
    # agree with each other inside one transient of a noisy machine.
    min_time_s: float = 0.5
    # Reading a trace costs about a second per 50k events: runs under the profiler are capped so that
    # runs x ops_per_run stays under this (never below min_runs).
    max_trace_events: int = 100_000
    ops_per_run: int = 1

    def profiled_max_runs(self) -> int:
        """The most runs under the profiler: within the trace's budget of events, but never fewer than
        ``min_runs`` or 3, whichever is less (a program of 25,000 ops per run: 3 runs, 150,000 events)."""
        least = min(self.min_runs, PROFILED_LEAST_RUNS)
        return max(least, min(self.max_runs, self.max_trace_events // max(self.ops_per_run, 1)))

    def warm_check_runs(self, wanted: int) -> int:
        """How many of ``wanted`` warm runs check a cold measurement: fewer (at least 2) where the timed runs
        already fill the trace's budget (a program of tens of thousands of ops per run)."""
        left = self.max_trace_events // max(self.ops_per_run, 1) - self.min_runs
        return max(min(wanted, left), min(wanted, 2))

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
        choose(self.timer, TIMERS, "timer")


DEFAULT_TIMING = TimingSettings()
# The settings a user may set on measure(), the marker and the fixture call.
TIMING_KEYWORDS = ("warmup", "min_runs", "max_runs", "budget_s", "target_spread", "min_time_s", "timer")


def timing_defaults_text() -> str:
    """``warmup=1, min_runs=5, ...``: the defaults as a signature shows them."""
    values: dict[str, Any] = {f.name: getattr(DEFAULT_TIMING, f.name) for f in fields(TimingSettings)}
    return ", ".join(f"{k}={values[k]!r}" for k in TIMING_KEYWORDS)


# The check of each measurement setting a marker, a fixture call or measure() may give, by keyword: the one
# place a setting's checks are listed (each written in pytest_roofline.base.values).
OPTION_CHECKS: dict[str, Callable[[Any], Any]] = {
    "flops": values.count,
    "bytes": values.count,
    "transcendentals": values.count,
    "warmup": values.non_negative_int,
    "min_runs": values.positive_int,
    "max_runs": values.positive_int,
    "budget_s": values.positive_number,
    "target_spread": values.count,
    "min_time_s": values.count,
    "timer": values.one_of(TIMERS),
    "ceilings": values.one_of(CEILINGS_MODES),
    "first_touch": values.one_of(FIRST_TOUCH_MODES),
    "cache": values.one_of(CACHE_MODES),
    "counts": values.one_of(COUNTS_FROM),
    "threshold": values.count,
    "name": values.name,
}


def check_options(keywords: Mapping[str, Any], describe: Callable[[str, Any], str]) -> dict[str, Any]:
    """The settings among ``keywords`` that :data:`OPTION_CHECKS` knows, each checked (None: not given); a bad
    value is a ValueError whose text starts with ``describe(keyword, value)`` (where it came from)."""
    checked = {}
    for key, check in OPTION_CHECKS.items():
        value = keywords.get(key)
        if value is None:
            continue
        try:
            checked[key] = check(value)
        except ValueError as exc:
            raise ValueError(f"{describe(key, value)} {exc}") from None
    low, high = checked.get("min_runs", DEFAULT_TIMING.min_runs), checked.get("max_runs", DEFAULT_TIMING.max_runs)
    if high < low:
        raise ValueError(f"{describe('max_runs', high)} must be at least min_runs ({low})")
    return checked


@dataclass(frozen=True)
class GivenCounts:
    """Analytic counts from the user, replacing the compiler's (None: the compiler's)."""

    flops: float | None = None
    bytes: float | None = None
    transcendentals: float | None = None

    @property
    def values(self) -> tuple[float | None, float | None, float | None]:
        """(flops, bytes, transcendentals), in the order :func:`~..analysis.model.program_model` takes them."""
        return self.flops, self.bytes, self.transcendentals


@dataclass(frozen=True)
class HardwareChoice:
    """Which hardware entry and ceilings: ``name`` forces a table entry (or is a ``HardwareSpec``), ``file`` adds
    devices, ``ceilings`` picks the mode, ``recalibrate`` re-measures the cached calibration."""

    name: str | HardwareSpec | None = None
    file: str | os.PathLike[str] | None = None
    ceilings: CeilingsMode = "auto"
    recalibrate: bool | str = False


@dataclass(frozen=True)
class MeasureOptions:
    """Every setting of one measurement, grouped: the label, the counts, the hardware, the timing, the threshold
    sampling aims at, whether the roofline charges the first touch of fresh pages, the cache state, and whose FLOPs
    are judged (the compiled program's, or the source's)."""

    name: str | None = None
    counts: GivenCounts = GivenCounts()
    hardware: HardwareChoice = HardwareChoice()
    timing: TimingSettings = DEFAULT_TIMING
    threshold: float | None = None
    first_touch: FirstTouchMode = "include"
    cache: CacheMode = "auto"
    counts_from: CountsFrom = "compiled"  # counts="source": judged on the FLOPs the source asks for

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> MeasureOptions:
        """From ``measure()``'s keywords (:data:`MEASURE_OPTIONS`), each checked; a bad value is a ValueError
        naming it."""
        return cls().overridden(check_settings(keywords, lambda key, value: f"{key}="))

    def overridden(self, checked: Mapping[str, Any]) -> MeasureOptions:
        """These options with the settings in ``checked`` (measure()'s keywords, already checked by
        :func:`check_settings` or :func:`check_options`; None: not given) in their place."""
        given = {k: v for k, v in checked.items() if v is not None}
        counts = GivenCounts(*(given.get(k, v) for k, v in zip(("flops", "bytes", "transcendentals"),
                                                              self.counts.values, strict=True)))
        h = self.hardware
        hardware = HardwareChoice(given.get("hardware", h.name), given.get("hardware_file", h.file),
                                  given.get("ceilings", h.ceilings), given.get("recalibrate", h.recalibrate))
        timing = replace(self.timing, **{n: given[n] for n in TIMING_KEYWORDS if n in given})
        return MeasureOptions(given.get("name", self.name), counts, hardware, timing,
                              given.get("threshold", self.threshold), given.get("first_touch", self.first_touch),
                              given.get("cache", self.cache), given.get("counts", self.counts_from))


def check_settings(keywords: Mapping[str, Any], describe: Callable[[str, Any], str]) -> dict[str, Any]:
    """Every setting among ``keywords`` (names of :data:`MEASURE_OPTIONS`), checked: those :data:`OPTION_CHECKS`
    knows by their check, the hardware's as given; an unknown name is a TypeError, a bad value a ValueError."""
    unknown = sorted(set(keywords) - set(MEASURE_OPTIONS))
    if unknown:
        raise TypeError(f"measure() got an unexpected keyword {unknown[0]!r}")
    return {**{k: keywords[k] for k in ("hardware", "hardware_file", "recalibrate") if k in keywords},
            **check_options(keywords, describe)}


# The keywords measure() takes for itself; any other goes to the kernel (see pytest_roofline.base.calls).
MEASURE_OPTIONS = ("name", "flops", "bytes", "transcendentals", "hardware", "hardware_file", "ceilings",
                   "recalibrate", *TIMING_KEYWORDS, "threshold", "first_touch", "cache", "counts")
