"""Step 3 of a measurement (:func:`result_of`): the :class:`~pytest_roofline.result.result.Result`, built in parts
from the plan and the runs: what was counted and timed, the roofline's terms, the per-op model and the facts around
the runs, the notes and hints (imports JAX)."""

from __future__ import annotations

from dataclasses import replace

import jax
import jaxlib

from ...analysis.program.walk import constant_bytes, does_no_work, empty_inputs_note
from ...base.calls import KernelCall
from ...result.result import ProgramInfo, Result
from ..compiled import CompiledProgram
from ..fingerprint import program_fingerprint
from ..machine.reference_runs import live_ceilings
from ..notes import result_hints, result_notes
from ..options import MeasureOptions
from .planning import Plan
from .timed_runs import Ran

__all__ = ["result_of"]


def result_of(call: KernelCall, plan: Plan, ran: Ran) -> Result:
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


def _notes(call: KernelCall, plan: Plan, ran: Ran, live_why: str) -> tuple[str, ...]:
    module, ops_model = ran.module, ran.ops
    empty = empty_inputs_note(module, computes=not does_no_work(module))
    return (*call.readings, *empty, *result_notes(ran.model, ops_model, plan.program, ran.timed, plan.spec, live_why,
                                                  memory=ran.memory, counts_from=plan.options.counts_from,
                                                  constants=constant_bytes(module)))


def _hints(plan: Plan, ran: Ran, result: Result) -> tuple[str, ...]:
    if result.no_work:
        return ()
    cache_known = plan.spec.cache_bandwidth is not None or ran.cache.state == "cold"
    return tuple(result_hints(ran.ops.rows, ran.module, plan.program, ran.model, ran.timed, result.idle,
                              cache_known=cache_known))


def _program_info(program: CompiledProgram, options: MeasureOptions) -> ProgramInfo:
    return ProgramInfo(program.module_name, program.device_kind, program.compile_time_s,
                       {"jax": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", "unknown")},
                       program.compile_cached, program.static, fingerprint=program_fingerprint(program, options))
