"""A calibration's figures while its kernels run (:class:`FiguresInProgress`): each figure as it is measured, with
how, and the reference kernels' rates beside them; taken in at the end as one
:class:`~pytest_roofline.hardware.calibration_figures.CalibrationFigures` (imports JAX)."""

from __future__ import annotations

from statistics import median

from ...base.quantiles import relative_iqr
from ...hardware.calibration_figures import CalibrationFigures
from ..options import TimingSettings
from ..timers import Loop, time_program
from ..timing import Timed
from .reference_kernels import reference

__all__ = ["FiguresInProgress"]

_REFERENCE_RUNS = TimingSettings(warmup=2, min_runs=20, max_runs=20, budget_s=2.0, target_spread=0.0)


class FiguresInProgress:
    """The calibration's figures as they are measured: what each is and how it was measured."""

    def __init__(self, platform: str) -> None:
        self.platform = platform
        self.peaks: dict[str, float] = {}
        self.details: dict[str, str] = {}
        self.spread: dict[str, float] = {}
        self.references: dict[str, float] = {}
        self.unmeasured: dict[str, str] = {}
        self.rates: dict[str, float] = {}  # memory, and transcendental, integer, first_touch, cache_memory if measured
        self.bytes_per_fault: float | None = None
        self.cache_bytes: int | None = None

    def record(self, name: str, spread: float, how: str) -> None:
        self.details[name] = how
        self.spread[name] = spread

    def taken(self, contention: float | None) -> CalibrationFigures:
        rates = self.rates
        return CalibrationFigures(dict(self.peaks), rates["memory"], dict(self.details), spread=dict(self.spread),
                                  references=dict(self.references), unmeasured=dict(self.unmeasured),
                                  contention=contention, transcendental=rates.get("transcendental"),
                                  integer=rates.get("integer"), first_touch=rates.get("first_touch"),
                                  bytes_per_fault=self.bytes_per_fault, cache_memory=rates.get("cache_memory"),
                                  cache_bytes=self.cache_bytes)

    def reference_rate(self, ref_key: str, timed: list[Timed]) -> None:
        """Each reference kernel runs beside the calibration kernel of its ceiling, as it will run beside a
        kernel under test: its calibrated rate is its median in that setting (for the stream: with the caches
        flushed by the large calibration stream, not warm from its own previous run)."""
        ref = reference(self.platform, ref_key)
        times = [t for one in timed
                 for t, ok in zip(one.reference_s, ref.usable(one.reference_faults, len(one.reference_s)), strict=True)
                 if ok]
        left_out = sum(len(one.reference_s) for one in timed) - len(times)
        if not times:  # no rate: kernels it would pair with keep the calibrated ceilings, and say why
            self.unmeasured[ref_key] = (f"no run of the {ref_key} reference ({ref.name}) met its "
                                                f"conditions: all {left_out} faulted fewer than half of the fresh "
                                                f"pages it writes")
            return
        self.references[ref_key] = ref.work / median(times)
        self.record(f"reference {ref_key}", relative_iqr(times), f"{ref.name}, median of {len(times)} runs "
                    f"beside the calibration kernel" + (f" ({left_out} that faulted no fresh pages left out)"
                                                        if left_out else ""))

    def reference_alone(self, ref_key: str) -> Timed:
        """A reference that works in cache, timed on its own: its setting matters little."""
        ref = reference(self.platform, ref_key)
        alone = time_program(Loop(ref.prepare, ref.execute, ref.module_name, self.platform, _REFERENCE_RUNS))
        self.references[ref_key] = ref.work / median(alone.timing.per_run_s)
        self.record(f"reference {ref_key}", alone.timing.spread,
                    f"{ref.name}, median of {alone.timing.runs} runs ({alone.timing.timer})")
        return alone
