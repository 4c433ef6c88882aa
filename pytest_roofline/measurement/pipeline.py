"""``measure()``: compile, count, time and compare a jitted JAX kernel with its roofline, as named steps
(imports JAX)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any, Protocol

import jax
import jaxlib

from ..analysis.model.cache_state import WARM_CHECK_RUNS, CacheState, plan_cache
from ..analysis.model.first_touch import FirstTouch, first_touch
from ..analysis.model.per_op import OpsModel
from ..analysis.model.program_model import ProgramModel, program_model
from ..analysis.program.counts import Counts
from ..analysis.program.hlo_reader import HloModule
from ..analysis.program.memory import MemoryFootprint, device_peak, footprint_from_stats, working_set
from ..analysis.program.walk import constant_bytes, does_no_work, empty_inputs_note, executed_op_count
from ..analysis.runs.across_processes import Processes
from ..analysis.runs.hosts import Topology
from ..analysis.runs.time_spent import phase
from ..base.calls import KernelCall, split_call
from ..base.kinds import CeilingsUsed
from ..base.labels import kernel_name
from ..base.progress import said_if_slow
from ..hardware.calibration_cache import refresh_mode
from ..hardware.nvml import Clocks
from ..hardware.per_device import Picked
from ..hardware.spec import HardwareSpec
from ..result.result import ProgramInfo, Result
from .as_ran import AsRan, counted_as_ran
from .compiled import (
    CompiledProgram,
    Kept,
    allocator_stats,
    compile_program,
    time_compiled,
)
from .fingerprint import program_fingerprint
from .machine.clock_readings import ClockWatch
from .machine.device import resolve_hardware
from .machine.eviction import Evictor, cache_size
from .machine.reference_runs import LivePlan, live_ceilings, live_plan, planned_touch_s, stopping_rule
from .notes import result_hints, result_notes
from .options import MEASURE_OPTIONS, HardwareChoice, MeasureOptions, TimingSettings
from .predict import read_program
from .processes.peers import Peers, current_peers
from .processes.spanning import agree_with, gather, start_together, topology_of
from .processes.start_up import resolve_together
from .timing import Agree, Beside, CacheRuns, Settled, Timed

__all__ = ["measure", "measure_call", "Keeper"]


class Keeper(Protocol):
    """Where a measurement keeps its compiled program for the next measurement of the same kernel (``ab``'s side
    measures its kernels round after round): ``kept`` is None until the first measurement puts its program there
    (:class:`.compiled.Kept`: the inputs as host copies, so that the device holds them only while measured). The
    caller owns it and drops it when the kernel is done."""

    kept: Kept | None


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


def measure_call(call: KernelCall, options: MeasureOptions, keep: Keeper | None = None) -> Result:
    """Measure ``call`` with ``options`` (:func:`measure` with its keywords sorted out). ``keep``: where the
    compiled program and its inputs are kept; a later call with the same keeper compiles nothing and times the
    program on the inputs kept (its own arguments are not used). A survey's profile of the test steps aside
    meanwhile, and takes the measurement's traces."""
    from .profiler import held

    with held(), phase("model"):  # phase: what the steps inside do not take as their own: the model, before and after
        return _measure_call(call, options, keep)


def _compiled(call: KernelCall, label: str, keep: Keeper | None) -> CompiledProgram:
    """The compiled program with its inputs on the device: kept from an earlier call with ``keep``, or new."""
    kept = keep.kept if keep is not None else None
    if kept is not None:
        # New buffers for the inputs each round, as a fresh process would have. Whether the same buffers would
        # tilt a side is not shown either way (bench/process_draw.py --redraw none|inputs); what a process keeps
        # is accounted for by judging pairs of processes, not rounds (history/paired.judge_pairs).
        with phase("inputs"):
            return kept.on_device()
    with phase("compile"), said_if_slow(f"still compiling {label}"):
        program = compile_program(call.fn, call.args, dict(call.kwargs), label)
    if keep is not None:
        keep.kept = Kept.of(program)
    return program


