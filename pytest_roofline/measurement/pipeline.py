"""``measure()``: compile, count, time and compare a jitted JAX kernel with its roofline, as named steps
(imports JAX)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

import jax
import jaxlib

from ..analysis.model.cache_state import WARM_CHECK_RUNS, CacheState, plan_cache
from ..analysis.model.compiler_agreement import ops_check
from ..analysis.model.exposed import Exposure, exposure
from ..analysis.model.first_touch import FirstTouch, first_touch
from ..analysis.model.live import (
    Live,
    bracketing_times,
    correction_above_roofline,
    drifts,
    implausible_drift,
    pair_utilizations,
    settled,
)
from ..analysis.model.per_op import OpRow, OpsModel, OpTally, attach_tally, counts_as_seen, rows_as_seen, tally_events
from ..analysis.model.program_model import ProgramModel, program_model
from ..analysis.model.roofline import RooflineEstimate
from ..analysis.program.control_ran import with_control_ran
from ..analysis.program.counts import Counts
from ..analysis.program.hlo_reader import HloModule
from ..analysis.program.memory import MemoryFootprint, device_peak, footprint_from_stats, working_set
from ..analysis.program.walk import CONTAINER_OPS, constant_bytes, does_no_work, empty_inputs_note, executed_op_count
from ..analysis.runs.across_processes import Processes
from ..analysis.runs.hosts import Topology
from ..analysis.runs.idle import IdleTime, idle_time
from ..analysis.runs.program_runs import COMMAND_BUFFER_REMEDY, ops_hidden
from ..analysis.runs.run_stats import relative_iqr
from ..analysis.runs.time_spent import phase
from ..base.calls import KernelCall, split_call
from ..base.errors import MeasureError
from ..base.kinds import CeilingsUsed
from ..base.labels import kernel_name
from ..base.progress import said_if_slow
from ..hardware.calibration_cache import refresh_mode
from ..hardware.nvml import Clocks
from ..hardware.spec import HardwareSpec
from ..result.result import ProgramInfo, Result
from .compiled import (
    CompiledProgram,
    allocator_stats,
    block_until_ready,
    compile_program,
    time_compiled,
    without_command_buffers,
)
from .fingerprint import program_fingerprint
from .machine.clock_readings import ClockWatch
from .machine.device import resolve_hardware
from .machine.eviction import Evictor, cache_size
from .machine.reference_kernels import Reference, reference, reference_key_for
from .notes import result_hints, result_notes
from .options import MEASURE_OPTIONS, HardwareChoice, MeasureOptions, TimingSettings
from .predict import count_program, read_program
from .processes.peers import Peers, current_peers
from .processes.spanning import agree_with, gather, start_together, topology_of
from .processes.start_up import resolve_together
from .timing import Agree, Beside, CacheRuns, Settled, Timed

__all__ = ["measure", "measure_call"]

# Compiled programs with their inputs on the device, kept by measure_call(keep=...) for the next measurement of the same
# key (a round of `pytest-roofline ab` measures each kernel of its process again and again).
_KEPT: dict[str, CompiledProgram] = {}


def measure(fn: Callable[..., Any], *args: Any, **keywords: Any) -> Result:
    """Measure ``fn(*args, **kwargs)`` against the roofline of the device it runs on.

    ``fn`` is jitted if it is not already (a ``jax.jit`` function with static or donated arguments is
    used as it is; donated inputs get a fresh copy per run, outside the timing). Keywords other than the
    settings below go to ``fn``, and so does any keyword ``fn``'s signature names (``args=`` of
    ``jax.scipy.optimize.minimize``, a parameter called ``name``); ``roofline_<setting>=`` is always the setting
    (:mod:`pytest_roofline.base.calls`).

    Counting: ``flops``, ``bytes`` and ``transcendentals`` replace the compiler's counts (analytic model
    FLOPs give MFU). Hardware: ``hardware`` forces a table entry by name (or is a ``HardwareSpec``);
    ``hardware_file`` adds or overrides devices (default ``$PYTEST_ROOFLINE_HARDWARE_FILE``);
    ``ceilings`` is "auto" (live on a CPU, the datasheet on accelerators), "datasheet", "calibrated" or
    "live" (calibrated ceilings scaled by a reference kernel run beside each timed run); ``recalibrate=True``
    re-measures the cached calibration.
    Timing: ``warmup`` untimed runs, then between ``min_runs`` and ``max_runs`` timed runs, stopping once
    the spread (relative IQR of the per-run utilization) is within ``target_spread`` after at least
    ``min_time_s`` seconds, or when ``budget_s`` seconds of runs are spent; ``timer`` is "auto", "profiler" or
    "wallclock". ``threshold``: the utilization a test compares with; runs go on (within the budget) while the
    confidence interval of the utilization straddles it, and the result says whether it is ``marginal``.
    ``first_touch``: "include" (the roofline adds the first touch of the program's fresh pages, on a CPU) or
    "exclude" (main memory and compute alone); the result carries both utilizations.
    """
    call, settings = split_call(fn, args, keywords, MEASURE_OPTIONS, "measure()")
    return measure_call(call, MeasureOptions.from_keywords(settings))


def measure_call(call: KernelCall, options: MeasureOptions, keep: str = "") -> Result:
    """Measure ``call`` with ``options`` (:func:`measure` with its keywords sorted out). ``keep``: keep the
    compiled program and its inputs on the device under this key; a later call with the same key compiles nothing
    and times the program on the inputs kept (its own arguments are not used)."""
    with phase("model"):  # what the steps inside do not take as their own phase: the model, before and after
        return _measure_call(call, options, keep)


def _compiled(call: KernelCall, label: str, keep: str) -> CompiledProgram:
    """The compiled program with its inputs on the device: kept from an earlier call with ``keep``, or new."""
    kept = _KEPT.get(keep) if keep else None
    if kept is not None:
        # New buffers for the inputs each round, as a fresh process would have. Whether the same buffers would
        # tilt a side is not shown either way (bench/process_draw.py --redraw none|inputs); what a process keeps
        # is accounted for by judging pairs of processes, not rounds (history/paired.judge_pairs).
        with phase("inputs"):
            fresh = [x.copy() if isinstance(x, jax.Array) else x for x in kept.leaves]
            block_until_ready(fresh)
        return replace(kept, leaves=fresh)
    with phase("compile"), said_if_slow(f"still compiling {label}"):
        program = compile_program(call.fn, call.args, dict(call.kwargs), label)
    if keep:
        _KEPT[keep] = program
    return program


def _measure_call(call: KernelCall, options: MeasureOptions, keep: str) -> Result:
    label = options.name or kernel_name(call.fn)
    given, choice, touch_mode, settings = options.counts, options.hardware, options.first_touch, options.timing
    peers = current_peers(label)
    with peers.busy(f"compiling and calibrating for kernel {label!r}") if peers else nullcontext():
        program = _compiled(call, label, keep)
        module, counts = read_program(program, label, given)
        spec, used = _hardware(program, choice)
    footprint = footprint_from_stats(program.raw_memory_analysis) if program.raw_memory_analysis is not None else None
    buffers = working_set(module, footprint)
    cache, check_cache = plan_cache(options.cache, program.platform, buffers, *cache_size(program.device))
    topology = topology_of(program.compiled) if peers is not None else None
    written = _written(module, footprint) if cache.state == "cold" else None

    def modelled(module: HloModule, counts: Counts) -> ProgramModel:
        if options.counts_from == "source" and program.source is not None and not program.source.unknown:
            counts = counts.of_source(program.source.flops)
        flops, nbytes, transcendentals = given.values
        return program_model(spec, counts, module, topology.devices if topology else program.num_devices, flops,
                             nbytes, transcendentals=transcendentals, working_set=buffers, cold_written=written,
                             topology=topology)

    model = modelled(module, counts)
    touch = _first_touch(spec, footprint, program.platform)
    charged = touch is not None and touch_mode == "include"
    plan = _live_plan(spec, used, model, program.platform, _planned_touch_s(touch) if charged else 0.0)
    if plan.reference is None and used == "live":
        used = "calibrated"
    before = allocator_stats(program.device)
    planned = replace(model.estimate, first_touch_time_s=_planned_touch_s(touch) if charged else 0.0)
    # The threshold is picked once, on the hardware measured on: the runs aim at it, the result carries the pick.
    picked, aim = options.threshold_on(spec)
    rule = _stopping_rule(planned, plan, aim, settings.target_spread)
    (timed, cache), clocks, processes = _run(program, settings, module, plan.beside, rule, (cache, check_cache),
                                             peers=peers, topology=topology, model=model)
    memory = _memory(program, footprint, before)
    module, model, (ops_model, idle, exposed) = _counted_as_ran(module, model, program, timed, modelled)
    if touch is not None:
        touch = replace(touch, counted_faults=timed.timing.median_faults)
    charged_roof = replace(model.estimate, first_touch_time_s=touch.time_s if charged and touch else 0.0)
    own = touch.per_run(timed.timing.faults_per_run, timed.timing.runs) if charged and touch else None
    live, why = _live(plan, timed, spec, charged_roof, own)
    if plan.reference is not None and live is None:
        # The calibrated ceilings stand in for this measurement (the note says why); the result stays in its live
        # series, so that a history is not split each time a reference's drift is set aside.
        plan = replace(plan, why=why)
    no_work = does_no_work(module)
    return Result(
        name=label, hardware=spec, ceilings=used, ceilings_used=tuple(model.uses), work=model.work,
        roofline=charged_roof, timing=timed.timing, program=_program_info(program, options), ops_model=ops_model,
        notes=(*call.readings, *(empty_inputs_note(module) if no_work else ()),
               *result_notes(model, ops_model, program, timed, spec, plan.why, memory=memory,
                             counts_from=options.counts_from, constants=constant_bytes(module))),
        hints=() if no_work else tuple(result_hints(ops_model.rows, module, program, model, timed, idle,
                                              cache_known=spec.cache_bandwidth is not None or cache.state == "cold")),
        hlo_text=program.hlo_text, xspace=timed.xspace, live=live, threshold=aim, picked=picked, memory=memory,
        first_touch=touch, first_touch_mode=touch_mode, no_work=no_work, cache=cache, clocks=clocks,
        processes=processes, idle=idle, exposure=exposed, source=program.source)


def _hardware(program: CompiledProgram, choice: HardwareChoice) -> tuple[HardwareSpec, CeilingsUsed]:
    """The device's table entry and ceilings (the calibration read from its cache, or measured)."""
    with phase("hardware"):
        return resolve_together(program.platform, program.device_kind, lambda again: resolve_hardware(
            program.platform, program.device_kind, choice.name, choice.file, choice.ceilings, refresh_mode(again)),
            choice.recalibrate)


def _program_info(program: CompiledProgram, options: MeasureOptions) -> ProgramInfo:
    return ProgramInfo(program.module_name, program.device_kind, program.compile_time_s,
                       {"jax": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", "unknown")},
                       program.compile_cached, program.static, fingerprint=program_fingerprint(program, options))


def _run(program: CompiledProgram, settings: TimingSettings, module: HloModule, beside: Beside | None,
         rule: Settled, cache_plan: tuple[CacheState, bool], *, peers: Peers | None, topology: Topology | None,
         model: ProgramModel) -> tuple[tuple[Timed, CacheState], Clocks, Processes | None]:
    """The timed runs, with the clocks around them; where the program spans processes, in lockstep with the
    others (started together, stopped together) and with every process's device times matched run by run."""
    cache, check = cache_plan

    def timed_runs() -> tuple[tuple[Timed, CacheState], Clocks]:
        return ClockWatch(program.device).around(
            lambda: _time_in_state(program, settings, executed_op_count(module), beside, rule, cache, check=check,
                                   agree=agree_with(peers) if peers is not None else None))

    if peers is None:
        return (*timed_runs(), None)
    with peers.failure_said(f"timing kernel {peers.label!r}"):
        start_together(peers)
        (timed, cache), clocks = timed_runs()
        timed, processes = gather(peers, timed, topology, model.hosts, model.work.flops, model.work.bytes_accessed)
    return (timed, cache), clocks, processes


def _written(module: HloModule, footprint: MemoryFootprint | None) -> float:
    """The bytes a run writes: its outputs (in place or fresh), else its result's shape."""
    return float(footprint.outputs) if footprint is not None else float(module.entry.root.shape.bytes)


def _time_in_state(program: CompiledProgram, settings: TimingSettings, ops: int, beside: Beside | None,
                   settled: Settled, cache: CacheState, *, check: bool,
                   agree: Agree | None = None) -> tuple[Timed, CacheState]:
    """Time the program in the cache state planned (evicting before each run where cold), and the state with its
    check: the median of the cold runs against the warm runs after them, where ``check``."""
    evict = Evictor(program.device, cache.evicted_bytes) if cache.evicted_bytes else None
    warm = replace(settings, ops_per_run=max(ops, 1)).warm_check_runs(WARM_CHECK_RUNS) if check else 0
    timed = time_compiled(program, settings, ops, beside, settled, CacheRuns(evict, warm),
                          agree=agree)
    if timed.warm_s:
        cache = cache.with_check(timed.timing.median_s, statistics.median(timed.warm_s))
    return timed, cache


def _first_touch(spec: HardwareSpec, footprint: MemoryFootprint | None, platform: str) -> FirstTouch | None:
    """The first-touch term the model expects (faults not yet counted); None off a CPU or without a rate."""
    if platform != "cpu" or footprint is None:
        return None
    return first_touch(footprint.outputs, footprint.temporaries, footprint.aliased, spec.first_touch,
                       spec.bytes_per_fault, None)


# Fresh buffers smaller than this are often reused by the allocator (a 4 MiB output took no fault per run on
# the 2-core VMs of docs/measurements.md): they do not decide which reference a kernel is paired with.
_PLANNED_TOUCH_MIN = 16 * 2**20


def _planned_touch_s(touch: FirstTouch | None) -> float:
    """The first touch the model expects before any fault is counted, for choosing the reference."""
    return touch.time_s if touch is not None and touch.fresh_bytes >= _PLANNED_TOUCH_MIN else 0.0


def _memory(program: CompiledProgram, footprint: MemoryFootprint | None,
            before: dict[str, Any] | None) -> MemoryFootprint | None:
    """The compiled program's memory analysis, with the allocator's peak during the runs where reported."""
    if footprint is None:
        return None
    peak, note = device_peak(before, allocator_stats(program.device), program.platform)
    return replace(footprint, device_peak=peak, device_peak_note=note)


@dataclass(frozen=True)
class _LivePlan:
    """The reference kernel to run beside the kernel (None: no live ceilings, ``why`` says why not)."""

    reference: Reference | None = None
    calibrated_rate: float = 0.0
    why: str = ""

    @property
    def beside(self) -> Beside | None:
        return self.reference.beside() if self.reference is not None else None


def _live_plan(spec: HardwareSpec, used: str, model: ProgramModel, platform: str, touch_s: float) -> _LivePlan:
    if used != "live":
        return _LivePlan()
    key = reference_key_for(model.estimate, model.uses, touch_s, model.memory.in_cache)
    if key is None:
        return _LivePlan(why=f"no reference kernel for a {model.estimate.bound}-bound program: calibrated "
                             f"ceilings used")
    rate = spec.reference_rates.get(key)
    if not rate:
        return _LivePlan(why=f"the calibration has no rate for the {key} reference (the hardware's notes say "
                             f"why; recalibrate): calibrated ceilings used")
    return _LivePlan(reference(platform, key), rate)


def _stopping_rule(roof: RooflineEstimate, plan: _LivePlan, threshold: float | None, target: float) -> Settled:
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


def _live(plan: _LivePlan, timed: Timed, spec: HardwareSpec, roof: RooflineEstimate,
          own_touch: list[float] | None) -> tuple[Live | None, str]:
    """The live ceilings the reference's runs give; or None and why not (unreadable runs, implausible drift, a
    scaling that would lift the kernel above ``roof``, its runs judged with ``own_touch``)."""
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
    why = implausible_drift(live.drift, bool(spec.low_ceilings)) or correction_above_roofline(
        roof, timed.timing.per_run_s, live.resource, live.drift_per_run, own_touch)
    return (None, why) if why else (live, "")


def _counted_as_ran(module: HloModule, model: ProgramModel, program: CompiledProgram, timed: Timed,
                    modelled: Callable[[HloModule, Counts], ProgramModel]
                    ) -> tuple[HloModule, ProgramModel, tuple[OpsModel, IdleTime | None, Exposure | None]]:
    """The op rows with their times; where loops of unknown trip count showed their iterations in the trace, or
    conditionals which branches ran, the program counted again as it ran (module, model and rows), each op inside
    them at the executions its events show."""
    events = timed.events
    tally = tally_events(events.op_events, events.run_of_event, timed.traced_runs) if events is not None else None
    ran, control = with_control_ran(module, tally.events_per_run if tally is not None else {})
    if control:
        counts = count_program(program, ran)
        first = modelled(ran, counts)
        ops, idle, exposed = _per_op(first.rows, ran, program, timed, tally)
        one_each = ops.rows if program.platform == "cpu" else ()  # a GPU op may launch several kernels, each an event
        as_seen = counts_as_seen(counts, one_each)
        model = first if as_seen is counts else modelled(ran, as_seen)
        seen_rows = tuple(rows_as_seen(one_each)) if one_each else ops.rows
        module, per_op = ran, (replace(ops, rows=seen_rows), idle, exposed)
    else:
        per_op = _per_op(model.rows, module, program, timed, tally)
    if events is not None and ops_hidden(events.notes):
        per_op = (ops_from_second_pass(per_op[0], program), *per_op[1:])
    return module, model, per_op


# The second pass only explains the ops: a few runs, whatever their spread (too many events: one traced run).
_SECOND_PASS = TimingSettings(warmup=1, min_runs=3, max_runs=3, budget_s=1.0, min_time_s=0.0, timer="auto")
SECOND_PASS = (f"a second profiled pass with command buffers off ({COMMAND_BUFFER_REMEDY}; the verdict's time is "
               f"the program as XLA runs it by default)")


def ops_from_second_pass(ops: OpsModel, program: CompiledProgram) -> OpsModel:
    """The op rows timed in a second profiled pass of the program compiled with command buffers off (whose trace
    has every kernel on its own), where the timed runs' trace hid them; the rows as they were if that fails."""
    try:
        with phase("second pass"):
            again = time_compiled(without_command_buffers(program), _SECOND_PASS,
                                  sum(r.executions for r in ops.rows))
    except MeasureError:
        return ops
    if again.events is None or ops_hidden(again.events.notes):
        return ops
    found = again.events
    rows = attach_tally(ops.rows, tally_events(found.op_events, found.run_of_event, again.traced_runs))
    return replace(ops, rows=tuple(rows), times_from=SECOND_PASS)


def _per_op(rows: list[OpRow], module: HloModule, program: CompiledProgram, timed: Timed,
            tally: OpTally | None) -> tuple[OpsModel, IdleTime | None, Exposure | None]:
    """Op rows with their measured times, the check against the compiler, the runs' idle time and exposed
    communication."""
    idle, exposed = None, None
    if timed.events is not None and tally is not None:  # a tally of these events
        rows = attach_tally(rows, tally)
        containers = frozenset(i.name for c in module.computations.values() for i in c.instructions
                               if i.opcode in CONTAINER_OPS)
        if not timed.ops_apart:  # a run the profiler slowed (too many events) shows the profiler's time as gaps
            idle = idle_time(timed.events, program.platform, containers, timed.traced_runs)
        exposed = exposure(timed.events, rows, program.platform, timed.traced_runs, containers)
    return OpsModel(tuple(rows), ops_check(module, program.raw_cost_analysis)), idle, exposed
