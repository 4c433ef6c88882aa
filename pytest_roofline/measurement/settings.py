"""How a program is timed: :class:`TimingSettings` and its defaults, the one place they are written. No JAX."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..kinds import TIMERS, Timer, choose

__all__ = ["TimingSettings", "DEFAULT_TIMING", "TIMING_KEYWORDS"]


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
