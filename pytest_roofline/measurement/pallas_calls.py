"""The Pallas kernels of a traced program: each ``pallas_call`` equation's name, ``cost_estimate``, whether it
runs in interpret mode and how often per run; and the work the program does outside them. Reads jaxprs (JAX
objects, duck-typed: no private imports)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.program.info import SourceWork
from ..analysis.program.pallas_costs import KernelEstimate, TracedKernel, parse_cost_estimate
from .pallas_body import count_body, count_kernel, inner_jaxprs

__all__ = ["TracedProgram", "traced_program", "source_work"]

# Equations that only hold other jaxprs (their work is what they hold) or move no data of their own.
_CONTAINERS = frozenset({"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
                         "custom_vjp_call_jaxpr", "remat", "checkpoint", "shard_map", "scan", "while", "cond"})
_FREE = frozenset({"reshape", "squeeze", "expand_dims", "copy", "copy_p"})
_MATRIX = frozenset({"dot_general", "conv_general_dilated", "ragged_dot_general"})


@dataclass(frozen=True)
class TracedProgram:
    kernels: tuple[TracedKernel, ...] = ()
    outside: tuple[str, ...] = ()  # primitives that do work outside the Pallas kernels (distinct, in order)


def _has_matrix_work(jaxpr: Any) -> bool:
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in _MATRIX:
            return True
        if any(_has_matrix_work(j) for v in eqn.params.values() for j in inner_jaxprs(v)):
            return True
    return False


def _hlo_dtype(dtype: Any) -> str:
    """numpy dtype name -> the HLO element type name (float32 -> f32, bfloat16 -> bf16, int8 -> s8)."""
    name: str = str(np.dtype(dtype).name)
    for prefix, short in (("bfloat", "bf"), ("float", "f"), ("uint", "u"), ("int", "s")):
        if name.startswith(prefix):
            return short + name[len(prefix):]
    return name


def _kernel(eqn: Any, times: float, where: str) -> TracedKernel:
    body = eqn.params.get("jaxpr")
    info = getattr(body, "debug_info", None)
    name = eqn.params.get("name") or getattr(info, "func_name", None) or "pallas_call"
    matrix = _has_matrix_work(body) if body is not None and hasattr(body, "eqns") else True
    estimate = parse_cost_estimate(eqn.params.get("cost_estimate"), matrix) or _from_body(eqn)
    avals = [v.aval for v in eqn.invars if hasattr(getattr(v, "aval", None), "dtype")]
    results = [v.aval for v in eqn.outvars if hasattr(getattr(v, "aval", None), "dtype")]
    io_bytes = sum(float(np.prod(a.shape)) * np.dtype(a.dtype).itemsize for a in [*avals, *results])
    return TracedKernel(str(name), estimate, bool(eqn.params.get("interpret")), times, where,
                        tuple(_hlo_dtype(a.dtype) for a in avals), io_bytes=io_bytes)


def _from_body(eqn: Any) -> KernelEstimate | None:
    """A kernel without a cost_estimate, counted from its body (:mod:`.pallas_body`)."""
    count = count_kernel(eqn)
    if count is None:
        return None
    return KernelEstimate(count.flops, count.transcendentals, count.bytes_accessed, count.matrix_flops > 0, "body",
                          tuple(count.lower_bound))


def _walk(jaxpr: Any, times: float, where: str, kernels: list[TracedKernel], outside: list[str]) -> None:
    for eqn in jaxpr.eqns:
        prim = eqn.primitive.name
        if prim == "pallas_call":
            kernels.append(_kernel(eqn, times, where))
            continue
        if prim not in _CONTAINERS and prim not in _FREE and prim not in outside:
            outside.append(prim)
        inner_times, inner_where = times, where
        if prim == "scan":
            inner_times = times * float(eqn.params.get("length", 1))
        elif prim == "while":
            inner_where = where or "a while loop (its trip count is not known here: counted once)"
        elif prim == "cond":
            inner_where = where or "a cond branch (counted as if it ran)"
        for value in eqn.params.values():
            for inner in inner_jaxprs(value):
                _walk(inner, inner_times, inner_where, kernels, outside)


def traced_program(traced: Any) -> TracedProgram:
    """The Pallas kernels of ``jax.jit(f).trace(...)`` (anything with a ``.jaxpr``); empty when there is none."""
    closed = getattr(traced, "jaxpr", None)
    jaxpr = getattr(closed, "jaxpr", closed)
    if jaxpr is None or not hasattr(jaxpr, "eqns"):
        return TracedProgram()
    kernels: list[TracedKernel] = []
    outside: list[str] = []
    _walk(jaxpr, 1.0, "", kernels, outside)
    return TracedProgram(tuple(kernels), tuple(outside)) if kernels else TracedProgram()


def source_work(traced: Any, program: TracedProgram) -> SourceWork | None:
    """The work ``traced`` (``jax.jit(f).trace(...)``) asks for as its source wrote it; None without a jaxpr."""
    closed = getattr(traced, "jaxpr", None)
    jaxpr = getattr(closed, "jaxpr", closed)
    if jaxpr is None or not hasattr(jaxpr, "eqns"):
        return None
    count = count_body(jaxpr, expanded=True)
    unknown = list(count.lower_bound)
    if program.kernels:
        unknown.insert(0, "Pallas kernels (counted by their own estimates)")
    return SourceWork(count.flops, count.transcendentals, "; ".join(unknown))
