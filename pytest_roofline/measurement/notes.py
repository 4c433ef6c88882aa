"""The notes and hints of a measurement's result: what its program, model and runs say about its figures
(imports JAX through the compiled program's module)."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.model.per_op import OpRow, OpsModel
from ..analysis.model.program_model import ProgramModel
from ..analysis.program.counts import RAN_FROM_TRACE
from ..analysis.program.hlo_reader import HloModule
from ..analysis.program.info import more_than_source_text, static_text
from ..analysis.program.interpreted import INTERPRET_NOTE, estimated_note
from ..analysis.program.memory import MemoryFootprint, working_set
from ..analysis.runs.idle import IdleTime
from ..analysis.verdict.hints import RunFacts, hints
from ..base.kinds import CountsFrom
from ..base.units import format_quantity
from ..hardware.cpu import last_level_cache_bytes
from ..hardware.spec import HardwareSpec
from .compiled import CompiledProgram
from .timing import Timed

__all__ = ["result_notes", "result_hints"]


# Constants this large in a program are a kernel's closed-over arrays, worth saying (a few kB are masks and tables).
_CONSTANTS_NOTED = 1 << 20


def result_notes(model: ProgramModel, ops_model: OpsModel, program: CompiledProgram, timed: Timed,
                 spec: HardwareSpec, live_why: str, *, memory: MemoryFootprint | None,
                 counts_from: CountsFrom = "compiled", constants: int = 0) -> list[str]:
    """What the result's figures rest on, in words: ceilings, static arguments, whose FLOPs, missing rates,
    fallbacks, uncounted work, and the trace's own notes."""
    notes = [u.note for u in model.uses if u.note]
    if constants >= _CONSTANTS_NOTED:
        notes.append(f"{format_quantity(constants, 'B')} of constants are compiled into the program: arrays the kernel "
                     f"closes over rather than takes as arguments (a model object's weights, a captured array) are "
                     f"read as constants; pass them as arguments (a Keras model's stateless_call, an nnx module) to "
                     f"measure them as inputs")
    if program.static:
        notes.append(static_text(program.static))
    notes.extend(f"conditional {line}" for line in model.work.branches.lines)
    if program.staged_via:
        notes.append(program.staged_via)
    source = program.source
    if model.work.flops_source == "source" and model.work.compiled_flops is not None and source is not None:
        notes.append(f"judged on the FLOPs the source asks for (counts='source'): "
                     f"{more_than_source_text(model.work.compiled_flops, source.flops)}")
    elif counts_from == "source":
        why = source.unknown if source is not None else "no traced program to read"
        notes.append(f"counts='source' asked, but the source's work cannot be counted ({why}): judged on the "
                     f"compiled program's counts")
    if memory is None:
        notes.append("no peak memory: the compiler gave no memory analysis for this program")
    if live_why:
        notes.append(live_why)
    if model.work.transcendentals and spec.transcendental is None:
        notes.append(f"{model.work.transcendentals:.3g} transcendentals not timed: {spec.name} has no "
                     f"transcendental rate (add transcendentals_gps to its hardware entry)")
    if model.work.int_ops and spec.integer is None:
        notes.append(f"{model.work.int_ops:.3g} integer ops (RNG bit mixing, index arithmetic) not timed: {spec.name} "
                     f"has no integer rate (a CPU's calibration measures one: --roofline-calibrate)")
    if model.work.collective_bytes and spec.interconnect_bandwidth is None:
        notes.append(f"{model.work.collective_bytes:.3g} collective bytes not timed: {spec.name} has no "
                     f"interconnect bandwidth")
    if ops_model.check is not None and not ops_model.check.ok:
        notes.append("per-op counts differ from the compiler's: " + "; ".join(ops_model.check.mismatches))
    if any(program.donated):
        notes.append("donated inputs were copied before each run, outside the timing")
    if timed.timing.fallback_reason:
        notes.append(f"wall clock used: {timed.timing.fallback_reason}")
    if "hlo" in (model.work.flops_source, model.work.bytes_source):
        notes.append("counts from the optimized HLO, by pytest-roofline: the compiler's cost analysis was "
                     "unusable or left library calls (cuBLAS gemms, cuDNN convolutions) out")
    interpreted = [k.name for k in program.traced.kernels if k.interpret]
    if interpreted:
        names = ", ".join(repr(n) for n in dict.fromkeys(interpreted))
        notes.append(INTERPRET_NOTE.format(names=names, platform=program.platform.upper()))
    if model.work.estimated:
        notes.append(estimated_note(model.work.estimated))
    if model.work.uncounted or model.work.lower_bound_why:
        notes.append(model.work.lower_bound_reason)
    if timed.events is not None:
        notes.extend(timed.events.notes)
    return notes


def result_hints(rows: Sequence[OpRow], module: HloModule, program: CompiledProgram, model: ProgramModel,
                 timed: Timed, idle: IdleTime | None, *, cache_known: bool = False) -> list[str]:
    """``cache_known``: the model already held the bytes to the cache level the working set fits (its note
    says so), so no cache hint."""
    root = module.entry.root
    ran = [loop for loop in model.work.loops if loop.endswith(RAN_FROM_TRACE)]
    return hints(rows, RunFacts(program.platform, timed.timing.median_s, model.estimate.bound,
                                donated=any(program.donated), donate_with=program.donate_with,
                                output_bytes=root.shape.bytes,
                                working_set_bytes=working_set(module, None), has_loops=bool(model.work.loops),
                                idle=idle, loops_ran=ran,
                                cache_bytes=last_level_cache_bytes() if program.platform == "cpu" else None,
                                cache_modelled=cache_known))
