"""Roofline maths: compute, memory and interconnect times, the bound, and utilization. Pure.

T_compute = sum over compute classes of FLOPs / peak of that class (matrix work meets the matrix peak of
its dtype, the rest meets the vector peak); T_memory = bytes / memory bandwidth; T_transcendental =
transcendentals (exp, log, tanh, rsqrt ...) / the device's transcendental rate, where one is known;
roofline time = max; on a CPU the first touch of the program's fresh pages adds to it where charged
(:mod:`~.first_touch`).
Utilization = roofline time / measured time; above :data:`IMPOSSIBLE_ABOVE` it is physically impossible
(:mod:`~..verdict.decide` then names the suspect instead of passing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass

from ...base.kinds import Bound
from ...base.units import format_fraction

__all__ = [
    "IMPOSSIBLE_ABOVE",
    "impossible_text",
    "faster_runs_text",
    "above_roofline_text",
    "RooflineEstimate",
    "estimate",
    "utilization",
    "critical_intensity",
]

IMPOSSIBLE_ABOVE = 1.05


def impossible_text(suspect: str = "") -> str:
    """Why a utilization above :data:`IMPOSSIBLE_ABOVE` cannot pass, in the words every report uses: what to
    distrust where it is known, else that a peak or a count is wrong."""
    return f"above {format_fraction(IMPOSSIBLE_ABOVE)}: " + (f"suspect {suspect}" if suspect else
                                                            "a peak or a count is wrong")


def faster_runs_text(count: int, runs: int, fastest: float, suspect: str) -> str:
    """Why a result with runs faster than its roofline is suspect, whatever its median: how many, the fastest,
    and what to distrust."""
    return (f"{count} of {runs} runs took less than the roofline time (the fastest at {fastest:.0%}, above "
            f"{format_fraction(IMPOSSIBLE_ABOVE)}): suspect {suspect}")


def above_roofline_text(utilization: float, calibrated: float, drift: float | None, suspect: str,
                        high: float = 0.0) -> str:
    """Why a median above 100% (within its noise: not impossible), or a 95% interval whose top ``high`` is, is
    suspect: the figures that put it there."""
    live = (f"; against the calibration alone {calibrated:.1%}, the live reference ran at {drift:.0%} of its "
            f"calibrated rate" if drift is not None else "")
    what = (f"the median {utilization:.1%} is above the roofline, within its noise" if utilization > 1.0 else
            f"its 95% interval reaches {high:.1%}, above the roofline (the median {utilization:.1%})")
    return f"{what}{live}: suspect {suspect}"


def critical_intensity(peak_flops_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """FLOPs per byte at which a kernel turns from memory-bound to compute-bound."""
    return peak_flops_per_s / bandwidth_bytes_per_s


@dataclass(frozen=True)
class RooflineEstimate:
    compute_time_s: float
    memory_time_s: float
    # The peak (FLOP/s) the FLOPs meet as a whole: total FLOPs / compute time.
    effective_peak_flops: float
    bandwidth: float
    comms_time_s: float = 0.0  # collective bytes / interconnect bandwidth
    transcendental_time_s: float = 0.0  # transcendentals / transcendental rate (0 when no rate is known)
    _: KW_ONLY  # fields from the seventh on are given by keyword
    first_touch_time_s: float = 0.0  # fresh pages / first-touch rate, where charged (a CPU): adds to the max

    @property
    def core_time_s(self) -> float:
        """The max() of the terms that overlap: compute, memory, interconnect, transcendental."""
        return max(self.compute_time_s, self.memory_time_s, self.comms_time_s, self.transcendental_time_s)

    @property
    def roofline_time_s(self) -> float:
        return self.core_time_s + self.first_touch_time_s

    def utilization_at_top(self, utilization: float, flops: float, flops_top: float | None) -> float | None:
        """The utilization had the program done ``flops_top`` FLOPs, not ``flops`` (the compute term scaled by their
        ratio, the others as they are): the top of a range of counts. None where there is no top."""
        if flops_top is None or flops <= 0 or self.roofline_time_s <= 0:
            return None
        compute = self.compute_time_s * flops_top / flops
        core = max(compute, self.memory_time_s, self.comms_time_s, self.transcendental_time_s)
        return utilization * (core + self.first_touch_time_s) / self.roofline_time_s

    @property
    def bound(self) -> Bound:
        if self.comms_time_s > max(self.compute_time_s, self.memory_time_s, self.transcendental_time_s):
            return "interconnect"
        if self.transcendental_time_s > max(self.compute_time_s, self.memory_time_s):
            return "transcendental"
        return "compute" if self.compute_time_s >= self.memory_time_s else "memory"

    @property
    def critical_intensity(self) -> float:
        return critical_intensity(self.effective_peak_flops, self.bandwidth)


def estimate(
    flops_by_peak: Mapping[str, tuple[float, float]],
    bytes_accessed: float,
    bandwidth: float,
    collective_bytes: float = 0.0,
    interconnect: float | None = None,
    transcendentals: float = 0.0,
    *, transcendental_rate: float | None = None,
    comms_time_s: float | None = None,
    integer_time_s: float = 0.0,
) -> RooflineEstimate:
    """Roofline of a program: max(compute, memory, interconnect, transcendental) time.

    ``flops_by_peak`` maps a label (e.g. ``"bf16"``, ``"vector"``) to ``(flops, peak FLOP/s)``. Collective
    bytes without an interconnect bandwidth (a CPU) add no time; neither do transcendentals without a rate.
    ``comms_time_s``: the collectives' time worked out elsewhere (split between local and host links), used
    instead of ``collective_bytes / interconnect``. ``integer_time_s``: integer ops at their own rate, on the same
    units as the vector FLOPs (added to the compute time, not to the FLOPs).
    """
    if bandwidth <= 0:
        raise ValueError(f"memory bandwidth must be positive, got {bandwidth}")
    compute = 0.0
    total_flops = 0.0
    best_peak = 0.0
    for label, (flops, peak) in flops_by_peak.items():
        if flops < 0:
            raise ValueError(f"negative FLOPs for {label}: {flops}")
        if flops == 0:
            best_peak = max(best_peak, peak)
            continue
        if peak <= 0:
            raise ValueError(f"peak for {label} must be positive, got {peak}")
        compute += flops / peak
        total_flops += flops
        best_peak = max(best_peak, peak)
    effective = total_flops / compute if compute > 0 else best_peak
    compute += integer_time_s
    comms = collective_bytes / interconnect if (collective_bytes and interconnect) else 0.0
    if comms_time_s is not None:
        comms = comms_time_s
    trans = transcendentals / transcendental_rate if (transcendentals and transcendental_rate) else 0.0
    return RooflineEstimate(compute, bytes_accessed / bandwidth, effective, bandwidth, comms, trans)


def utilization(roofline_time_s: float, measured_time_s: float) -> float:
    if measured_time_s <= 0:
        raise ValueError(f"measured time must be positive, got {measured_time_s}")
    return roofline_time_s / measured_time_s
