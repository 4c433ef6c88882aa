"""The figures of one measurement (:class:`Measured`), composed of the value objects it is made of (the hardware,
ceilings, work, roofline, runs, program, per-op model); the flat attributes (``flops``, ``utilization`` ...) are
derived from those parts. :class:`~.result.Result` adds its JSON form and words (:mod:`.text`). Pure: no JAX."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field, replace

from ..analysis.model import contention
from ..analysis.model.cache_state import CacheState
from ..analysis.model.compiler_agreement import OpsCheck
from ..analysis.model.exposed import Exposure
from ..analysis.model.first_touch import FirstTouch
from ..analysis.model.live import Live, Uncertainty, pair_utilizations, uncertainty
from ..analysis.model.per_op import OpRow, OpsModel
from ..analysis.model.roofline import IMPOSSIBLE_ABOVE, RooflineEstimate, above_roofline_text, faster_runs_text
from ..analysis.model.work_shares import CeilingUse
from ..analysis.program.counts import Work
from ..analysis.program.info import ProgramInfo, SourceWork
from ..analysis.program.memory import MemoryFootprint
from ..analysis.runs.across_processes import Processes
from ..analysis.runs.idle import IdleTime
from ..analysis.runs.run_stats import Timing
from ..analysis.verdict.census import Census, census
from ..analysis.verdict.decide import Figures, count_doubts, suspect, unsure_text
from ..base.kinds import Bound, CeilingsUsed, CountSource, FirstTouchMode, Model, TimerUsed
from ..base.part_of import Part
from ..hardware.nvml import Clocks
from ..hardware.per_device import Picked
from ..hardware.spec import HardwareSpec

__all__ = ["Measured"]


@dataclass(frozen=True)
class Measured:
    name: str
    hardware: HardwareSpec
    ceilings: CeilingsUsed
    ceilings_used: tuple[CeilingUse, ...]
    work: Work
    roofline: RooflineEstimate
    _: KW_ONLY  # fields from the seventh on are given by keyword
    timing: Timing
    program: ProgramInfo
    ops_model: OpsModel = OpsModel()
    notes: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    hlo_text: str = field(default="", repr=False, compare=False)
    xspace: bytes = field(default=b"", repr=False, compare=False)  # the serialized profiler trace
    live: Live | None = None  # the reference kernel run beside this one (ceilings="live")
    threshold: float | None = None  # the threshold sampling went on for (while its interval straddled it)
    picked: Picked[float] | None = field(default=None, compare=False)  # the threshold on this hardware, and whence
    memory: MemoryFootprint | None = None  # the compiled program's memory analysis (None: the compiler gave none)
    first_touch: FirstTouch | None = None  # a CPU's first touch of the program's fresh pages (None: no such term)
    first_touch_mode: FirstTouchMode = "include"  # whether the roofline charges it (where there is one)
    no_work: bool = False  # the compiled program computes nothing (returns None or a constant)
    cache: CacheState | None = None  # the cache state of the timed runs (None: not recorded)
    clocks: Clocks | None = None  # GPU clocks around the timed runs, or why there is no reading
    processes: Processes | None = None  # the program spans processes: their times, topology, who decided
    idle: IdleTime | None = None  # the time in a run the device executed no op, and how much waited on the host
    exposure: Exposure | None = None  # the collectives' time that no compute overlapped (None: no collective)
    source: SourceWork | None = None  # the work the program as written asks for (None: no jaxpr to read)

    # Figures read from one part (each a declaration of where, not a computation)
    flops = Part[float]("work.flops")
    transcendentals = Part[float]("work.transcendentals")
    bytes_accessed = Part[float]("work.bytes_accessed")
    flops_source = Part[CountSource]("work.flops_source")
    bytes_source = Part[CountSource]("work.bytes_source")
    matrix_flops = Part[Mapping[str, float]]("work.matrix_flops")
    counts_lower_bound = Part[bool]("work.counts_lower_bound")
    loops = Part[tuple[str, ...]]("work.loops")
    collective_bytes = Part[float]("work.collective_bytes")
    intensity = Part[float]("work.intensity")
    bound = Part[Bound]("roofline.bound")
    critical_intensity = Part[float]("roofline.critical_intensity")
    compute_time_s = Part[float]("roofline.compute_time_s")
    memory_time_s = Part[float]("roofline.memory_time_s")
    comms_time_s = Part[float]("roofline.comms_time_s")
    transcendental_time_s = Part[float]("roofline.transcendental_time_s")
    roofline_time_s = Part[float]("roofline.roofline_time_s")
    device_time_s = Part[float]("timing.median_s")  # the median over runs
    per_run_s = Part[tuple[float, ...]]("timing.per_run_s")
    min_s = Part[float]("timing.min_s")
    spread = Part[float]("timing.spread")  # (p75 - p25) / median of the runs
    runs = Part[int]("timing.runs")
    timer = Part[TimerUsed]("timing.timer")
    timer_fallback_reason = Part[str]("timing.fallback_reason")
    wall_min_s = Part[float]("timing.wall_min_s")
    compile_time_s = Part[float]("program.compile_time_s")
    compile_cached = Part[bool]("program.compile_cached")
    module_name = Part[str]("program.module_name")
    device_kind = Part[str]("program.device_kind")
    versions = Part[Mapping[str, str]]("program.versions")
    ops = Part[tuple[OpRow, ...]]("ops_model.rows")
    ops_check = Part[OpsCheck | None]("ops_model.check")
    ops_roofline_time_s = Part[float]("ops_model.roofline_time_s")
    # A utilization above 105% (its whole 95% interval) cannot happen: a peak is too low or a count too high
    impossible = Part[bool]("figures.impossible")
    # Above 105% with the first touch, not without it: the page faults cost less than calibrated
    first_touch_beaten = Part[bool]("figures.first_touch_beaten")
    @property
    def source_flops(self) -> float | None:
        """The FLOPs the source asks for, where they can be compared with the compiled program's."""
        return self.source.flops if self.source is not None and not self.source.unknown else None

    @property
    def compiled_over_source(self) -> float | None:
        """The compiled program's FLOPs over the source's (None where they cannot be compared)."""
        compiled = self.source_compiled_flops
        return self.source.factor(compiled) if compiled is not None and self.source is not None else None

    @property
    def source_compiled_flops(self) -> float | None:
        """The compiled program's own FLOPs (the compiler's or the HLO's count; None where the user gave them)."""
        if self.work.flops_source == "source":
            return self.work.compiled_flops
        return self.work.flops if self.work.flops_source != "user" else None

    @property
    def peak_memory_bytes(self) -> int | None:
        """Arguments + outputs + temporaries - aliased, per device (``memory`` has the parts)."""
        return self.memory.peak_bytes if self.memory is not None else None

    # Derived figures
    @property
    def per_run_utilization(self) -> tuple[float, ...]:
        """Program-level utilization of each run: against the live ceiling of its pair, else the calibration; where
        the first touch is charged, each run against its own (the pages that run faulted)."""
        return self._per_run_with(self.first_touch_charged)

    @property
    def utilization(self) -> float:
        """Program-level roofline time / measured time: the median over pairs with live ceilings."""
        if self.live is not None:
            return self.uncertainty.utilization
        return self.utilization_calibrated

    @property
    def utilization_calibrated(self) -> float:
        """Against the calibrated (or datasheet) ceilings alone: roofline time / median measured time."""
        return self.roofline_time_s / self.device_time_s

    @property
    def first_touch_charged(self) -> bool:
        """Whether the roofline (and so ``utilization``) includes the first touch of fresh pages."""
        return self.first_touch is not None and self.first_touch_mode == "include"

    def _per_run_with(self, touch: bool) -> tuple[float, ...]:
        """Each run's utilization with the first touch (its own faults where counted for every run) or without."""
        live, faults, ft = self.live, self.timing.faults_per_run, self.first_touch
        own = ft.per_run(faults, len(self.per_run_s)) if touch and ft else None
        roof = replace(self.roofline, first_touch_time_s=ft.time_s if touch and ft else 0.0)
        return tuple(pair_utilizations(roof, self.per_run_s, live.resource if live else None,
                                       live.drift_per_run if live else None, own))

    def _utilization_with(self, touch: bool) -> float:
        if self.live:
            return uncertainty(self._per_run_with(touch)).utilization
        touch_s = self.first_touch.time_s if touch and self.first_touch else 0.0
        return replace(self.roofline, first_touch_time_s=touch_s).roofline_time_s / self.device_time_s

    @property
    def utilization_with_first_touch(self) -> float:
        """Against the roofline plus the first touch of the fresh pages (= ``utilization`` where charged)."""
        return self._utilization_with(True)

    @property
    def utilization_without_first_touch(self) -> float:
        """Against main memory and compute alone, the page faults of fresh buffers counted as lost time."""
        return self._utilization_with(False)

    @property
    def drift(self) -> float | None:
        """Reference rate during the runs / at calibration (median over pairs); None without live ceilings."""
        return self.live.drift if self.live is not None else None

    @property
    def uncertainty(self) -> Uncertainty:
        return uncertainty(self.per_run_utilization)

    @property
    def utilization_interval(self) -> tuple[float, float]:
        """95% confidence interval of the median utilization (order statistics over runs or pairs)."""
        u = self.uncertainty
        return (u.low, u.high)

    @property
    def marginal(self) -> bool:
        """The threshold lies inside the interval: the verdict is within the noise."""
        return self.threshold is not None and self.uncertainty.contains(self.threshold)

    @property
    def ops_utilization(self) -> float:
        """Sum of per-op roofline times / measured time."""
        return self.ops_roofline_time_s / self.device_time_s if self.device_time_s > 0 else 0.0

    def utilization_for(self, model: Model = "program") -> float:
        """The utilization a threshold is checked against on the given model."""
        return self.figures.utilization_for(model)

    @property
    def figures(self) -> Figures:
        """What the pass/fail rule reads (:func:`pytest_roofline.analysis.verdict.decide.decide`)."""
        charged = self.first_touch_charged and self.roofline.first_touch_time_s > 0
        core_low = uncertainty(self._per_run_with(False)).low if charged else None
        on_cpu, ops_on_cpu = (self.utilization_on_cpu, self._on_cpu(self.ops_roofline_time_s)) if self.contended \
            else (None, None)
        rejected = self.contended and (on_cpu is None or ops_on_cpu is None) and self.cpu_waiting is not None \
            and bool(self.timing.waiting_per_run)
        return Figures(
            utilization=self.utilization, ops_utilization=self.ops_utilization, bound=self.bound,
            intensity=self.intensity, critical_intensity=self.critical_intensity, interval=self.utilization_interval,
            core_low=core_low, on_cpu=on_cpu, ops_on_cpu=ops_on_cpu, no_work=self.no_work,
            lower_bound=self.counts_lower_bound, counts_top_why=self.work.top_text,
            counts_top=self.roofline.utilization_at_top(self.utilization, self.work.flops, self.work.flops_top),
            waiting_above_roofline=self.cpu_waiting if rejected else None, missing_counts=self.work.missing_counts,
            unsure=unsure_text(self.hardware, self.work, live=self.live is not None),
            bound_unsure=self.work.bound_unsure)

    @property
    def cpu_waiting(self) -> float | None:
        """The median share of its ready time that the kernel's threads waited for a CPU held by another process
        (None where the system does not say, and on accelerators, whose device time host contention does not
        stretch)."""
        return self.timing.median_waiting if self.hardware.platform == "cpu" else None

    @property
    def others_cpu_share(self) -> float | None:
        """The share of the CPUs other processes held during the runs (None where the waiting is not known)."""
        return self.timing.others_cpu_share if self.cpu_waiting is not None else None

    @property
    def contended(self) -> bool:
        """Other processes held the CPUs during the runs (see :mod:`pytest_roofline.analysis.model.contention`)."""
        return contention.contended(self.cpu_waiting, self.timing.others_cpu_share)

    @property
    def utilization_on_cpu(self) -> float | None:
        """Against the calibrated ceilings, each run's time with its threads' waiting for a CPU taken out (None
        where the system does not say, and where that would be above the roofline: :attr:`on_cpu_rejected`)."""
        return self._on_cpu(self.roofline_time_s)

    @property
    def on_cpu_rejected(self) -> bool:
        """Taking the waiting out would put the utilization above the roofline: no figure to show or judge on."""
        return self._on_cpu(self.roofline_time_s, checked=False) not in (None, self.utilization_on_cpu)

    def _on_cpu(self, roofline_s: float, checked: bool = True) -> float | None:
        if self.cpu_waiting is None:
            return None
        on_cpu = contention.on_cpu_utilization(roofline_s, self.per_run_s, self.timing.waiting_per_run)
        if checked and on_cpu is not None and not contention.plausible(on_cpu, self.utilization_interval):
            return None
        return on_cpu

    @property
    def fast_runs(self) -> tuple[int, float]:
        """Runs that took less than the roofline time (beyond 5%; against compute and traffic alone, on the
        calibrated or datasheet ceilings: a live reference's noise does not make a run fast): how many, and the
        highest utilization of any run."""
        core = replace(self.roofline, first_touch_time_s=0.0).roofline_time_s
        per_run = [core / t for t in self.per_run_s if t > 0]
        return sum(u > IMPOSSIBLE_ABOVE for u in per_run), max(per_run, default=0.0)

    @property
    def suspect(self) -> str:
        """What to distrust when the utilization is impossible, or when any run beat the roofline whatever the
        median says ("" otherwise)."""
        uses = self.ceilings_used
        why = suspect(self.bound, uses, self.hardware, self.work, count_doubts(self.work, uses))
        if self.impossible:
            return why
        (count, fastest), high = self.fast_runs, self.utilization_interval[1]
        if not count and not (max(self.utilization, high) > 1.0 and not self.first_touch_beaten):
            return ""
        if self.hardware.platform != "cpu" and self.ceilings == "datasheet":
            why += "; or clocks above those the datasheet's peaks assume"
        if count:
            return faster_runs_text(count, len(self.per_run_s), fastest, why)
        return above_roofline_text(self.utilization, self.utilization_calibrated, self.drift, why, high)

    @property
    def census(self) -> Census:
        """How many device ops one run executes, and of which family (from the trace where it has them)."""
        return census(self.ops)

    @property
    def utilization_at_clocks(self) -> float | None:
        """The utilization against the roofline at the clocks the runs met (None: no reading, or at maximum)."""
        roof = self.roofline
        at = self.clocks.roofline_at_clocks(roof.compute_time_s, roof.memory_time_s,
                                            max(roof.transcendental_time_s, roof.comms_time_s)) if self.clocks else None
        return at / self.device_time_s if at is not None and self.device_time_s > 0 else None

