"""The settings of one measurement, grouped (:class:`MeasureOptions`), and how a program is timed
(:class:`TimingSettings` and its defaults, the one place they are written). No JAX."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from ..hardware.spec import HardwareSpec
from ..kinds import CEILINGS_MODES, FIRST_TOUCH_MODES, TIMERS, CeilingsMode, FirstTouchMode, Timer, choose

__all__ = ["TimingSettings", "DEFAULT_TIMING", "TIMING_KEYWORDS", "MeasureOptions", "GivenCounts", "HardwareChoice",
           "MEASURE_OPTIONS"]


@dataclass(frozen=True)
class TimingSettings:
    """How to time a program. ``timer`` is "auto" (profiler, wall clock if it cannot be used),
    "profiler" (an error if it cannot be used) or "wallclock"."""

    warmup: int = 2
    min_runs: int = 5
    max_runs: int = 100
    budget_s: float = 1.0
    target_spread: float = 0.02
    timer: Timer = "auto"
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
        choose(self.timer, TIMERS, "timer")


DEFAULT_TIMING = TimingSettings()
# The settings a user may set on measure(), the marker and the fixture call.
TIMING_KEYWORDS = ("warmup", "min_runs", "max_runs", "budget_s", "target_spread", "min_time_s", "timer")


def timing_defaults_text() -> str:
    """``warmup=2, min_runs=5, ...``: the defaults as a signature shows them."""
    values: dict[str, Any] = {f.name: getattr(DEFAULT_TIMING, f.name) for f in fields(TimingSettings)}
    return ", ".join(f"{k}={values[k]!r}" for k in TIMING_KEYWORDS)


def _non_negative(keyword: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{keyword}= must be a non-negative number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class GivenCounts:
    """Analytic counts from the user, replacing the compiler's (None: the compiler's)."""

    flops: float | None = None
    bytes: float | None = None
    transcendentals: float | None = None


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
    sampling aims at, and whether the roofline charges the first touch of fresh pages."""

    name: str | None = None
    counts: GivenCounts = GivenCounts()
    hardware: HardwareChoice = HardwareChoice()
    timing: TimingSettings = DEFAULT_TIMING
    threshold: float | None = None
    first_touch: FirstTouchMode = "include"

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> MeasureOptions:
        """From ``measure()``'s keywords (:data:`MEASURE_OPTIONS`), each checked; a bad value is a ValueError
        naming it."""
        unknown = sorted(set(keywords) - set(MEASURE_OPTIONS))
        if unknown:
            raise TypeError(f"measure() got an unexpected keyword {unknown[0]!r}")
        k = dict(keywords)
        counts = GivenCounts(*(_non_negative(n, k.get(n)) for n in ("flops", "bytes", "transcendentals")))
        hardware = HardwareChoice(k.get("hardware"), k.get("hardware_file"),
                                  choose(k.get("ceilings", "auto"), CEILINGS_MODES, "ceilings"),
                                  k.get("recalibrate", False))
        timing = replace(DEFAULT_TIMING, **{n: k[n] for n in TIMING_KEYWORDS if n in k})
        name = k.get("name")
        if name is not None and not isinstance(name, str):
            raise ValueError(f"name= must be a string, got {name!r}")
        return cls(name, counts, hardware, timing, _non_negative("threshold", k.get("threshold")),
                   choose(k.get("first_touch", "include"), FIRST_TOUCH_MODES, "first_touch"))


# The keywords measure() takes for itself; any other goes to the kernel (see pytest_roofline.calls).
MEASURE_OPTIONS = ("name", "flops", "bytes", "transcendentals", "hardware", "hardware_file", "ceilings",
                   "recalibrate", *TIMING_KEYWORDS, "threshold", "first_touch")
