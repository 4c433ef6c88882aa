"""A measurement as a report records it: :class:`RecordedResult`, the typed figures of a
:class:`~pytest_roofline.result.result.Result`'s JSON form, read the same way from a result just measured and from a
report file, so the text, HTML and history readers see one type whichever it came from. Pure."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from operator import attrgetter
from typing import Any, get_args

from ..analysis.model.cache_state import CacheState
from ..analysis.model.compiler_agreement import OpsCheck
from ..analysis.model.exposed import Exposure
from ..analysis.model.first_touch import FirstTouch
from ..analysis.model.live import Live
from ..analysis.model.per_op import OpRow
from ..analysis.model.work_shares import CeilingUse
from ..analysis.program.memory import MemoryFootprint
from ..analysis.runs.across_processes import Processes
from ..analysis.runs.idle import IdleTime
from ..analysis.runs.program_runs import ops_hidden
from ..analysis.verdict.census import Census
from ..analysis.verdict.decide import model_utilization
from ..base.kinds import BOUNDS, Bound, CeilingsUsed, CountSource, Model, TimerUsed, choose
from ..hardware.nvml import Clocks
from ..hardware.spec import HardwareSpec
from ..result.result import Result

__all__ = ["RecordedResult", "JSON_ONLY", "FROM_OTHER_KEYS"]


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
    counts_lower_bound_reason: str = ""
    int_ops: float = 0.0  # elementwise integer and boolean ops, apart from the FLOPs
    bound_unsure: bool = False  # a custom call's work is missing from the counts: the bound is not known
    conditionals: tuple[str, ...] = ()  # which branch of each conditional ran how often, or counted at the dearest
    conditional_counted_at_dearest: bool = False  # a conditional's branch unknown: the counts are an upper end
    transcendental_time_s: float = 0.0
    comms_time_s: float = 0.0
    first_touch_time_s: float = 0.0
    timer_fallback_reason: str = ""
    compile_time_s: float = 0.0
    compile_cached: bool = False  # the program came from JAX's in-memory cache: no compile time measured
    cache: CacheState | None = None  # the cache state of the timed runs
    clocks: Clocks | None = None  # GPU clocks around the runs, or why there is no reading
    processes: Processes | None = None  # a program that spans processes: their times and who decided
    idle: IdleTime | None = None  # the time in a run the device executed no op, and how much waited on the host
    census: Census | None = None  # device ops per run, and of which family
    exposure: Exposure | None = None  # the collectives' time that no compute overlapped (None: no collective)
    utilization_at_clocks: float | None = None  # against the roofline at the clocks the runs met
    source_flops: float | None = None  # the FLOPs the source asks for (None: not comparable, or not recorded)
    compiled_over_source: float | None = None  # the compiled program's FLOPs over the source's
    versions: Mapping[str, str] = field(default_factory=dict)
    program_fingerprint: str = ""  # the compiled program, device, versions and settings hashed ("": not recorded)
    ceilings_used: tuple[CeilingUse, ...] = ()
    # The judgement's figures
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
    first_touch: FirstTouch | None = None
    first_touch_text: str = ""
    first_touch_charged: bool = False
    utilization_with_first_touch: float | None = None
    utilization_without_first_touch: float | None = None
    first_touch_beaten: bool = False
    # The per-op model, hints and notes
    ops: tuple[OpRow, ...] = ()
    ops_roofline_time_s: float = 0.0
    ops_utilization: float = 0.0
    ops_check: OpsCheck | None = None
    ops_times_from: str = ""  # where the per-op times come from, where not the timed runs (a second pass)
    hints: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # The JSON it was read from, written back unchanged at the file boundary (never read by the reports)
    json: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # The result it was recorded from in this process, whose JSON form the file gets (None: read from a file)
    source: Result | None = field(default=None, repr=False, compare=False)

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
        """The JSON form: the result's own where it was measured in this process, else the one read."""
        return self.source.to_dict() if self.source is not None else dict(self.json)

    @classmethod
    def of(cls, result: Result) -> RecordedResult:
        """A result just measured, recorded from its typed figures: the one place a measurement becomes a record.
        Its JSON form is made from the result only when a report is written (:meth:`to_dict`)."""
        values = {f.name: _OF_RESULT.get(f.name, attrgetter(f.name))(result) for f in dataclasses.fields(cls)
                  if f.name not in ("json", "source")}
        return cls(**values, source=result)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedResult:
        """Read a result's JSON form; a missing required key is a ``KeyError``, a wrong value a ``TypeError`` or
        ``ValueError``."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name == "json":
                continue
            read = _COMPOSITE.get(f.name)
            if read is not None:
                values[f.name] = read(data)
            elif f.name in data or _required(f):
                values[f.name] = _scalar(f.name, str(f.type), data[f.name])
        return cls(**values, json=dict(data))


# The keys of a result's JSON form (:meth:`Result.to_dict`) that a record does not type, each for a reason: every
# other key is a field of RecordedResult, and tests/records/test_figures_agree.py fails on a key that is neither.
JSON_ONLY = frozenset({
    # each run's times, faults and waiting, and how the trace was read: kept for tools that read the file
    "per_run_s", "wall_per_run_s", "wall_min_s", "faults_per_run", "waiting_per_run", "trace_method",
    # the counts' provenance and ranges, shown through the notes and the lower-bound reason
    "counts_from_cost_estimate", "counts_if_cheapest_branches", "flops_range_top", "loops", "matrix_flops",
    "uncounted_custom_calls", "source_work",
    # the program's facts, the threshold sampling aimed at, the footprint's total (its parts are in ``memory``)
    "module_name", "static_arguments", "threshold", "peak_memory_bytes",
})
# Fields read from another key of the JSON (the first touch's words are inside its object)
FROM_OTHER_KEYS = {"first_touch_text": "first_touch"}


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


_SCALARS: dict[str, Callable[[Any], Any]] = {"float": float, "int": int, "str": str, "bool": bool}
# The Literal fields, read as one of their values (kinds.choose)
_CHOICES: dict[str, tuple[str, ...]] = {"Bound": BOUNDS, "CeilingsUsed": get_args(CeilingsUsed),
                                        "TimerUsed": get_args(TimerUsed), "CountSource": get_args(CountSource)}


def _scalar(name: str, kind: str, value: Any) -> Any:
    optional = kind.endswith(" | None")
    kind = kind.removesuffix(" | None")
    if value is None:
        if optional:
            return None
        if kind == "float":  # the strict JSON writer's null for a figure that was not finite
            return math.inf if name.endswith("intensity") else math.nan
        raise TypeError(f"{name} is null")
    if kind in _CHOICES:
        return choose(value, _CHOICES[kind], f"{name} {value!r}")
    if kind == "bool" and not isinstance(value, bool):
        raise TypeError(f"{name} {value!r} is not true or false")
    return _SCALARS[kind](value)


def _maybe(key: str, read: Callable[[Mapping[str, Any]], Any]) -> Callable[[Mapping[str, Any]], Any]:
    def reader(data: Mapping[str, Any]) -> Any:
        value = data.get(key)
        return read(value) if value else None

    return reader


def _interval(data: Mapping[str, Any]) -> tuple[float, float] | None:
    value = data.get("utilization_interval")
    if not value:
        return None
    low, high = value
    return (float(low), float(high))


# How a field is read from a result just measured where the Result names it otherwise (else: the attribute).
_OF_RESULT: dict[str, Callable[[Result], Any]] = {
    "device_kind": lambda r: r.program.device_kind,
    "compile_time_s": lambda r: r.program.compile_time_s,
    "compile_cached": lambda r: r.program.compile_cached,
    "program_fingerprint": lambda r: r.program.fingerprint,
    "versions": lambda r: {str(k): str(v) for k, v in r.program.versions.items() if v is not None},
    "transcendentals": lambda r: r.work.transcendentals,
    "flops_source": lambda r: r.work.flops_source,
    "bytes_source": lambda r: r.work.bytes_source,
    "collective_bytes": lambda r: r.work.collective_bytes,
    "counts_lower_bound": lambda r: r.work.counts_lower_bound,
    "counts_lower_bound_reason": lambda r: r.work.lower_bound_reason,
    "int_ops": lambda r: r.work.int_ops,
    "bound_unsure": lambda r: r.work.bound_unsure,
    "conditionals": lambda r: r.work.branches.lines,
    "conditional_counted_at_dearest": lambda r: r.work.branches.unsure,
    "critical_intensity": lambda r: r.roofline.critical_intensity,
    "compute_time_s": lambda r: r.roofline.compute_time_s,
    "memory_time_s": lambda r: r.roofline.memory_time_s,
    "transcendental_time_s": lambda r: r.roofline.transcendental_time_s,
    "comms_time_s": lambda r: r.roofline.comms_time_s,
    "first_touch_time_s": lambda r: r.roofline.first_touch_time_s,
    "min_s": lambda r: r.timing.min_s,
    "timer_fallback_reason": lambda r: r.timing.fallback_reason,
    "others_cpu_share": lambda r: r.timing.others_cpu_share if r.cpu_waiting is not None else None,
    "utilization_interval": lambda r: tuple(r.utilization_interval),
    "first_touch_text": lambda r: r.first_touch_text() if r.first_touch is not None else "",
    "ceilings_used": lambda r: tuple(r.ceilings_used),
    "ops": lambda r: tuple(r.ops),
    "ops_times_from": lambda r: r.ops_model.times_from,
    "hints": lambda r: tuple(r.hints),
    "notes": lambda r: tuple(r.notes),
}

_COMPOSITE: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "hardware": lambda d: HardwareSpec.from_dict(d["hardware"]),
    "versions": lambda d: {str(k): str(v) for k, v in (d.get("versions") or {}).items() if v is not None},
    "ceilings_used": lambda d: tuple(CeilingUse.from_dict(u) for u in d.get("ceilings_used") or ()),
    "utilization_interval": _interval,
    "live": _maybe("live", Live.from_dict),
    "memory": _maybe("memory", MemoryFootprint.from_dict),
    "first_touch": _maybe("first_touch", FirstTouch.from_dict),
    "cache": _maybe("cache", CacheState.from_dict),
    "clocks": _maybe("clocks", Clocks.from_dict),
    "processes": _maybe("processes", Processes.from_dict),
    "idle": _maybe("idle", IdleTime.from_dict),
    "census": _maybe("census", Census.from_dict),
    "exposure": _maybe("exposure", Exposure.from_dict),
    "first_touch_text": lambda d: str((d.get("first_touch") or {}).get("text") or ""),
    "ops": lambda d: tuple(OpRow.from_dict(op) for op in d.get("ops") or ()),
    "ops_check": _maybe("ops_check", OpsCheck.from_dict),
    "hints": lambda d: tuple(str(h) for h in d.get("hints") or ()),
    "conditionals": lambda d: tuple(str(c) for c in d.get("conditionals") or ()),
    "notes": lambda d: tuple(str(n) for n in d.get("notes") or ()),
}


def ops_note(result: RecordedResult) -> str:
    """Where a result's per-op times come from, where not its timed runs ("times from a second profiled pass ..."),
    or why it has none (the trace hid them behind command buffers); "" otherwise."""
    if result.ops_times_from:
        return f"times from {result.ops_times_from}"
    hidden = ops_hidden(result.notes)
    if hidden and not any(r.measured_s for r in result.ops):
        return f"not shown: {hidden}"
    return ""
