"""The pass/fail rule, in one pure function: :func:`decide` turns a measurement's figures, a threshold, an
expected bound and the model into a verdict and its reason.

* A program-level utilization above :data:`~..model.roofline.IMPOSSIBLE_ABOVE` (its whole 95% interval, where one is
  known) is "impossible" whatever the threshold: a peak is too low or a count too high (the program-level bound
  is the loosest, so above it a ceiling is wrong). It fails a test that has a threshold; without one it is a
  warning.
* Without a threshold a kernel is "measured"; with one it passes at or above it, on the chosen model.
* Below the threshold a kernel is measured again before it fails (noisy machines must not make tests
  flaky): the first decision asks for it (``confirm``), the second states both figures. Far below it (the whole
  interval under :data:`FAR_BELOW` of the threshold, also with the time its threads waited for a CPU taken out) no
  noise explains the shortfall: it fails on one measurement, and the reason says so.
* The point estimate (the median) decides; the message states its confidence interval, and a verdict whose
  interval holds the threshold is called marginal (inside the noise).
* Below the threshold twice, but measured while other processes held the CPUs (:mod:`..model.contention`), a kernel
  is "contended": a warning, not a failure (a neighbour must not fail a test). The reason gives its utilization
  with the waiting taken out; below the threshold even then, it says that a neighbour can cost more than the
  waiting shows (threads that spin while they wait for each other), so even then it is not failed.
* Below the threshold with counts that are a lower bound (a loop whose iterations no trace showed, work nobody
  counted), a kernel is "lower-bound": a warning, not a failure, and not measured again (more work than counted
  may have run, so the shortfall proves nothing).
* Above the roofline against figures the plugin itself knows to be unsure (``Figures.unsure``: ceilings calibrated
  beside other work, a conditional counted at its dearest branch) a kernel is "unjudged": a warning that says why,
  never "impossible" and never a pass.
* A kernel bound by the other resource than the test expects is "wrong-bound" (unless impossible).
* Against a --roofline-baseline, a drop beyond its gate is a "regression" (measured twice first); on a
  contended machine it is "contended", a warning. A program over its ``max_memory`` is "over-memory". Either adds
  its reason to a failure found on the figures.
* A kernel whose program computes nothing is "no-work": it fails a test with a threshold or a bound (it never
  passes ``bound=``), and is a warning without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import Protocol

from ...base.kinds import FAILING_VERDICTS, Bound, ExpectedBound, Model, Verdict
from ...base.units import format_fraction, format_quantity
from ...hardware.spec import HardwareSpec
from ..model import contention
from ..model.exposed import ExposedCheck
from ..model.loop_reuse import REREAD
from ..model.roofline import IMPOSSIBLE_ABOVE, impossible_text
from ..model.work_shares import CeilingUse
from ..program.counts import RAN_FROM_TRACE, Work
from ..program.memory import MemoryCheck
from .census import CensusCheck

__all__ = ["Figures", "Decision", "decide", "suspect", "count_doubts", "unsure_text", "BaselineJudgement",
           "model_utilization", "FAR_BELOW"]

# A first measurement whose whole interval lies under this share of the threshold fails without a second one: a
# neighbour on a shared machine slowed kernels by up to 20% (docs/measurements.md), not by half.
FAR_BELOW = 0.5


def model_utilization(model: Model, program: float, ops: float) -> float:
    """The utilization a threshold is checked against on ``model``: the one place that says which (a live
    result's :class:`Figures` and a recorded one read it here)."""
    return program if model == "program" else ops


@dataclass(frozen=True)
class Figures:
    """What the rule reads from a measurement."""

    utilization: float  # program level: roofline time / measured time
    ops_utilization: float  # sum of per-op roofline times / measured time
    bound: Bound
    intensity: float
    critical_intensity: float
    interval: tuple[float, float] | None = None  # of the program-level utilization (95%)
    _: KW_ONLY  # fields from the seventh on are given by keyword
    # Where the roofline includes the first touch of fresh pages: the low end of the interval of the utilization
    # without it. Page faults are a measured cost that moves with the host (not a bound), so only the traffic and
    # compute roofline can be beaten impossibly.
    core_low: float | None = None
    # Measured under CPU contention only: the utilization had the kernel's threads never waited for a CPU, on the
    # program and on the per-op model.
    on_cpu: float | None = None
    ops_on_cpu: float | None = None
    no_work: bool = False  # the compiled program computes nothing
    lower_bound: bool = False  # the counts are a lower bound: a utilization below a threshold is not judged
    # Contended, but taking the waiting out would put the utilization above the roofline: the waiting share, and
    # no figure without it (on_cpu / ops_on_cpu None where so)
    waiting_above_roofline: float | None = None
    missing_counts: str = ""  # the keywords that would give the counts not given ("flops=/bytes=", "bytes=")
    # Why a figure above the roofline proves nothing ("" where it would): ceilings the plugin called low, counts at
    # the dearest branch of a conditional
    unsure: str = ""
    bound_unsure: bool = False  # a custom call's work is missing from the counts: the bound is not known
    # Counts that are a lower bound only by library calls counted in part: the utilization at the top of their range,
    # and how that top counts them. Below a threshold even there, a kernel fails; else it is "lower-bound".
    counts_top: float | None = None
    counts_top_why: str = ""

    def utilization_for(self, model: Model) -> float:
        return model_utilization(model, self.utilization, self.ops_utilization)

    def on_cpu_for(self, model: Model) -> float | None:
        return self.on_cpu if model == "program" else self.ops_on_cpu

    @property
    def impossible(self) -> bool:
        """Above 105% beyond the noise: the low end of the interval (the median where none is known); with a
        first-touch term, of the utilization against traffic and compute alone. Never where the figures are known
        to be unsure (:attr:`unjudged`)."""
        return self._above and not self.unsure

    @property
    def unjudged(self) -> bool:
        """Above 105% beyond the noise, against figures known to be unsure: neither impossible nor a pass."""
        return self._above and bool(self.unsure)

    @property
    def _above(self) -> bool:
        if self.core_low is not None:
            return self.core_low > IMPOSSIBLE_ABOVE
        return self._low > IMPOSSIBLE_ABOVE

    @property
    def first_touch_beaten(self) -> bool:
        """Above 100% only because the page faults cost less than calibrated: the median with the first touch
        charged reads above the roofline, and the traffic and compute alone do not make it impossible."""
        return self.core_low is not None and self.utilization > 1.0 and not self.impossible

    @property
    def _low(self) -> float:
        return self.interval[0] if self.interval is not None else self.utilization


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""  # why the test fails (or warns); "" when it does not
    confirm: bool = False  # below the threshold on a first measurement: measure again, then decide again
    warning: bool = False  # worth a warning, not a failure (an impossible result without a threshold)
    marginal: bool = False  # the threshold lies inside the utilization's interval

    @property
    def fails(self) -> bool:
        """Whether the test fails (or warns, under warn-only)."""
        return bool(self.reason) and self.verdict in FAILING_VERDICTS and not self.warning


class BaselineJudgement(Protocol):
    """A kernel against its --roofline-baseline (:mod:`pytest_roofline.history.baseline`)."""

    @property
    def regressed(self) -> bool: ...

    def message(self) -> str: ...


def decide(figures: Figures, threshold: float | None, *, expected_bound: ExpectedBound | None = None,
           model: Model = "program", first_utilization: float | None = None,
           baseline: BaselineJudgement | None = None, memory: MemoryCheck | None = None,
           ops: CensusCheck | None = None, exposed: ExposedCheck | None = None) -> Decision:
    """The verdict on one measurement. ``first_utilization`` is the utilization of the first measurement
    when this one confirms it (see ``Decision.confirm``); ``baseline``: the kernel against its baseline
    (a regression); ``memory``: its footprint against ``max_memory`` (over-memory); ``ops``: its census against
    ``max_ops`` (over-ops); ``exposed``: its collectives against ``max_exposed`` (exposed). A reason found on top of a
    failure is added to it; a warning stays a warning."""
    decision = _on_figures(figures, threshold, expected_bound, model, first_utilization)
    if decision.warning or decision.confirm:
        return decision
    if baseline is not None and baseline.regressed:
        util = figures.utilization_for(model)
        twice = f" (measured twice: {first_utilization:.1%}, then {util:.1%})" if first_utilization is not None else ""
        regression = baseline.message() + twice
        if decision.fails:
            decision = replace(decision, reason=f"{decision.reason}; {regression}")
        elif figures.on_cpu is not None or figures.waiting_above_roofline is not None:
            # contended: a neighbour must not fail a test; say it, do not fail
            decision = replace(decision, verdict="contended", warning=True,
                               reason=f"{regression}; not judged: measured on a contended machine")
        else:
            decision = replace(decision, verdict="regression", reason=regression)
    if memory is not None and not memory.ok and not decision.warning:
        decision = (replace(decision, reason=f"{decision.reason}; {memory.reason}") if decision.fails
                    else replace(decision, verdict="over-memory", reason=memory.reason))
    limits: tuple[tuple[CensusCheck | ExposedCheck | None, Verdict], ...] = ((ops, "over-ops"), (exposed, "exposed"))
    for check, verdict in limits:
        if check is not None and not check.ok and not decision.warning:
            decision = (replace(decision, reason=f"{decision.reason}; {check.reason}") if decision.fails
                        else replace(decision, verdict=verdict, reason=check.reason))
    return decision


def _on_figures(figures: Figures, threshold: float | None, expected_bound: ExpectedBound | None, model: Model,
                first_utilization: float | None) -> Decision:
    """The verdict on the figures alone: no work, impossible, the threshold, contention, the bound."""
    unjudgeable = _unjudgeable(figures, threshold, expected_bound)
    if unjudgeable is not None:
        return unjudgeable
    util = figures.utilization_for(model)
    reason = ""
    verdict: Verdict
    interval = figures.interval if model == "program" else None
    marginal = threshold is not None and interval is not None and interval[0] <= threshold <= interval[1]
    if threshold is None:
        verdict = "measured"
    elif util >= threshold:
        verdict = "pass"
    elif figures.lower_bound and (figures.counts_top is None or figures.counts_top >= threshold):
        verdict = "lower-bound"  # more work than counted may have run: below the threshold proves nothing
        top = f"; {figures.counts_top:.1%} at the top of their range" if figures.counts_top is not None else ""
        reason = (f"utilization {util:.1%} is below its threshold {format_fraction(threshold)}, but not judged: its "
                  f"counts are a lower bound{top} (give {figures.missing_counts or 'flops=/bytes='})")
    elif first_utilization is None and not _far_below(figures, threshold, model):
        return Decision("fail", confirm=True, marginal=marginal)
    else:
        verdict = "fail"
        which = "" if model == "program" else " (per-op model)"
        within = f", 95% interval {interval[0]:.1%}-{interval[1]:.1%}" if interval is not None else ""
        noise = "; marginal: the threshold is inside the interval, within the noise" if marginal else ""
        how = (f"measured twice: {first_utilization:.1%}, then {util:.1%}" if first_utilization is not None else
               f"measured once: under {format_fraction(FAR_BELOW)} of its threshold, beyond the noise")
        reason = (f"utilization{which} {util:.1%}{within} is below its threshold {format_fraction(threshold)} "
                  f"({how}){noise}")
        if figures.lower_bound and figures.counts_top is not None:
            reason += (f"; its counts are a lower bound, but it is below its threshold even at the top of their range: "
                       f"{figures.counts_top:.1%} ({figures.counts_top_why})")
        on_cpu = figures.on_cpu_for(model)
        if on_cpu is None and figures.waiting_above_roofline is not None:
            verdict = "contended"
            reason += (f"; cannot judge: its threads waited for a CPU held by another process during "
                       f"{figures.waiting_above_roofline:.0%} of the time they were ready to run, and "
                       f"{contention.ABOVE_ROOFLINE}")
        elif on_cpu is not None:
            without = f"{on_cpu:.1%} without the time its threads waited for a CPU held by another process"
            verdict = "contended"
            if on_cpu >= threshold:
                reason += f"; but {without}: not judged on a contended machine"
            else:
                reason += (f"; below it even at {without}, but a neighbour can cost more than that waiting shows "
                           f"({contention.BEYOND_WAITING}): not judged on a contended machine")
    # Transcendentals run on the compute units: a transcendental-bound kernel is compute-bound for bound=.
    actual = "compute" if figures.bound == "transcendental" else figures.bound
    if expected_bound is not None and actual != expected_bound and not figures.bound_unsure:
        verdict = "wrong-bound"
        reason = (reason + "; " if reason else "") + (
            f"expected {expected_bound}-bound, but it is {figures.bound}-bound (intensity "
            f"{figures.intensity:.3g} vs critical {figures.critical_intensity:.3g} FLOP/B)")
    return Decision(verdict, reason, warning=verdict in ("contended", "lower-bound"), marginal=marginal)


def _unjudgeable(figures: Figures, threshold: float | None, expected_bound: ExpectedBound | None) -> Decision | None:
    """The verdicts no threshold can change: no work, above the roofline against unsure figures, impossible."""
    if figures.no_work:
        judged = threshold is not None or expected_bound is not None
        return Decision("no-work", "the kernel does no work: its compiled program computes nothing (it returns "
                        "None or a constant, or its inputs are empty), so no roofline can judge it",
                        warning=not judged)
    if figures.unjudged:
        return Decision("unjudged", f"utilization {figures.utilization:.1%} is above the roofline, but cannot judge: "
                        f"{figures.unsure}", warning=True)
    if figures.impossible:
        if threshold is None:
            return Decision("impossible", f"utilization {figures.utilization:.1%} is impossible ({impossible_text()})",
                            warning=True)
        return Decision("impossible", f"utilization {figures.utilization:.1%} is impossible ({impossible_text()}), so "
                        "this cannot pass")
    return None


def _far_below(figures: Figures, threshold: float, model: Model) -> bool:
    """Whether a first measurement is so far below ``threshold`` that a second one could not reach it: its
    interval's high end (its utilization where no interval is known, or on the per-op model), and its utilization
    without the time its threads waited for a CPU, under :data:`FAR_BELOW` of it."""
    interval = figures.interval if model == "program" else None
    high = interval[1] if interval is not None else figures.utilization_for(model)
    on_cpu = figures.on_cpu_for(model)
    return max(high, on_cpu or 0.0, figures.counts_top or 0.0) < FAR_BELOW * threshold


def suspect(bound: Bound, uses: Sequence[CeilingUse], hardware: HardwareSpec, work: Work,
            doubts: Sequence[str] = ()) -> str:
    """What to distrust when a utilization is impossible: first the counts it is least sure of (``doubts``, most
    doubtful first), then the ceiling and the count that meet at the bound."""
    ceiling = _ceiling_suspect(bound, uses, hardware, work)
    if not doubts:
        return ceiling
    return f"first the counts it is least sure of: {'; '.join(doubts)}; then {ceiling}"


def unsure_text(hardware: HardwareSpec, work: Work, *, live: bool) -> str:
    """Why a figure above the roofline proves nothing ("" where it would): ceilings the plugin itself called low
    (calibrated beside other work) while no live scaling corrected them, counts at a conditional's dearest branch."""
    why = []
    if hardware.low_ceilings and not live:
        why.append(hardware.low_ceilings)
    if work.branches.unsure:
        why.append("a conditional is counted at its dearest branch (the trace did not show which ran), so the "
                   "counts are an upper end")
    return "; ".join(why)


def count_doubts(work: Work, uses: Sequence[CeilingUse] = ()) -> list[str]:
    """The counts a figure above the roofline most likely overstates, most doubtful first: a conditional counted
    at its dearest branch, loops that re-read data from a cache (where the bytes' ``uses`` say so: which level served
    them is modelled, not seen), conditionals and loop iterations read from the trace, work nobody counted."""
    doubts = []
    if work.branches.unsure:
        doubts.append("a conditional counted at its dearest branch (the trace did not show which ran)")
    if any(REREAD in u.note for u in uses if u.is_bytes):
        doubts.append(f"the bytes {REREAD} (a loop's data may stay in a faster cache level than the one modelled)")
    if work.branches.lines and not work.branches.unsure:
        doubts.append("conditionals counted by the branches the trace showed")
    if any(loop.endswith(RAN_FROM_TRACE) for loop in work.loops):
        doubts.append("loop iterations read from the trace")
    if work.uncounted:
        doubts.append(f"library calls counted from their shapes or not at all ({', '.join(work.uncounted[:2])})")
    return doubts


def _ceiling_suspect(bound: Bound, uses: Sequence[CeilingUse], hardware: HardwareSpec, work: Work) -> str:
    if bound == "compute":
        peaks = ", ".join(f"{u.key} peak {format_quantity(u.ceiling.value, 'FLOP/s')} ({u.ceiling.describe()})"
                          for u in uses if not u.is_bytes)
        return (f"the compute peak is too low or the FLOP count too high ({work.flops_source} count "
                f"{format_quantity(work.flops, 'FLOP')}); peaks used: {peaks}")
    if bound == "interconnect" and hardware.interconnect_bandwidth is not None:
        link = hardware.interconnect_bandwidth
        return (f"the interconnect bandwidth {format_quantity(link.value, 'B/s')} ({link.describe()}) is too "
                f"low or the collective byte count too high ({format_quantity(work.collective_bytes, 'B')}, "
                f"ring model)")
    held = [u for u in uses if u.is_bytes and u.key in ("cache", "memory")]
    bw = held[0].ceiling if held else hardware.memory_bandwidth
    level = "last-level cache" if held and held[0].key == "cache" else "memory"
    return (f"the {level} bandwidth {format_quantity(bw.value, 'B/s')} ({bw.describe()}) is too low or the "
            f"byte count too high ({work.bytes_source} count {format_quantity(work.bytes_accessed, 'B')}); "
            f"a working set that fits in cache runs faster than main memory")
