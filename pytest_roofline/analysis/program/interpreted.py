"""Counts of a program whose Pallas kernels run in interpret mode (on a CPU): the kernels' own
``cost_estimate``, read from the traced program, never what XLA counts for the interpreter's emulation. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from ...base.kinds import CountSource
from .counts import Counts
from .pallas_costs import TracedKernel
from .xla_costs import compute_class

__all__ = ["INTERPRET_NOTE", "interpret_counts", "estimated_note"]

BODY = "counted from its body"


def estimated_note(estimated: Sequence[str]) -> str:
    """Where the counts of Pallas kernels came from: their authors' cost_estimate, or their bodies (the body's
    FLOPs and transcendentals times the grid, its blocks as bytes)."""
    stated = [e for e in estimated if BODY not in e]
    counted = [e for e in estimated if BODY in e]
    parts = []
    if stated:
        parts.append(f"counts from the kernel's cost_estimate: {', '.join(stated)}")
    if counted:
        parts.append(f"counts from the Pallas kernel's body (no cost_estimate: its jaxpr's FLOPs and transcendentals "
                     f"times the grid, its blocks as bytes): {', '.join(counted)}")
    return "; ".join(parts)

INTERPRET_NOTE = (
    "Pallas kernel(s) {names} ran in interpret mode: these timings measure the Pallas interpreter on "
    "this {platform}, and say nothing about the kernel's speed on an accelerator; the per-op rows and the "
    "peak memory are the interpreter's program"
)


def interpret_counts(kernels: Sequence[TracedKernel], outside: Sequence[str]) -> Counts | None:
    """Counts of a program whose Pallas kernels run in interpret mode: the kernels' estimates, never what XLA
    counts for the interpreter's emulation of their bodies. Kernels without an estimate are uncounted; work
    outside the kernels (``outside``: its primitives) is not counted either, and makes the counts a lower bound.
    None when no kernel runs in interpret mode."""
    interpreted = [k for k in kernels if k.interpret]
    if not interpreted:
        return None
    flops = transcendentals = nbytes = 0.0
    matrix: dict[str, float] = {}
    estimated: list[str] = []
    uncounted: list[str] = []
    why: list[str] = []
    for k in interpreted:
        if k.estimate is None:
            uncounted.append(f"Pallas kernel {k.name!r} (interpret mode, no cost_estimate)")
            nbytes += k.io_bytes * k.times  # its operands and results: a lower bound, as for any custom call
            continue
        est = k.estimate
        flops += est.flops * k.times
        transcendentals += est.transcendentals * k.times
        nbytes += est.bytes_accessed * k.times
        if est.matrix and est.flops:
            cls = compute_class(list(k.dtypes[:2]))
            matrix[cls] = matrix.get(cls, 0.0) + est.flops * k.times
        body = f", {BODY}" if est.source == "body" else ""
        estimated.append(f"{k.name!r} (interpret mode{f', x{k.times:g} per run' if k.times != 1 else ''}{body})")
        why += [f"Pallas kernel {k.name!r} counted from its body: {w}" for w in est.lower_bound]
        if k.where:
            why.append(f"Pallas kernel {k.name} sits in {k.where}")
    if outside:
        shown = ", ".join(outside[:6]) + (", ..." if len(outside) > 6 else "")
        why.append(f"the work outside the interpret-mode Pallas kernels ({shown}) is not counted")
    return Counts(flops, transcendentals, nbytes, matrix, bool(uncounted or why), (), dot_precisions=(),
                  source=_source(estimated), uncounted=tuple(uncounted), estimated=tuple(estimated),
                  lower_bound_why=tuple(why))


def _source(estimated: Sequence[str]) -> CountSource:
    if not estimated:
        return "kernel_io"
    return "kernel_body" if all(BODY in e for e in estimated) else "cost_estimate"
