"""The timed runs of one measurement and their statistics: median, minimum and spread. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from ..kinds import TimerUsed

__all__ = ["Timing", "relative_iqr"]


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
class Timing:
    """Per-run times: device times from the trace, or the host wall clock when the profiler could not be used
    (``fallback_reason`` says why). The wall clock around each run is always kept beside them."""

    per_run_s: tuple[float, ...]
    wall_per_run_s: tuple[float, ...]
    timer: TimerUsed
    fallback_reason: str = ""
    method: str = ""  # how the trace told the runs apart

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

    def to_dict(self) -> dict[str, Any]:
        return {"device_time_s": self.median_s, "per_run_s": list(self.per_run_s), "min_s": self.min_s,
                "spread": self.spread, "runs": self.runs, "timer": self.timer,
                "timer_fallback_reason": self.fallback_reason, "trace_method": self.method,
                "wall_min_s": self.wall_min_s, "wall_per_run_s": list(self.wall_per_run_s)}
