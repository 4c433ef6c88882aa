"""Live ceilings and the uncertainty of a utilization. Pure.

A kernel's timed runs alternate with a short reference kernel that meets the same ceiling (reference, kernel,
reference, ...). The reference's rate next to each kernel run, divided by its rate at calibration, is the
*drift* of the machine at that moment; the ceiling the kernel meets is scaled by it, so a neighbour that slows
the machine down slows the ceiling too. Utilization is taken per pair and summarised by the median, with a
distribution-free confidence interval for that median (order statistics: no assumption on the shape of the
noise, deterministic). A sequential rule keeps sampling while the interval straddles the threshold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import median
from typing import Any, Literal

from .contention import contended, waited_text
from .roofline import IMPOSSIBLE_ABOVE, RooflineEstimate

__all__ = [
    "CONFIDENCE",
    "Resource",
    "median_interval",
    "bracketing_times",
    "usable_references",
    "drifts",
    "scaled_roofline_time",
    "pair_utilizations",
    "Live",
    "Uncertainty",
    "uncertainty",
    "settled",
    "MAX_PLAUSIBLE_DRIFT",
    "implausible_drift",
    "correction_above_roofline",
    "lifted_beside_neighbours",
]

CONFIDENCE = 0.95
Resource = Literal["compute", "memory", "transcendental", "first-touch"]
"""The ceiling a reference shares with the kernel; "first-touch": memory bandwidth and first touch together (a
reference that writes a fresh output, beside a kernel whose output is fresh)."""

# A calibration is a robust high rate of the machine, but a shared VM's speed moves between phases of its host:
# references ran at 125-130% of a calibration taken in a slow phase minutes earlier, and on a 2-core AMD EPYC
# Zen 4 VM a donated 256 MiB stream ran at 94 GB/s, 173% of a memory ceiling calibrated at 54 GB/s a minute
# before, with the stream reference beside it at 192% (its wall clock agreed). A reference that runs faster
# than this beside a kernel is not measuring the machine (it kept its data in a cache the kernel does not have,
# 4-6x on these machines, or its buffers were reused, 4x), so its drift must not scale a verdict.
MAX_PLAUSIBLE_DRIFT = 2.0


def _binomial_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    return sum(math.comb(n, i) for i in range(min(k, n) + 1)) / 2.0**n


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """A confidence interval for the median of ``values``: ``[x_(k), x_(n+1-k)]`` of the sorted values with the
    largest ``k`` such that ``P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2``.

    It holds for any continuous distribution of independent samples. With too few samples for the
    confidence asked (fewer than 6 at 95%) it is the full range, which covers less than asked.
    """
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    n = len(ordered)
    alpha = (1.0 - confidence) / 2.0
    k = 0
    while k + 1 <= n // 2 and _binomial_cdf(k, n) <= alpha:  # P(X < k+1) = P(X <= k)
        k += 1
    k = max(k, 1)
    return ordered[k - 1], ordered[n - k]


# Kernel run i is judged against the median of the 2 * BRACKET references nearest to it: wide enough that one
# unlucky reference run does not move its pair, narrow enough to follow a neighbour that starts or stops.
BRACKET = 2


def bracketing_times(reference_s: Sequence[float], runs: int, width: int = BRACKET,
                     usable: Sequence[bool] | None = None, slots: Sequence[int] | None = None) -> list[float]:
    """The reference's time around each kernel run. ``slots``: per reference run, how many kernel runs came before
    it (the first 0, the last ``runs``); by default one after every kernel run (``runs + 1`` references: kernel
    run ``i`` sits between references ``i`` and ``i + 1``). Kernel run ``i``'s reference time is the median of the
    ``width`` references before it and the ``width`` after it (fewer at the ends). ``usable``: which reference
    runs met their conditions (:func:`usable_references`); the others are left out, and a kernel run with none
    usable around it takes the median of all usable ones."""
    slots = list(slots) if slots is not None else list(range(len(reference_s)))
    if len(slots) != len(reference_s) or not slots or slots[0] != 0 or slots[-1] != runs:
        raise ValueError(f"expected reference runs before the first and after the last of {runs} kernel runs, got "
                         f"{len(reference_s)} at {slots}")
    keep = list(usable) if usable is not None else [True] * len(reference_s)
    if len(keep) != len(reference_s) or not any(keep):
        raise ValueError(f"expected {len(reference_s)} usable flags with at least one set, got {keep}")
    overall = median(t for t, ok in zip(reference_s, keep, strict=True) if ok)
    around = []
    first_after = 0  # the first reference after kernel run i
    for i in range(runs):
        while slots[first_after] <= i:
            first_after += 1
        window = range(max(first_after - width, 0), min(first_after + width, len(slots)))
        near = [reference_s[j] for j in window if keep[j]]
        around.append(median(near) if near else overall)
    return around


def usable_references(faults: Sequence[int], runs: int, fresh_pages: int) -> list[bool]:
    """Which of ``runs`` reference runs met their conditions. A run that must write ``fresh_pages`` fresh pages
    but faulted fewer than half of them reused pages an earlier buffer left mapped: it ran at a rate the kernel's
    fresh pages never get. All usable where nothing is expected (``fresh_pages`` 0) or the faults were not
    counted for every run."""
    if fresh_pages <= 0 or len(faults) != runs:
        return [True] * runs
    return [count * 2 >= fresh_pages for count in faults]


def drifts(reference_s: Sequence[float], reference_work: float, calibrated_rate: float) -> list[float]:
    """Reference rate at each moment / its rate at calibration (1.0: the machine is as fast as then)."""
    if calibrated_rate <= 0 or reference_work <= 0:
        raise ValueError("the reference's work and calibrated rate must be positive")
    return [reference_work / t / calibrated_rate for t in reference_s]


def scaled_roofline_time(roof: RooflineEstimate, resource: Resource, drift: float) -> float:
    """The roofline time when the ceiling of ``resource`` runs at ``drift`` times its calibrated level (the other
    terms keep their ceilings: only the resource the reference shares is measured live)."""
    compute, memory, transcendental = roof.compute_time_s, roof.memory_time_s, roof.transcendental_time_s
    touch = roof.first_touch_time_s
    if resource == "compute":
        compute /= drift
    elif resource in ("memory", "first-touch"):
        memory /= drift
        touch = touch / drift if resource == "first-touch" else touch
    else:
        transcendental /= drift
    return max(compute, memory, transcendental, roof.comms_time_s) + touch


def pair_utilizations(roof: RooflineEstimate, kernel_s: Sequence[float], resource: Resource | None,
                      drift_per_run: Sequence[float] | None, touch_per_run: Sequence[float] | None = None
                      ) -> list[float]:
    """Utilization of each kernel run: against the live ceiling of its pair, or (no reference) the calibration.
    ``touch_per_run``: each run's own first-touch time (the pages it faulted), in place of the roofline's."""
    roofs = [replace(roof, first_touch_time_s=t) for t in touch_per_run] if touch_per_run is not None else \
        [roof] * len(kernel_s)
    if resource is None or drift_per_run is None:
        return [r.roofline_time_s / t for r, t in zip(roofs, kernel_s, strict=True)]
    return [scaled_roofline_time(r, resource, d) / t for r, t, d in zip(roofs, kernel_s, drift_per_run, strict=True)]


def implausible_drift(drift: float, contended_calibration: bool = False) -> str:
    """Why a median drift cannot be the machine's ("" when it can): no machine runs well above a robust high
    quantile of its own quiet calibration. Against a calibration made beside other work (its rates are known to be
    low) a drift above that is what the machine does once the neighbours are gone: the live scaling is then the
    better estimate, and is kept."""
    if drift <= MAX_PLAUSIBLE_DRIFT or contended_calibration:
        return ""
    return (f"the reference ran at {drift:.0%} of its calibrated rate, above the {MAX_PLAUSIBLE_DRIFT:.0%} no "
            f"machine reaches: the reference did not meet the ceiling it was calibrated on (its data stayed in a "
            f"cache, or its buffers were reused); calibrated ceilings used")


def correction_above_roofline(roof: RooflineEstimate, kernel_s: Sequence[float], resource: Resource,
                              drift_per_run: Sequence[float], touch_per_run: Sequence[float] | None = None) -> str:
    """Why the live ceilings must not be used for these runs ("" when they may): they would put the median
    utilization above 100% where the calibration alone reads at or below it, or above 100% plus its interval's width,
    or its whole interval above the impossible line, higher than the calibration alone puts it. No kernel beats its
    roofline, so the reference's drift is not this kernel's (it slowed beside the kernel where the kernel did not);
    the figure is not shown. ``touch_per_run``: each run's own first-touch time, as the result judges it."""
    live = uncertainty(pair_utilizations(roof, kernel_s, resource, drift_per_run, touch_per_run))
    alone = median(pair_utilizations(roof, kernel_s, None, None, touch_per_run))
    if live.utilization <= alone:
        return ""
    lifted = live.utilization > 1.0 >= alone
    if not lifted and live.utilization <= 1.0 + (live.high - live.low) and live.low <= IMPOSSIBLE_ABOVE:
        return ""
    return (f"the live ceilings would put the utilization above the roofline ({live.utilization:.1%} against "
            f"{alone:.1%} on the calibration alone: the reference ran at {median(drift_per_run):.0%} of its "
            f"calibrated rate beside it, a drift this kernel did not share): calibrated ceilings used")


