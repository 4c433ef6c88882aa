"""Step 2 of a measurement (:func:`timed_runs`): the timed runs in the cache state planned, aiming at the threshold
picked, with the clocks around them (in lockstep with the other processes of a program that spans them); then the
program counted as it ran. What they gave is one :class:`Ran` (imports JAX)."""

from __future__ import annotations

import statistics
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any

from ...analysis.model.cache_state import WARM_CHECK_RUNS, CacheState
from ...analysis.model.per_op import OpsModel
from ...analysis.model.program_model import ProgramModel
from ...analysis.program.hlo_reader import HloModule
from ...analysis.program.memory import MemoryFootprint, device_peak
from ...analysis.program.walk import executed_op_count
from ...analysis.runs.across_processes import Processes
from ...analysis.runs.hosts import Topology
from ...hardware.nvml import Clocks
from ..as_ran import AsRan, counted_as_ran
from ..compiled import (
    CompiledProgram,
    allocator_stats,
    time_compiled,
)
from ..machine.clock_readings import ClockWatch
from ..machine.eviction import Evictor
from ..machine.reference_runs import planned_touch_s, stopping_rule
from ..options import TimingSettings
from ..processes.peers import Peers
from ..processes.spanning import agree_with, gather, start_together
from ..timing import Agree, Beside, CacheRuns, Settled, Timed
from .planning import Plan

__all__ = ["Ran", "timed_runs"]


@dataclass(frozen=True)
class Ran:
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


def timed_runs(plan: Plan) -> Ran:
    """Step 2: the timed runs, aiming at the threshold picked on this hardware; the program counted as it ran."""
    program, options = plan.program, plan.options
    before = allocator_stats(program.device)
    planned = replace(plan.model.estimate, first_touch_time_s=planned_touch_s(plan.touch) if plan.charged else 0.0)
    rule = stopping_rule(planned, plan.live, plan.aim, options.timing.target_spread)
    (timed, cache), clocks, processes = _run(program, options.timing, plan.module, plan.live.beside, rule, plan.cache,
                                             peers=plan.peers, topology=plan.topology, model=plan.model)
    memory = _memory(program, plan.footprint, before)
    as_ran = counted_as_ran(plan.module, plan.model, program, timed, plan.modelled)
    return Ran(timed, cache, clocks, processes, memory, as_ran=as_ran)


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


def _memory(program: CompiledProgram, footprint: MemoryFootprint | None,
            before: dict[str, Any] | None) -> MemoryFootprint | None:
    """The compiled program's memory analysis, with the allocator's peak during the runs where reported."""
    if footprint is None:
        return None
    peak, note = device_peak(before, allocator_stats(program.device), program.platform)
    return replace(footprint, device_peak=peak, device_peak_note=note)
