"""A measurement in words (its figures, :class:`~.figures.Measured`): the paragraph ``str(result)`` prints and
the first-touch sentence. Pure."""

from __future__ import annotations

from ..analysis.model import contention
from ..analysis.model.first_touch import FAULT_COST_MOVES, FAULTS_CHEAPER
from ..analysis.model.roofline import impossible_text
from ..analysis.program.info import MORE_THAN_SOURCE, more_than_source_text
from ..base.units import format_fraction, format_quantity, format_seconds
from .figures import Measured

__all__ = ["describe", "first_touch_text"]


def first_touch_text(result: Measured) -> str:
    """The first-touch term: faults expected and counted, the split of the time, both utilizations."""
    touch = result.first_touch
    if touch is None:
        return ""
    if not touch.fresh_bytes and not touch.counted_faults:
        return "first touch: no fresh pages (no faults expected or counted)"
    which = "included in the roofline" if result.first_touch_charged else "not in the roofline (first_touch='exclude')"
    text = (f"first touch {which}: {touch.faults_text()}; "
            f"{touch.split(result.device_time_s, result.roofline.core_time_s)}; utilization "
            f"{result.utilization_with_first_touch:.1%} with first touch, {result.utilization_without_first_touch:.1%} "
            f"without")
    saving = touch.saving_text()
    return text + (f"; {saving}" if saving else "")


def describe(result: Measured) -> str:
    """One paragraph: the bound, the counts, the roofline, the runs, the utilization and its qualifiers."""
    timer = result.timer if not result.timer_fallback_reason else f"{result.timer}: {result.timer_fallback_reason}"
    flops = (">=" if result.counts_lower_bound else "") + format_quantity(result.flops, "FLOP")
    if result.work.branches.unsure:  # the other end of the range: every such conditional at its cheapest branch
        spare_flops, spare_bytes = result.work.branches.spare
        flops += (f" (down to {format_quantity(max(result.flops - spare_flops, 0.0), 'FLOP')} and "
                  f"{format_quantity(max(result.bytes_accessed - spare_bytes, 0.0), 'B')} had its conditionals taken "
                  f"their cheapest branches)")
    if result.work.int_ops:
        flops += f" + {format_quantity(result.work.int_ops, '').replace(' ', '')} integer ops"
    text = (
        f"{result.name} on {result.hardware.name} [{result.ceilings}]: {result.bound}-bound"
        f"{' as counted (an uncounted call may change it)' if result.work.bound_unsure else ''}, {flops}, "
        f"{format_quantity(result.bytes_accessed, 'B')}, intensity {result.intensity:.3g} "
        f"(critical {result.critical_intensity:.3g}) FLOP/B; roofline {format_seconds(result.roofline_time_s)}, "
        f"measured {format_seconds(result.device_time_s)} +/-{result.spread:.1%} over {result.runs} runs ({timer}); "
        f"utilization {result.utilization:.1%} ({result.uncertainty.describe()})"
    )
    if result.cache is not None:
        text += f"; cache {result.cache.text()}"
    if result.memory is not None:
        text += f"; peak memory {result.memory.describe()}"
    if result.first_touch is not None:
        text += f"; {first_touch_text(result)}"
    if result.live is not None:
        text += (f"; live ceilings: {result.live.describe()}; against the calibration alone "
                 f"{result.utilization_calibrated:.1%}")
    if result.contended and result.cpu_waiting is not None:
        text += "; " + contention.describe(
            result.cpu_waiting, result.utilization_on_cpu, result.timing.others_cpu_share, result.on_cpu_rejected
        )
    if result.marginal and result.threshold is not None:
        text += f" MARGINAL: the threshold {format_fraction(result.threshold)} is inside the interval"
    if result.counts_lower_bound:
        text += f" [counts are a lower bound: {result.work.lower_bound_reason}]"
    factor, compiled = result.compiled_over_source, result.source_compiled_flops
    if factor is not None and compiled is not None and result.source_flops and factor > MORE_THAN_SOURCE:
        text += f" [{more_than_source_text(compiled, result.source_flops)}]"
    if result.no_work:
        text += (
            " NO WORK: the compiled program computes nothing (it returns None or a constant, or its inputs are empty)"
        )
    if result.impossible:
        text += f" IMPOSSIBLE ({impossible_text(result.suspect)})"
    elif result.suspect:
        text += f" SUSPECT ({result.suspect})"
    if result.first_touch_beaten and not result.impossible:
        text += f" [first touch cheaper than calibrated: {FAULTS_CHEAPER}; {FAULT_COST_MOVES}]"
    return text
