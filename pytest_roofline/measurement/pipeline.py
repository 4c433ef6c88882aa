"""``measure()``: compile, count, time and compare a jitted JAX kernel with its roofline, as named steps
(imports JAX)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jaxlib

from ..analysis.ceilings import CeilingUse, compute_ceilings, dot_precision
from ..analysis.check import ops_check
from ..analysis.counts import CostAnalysisError, Counts, Work, program_counts, work_of
from ..analysis.hints import busy_time, hints
from ..analysis.hlo import HloModule, HloParseError, parse_hlo
from ..analysis.ops import OpRow, OpsModel, attach_times, op_rows
from ..analysis.roofline import RooflineEstimate, estimate
from ..analysis.walk import CONTAINER_OPS, executed_op_count
from ..errors import MeasureError
from ..hardware.calibration import refresh_mode
from ..hardware.peaks import peak_for_class
from ..hardware.spec import HardwareSpec
from ..kinds import CEILINGS_MODES, Timer, choose
from ..result import ProgramInfo, Result
from .hardware import resolve_hardware
from .program import CompiledProgram, compile_program, time_compiled
from .settings import DEFAULT_TIMING, TimingSettings
from .timing import Timed

__all__ = ["measure"]

_D = DEFAULT_TIMING


def measure(
    fn: Callable[..., Any],
    *args: Any,
    flops: float | None = None,
    bytes: float | None = None,  # noqa: A002 - the name users expect, mirrors cost_analysis
    transcendentals: float | None = None,
    name: str | None = None,
    hardware: str | HardwareSpec | None = None,
    hardware_file: str | os.PathLike[str] | None = None,
    ceilings: str = "auto",
    recalibrate: bool | str = False,
    warmup: int = _D.warmup,
    min_runs: int = _D.min_runs,
    max_runs: int = _D.max_runs,
    budget_s: float = _D.budget_s,
    target_spread: float = _D.target_spread,
    timer: Timer = _D.timer,
    min_time_s: float = _D.min_time_s,
    **kwargs: Any,
) -> Result:
    """Measure ``fn(*args, **kwargs)`` against the roofline of the device it runs on.

    ``fn`` is jitted if it is not already (a ``jax.jit`` function with static or donated arguments is
    used as it is; donated inputs get a fresh copy per run, outside the timing). Keyword arguments not
    listed here go to ``fn``; bind ones whose names clash with ``functools.partial``.

    Counting: ``flops``, ``bytes`` and ``transcendentals`` replace the compiler's counts (analytic model
    FLOPs give MFU). Hardware: ``hardware`` forces a table entry by name (or is a ``HardwareSpec``);
    ``hardware_file`` adds or overrides devices (default ``$PYTEST_ROOFLINE_HARDWARE_FILE``);
    ``ceilings`` is "auto", "datasheet" or "calibrated"; ``recalibrate`` re-measures cached ceilings
    (True: replace the cache; "best": keep per figure the higher of the cached and the new value).
    Timing: ``warmup`` untimed runs, then between ``min_runs`` and ``max_runs`` timed runs, stopping once
    the spread (relative IQR) is within ``target_spread`` after at least ``min_time_s`` seconds, or when
    ``budget_s`` seconds of runs are spent; ``timer`` is "auto", "profiler" or "wallclock".
    """
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    given = _given_counts(flops, bytes, transcendentals)
    mode = choose(ceilings, CEILINGS_MODES, "ceilings")
    refresh = refresh_mode(recalibrate)
    settings = TimingSettings(warmup, min_runs, max_runs, budget_s, target_spread, timer, min_time_s=min_time_s)

    program = compile_program(fn, args, kwargs, label)
    module, counts = _read_program(program, label, given)
    spec, used = resolve_hardware(program.platform, program.device_kind, hardware, hardware_file, mode, refresh)
    model = _model(spec, counts, module, program.num_devices, given)
    timed = time_compiled(program, settings, executed_op_count(module))
    ops_model, busy = _per_op(model.rows, module, program, timed)
    return Result(
        name=label,
        hardware=spec,
        ceilings=used,
        ceilings_used=tuple(model.uses),
        work=model.work,
        roofline=model.estimate,
        timing=timed.timing,
        program=ProgramInfo(program.module_name, program.device_kind, program.compile_time_s,
                            {"jax": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", "unknown")}),
        ops_model=ops_model,
        notes=tuple(_notes(model, ops_model, program, timed, spec)),
        hints=tuple(_hints(ops_model.rows, module, program, model, timed, busy)),
        hlo_text=program.hlo_text,
        xspace=timed.xspace,
    )


@dataclass(frozen=True)
class _Given:
    """Analytic counts from the user (None: the compiler's)."""

    flops: float | None
    bytes: float | None
    transcendentals: float | None


def _given_counts(flops: float | None, bytes_: float | None, transcendentals: float | None) -> _Given:
    def check(keyword: str, value: float | None) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"{keyword}= must be a non-negative number, got {value!r}")
        return float(value)

    return _Given(check("flops", flops), check("bytes", bytes_), check("transcendentals", transcendentals))


