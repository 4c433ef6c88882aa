"""``measure()``: compile, count, time and compare a jitted JAX kernel with its roofline, as named steps
(imports JAX)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, Protocol

from ..analysis.runs.time_spent import phase
from ..base.calls import KernelCall, split_call
from ..base.kinds import CeilingsUsed
from ..base.labels import kernel_name
from ..base.progress import said_if_slow
from ..hardware.calibration_cache import refresh_mode
from ..hardware.spec import HardwareSpec
from ..result.result import Result
from .compiled import (
    CompiledProgram,
    Kept,
    compile_program,
)
from .machine.device import resolve_hardware
from .options import MEASURE_OPTIONS, HardwareChoice, MeasureOptions
from .predict import read_program
from .processes.peers import current_peers
from .processes.start_up import resolve_together
from .steps.assembly import result_of
from .steps.planning import planned
from .steps.timed_runs import timed_runs

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


def _measure_call(call: KernelCall, options: MeasureOptions, keep: Keeper | None) -> Result:
    label = options.name or kernel_name(call.fn)
    peers = current_peers(label)
    with peers.busy(f"compiling and calibrating for kernel {label!r}") if peers else nullcontext():
        program = _compiled(call, label, keep)
        module, counts = read_program(program, label, options.counts)
        spec, used = _hardware(program, options.hardware)
    plan = planned(label, options, program, module, counts, spec=spec, used=used, peers=peers)
    ran = timed_runs(plan)
    return result_of(call, plan, ran)


def _hardware(program: CompiledProgram, choice: HardwareChoice) -> tuple[HardwareSpec, CeilingsUsed]:
    """The device's table entry and ceilings (the calibration read from its cache, or measured)."""
    with phase("hardware"):
        return resolve_together(program.platform, program.device_kind, lambda again: resolve_hardware(
            program.platform, program.device_kind, choice.name, choice.file, choice.ceilings, refresh_mode(again)),
            choice.recalibrate)
