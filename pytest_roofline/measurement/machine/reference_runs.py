"""Live ceilings around the timed runs: which reference kernel runs beside a program (:class:`LivePlan`), when its
runs may stop (:func:`stopping_rule`), and the ceilings its runs give (:func:`live_ceilings`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...analysis.model.first_touch import FirstTouch
from ...analysis.model.live import (
    Live,
    bracketing_times,
    correction_above_roofline,
    drifts,
    implausible_drift,
    lifted_beside_neighbours,
    pair_utilizations,
    settled,
)
from ...analysis.model.program_model import ProgramModel
from ...analysis.model.roofline import RooflineEstimate
from ...analysis.runs.run_stats import relative_iqr
from ...hardware.spec import HardwareSpec
from ..timing import Beside, Settled, Timed
from .reference_kernels import Reference, reference, reference_key_for

__all__ = ["LivePlan", "live_plan", "stopping_rule", "live_ceilings", "planned_touch_s"]


@dataclass(frozen=True)
class LivePlan:
    """The reference kernel to run beside the kernel (None: no live ceilings, ``why`` says why not)."""

    reference: Reference | None = None
    calibrated_rate: float = 0.0
    why: str = ""

    @property
    def beside(self) -> Beside | None:
        return self.reference.beside() if self.reference is not None else None


def live_plan(spec: HardwareSpec, used: str, model: ProgramModel, platform: str, touch_s: float) -> LivePlan:
    """The reference kernel paired with the program (``touch_s``: the first touch it is expected to pay), where
    ``used`` is live and the calibration has its rate."""
    if used != "live":
        return LivePlan()
    key = reference_key_for(model.estimate, model.uses, touch_s, model.memory.in_cache)
    if key is None:
        return LivePlan(why=f"no reference kernel for a {model.estimate.bound}-bound program: calibrated "
                             f"ceilings used")
    rate = spec.reference_rates.get(key)
    if not rate:
        return LivePlan(why=f"the calibration has no rate for the {key} reference (the hardware's notes say "
                             f"why; recalibrate): calibrated ceilings used")
    return LivePlan(reference(platform, key), rate)


def stopping_rule(roof: RooflineEstimate, plan: LivePlan, threshold: float | None, target: float) -> Settled:
    """When runs may stop, judged on the wall clock as runs go (device times come from the trace after)."""
    ref = plan.reference

    def rule(walls: Sequence[float], refs: Sequence[float], slots: Sequence[int]) -> bool:
        if ref is not None and not (walls := walls[:slots[-1]]):  # the runs up to the last a reference follows
            return False
        drift = drifts(bracketing_times(refs, len(walls), slots=slots), ref.work, plan.calibrated_rate) if ref else None
        per_run = pair_utilizations(roof, walls, ref.resource if ref else None, drift)
        # Live pairs carry the reference's noise too: only the interval's width may end them early.
        steady = ref is None and relative_iqr(per_run) <= target
        return settled(per_run, threshold, target, steady=steady)

    return rule


def live_ceilings(plan: LivePlan, timed: Timed, spec: HardwareSpec, roof: RooflineEstimate,
          own_touch: list[float] | None) -> tuple[Live | None, str]:
    """The live ceilings the reference's runs give; or None and why not (unreadable runs, implausible drift, a
    scaling that would lift a kernel slowed by other processes on a CPU, or lift it above ``roof``, its runs judged
    with ``own_touch``)."""
    ref = plan.reference
    if ref is None:
        return None, ""
    usable = ref.usable(timed.reference_faults, len(timed.reference_s))
    if timed.reference_s and not any(usable):
        return None, (f"no run of the reference ({ref.name}) faulted the fresh pages it must write (they reused "
                      f"mapped pages): calibrated ceilings used")
    try:  # references not around the kernel's runs (one after each by default, or at the slots the runs recorded)
        around = bracketing_times(timed.reference_s, timed.timing.runs, usable=usable,
                                  slots=timed.reference_slots or None)
    except ValueError:
        return None, (f"the reference kernel's runs could not be read ({len(timed.reference_s)} for "
                      f"{timed.timing.runs} kernel runs): calibrated ceilings used")
    name = ref.name + ("" if timed.reference_timer == "profiler" else f" ({timed.reference_timer})")
    live = Live(name, ref.resource, timed.reference_s, plan.calibrated_rate,
                tuple(drifts(around, ref.work, plan.calibrated_rate)), usable.count(False))
    beside = (lifted_beside_neighbours(live.drift, timed.timing.median_waiting, timed.timing.others_cpu_share)
              if spec.platform == "cpu" else "")
    why = implausible_drift(live.drift, bool(spec.low_ceilings)) or beside or correction_above_roofline(
        roof, timed.timing.per_run_s, live.resource, live.drift_per_run, own_touch)
    return (None, why) if why else (live, "")


# Fresh buffers smaller than this are often reused by the allocator (a 4 MiB output took no fault per run on
# the 2-core VMs of docs/measurements.md): they do not decide which reference a kernel is paired with.
_PLANNED_TOUCH_MIN = 16 * 2**20


def planned_touch_s(touch: FirstTouch | None) -> float:
    """The first touch the model expects before any fault is counted, for choosing the reference."""
    return touch.time_s if touch is not None and touch.fresh_bytes >= _PLANNED_TOUCH_MIN else 0.0
