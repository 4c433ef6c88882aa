"""Order statistics used across layers: a linear-interpolation quantile and the relative interquartile range.
Pure."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

__all__ = ["quantile", "relative_iqr"]


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, interpolated linearly between order statistics."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def relative_iqr(values: Sequence[float]) -> float:
    """(75th - 25th percentile) / median: the spread figure reported for a measurement."""
    if len(values) < 2:
        return 0.0
    mid = median(values)
    return (quantile(values, 0.75) - quantile(values, 0.25)) / mid if mid > 0 else 0.0
