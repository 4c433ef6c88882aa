"""Regression detection on one series of utilizations, oldest first (pure: numbers in, findings out).

Two methods, for two questions:

* **Is the latest run a regression?** A robust gate: the baseline window is the runs before the latest one
  since the last change point (at most :data:`WINDOW`, at least :data:`MIN_WINDOW`); its median is the
  baseline and its median absolute deviation (times 1.4826, relative to the median) the noise ``s``. The
  latest run is a regression when it lies below the baseline by more than
  ``max(floor, Z * s * sqrt(1 + pi / (2 n)))`` -- the noise of one new run plus that of the window's median.
  That drop is also the series' **minimum detectable drop**: a smaller one cannot be told from noise.
* **Where did the series change?** E-divisive means (Matteson and James, "A nonparametric approach for
  multiple change point analysis of multivariate data", JASA 2014) with the permutation test replaced by
  Welch's t-test, as Hunter/Otava do (Fleming et al., ICPE 2023): the split maximising the energy
  statistic ``Q = m k / (m + k) * (2/(m k) sum|x-y| - mean pairwise |x-x'| - mean pairwise |y-y'|)`` is kept
  when the t-test between its two sides gives p < :data:`P_MAX`, and both sides are searched again. A
  segment holds at least :data:`MIN_SEGMENT` runs, so one outlier night is never a segment of its own.

A series is in regression when its latest run fails the gate, or when its last change point is a drop
beyond the floor (the slower level has lasted :data:`MIN_SEGMENT` runs or more: the t-test sees what the
one-run gate cannot). The defaults and the detection rates they give on synthetic series are stated in
``tests/analysis/verdict/test_detect.py`` and docs/ci.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Literal

__all__ = ["WINDOW", "MIN_WINDOW", "Z", "FLOOR", "P_MAX", "MIN_SEGMENT", "Gate", "GateState", "ChangePoint", "Finding",
           "relative_noise", "gate", "history_gate", "change_points", "welch_p", "judge_series"]

WINDOW = 10  # runs in the baseline window (about two weeks of nights)
MIN_WINDOW = 3  # fewer runs give no noise estimate: the gate is not applied
Z = 4.0  # gate width in robust standard deviations (MAD estimates from ~10 runs are themselves noisy)
FLOOR = 0.05  # the smallest drop ever flagged: a 5% change in utilization
P_MAX = 0.001  # significance of a change point (Welch's t-test between the two sides)
MIN_SEGMENT = 3  # runs on each side of a change point

MAD_TO_SIGMA = 1.4826  # the MAD of a normal distribution is 0.6745 sigma


def relative_noise(values: Sequence[float]) -> float:
    """The robust standard deviation of ``values`` relative to their median (1.4826 MAD / median)."""
    centre = median(values)
    if centre <= 0:
        return 0.0
    return MAD_TO_SIGMA * median(abs(v - centre) for v in values) / centre


GateState = Literal["regression", "too noisy", "undecided", "improved", "ok"]
"""A value against a :class:`Gate`; "too noisy" and "undecided" are neither a pass nor a regression."""


@dataclass(frozen=True)
class Gate:
    """The level a run is judged against and how far below it a run may fall."""

    baseline: float  # median of the baseline values
    runs: int  # how many values the baseline is made of
    noise: float  # relative robust standard deviation (0 when unknown)
    allowed_drop: float  # max(floor, z * noise * sqrt(1 + pi/(2n))): also the minimum detectable drop
    floor: float
    z: float

    def drop(self, value: float) -> float:
        """Relative drop of ``value`` below the baseline (negative: above it)."""
        return 1.0 - value / self.baseline if self.baseline > 0 else 0.0

    def regressed(self, value: float) -> bool:
        return self.drop(value) > self.allowed_drop

    @property
    def too_noisy(self) -> bool:
        """The gate is as wide as the baseline itself: no drop, not even to zero, could fire it."""
        return self.allowed_drop >= 1.0

    def state(self, value: float) -> GateState:
        """``value`` against the gate: a regression; too noisy to judge (a gate that cannot fire); undecided (a
        drop beyond the floor that the noise hides); improved (a rise beyond the gate); else ok."""
        drop = self.drop(value)
        if self.regressed(value):
            return "regression"
        if self.too_noisy:
            return "too noisy"
        if drop > self.floor:
            return "undecided"
        return "improved" if drop < -self.allowed_drop else "ok"

    def state_text(self, value: float) -> str:
        """The words for :meth:`state` where it is neither a regression nor ok: both figures."""
        state, drop = self.state(value), self.drop(value)
        if state == "too noisy":
            return f"too noisy to judge ({self.describe()})"
        if state == "undecided":
            return (f"undecided: dropped {drop:.1%}, beyond the {self.floor:.0%} floor, inside its {self.describe()}: "
                    f"the noise hides whether it is a regression")
        return state

    def describe(self) -> str:
        noise = (f"noise {self.noise:.1%} over the runs" if self.runs >= MIN_WINDOW
                 else f"noise {self.noise:.1%} from the 95% intervals")
        widened = self.allowed_drop > self.floor
        why = f"{self.z:g} x {noise}" if widened else f"floor {self.floor:.0%}; {noise}"
        return f"gate {self.allowed_drop:.1%} ({why})"


def gate(values: Sequence[float], floor: float = FLOOR, z: float = Z, extra_noise: float = 0.0,
         noise: float | None = None) -> Gate:
    """The gate from baseline ``values``. ``noise`` (relative) replaces their own spread when given (a
    longer history estimates it better). With fewer than :data:`MIN_WINDOW` values their spread says nothing,
    so the noise is ``extra_noise`` alone (e.g. from the measurements' own confidence intervals)."""
    if not values:
        raise ValueError("a gate needs at least one baseline value")
    n = len(values)
    if noise is None:
        noise = relative_noise(values) if n >= MIN_WINDOW else 0.0
    noise = math.hypot(noise, extra_noise)
    spread = z * noise * math.sqrt(1 + math.pi / (2 * n)) if n >= MIN_WINDOW else z * noise
    return Gate(median(values), n, noise, max(floor, spread), floor, z)


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of Welch's t-test for equal means of ``a`` and ``b`` (each at least 2 values)."""
    na, nb = len(a), len(b)
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((x - ma) ** 2 for x in a) / (na - 1)
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1)
    se2 = va / na + vb / nb
    scale = max(abs(ma), abs(mb), 1e-300)
    if se2 <= (1e-12 * scale) ** 2:  # both sides constant, up to the rounding of their sums (0.1 x 400: not exact)
        return 1.0 if abs(ma - mb) <= 1e-9 * scale else 0.0
    t = (ma - mb) / math.sqrt(se2)
    df = se2 ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    return _betainc(df / 2, 0.5, df / (df + t * t))


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (continued fraction, modified Lentz)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return front * result / a


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first run of the new level
    before: float  # median of the segment before
    after: float  # median of the segment after
    p: float

    @property
    def change(self) -> float:
        """Relative change of the median (negative: a drop)."""
        return self.after / self.before - 1.0 if self.before > 0 else 0.0


