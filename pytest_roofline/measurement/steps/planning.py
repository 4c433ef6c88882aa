"""Step 1 of a measurement (:func:`planned`): what is known before the first timed run, as one :class:`Plan`: the
program's model from its counts, the cache state, the live ceilings' plan, the first touch, the threshold picked on
the hardware (imports JAX)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from ...analysis.model.cache_state import CacheState, plan_cache
from ...analysis.model.first_touch import FirstTouch, first_touch
from ...analysis.model.program_model import ProgramModel, program_model
from ...analysis.program.counts import Counts
from ...analysis.program.hlo_reader import HloModule
from ...analysis.program.memory import MemoryFootprint, footprint_from_stats, working_set
from ...analysis.runs.hosts import Topology
from ...base.kinds import CeilingsUsed
from ...hardware.per_device import Picked
from ...hardware.spec import HardwareSpec
from ..compiled import CompiledProgram
from ..machine.eviction import cache_size
from ..machine.reference_runs import LivePlan, live_plan, planned_touch_s
from ..options import MeasureOptions
from ..processes.peers import Peers
from ..processes.spanning import topology_of

__all__ = ["Plan", "Modeller", "planned"]


@dataclass(frozen=True)
class Modeller:
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
class Plan:
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
    modelled: Modeller
    model: ProgramModel
    touch: FirstTouch | None
    live: LivePlan
    peers: Peers | None
    picked: Picked[float] | None  # the threshold picked on this hardware, once
    aim: float | None  # the threshold the runs aim at

    @property
    def charged(self) -> bool:
        """Whether the roofline charges the first touch."""
        return _charges(self.touch, self.options)


def planned(label: str, options: MeasureOptions, program: CompiledProgram, module: HloModule, counts: Counts, *,
             spec: HardwareSpec, used: CeilingsUsed, peers: Peers | None) -> Plan:
    """Step 1: the model of the program as compiled, and the plans of its runs (cache, live ceilings, touch)."""
    footprint = footprint_from_stats(program.raw_memory_analysis) if program.raw_memory_analysis is not None else None
    buffers = working_set(module, footprint)
    cache = plan_cache(options.cache, program.platform, buffers, *cache_size(program.device))
    topology = topology_of(program.compiled) if peers is not None else None
    written = _written(module, footprint) if cache[0].state == "cold" else None
    modelled = Modeller(options, program, spec, buffers, written, topology)
    model = modelled(module, counts)
    touch = _first_touch(spec, footprint, program.platform)
    live = live_plan(spec, used, model, program.platform, planned_touch_s(touch) if _charges(touch, options) else 0.0)
    used = "calibrated" if live.reference is None and used == "live" else used
    picked, aim = options.threshold_on(spec)
    return Plan(label, options, program, module, spec, used, footprint=footprint, cache=cache, topology=topology,
                 modelled=modelled, model=model, touch=touch, live=live, peers=peers, picked=picked, aim=aim)


def _charges(touch: FirstTouch | None, options: MeasureOptions) -> bool:
    return touch is not None and options.first_touch == "include"


def _written(module: HloModule, footprint: MemoryFootprint | None) -> float:
    """The bytes a run writes: its outputs (in place or fresh), else its result's shape."""
    return float(footprint.outputs) if footprint is not None else float(module.entry.root.shape.bytes)


def _first_touch(spec: HardwareSpec, footprint: MemoryFootprint | None, platform: str) -> FirstTouch | None:
    """The first-touch term the model expects (faults not yet counted); None off a CPU or without a rate."""
    if platform != "cpu" or footprint is None:
        return None
    return first_touch(footprint.outputs, footprint.temporaries, footprint.aliased, spec.first_touch,
                       spec.bytes_per_fault, None)