@dataclass(frozen=True)
class _Modeller:
    """The program's model from its counts (those the compiler gave, or those of the program as it ran)."""

    options: MeasureOptions
    program: CompiledProgram
    spec: HardwareSpec
    buffers: float  # the working set
    written: float | None  # the bytes a run writes, where the cache is evicted before each run
    topology: Topology | None

    def __call__(self, module: HloModule, counts: Counts) -> ProgramModel:
        program, options = self.program, self.options
        if options.counts_from == "source" and program.source is not None and not program.source.unknown:
            counts = counts.of_source(program.source.flops)
        flops, nbytes, transcendentals = options.counts.values
        devices = self.topology.devices if self.topology else program.num_devices
        return program_model(self.spec, counts, module, devices, flops, nbytes, transcendentals=transcendentals,
                             working_set=self.buffers, cold_written=self.written, topology=self.topology)


@dataclass(frozen=True)
class _Plan:
    """What is known before the first timed run: the compiled program, its counts and model, the hardware, and the
    plans for the cache, the live ceilings, the first touch and when to stop."""

    label: str
    options: MeasureOptions
    program: CompiledProgram
    module: HloModule
    spec: HardwareSpec
    used: CeilingsUsed
    _: KW_ONLY
    footprint: MemoryFootprint | None
    cache: tuple[CacheState, bool]  # the state planned, and whether the runs check it
    topology: Topology | None
    modelled: _Modeller
    model: ProgramModel
    touch: FirstTouch | None
    live: LivePlan
    peers: Peers | None
    picked: Picked[float] | None  # the threshold picked on this hardware, once
    aim: float | None  # the threshold the runs aim at

    @property
    def charged(self) -> bool:
        """Whether the roofline charges the first touch."""
        return self.touch is not None and self.options.first_touch == "include"


@dataclass(frozen=True)
class _Ran:
    """What the timed runs gave: their times, the cache state with its check, the clocks, the processes, the
    memory, and the program counted as it ran with its op rows, idle and exposed time."""

    timed: Timed
    cache: CacheState
    clocks: Clocks
    processes: Processes | None
    memory: MemoryFootprint | None
    _: KW_ONLY
    as_ran: AsRan

    @property
    def module(self) -> HloModule:
        return self.as_ran.module

    @property
    def model(self) -> ProgramModel:
        return self.as_ran.model

    @property
    def ops(self) -> OpsModel:
        return self.as_ran.per_op.ops


def _measure_call(call: KernelCall, options: MeasureOptions, keep: Keeper | None) -> Result:
    label = options.name or kernel_name(call.fn)
    peers = current_peers(label)
    with peers.busy(f"compiling and calibrating for kernel {label!r}") if peers else nullcontext():
        program = _compiled(call, label, keep)
        module, counts = read_program(program, label, options.counts)
        spec, used = _hardware(program, options.hardware)
    plan = _planned(label, options, program, module, counts, spec=spec, used=used, peers=peers)
    ran = _timed_runs(plan)
    return _result(call, plan, ran)


def _planned(label: str, options: MeasureOptions, program: CompiledProgram, module: HloModule, counts: Counts, *,
             spec: HardwareSpec, used: CeilingsUsed, peers: Peers | None) -> _Plan:
    """Step 1: the model of the program as compiled, and the plans of its runs (cache, live ceilings, touch)."""
    footprint = footprint_from_stats(program.raw_memory_analysis) if program.raw_memory_analysis is not None else None
    buffers = working_set(module, footprint)
    cache = plan_cache(options.cache, program.platform, buffers, *cache_size(program.device))
    topology = topology_of(program.compiled) if peers is not None else None
    written = _written(module, footprint) if cache[0].state == "cold" else None
    modelled = _Modeller(options, program, spec, buffers, written, topology)
    model = modelled(module, counts)
    touch = _first_touch(spec, footprint, program.platform)
    charged = touch is not None and options.first_touch == "include"
    live = live_plan(spec, used, model, program.platform, planned_touch_s(touch) if charged else 0.0)
    used = "calibrated" if live.reference is None and used == "live" else used
    picked, aim = options.threshold_on(spec)
    return _Plan(label, options, program, module, spec, used, footprint=footprint, cache=cache, topology=topology,
                 modelled=modelled, model=model, touch=touch, live=live, peers=peers, picked=picked, aim=aim)