def _pair_sums(x: Sequence[float]) -> list[float]:
    """``out[t]`` = the sum of ``|x_a - x_b|`` over the pairs ``a < b < t``, for t = 0..n: each new value's distances
    to those before it from a Fenwick tree of their counts and sums by rank (O(n log n) time, O(n) memory; a table of
    every pair had taken n x n floats: 10,000 runs, gigabytes)."""
    ranks = {v: i + 1 for i, v in enumerate(sorted(set(x)))}
    size = len(ranks)
    counts, sums = [0] * (size + 1), [0.0] * (size + 1)
    out, total, seen, seen_sum = [0.0], 0.0, 0, 0.0
    for v in x:
        r, below, below_sum = ranks[v], 0, 0.0
        i = r
        while i > 0:  # the values seen so far at or below v: their count and sum
            below += counts[i]
            below_sum += sums[i]
            i -= i & -i
        total += (v * below - below_sum) + (seen_sum - below_sum - v * (seen - below))
        out.append(total)
        i = r
        while i <= size:
            counts[i] += 1
            sums[i] += v
            i += i & -i
        seen += 1
        seen_sum += v
    return out


def _best_split(x: Sequence[float], min_size: int) -> int | None:
    """The split of ``x`` maximising the E-divisive energy statistic (alpha = 1), or None if too short."""
    n = len(x)
    if n < 2 * min_size:
        return None
    left = _pair_sums(x)  # left[t]: the pairs within x[:t]
    right = _pair_sums(x[::-1])[::-1]  # right[t]: the pairs within x[t:]
    best, best_q = None, -math.inf
    for t in range(min_size, n - min_size + 1):
        m, k = t, n - t
        between = 2.0 * (left[n] - left[t] - right[t]) / (m * k)  # the pairs across the split
        within_x = 2.0 * left[t] / (m * (m - 1))
        within_y = 2.0 * right[t] / (k * (k - 1))
        q = m * k / n * (between - within_x - within_y)
        if q > best_q:
            best, best_q = t, q
    return best