def lifted_beside_neighbours(drift: float, waiting: float | None, others: float | None) -> str:
    """Why the live ceilings must not lift a contended kernel ("" when they may): beside other processes a reference
    and a kernel slow by different amounts (:mod:`.contention`), and a reference slowed more than the kernel would
    raise the kernel's utilization while it ran slower (qwix's int8 MLP beside neighbours: 25.5 ms to 52.2 ms, its
    utilization up from 64.5% to 81.6%). A scaling that lowers it is kept."""
    if drift >= 1.0 or not contended(waiting, others) or waiting is None:
        return ""
    return (f"the reference ran at {drift:.0%} of its calibrated rate beside other processes ({waited_text(waiting)}"
            f"): a neighbour slows a reference and a kernel by different amounts, and scaling by it would raise this "
            f"kernel's utilization while it ran slower: calibrated ceilings used")


@dataclass(frozen=True)
class Live:
    """What the reference kernel beside the kernel showed: which one, the drift per pair, and its median."""

    reference: str  # e.g. "f32 matmul 768x768x768"
    resource: Resource
    reference_s: tuple[float, ...]  # every reference run, one more than kernel runs
    calibrated_rate: float
    drift_per_run: tuple[float, ...]
    left_out: int = 0  # reference runs that did not meet their conditions (no fresh pages faulted)

    @property
    def drift(self) -> float:
        return median(self.drift_per_run)

    def describe(self) -> str:
        text = f"the machine ran at {self.drift:.0%} of its calibrated speed during this measurement ({self.reference})"
        if self.left_out:
            text += (f"; {self.left_out} of its {len(self.reference_s)} runs left out (they reused mapped pages "
                     f"instead of faulting fresh ones)")
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "resource": self.resource, "drift": self.drift,
                "drift_per_run": list(self.drift_per_run), "reference_s": list(self.reference_s),
                "calibrated_rate": self.calibrated_rate, "reference_runs_left_out": self.left_out}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Live:
        return cls(str(data["reference"]), data["resource"], tuple(float(s) for s in data["reference_s"]),
                   float(data["calibrated_rate"]), tuple(float(d) for d in data["drift_per_run"]),
                   int(data.get("reference_runs_left_out") or 0))


@dataclass(frozen=True)
class Uncertainty:
    """The median utilization over runs (or pairs) and the confidence interval of that median."""

    utilization: float
    low: float
    high: float
    samples: int

    def contains(self, threshold: float) -> bool:
        return self.low <= threshold <= self.high

    def describe(self) -> str:
        return f"{CONFIDENCE:.0%} interval {self.low:.1%}-{self.high:.1%} over {self.samples} runs"


def uncertainty(per_run: Sequence[float]) -> Uncertainty:
    low, high = median_interval(per_run)
    return Uncertainty(median(per_run), low, high, len(per_run))


def settled(per_run: Sequence[float], threshold: float | None, target_width: float, steady: bool = False) -> bool:
    """Whether sampling may stop (a sequential decision). With a threshold: once the median's interval lies
    wholly on one side of it (while it straddles it, go on: the budget ends it). Without one: once the runs are
    ``steady`` (the caller's spread rule) or the interval's half-width is within ``target_width`` of the median."""
    if len(per_run) < 2:
        return False
    low, high = median_interval(per_run)
    if threshold is not None:
        return high < threshold or low > threshold
    mid = median(per_run)
    return steady or (mid > 0 and (high - low) / 2.0 <= target_width * mid)
