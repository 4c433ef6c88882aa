"""``measure()``: compile, count, time and compare a jitted JAX kernel with its roofline (imports JAX)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .cost import CostAnalysisError, Counts, executed_ops, program_counts
from .hardware import (
    HardwareSpec,
    find_spec,
    load_shipped_table,
    merge_overrides,
    peak_for_class,
)
from .hlo import HloParseError, parse_hlo
from .model import estimate, utilization
from .ops import attach_times, busy_time, hints, op_rows, ops_check
from .result import CeilingUse, Result
from .runner import MeasureError, compile_program, time_compiled
from .timing import TimingSettings

__all__ = ["measure", "resolve_hardware", "MeasureError"]

CEILING_MODES = ("auto", "datasheet", "calibrated")


def resolve_hardware(platform: str, device_kind: str, hardware: str | HardwareSpec | None = None,
                     hardware_file: str | os.PathLike[str] | None = None, ceilings: str = "auto",
                     recalibrate: bool | str = False) -> tuple[HardwareSpec, str]:
    """The ceilings for a device, and which kind they are ("datasheet", "calibrated", "given").

    CPU ceilings are calibrated unless the table (or an override file) has an entry for the CPU and
    ``ceilings="datasheet"``; accelerators use the datasheet unless ``ceilings="calibrated"``.
    """
    if ceilings not in CEILING_MODES:
        raise ValueError(f"ceilings must be one of {CEILING_MODES}, got {ceilings!r}")
    if isinstance(hardware, HardwareSpec):
        return hardware, "given"
    table = merge_overrides(load_shipped_table(), hardware_file)
    if platform == "cpu" and hardware is None:
        from .calibrate import cpu_info, cpu_spec

        if ceilings == "datasheet":
            model = cpu_info()["model"]
            for spec in table.values():
                if spec.platform == "cpu" and any(k in ("cpu", model) for k in spec.device_kinds):
                    return spec, "datasheet"
            raise ValueError("ceilings='datasheet' on a CPU needs a CPU entry in a hardware file "
                             "(device_kinds: [\"cpu\"]); CPU ceilings are otherwise measured")
        return cpu_spec(device_kind, refresh=recalibrate), "calibrated"
    spec = find_spec(table, platform, device_kind, hardware if isinstance(hardware, str) else None)
    if ceilings == "calibrated":
        from .calibrate import calibrated_spec

        return calibrated_spec(spec, device_kind, refresh=recalibrate), "calibrated"
    return spec, "datasheet"


def _positive(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{name}= must be a non-negative number, got {value!r}")
    return float(value)


def _precision(counts: Counts) -> str:
    non_default = [p for p in counts.dot_precisions if p != "default"]
    return non_default[0] if non_default else "default"


def _ceiling_uses(spec: HardwareSpec, counts: Counts, flops: float, user_flops: bool) -> list[CeilingUse]:
    precision = _precision(counts)
    uses: list[CeilingUse] = []
    if user_flops:
        # Analytic FLOPs cannot be split by dtype: they meet the peak of the program's main compute class.
        main = max(counts.matrix_flops, key=lambda k: counts.matrix_flops[k], default="vector")
        key, ceiling, note = peak_for_class(spec, main, precision)
        label = f"{main} matrix FLOPs (analytic)" if main != "vector" else "vector FLOPs (analytic)"
        return [CeilingUse(label, flops, key, ceiling, note)]
    for cls, amount in sorted(counts.matrix_flops.items()):
        if amount <= 0:
            continue
        key, ceiling, note = peak_for_class(spec, cls, precision)
        uses.append(CeilingUse(f"{cls} matrix FLOPs", amount, key, ceiling, note))
    vector = counts.vector_flops
    if vector > 0 or not uses:
        key, ceiling, note = peak_for_class(spec, "vector")
        uses.append(CeilingUse("vector FLOPs", vector, key, ceiling, note))
    return uses


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
    warmup: int = 2,
    min_runs: int = 5,
    max_runs: int = 100,
    budget_s: float = 1.0,
    target_spread: float = 0.02,
    timer: str = "auto",
    min_time_s: float = 0.2,
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
    ``budget_s`` seconds of runs are spent;
    ``timer`` is "auto", "profiler" or "wallclock".
    """
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    user_flops = _positive("flops", flops)
    user_bytes = _positive("bytes", bytes)
    user_trans = _positive("transcendentals", transcendentals)
    settings = TimingSettings(warmup, min_runs, max_runs, budget_s, target_spread, timer, min_time_s=min_time_s)

    program = compile_program(fn, args, kwargs, label)
    try:
        module = parse_hlo(program.hlo_text)
    except HloParseError as exc:
        raise MeasureError(f"{label}: pytest-roofline cannot read this program's optimized HLO (please report "
                           f"it with the line below): {exc}") from None
    try:
        if isinstance(program.raw_cost_analysis, Exception):
            raise CostAnalysisError(f"the compiler gave no cost analysis ({program.raw_cost_analysis})")
        counts = program_counts(program.raw_cost_analysis, module)
    except CostAnalysisError as exc:
        if user_flops is None or user_bytes is None:
            raise MeasureError(f"{label}: {exc}") from None
        counts = program_counts({}, module)  # analytic counts given: the HLO still tells the dtypes
    spec, mode = resolve_hardware(program.platform, program.device_kind, hardware, hardware_file, ceilings,
                                  recalibrate)

    total_flops = user_flops if user_flops is not None else counts.flops
    total_bytes = user_bytes if user_bytes is not None else counts.bytes_accessed
    uses = _ceiling_uses(spec, counts, total_flops, user_flops is not None)
    precision = _precision(counts)
    interconnect = spec.interconnect_bandwidth.value if spec.interconnect_bandwidth else None
    rows = op_rows(module, lambda cls: peak_for_class(spec, cls, precision)[1].value,
                   peak_for_class(spec, "vector")[1].value, spec.memory_bandwidth.value, interconnect,
                   devices=program.num_devices)
    collective = sum(r.collective_bytes for r in rows)
    roof = estimate({u.work: (u.amount, u.ceiling.value) for u in uses}, total_bytes, spec.memory_bandwidth.value,
                    collective, interconnect)
    uses.append(CeilingUse("bytes", total_bytes, "memory", spec.memory_bandwidth))
    if collective and spec.interconnect_bandwidth is not None:
        uses.append(CeilingUse("collective bytes", collective, "interconnect", spec.interconnect_bandwidth))

    timing = time_compiled(program, settings, executed_ops(module))
    notes = [u.note for u in uses if u.note]
    if collective and interconnect is None:
        notes.append(f"{collective:.3g} collective bytes not timed: {spec.name} has no interconnect bandwidth")
    busy = None
    if timing.found is not None:
        rows = attach_times(rows, timing.found.op_events, timing.found.run_of_event, timing.runs)
        containers = frozenset(i.name for c in module.computations.values() for i in c.instructions
                               if i.opcode in ("while", "call", "conditional"))
        busy = busy_time(timing.found.op_events, timing.found.run_of_event, timing.runs, containers)
    check = ops_check(module, program.raw_cost_analysis)
    if not check.ok:
        notes.append("per-op counts differ from the compiler's: " + "; ".join(check.mismatches))
    root = module.entry.root
    working_set = sum(i.shape.bytes for i in module.entry.instructions if i.opcode == "parameter") + root.shape.bytes
    advice = hints(rows, platform=program.platform, device_time_s=timing.median_s, bound=roof.bound,
                   donated=any(program.donated), output_bytes=root.shape.bytes, working_set_bytes=working_set,
                   has_loops=bool(counts.loops), busy_s=busy)
    if any(program.donated):
        notes.append("donated inputs were copied before each run, outside the timing")
    if timing.fallback_reason:
        notes.append(f"wall clock used: {timing.fallback_reason}")

    import jax
    import jaxlib

    return Result(
        name=label,
        hardware=spec,
        ceilings=mode,
        ceilings_used=tuple(uses),
        flops=total_flops,
        transcendentals=user_trans if user_trans is not None else counts.transcendentals,
        bytes_accessed=total_bytes,
        flops_source="user" if user_flops is not None else "compiler",
        bytes_source="user" if user_bytes is not None else "compiler",
        matrix_flops=dict(counts.matrix_flops),
        counts_lower_bound=counts.lower_bound and (user_flops is None or user_bytes is None),
        loops=counts.loops,
        intensity=total_flops / total_bytes if total_bytes > 0 else float("inf"),
        critical_intensity=roof.critical_intensity,
        bound=roof.bound,
        compute_time_s=roof.compute_time_s,
        memory_time_s=roof.memory_time_s,
        comms_time_s=roof.comms_time_s,
        collective_bytes=collective,
        roofline_time_s=roof.roofline_time_s,
        device_time_s=timing.median_s,
        per_run_s=timing.per_run_s,
        min_s=timing.min_s,
        spread=timing.spread,
        runs=timing.runs,
        timer=timing.timer,
        timer_fallback_reason=timing.fallback_reason,
        trace_method=timing.method,
        wall_min_s=timing.wall_min_s,
        wall_per_run_s=timing.wall_per_run_s,
        compile_time_s=program.compile_time_s,
        utilization=utilization(roof.roofline_time_s, timing.median_s),
        module_name=program.module_name,
        device_kind=program.device_kind,
        notes=tuple(notes),
        versions={"jax": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", "unknown")},
        ops=tuple(rows),
        ops_roofline_time_s=sum(r.roofline_time_s for r in rows),
        ops_check=check,
        hints=tuple(advice),
        hlo_text=program.hlo_text,
        xspace=timing.xspace,
        exporter=timing.exporter,
    )