def change_points(values: Sequence[float], p_max: float = P_MAX, min_size: int = MIN_SEGMENT) -> list[ChangePoint]:
    """Change points of ``values`` (oldest first), in order."""
    found: list[int] = []
    stack = [(0, len(values))]
    while stack:
        start, end = stack.pop()
        split = _best_split(values[start:end], min_size)
        if split is None:
            continue
        cut = start + split
        if welch_p(values[start:cut], values[cut:end]) < p_max:
            found.append(cut)
            stack += [(start, cut), (cut, end)]
    found.sort()
    bounds = [0, *found, len(values)]
    return [ChangePoint(cut, median(values[bounds[i]:cut]), median(values[cut:bounds[i + 2]]),
                        welch_p(values[bounds[i]:cut], values[cut:bounds[i + 2]]))
            for i, cut in enumerate(found)]


@dataclass(frozen=True)
class Finding:
    """What a series says about its latest run."""

    values: tuple[float, ...]
    gate: Gate | None  # None: fewer than MIN_WINDOW earlier runs
    change_points: tuple[ChangePoint, ...] = ()
    reasons: tuple[str, ...] = field(default=())  # why it is a regression; empty when it is not

    @property
    def regression(self) -> bool:
        return bool(self.reasons)

    @property
    def latest(self) -> float:
        return self.values[-1]

    @property
    def minimum_detectable_drop(self) -> float | None:
        return self.gate.allowed_drop if self.gate else None


def history_gate(earlier: Sequence[float], floor: float = FLOOR, z: float = Z, window: int = WINDOW,
                 points: Sequence[ChangePoint] | None = None) -> Gate | None:
    """The gate a new run is judged by, from the runs before it (oldest first): the level of the runs since
    the last change point (at most ``window``), the noise pooled over all of them. None with fewer than
    :data:`MIN_WINDOW` runs."""
    if points is None:
        points = change_points(earlier)
    last_cut = max((cp.index for cp in points), default=0)
    since = earlier[last_cut:]
    base = (since if len(since) >= MIN_WINDOW else earlier)[-window:]
    if len(base) < MIN_WINDOW:
        return None
    return gate(base, floor, z, noise=_pooled_noise(earlier, points))


def judge_series(values: Sequence[float], floor: float = FLOOR, z: float = Z, window: int = WINDOW,
                 p_max: float = P_MAX) -> Finding:
    """Gate the latest run against the runs before it and find the change points (see the module doc)."""
    values = tuple(values)
    points = tuple(change_points(values, p_max))
    judged = history_gate(values[:-1], floor, z, window, [cp for cp in points if cp.index < len(values) - 1])
    reasons: list[str] = []
    if judged is not None and judged.regressed(values[-1]):
        reasons.append(f"latest run {values[-1]:.1%} is {judged.drop(values[-1]):.1%} below the median "
                       f"{judged.baseline:.1%} of the {judged.runs} runs before it, beyond its {judged.describe()}")
    if points and _lasting_drop(values, points, floor, z):
        cp = points[-1]
        reasons.append(f"level dropped {-cp.change:.1%} at run {cp.index + 1} of {len(values)} "
                       f"(median {cp.before:.1%} -> {cp.after:.1%}, Welch p={cp.p:.1g})")
    return Finding(values, judged, points, tuple(reasons))


def _lasting_drop(values: Sequence[float], points: Sequence[ChangePoint], floor: float, z: float) -> bool:
    """Whether the last change point is a drop beyond the floor and beyond the noise of both medians."""
    cp = points[-1]
    start = points[-2].index if len(points) > 1 else 0
    before, after = values[start:cp.index][-WINDOW:], values[cp.index:]
    noise = relative_noise(before)
    spread = z * noise * math.sqrt(math.pi / 2 * (1 / len(before) + 1 / len(after)))
    return -cp.change > max(floor, spread)


def _pooled_noise(values: Sequence[float], points: Sequence[ChangePoint]) -> float:
    """The robust relative noise of ``values`` around the median of the segment each lies in: every run of
    the history estimates the noise, not only the baseline window's."""
    bounds = [0, *(cp.index for cp in points if cp.index < len(values)), len(values)]
    residuals: list[float] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        segment = values[start:end]
        if segment:
            centre = median(segment)
            residuals += [v / centre - 1.0 for v in segment] if centre > 0 else []
    if len(residuals) < MIN_WINDOW:
        return 0.0
    return MAD_TO_SIGMA * median(abs(r - median(residuals)) for r in residuals)
