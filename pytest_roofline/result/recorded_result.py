"""A measurement as a report records it: :class:`RecordedResult`, the one declaration of the figures a measurement
holds. Each field names a figure once, with its type, its default (for reports older than it) and, where the live
result holds it under another name, its path there (``of``). From these fields alone a result just measured becomes a
record (:meth:`RecordedResult.of`), a record its JSON form (:meth:`RecordedResult.to_dict`, which is
:meth:`~pytest_roofline.result.result.Result.to_dict`) and a report's JSON a record again
(:meth:`RecordedResult.from_dict`), through :mod:`.figure_codec`: the text, HTML and history readers see one type
whichever it came from, and a figure added here is written and read back with no other edit. Pure."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, get_type_hints

from ..analysis.model.cache_state import CacheState
from ..analysis.model.compiler_agreement import OpsCheck
from ..analysis.model.exposed import Exposure
from ..analysis.model.first_touch import FirstTouch
from ..analysis.model.live import Live
from ..analysis.model.per_op import OpRow
from ..analysis.model.work_shares import CeilingUse
from ..analysis.program.info import SourceWork
from ..analysis.program.memory import MemoryFootprint
from ..analysis.runs.across_processes import Processes
from ..analysis.runs.idle import IdleTime
from ..analysis.runs.program_runs import ops_hidden
from ..analysis.verdict.census import Census
from ..analysis.verdict.decide import model_utilization
from ..base.kinds import Bound, CeilingsUsed, CountSource, Model, TimerUsed
from ..hardware.nvml import Clocks
from ..hardware.spec import HardwareSpec
from .figure_codec import decode, encode, typed

if TYPE_CHECKING:
    from .figures import Measured

__all__ = ["RecordedResult", "figure_fields", "ops_note"]


def _of(path: str, default: Any) -> Any:
    """A figure the live result holds at ``path`` (dotted: a part's attribute), not under the figure's name."""
    return field(default=default, metadata={"of": path})


@dataclass(frozen=True)
class RecordedResult:
    """The figures of one measurement the reports show, as its JSON holds them (the derived ones as they were
    computed when it was measured, never again). Fields with a default may be missing from older reports."""

    name: str
    hardware: HardwareSpec
    ceilings: CeilingsUsed
    device_kind: str
    # The work and the roofline
    flops: float
    bytes_accessed: float
    _: KW_ONLY  # fields from the seventh on are given by keyword
    intensity: float
    critical_intensity: float
    bound: Bound
    roofline_time_s: float
    compute_time_s: float
    memory_time_s: float
    # The runs
    device_time_s: float
    min_s: float
    spread: float
    runs: int
    timer: TimerUsed
    utilization: float
    impossible: bool
    transcendentals: float = 0.0
    flops_source: CountSource = "compiler"
    bytes_source: CountSource = "compiler"
    collective_bytes: float = 0.0
    counts_lower_bound: bool = False
    counts_lower_bound_reason: str = _of("work.lower_bound_reason", "")
    int_ops: float = _of("work.int_ops", 0.0)  # elementwise integer and boolean ops, apart from the FLOPs
    bound_unsure: bool = _of("work.bound_unsure", False)  # a custom call's work is missing: the bound is not known
    # which branch of each conditional ran how often, or counted at the dearest; and whether one was (an upper end)
    conditionals: tuple[str, ...] = _of("work.branches.lines", ())
    conditional_counted_at_dearest: bool = _of("work.branches.unsure", False)
    counts_if_cheapest_branches: Mapping[str, float] | None = _of("work.cheapest", None)  # the low end there
    flops_range_top: float | None = _of("work.flops_top", None)  # the FLOPs' high end, where a range
    matrix_flops: Mapping[str, float] = field(default_factory=dict)  # the matrix FLOPs per operand type
    loops: tuple[str, ...] = ()  # loops whose trip counts the counts could not know
    uncounted_custom_calls: tuple[str, ...] = _of("work.uncounted", ())  # their work is not in the counts
    counts_from_cost_estimate: tuple[str, ...] = _of("work.estimated", ())  # Pallas kernels counted from it
    transcendental_time_s: float = 0.0
    comms_time_s: float = 0.0
    first_touch_time_s: float = _of("roofline.first_touch_time_s", 0.0)
    # Each run's times, the host's page faults and the threads' waiting for a CPU, and how the trace was read
    per_run_s: tuple[float, ...] = ()
    wall_per_run_s: tuple[float, ...] = _of("timing.wall_per_run_s", ())
    wall_min_s: float = 0.0
    faults_per_run: tuple[int, ...] = _of("timing.faults_per_run", ())
    waiting_per_run: tuple[float, ...] = _of("timing.waiting_per_run", ())
    timer_fallback_reason: str = ""
    trace_method: str = _of("timing.method", "")
    # The program
    module_name: str = ""
    static_arguments: tuple[str, ...] = _of("program.static", ())  # compiled in, not arrays, in words
    compile_time_s: float = 0.0
    compile_cached: bool = False  # the program came from JAX's in-memory cache: no compile time measured
    cache: CacheState | None = None  # the cache state of the timed runs
    clocks: Clocks | None = None  # GPU clocks around the runs, or why there is no reading
    processes: Processes | None = None  # a program that spans processes: their times and who decided
    idle: IdleTime | None = None  # the time in a run the device executed no op, and how much waited on the host
    census: Census | None = None  # device ops per run, and of which family
    exposure: Exposure | None = None  # the collectives' time that no compute overlapped (None: no collective)
    utilization_at_clocks: float | None = None  # against the roofline at the clocks the runs met
    source_work: SourceWork | None = _of("source", None)  # the work the source asks for (None: no jaxpr read)
    source_flops: float | None = None  # the FLOPs the source asks for (None: not comparable, or not recorded)
    compiled_over_source: float | None = None  # the compiled program's FLOPs over the source's
    versions: Mapping[str, str] = field(default_factory=dict)
    # the compiled program, device, versions and settings hashed ("": not recorded)
    program_fingerprint: str = _of("program.fingerprint", "")
    ceilings_used: tuple[CeilingUse, ...] = ()
    # The judgement's figures
    threshold: float | None = None  # the threshold sampling went on for (while its interval straddled it)
    utilization_calibrated: float | None = None
    utilization_interval: tuple[float, float] | None = None
    marginal: bool = False
    suspect: str = ""
    drift: float | None = None
    live: Live | None = None
    contended: bool = False
    cpu_waiting: float | None = None
    others_cpu_share: float | None = None
    utilization_on_cpu: float | None = None
    on_cpu_rejected: bool = False  # taking the waiting out would put it above the roofline: no figure
    no_work: bool = False
    # Memory and the first touch of fresh pages
    memory: MemoryFootprint | None = None
    peak_memory_bytes: int | None = None  # the footprint's total (its parts are in ``memory``)
    first_touch: FirstTouch | None = None
    first_touch_text: str = field(default="", metadata={"json": ("first_touch", "text")})  # inside its object
    first_touch_charged: bool = False
    utilization_with_first_touch: float | None = None
    utilization_without_first_touch: float | None = None
    first_touch_beaten: bool = False
    # The per-op model, hints and notes
    ops: tuple[OpRow, ...] = ()
    ops_roofline_time_s: float = 0.0
    ops_utilization: float = 0.0
    ops_check: OpsCheck | None = None
    # where the per-op times come from, where not the timed runs (a second pass)
    ops_times_from: str = _of("ops_model.times_from", "")
    hints: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # The JSON it was read from, written back unchanged at the file boundary (never read by the reports; empty for
    # a record of a result measured in this process, whose JSON form is written from its fields)
    json: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def compile_measured_s(self) -> float:
        """The compile time where XLA compiled the program in this measurement; 0 where it came from JAX's
        cache (or the report predates compile times)."""
        return 0.0 if self.compile_cached else self.compile_time_s

    def utilization_for(self, model: Model) -> float:
        """The utilization a threshold was checked against on ``model``."""
        return model_utilization(model, self.utilization, self.ops_utilization)

    @property
    def hardware_context(self) -> str:
        """The hardware entry and ceilings mode the figures are against: ``"name [mode]"``."""
        return f"{self.hardware.name} [{self.ceilings}]"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the one read, where read from a report; else each figure under its name (or inside
        the object its declaration names)."""
        if self.json:
            return dict(self.json)
        out: dict[str, Any] = {}
        for f in figure_fields():
            value = encode(getattr(self, f.name))
            where = f.metadata.get("json")
            if where is None:
                out[f.name] = value
            elif out.get(where[0]) is not None:
                out[where[0]][where[1]] = value
        return out

    @classmethod
    def of(cls, result: Measured) -> RecordedResult:
        """A result just measured, recorded from its typed figures: the one place a measurement becomes a record."""
        hints = _hints()
        return cls(**{f.name: typed(hints[f.name], attrgetter(f.metadata.get("of", f.name))(result))
                      for f in figure_fields()})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedResult:
        """Read a result's JSON form; a missing required key is a ``KeyError``, a wrong value a ``TypeError`` or
        ``ValueError``."""
        hints, values = _hints(), {}
        for f in figure_fields():
            where = f.metadata.get("json")
            holder, key = (data.get(where[0]) or {}, where[1]) if where else (data, f.name)
            if key in holder:
                values[f.name] = decode(hints[f.name], holder[key], f.name)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise KeyError(f.name)
        return cls(**values, json=dict(data))


@functools.cache
def figure_fields() -> tuple[dataclasses.Field[Any], ...]:
    """The declared figures (every field but the JSON read)."""
    return tuple(f for f in dataclasses.fields(RecordedResult) if f.name != "json")


@functools.cache
def _hints() -> dict[str, Any]:
    return get_type_hints(RecordedResult)


def ops_note(result: RecordedResult) -> str:
    """Where a result's per-op times come from, where not its timed runs ("times from a second profiled pass ..."),
    or why it has none (the trace hid them behind command buffers); "" otherwise."""
    if result.ops_times_from:
        return f"times from {result.ops_times_from}"
    hidden = ops_hidden(result.notes)
    if hidden and not any(r.measured_s for r in result.ops):
        return f"not shown: {hidden}"
    return ""