def _read_program(program: CompiledProgram, label: str, given: _Given) -> tuple[HloModule, Counts]:
    """The optimized HLO and the program's counts (compiler analysis, loops multiplied)."""
    try:
        module = parse_hlo(program.hlo_text)
    except HloParseError as exc:
        raise MeasureError(f"{label}: pytest-roofline cannot read this program's optimized HLO (please report "
                           f"it with the line below): {exc}") from None
    try:
        if isinstance(program.raw_cost_analysis, Exception):
            raise CostAnalysisError(f"the compiler gave no cost analysis ({program.raw_cost_analysis})")
        return module, program_counts(program.raw_cost_analysis, module)
    except CostAnalysisError as exc:
        if given.flops is None or given.bytes is None:
            raise MeasureError(f"{label}: {exc}") from None
        return module, program_counts({}, module)  # analytic counts given: the HLO still tells the dtypes


@dataclass(frozen=True)
class _Model:
    """The roofline of the program before it runs: its work, the ceilings it meets, the estimate, op rows."""

    work: Work
    uses: list[CeilingUse]
    estimate: RooflineEstimate
    rows: list[OpRow]


def _model(spec: HardwareSpec, counts: Counts, module: HloModule, devices: int, given: _Given) -> _Model:
    precision = dot_precision(counts)
    interconnect = spec.interconnect_bandwidth.value if spec.interconnect_bandwidth else None
    rows = op_rows(module, lambda cls: peak_for_class(spec, cls, precision)[1].value,
                   peak_for_class(spec, "vector")[1].value, spec.memory_bandwidth.value, interconnect,
                   devices=devices)
    collective = sum(r.collective_bytes for r in rows)
    work = work_of(counts, given.flops, given.bytes, given.transcendentals, collective)
    uses = compute_ceilings(spec, counts, work.flops, given.flops is not None)
    roof = estimate({u.work: (u.amount, u.ceiling.value) for u in uses}, work.bytes_accessed,
                    spec.memory_bandwidth.value, collective, interconnect)
    uses.append(CeilingUse("bytes", work.bytes_accessed, "memory", spec.memory_bandwidth))
    if collective and spec.interconnect_bandwidth is not None:
        uses.append(CeilingUse("collective bytes", collective, "interconnect", spec.interconnect_bandwidth))
    return _Model(work, uses, roof, rows)


def _per_op(rows: list[OpRow], module: HloModule, program: CompiledProgram,
            timed: Timed) -> tuple[OpsModel, float | None]:
    """Op rows with their measured times, the check against the compiler, and the busy time of a run."""
    busy = None
    if timed.events is not None:
        found = timed.events
        rows = attach_times(rows, found.op_events, found.run_of_event, timed.timing.runs)
        containers = frozenset(i.name for c in module.computations.values() for i in c.instructions
                               if i.opcode in CONTAINER_OPS)
        busy = busy_time(found.op_events, found.run_of_event, timed.timing.runs, containers)
    return OpsModel(tuple(rows), ops_check(module, program.raw_cost_analysis)), busy


def _notes(model: _Model, ops_model: OpsModel, program: CompiledProgram, timed: Timed,
           spec: HardwareSpec) -> list[str]:
    notes = [u.note for u in model.uses if u.note]
    if model.work.collective_bytes and spec.interconnect_bandwidth is None:
        notes.append(f"{model.work.collective_bytes:.3g} collective bytes not timed: {spec.name} has no "
                     f"interconnect bandwidth")
    if ops_model.check is not None and not ops_model.check.ok:
        notes.append("per-op counts differ from the compiler's: " + "; ".join(ops_model.check.mismatches))
    if any(program.donated):
        notes.append("donated inputs were copied before each run, outside the timing")
    if timed.timing.fallback_reason:
        notes.append(f"wall clock used: {timed.timing.fallback_reason}")
    return notes


def _hints(rows: Sequence[OpRow], module: HloModule, program: CompiledProgram, model: _Model, timed: Timed,
           busy: float | None) -> list[str]:
    root = module.entry.root
    working_set = sum(i.shape.bytes for i in module.entry.instructions if i.opcode == "parameter") + root.shape.bytes
    return hints(rows, platform=program.platform, device_time_s=timed.timing.median_s, bound=model.estimate.bound,
                 donated=any(program.donated), output_bytes=root.shape.bytes, working_set_bytes=working_set,
                 has_loops=bool(model.work.loops), busy_s=busy)
