"""The program counted as it ran, with its op rows timed (imports JAX through the second pass): what ran of its loops
and conditionals read from the timed runs' trace, or, where XLA's command buffers hid the kernels there, from a second
profiled pass of the program compiled with command buffers off (the same HLO: its op names are the program's own),
which then also times the op rows. The control flow is read as
:func:`..analysis.program.counts.read_as_ran` reads it for ``pytest-roofline analyze`` and the replay of recorded GPU
programs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..analysis.model.compiler_agreement import ops_check
from ..analysis.model.exposed import Exposure, exposure
from ..analysis.model.per_op import OpRow, OpsModel, OpTally, attach_tally, counts_as_seen, rows_as_seen, tally_events
from ..analysis.model.program_model import ProgramModel
from ..analysis.program.control_ran import with_control_ran
from ..analysis.program.counts import Counts
from ..analysis.program.hlo_reader import HloModule
from ..analysis.program.walk import CONTAINER_OPS
from ..analysis.runs.idle import IdleTime, idle_time
from ..analysis.runs.program_runs import COMMAND_BUFFER_REMEDY, ops_hidden
from ..analysis.runs.time_spent import phase
from ..base.errors import MeasureError
from .compiled import CompiledProgram, time_compiled, without_command_buffers
from .options import TimingSettings
from .predict import count_program
from .timing import Timed

__all__ = ["counted_as_ran", "second_pass", "ops_from_second_pass", "SECOND_PASS"]



@dataclass(frozen=True)
class PerOp:
    """The op rows with their measured times (and the check against the compiler), the runs' idle time, and the
    communication no compute overlapped (None where the trace could not tell either)."""

    ops: OpsModel
    idle: IdleTime | None = None
    exposure: Exposure | None = None


@dataclass(frozen=True)
class AsRan:
    """The program as it ran: its module and model (counted again where loops or conditionals showed what ran), and
    its ops."""

    module: HloModule
    model: ProgramModel
    per_op: PerOp

# The second pass only explains the ops: a few runs, whatever their spread (too many events: one traced run).
_SECOND_PASS = TimingSettings(warmup=1, min_runs=3, max_runs=3, budget_s=1.0, min_time_s=0.0, timer="auto")
SECOND_PASS = (f"a second profiled pass with command buffers off ({COMMAND_BUFFER_REMEDY}; the verdict's time is "
               f"the program as XLA runs it by default)")


def counted_as_ran(module: HloModule, model: ProgramModel, program: CompiledProgram, timed: Timed,
                   modelled: Callable[[HloModule, Counts], ProgramModel]) -> AsRan:
    """The op rows with their times; where loops of unknown trip count showed their iterations, or conditionals
    which branches ran (in the timed runs' trace, or in the second pass where that trace hid the kernels), the
    program counted again as it ran (module, model and rows), each op inside them at the executions its events
    show."""
    events = timed.events
    tally = tally_events(events.op_events, events.run_of_event, timed.traced_runs) if events is not None else None
    second = None
    if events is not None and ops_hidden(events.notes):
        second = second_pass(program, sum(r.executions for r in model.rows))
    told = second if second is not None else tally  # the second pass's events tell what ran, where there is one
    ran, control = with_control_ran(module, told.events_per_run if told is not None else {})
    if control:
        counts = count_program(program, ran)
        first = modelled(ran, counts)
        per_op = _per_op(first.rows, ran, program, timed, tally)
        one_each = per_op.ops.rows if program.platform == "cpu" else ()  # a GPU op may launch several kernels
        as_seen = counts_as_seen(counts, one_each)
        model = first if as_seen is counts else modelled(ran, as_seen)
        seen_rows = tuple(rows_as_seen(one_each)) if one_each else per_op.ops.rows
        module, per_op = ran, replace(per_op, ops=replace(per_op.ops, rows=seen_rows))
    else:
        per_op = _per_op(model.rows, module, program, timed, tally)
    if second is not None:
        per_op = replace(per_op, ops=_timed_by(per_op.ops, second))
    return AsRan(module, model, per_op)


def second_pass(program: CompiledProgram, executions: int) -> OpTally | None:
    """The op events of a second profiled pass of the program compiled with command buffers off (whose trace has
    every kernel on its own); None where it fails or hides them too."""
    try:
        with phase("second pass"):
            again = time_compiled(without_command_buffers(program), _SECOND_PASS, executions)
    except MeasureError:
        return None
    if again.events is None or ops_hidden(again.events.notes):
        return None
    found = again.events
    return tally_events(found.op_events, found.run_of_event, again.traced_runs)


def _timed_by(ops: OpsModel, second: OpTally) -> OpsModel:
    return replace(ops, rows=tuple(attach_tally(ops.rows, second)), times_from=SECOND_PASS)


def ops_from_second_pass(ops: OpsModel, program: CompiledProgram) -> OpsModel:
    """The op rows timed in a second profiled pass (:func:`second_pass`); the rows as they were if that fails."""
    second = second_pass(program, sum(r.executions for r in ops.rows))
    return _timed_by(ops, second) if second is not None else ops


def _per_op(rows: list[OpRow], module: HloModule, program: CompiledProgram, timed: Timed,
            tally: OpTally | None) -> PerOp:
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
    return PerOp(OpsModel(tuple(rows), ops_check(module, program.raw_cost_analysis)), idle, exposed)