def _timed_runs(plan: _Plan) -> _Ran:
    """Step 2: the timed runs, aiming at the threshold picked on this hardware; the program counted as it ran."""
    program, options = plan.program, plan.options
    before = allocator_stats(program.device)
    planned = replace(plan.model.estimate, first_touch_time_s=planned_touch_s(plan.touch) if plan.charged else 0.0)
    rule = stopping_rule(planned, plan.live, plan.aim, options.timing.target_spread)
    (timed, cache), clocks, processes = _run(program, options.timing, plan.module, plan.live.beside, rule, plan.cache,
                                             peers=plan.peers, topology=plan.topology, model=plan.model)
    memory = _memory(program, plan.footprint, before)
    as_ran = counted_as_ran(plan.module, plan.model, program, timed, plan.modelled)
    return _Ran(timed, cache, clocks, processes, memory, as_ran=as_ran)


def _result(call: KernelCall, plan: _Plan, ran: _Ran) -> Result:
    """Step 3: the result, built in parts: what was counted and timed; the terms of the roofline (first touch, live
    ceilings); the per-op model and the facts around the runs; the words (notes and hints)."""
    program, spec, timed, model = plan.program, plan.spec, ran.timed, ran.model
    touch = replace(plan.touch, counted_faults=timed.timing.median_faults) if plan.touch is not None else None
    roof = replace(model.estimate, first_touch_time_s=touch.time_s if plan.charged and touch else 0.0)
    own = touch.per_run(timed.timing.faults_per_run, timed.timing.runs) if plan.charged and touch else None
    live, why = live_ceilings(plan.live, timed, spec, roof, own)
    # The calibrated ceilings stand in for this measurement (the note says why); the result stays in its live
    # series, so that a history is not split each time a reference's drift is set aside.
    live_why = why if plan.live.reference is not None and live is None else plan.live.why
    counted = Result(plan.label, spec, plan.used, tuple(model.uses), model.work, roof, timing=timed.timing,
                     program=_program_info(program, plan.options), threshold=plan.aim, picked=plan.picked,
                     source=program.source)
    with_terms = replace(counted, live=live, first_touch=touch, first_touch_mode=plan.options.first_touch)
    per_op = ran.as_ran.per_op
    around = replace(with_terms, ops_model=per_op.ops, idle=per_op.idle, exposure=per_op.exposure, memory=ran.memory,
                     cache=ran.cache, clocks=ran.clocks, processes=ran.processes, no_work=does_no_work(ran.module),
                     hlo_text=program.hlo_text, xspace=timed.xspace)
    return replace(around, notes=_notes(call, plan, ran, live_why), hints=_hints(plan, ran, around))


def _notes(call: KernelCall, plan: _Plan, ran: _Ran, live_why: str) -> tuple[str, ...]:
    module, ops_model = ran.module, ran.ops
    empty = empty_inputs_note(module, computes=not does_no_work(module))
    return (*call.readings, *empty, *result_notes(ran.model, ops_model, plan.program, ran.timed, plan.spec, live_why,
                                                  memory=ran.memory, counts_from=plan.options.counts_from,
                                                  constants=constant_bytes(module)))


def _hints(plan: _Plan, ran: _Ran, result: Result) -> tuple[str, ...]:
    if result.no_work:
        return ()
    cache_known = plan.spec.cache_bandwidth is not None or ran.cache.state == "cold"
    return tuple(result_hints(ran.ops.rows, ran.module, plan.program, ran.model, ran.timed, result.idle,
                              cache_known=cache_known))


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
    evict = Evictor.shared(program.device, cache.evicted_bytes) if cache.evicted_bytes else None
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


def _memory(program: CompiledProgram, footprint: MemoryFootprint | None,
            before: dict[str, Any] | None) -> MemoryFootprint | None:
    """The compiled program's memory analysis, with the allocator's peak during the runs where reported."""
    if footprint is None:
        return None
    peak, note = device_peak(before, allocator_stats(program.device), program.platform)
    return replace(footprint, device_peak=peak, device_peak_note=note)
