"""The roofline of a kernel without running it: its compiled program read into counts, and the model of that
program on any hardware table entry (imports JAX).

:func:`model_on` is what a declared bound is checked against on hardware this machine does not have: it compiles
for this machine's backend and holds those counts to another device's ceilings. FLOPs and bytes of a GEMM or a
fused elementwise pass do not depend on the backend; they can where backends lower an op differently: XLA:CPU
converts bf16 dot operands to f32 (a temporary and f32 FLOPs that an accelerator does not have, so bf16 matmuls
meet the f32 peak), and each backend fuses (and so counts bytes) its own way.
"""

from __future__ import annotations

from dataclasses import replace

from ..analysis.model.program_model import ProgramModel, program_model
from ..analysis.program.counts import Counts, compiled_counts
from ..analysis.program.hlo_reader import HloModule, HloParseError, parse_hlo
from ..analysis.program.interpreted import interpret_counts
from ..analysis.program.memory import MemoryFootprint, footprint_from_stats, working_set
from ..analysis.program.pallas_costs import assign_estimates
from ..base.calls import KernelCall
from ..base.errors import MeasureError
from ..base.labels import kernel_name
from ..hardware.spec import HardwareSpec
from .compiled import CompiledProgram, compile_program
from .options import GivenCounts

__all__ = ["read_program", "count_program", "model_on"]


def read_program(program: CompiledProgram, label: str, given: GivenCounts) -> tuple[HloModule, Counts]:
    """The optimized HLO and the program's counts (compiler analysis, loops multiplied)."""
    try:
        module = parse_hlo(program.hlo_text)
    except HloParseError as exc:
        raise MeasureError(f"{label}: pytest-roofline cannot read this program's optimized HLO (please report "
                           f"it with the line below): {exc}") from None
    kernels = program.traced.kernels
    if kernels:
        module = replace(module, kernel_estimates=assign_estimates(module, kernels))
    return module, count_program(program, module)


def count_program(program: CompiledProgram, module: HloModule) -> Counts:
    """The counts of ``program`` read from ``module`` (its HLO, possibly with trip counts found in a trace)."""
    kernels = program.traced.kernels
    if kernels:
        interpreted = interpret_counts(kernels, program.traced.outside)
        if interpreted is not None:
            return interpreted
    return compiled_counts(program.raw_cost_analysis, module)


def model_on(call: KernelCall, spec: HardwareSpec, given: GivenCounts | None = None,
             name: str | None = None) -> tuple[ProgramModel, MemoryFootprint | None]:
    """The roofline model of ``call``'s program, compiled here, on ``spec``'s ceilings (``given``: analytic
    counts that replace the compiler's, as in measure()), and the program's memory footprint where the backend
    gives one; nothing is run."""
    given = given or GivenCounts()
    label = name or kernel_name(call.fn)
    program = compile_program(call.fn, call.args, dict(call.kwargs), label)
    module, counts = read_program(program, label, given)
    raw = program.raw_memory_analysis
    footprint = footprint_from_stats(raw) if raw is not None else None
    buffers = working_set(module, footprint)
    flops, nbytes, transcendentals = given.values
    return program_model(spec, counts, module, program.num_devices, flops, nbytes, transcendentals=transcendentals,
                         working_set=buffers), footprint
