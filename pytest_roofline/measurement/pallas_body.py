"""Counting a jaxpr's work (a traced program as its source wrote it, :func:`count_body`), and a Pallas kernel from its
body, for kernels that state no ``cost_estimate``: the FLOPs and transcendentals of the body's jaxpr (per grid step,
loops multiplied) times the grid, and the blocks the grid maps in and out as bytes. Reads jaxprs duck-typed (no private
imports).

``jax.experimental.pallas.estimate_cost`` counts a function's jaxpr with per-primitive rules, but it counts only
the top level of a jaxpr: the ``scan`` or ``while`` a flash-attention body runs over its key blocks (where both
its matmuls are) holds no rule and counts nothing. So the rules are written here, over nested jaxprs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["BodyCount", "count_body", "count_kernel", "inner_jaxprs", "EXPANDED"]

# Elementwise primitives of one FLOP per output element, and those that are transcendental (one each).
_VECTOR = frozenset({"add", "sub", "mul", "div", "max", "min", "neg", "abs", "sign", "pow", "rem", "square",
                     "select_n", "clamp", "floor", "ceil", "round", "add_any", "nextafter", "integer_pow"})
_TRANSCENDENTAL = frozenset({"exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan",
                             "sqrt", "rsqrt", "cbrt", "erf", "erfc", "erf_inv", "atan2", "asin", "acos", "atan",
                             "sinh", "cosh", "asinh", "acosh", "atanh", "lgamma", "digamma"})
# Elementwise primitives of two FLOPs an element: 1 - x^2 (JAX 0.11's tanh derivative, a multiply and a subtract).
_TWO_FLOPS = frozenset({"one_minus_square"})
# Primitives XLA expands into many operations, with the FLOPs and transcendentals per output element its cost analysis
# counts for the expansion (jax 0.10.2's HLO on a CPU; tests/measurement/test_source_work.py checks each against the
# compiler in use). The source count charges them so (``count_body(..., expanded=True)``): a sampler's threefry rounds
# and erf_inv polynomial are the work it asks for, not waste the compiler added. igamma's loop is left out (counted
# as one transcendental a step of a loop XLA states no trip count for).
EXPANDED: dict[str, tuple[float, float]] = {
    "erf_inv": (37, 2), "erfc": (60, 1), "lgamma": (52, 4), "digamma": (73, 3), "asin": (5, 2), "acos": (3, 2),
    "sinh": (10, 3), "cosh": (3, 2), "asinh": (11, 3), "acosh": (7, 4), "atanh": (6, 2), "logistic": (3, 1),
    "bessel_i0e": (83, 1), "bessel_i1e": (83, 1), "polygamma": (71, 11), "zeta": (113, 11),
    "random_bits": (45, 0),  # threefry2x32's rounds, per word of output
}
_REDUCE = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin", "cumsum",
                     "cummax", "cumlogsumexp"})
# Moving data, comparing, or building indices: no arithmetic counted.
_FREE = frozenset(
    {
        "broadcast_in_dim",
        "reshape",
        "squeeze",
        "expand_dims",
        "transpose",
        "convert_element_type",
        "iota",
        "lt",
        "le",
        "gt",
        "ge",
        "eq",
        "ne",
        "and",
        "or",
        "not",
        "xor",
        "get",
        "swap",
        "masked_load",
        "masked_swap",
        "load",
        "store",
        "program_id",
        "num_programs",
        "slice",
        "dynamic_slice",
        "dynamic_update_slice",
        "concatenate",
        "pad",
        "copy",
        "copy_p",
        "select_and_scatter",
        "multiple_of",
        "max_contiguous",
        "shift_left",
        "shift_right_logical",
        "shift_right_arithmetic",
        "bitcast_convert_type",
        "stop_gradient",
        "debug_callback",
        "debug_print",
        "random_bits",
        "random_wrap",
        "random_unwrap",
        "random_seed",
        "sort",
        "gather",
        "scatter",
        "scatter_add",
        "atomic_rmw",
        "semaphore_signal",
        "semaphore_wait",
        "dma_start",
        "dma_wait",
        "delay",
        "split",
        "rev",
        "reduce_precision",
        "sharding_constraint",
        "optimization_barrier",
        "device_put",
        "pvary",
        "reduce_and",
        "reduce_or",
        "pure_callback",
        "io_callback",  # the host's work, not the device's
        # equinox's own primitives: predicates over a batch, and a conditional store
        "unvmap_any",
        "unvmap_all",
        "unvmap_max",
        "maybe_set",
    }
)


@dataclass
class BodyCount:
    """A body's work: matrix FLOPs (dots), other FLOPs, transcendentals; ``lower_bound``: why they may be more."""

    matrix_flops: float = 0.0
    vector_flops: float = 0.0
    transcendentals: float = 0.0
    bytes_accessed: float = 0.0
    lower_bound: list[str] = field(default_factory=list)

    @property
    def flops(self) -> float:
        return self.matrix_flops + self.vector_flops

    def scaled(self, times: float) -> BodyCount:
        return BodyCount(self.matrix_flops * times, self.vector_flops * times, self.transcendentals * times,
                         self.bytes_accessed * times, list(self.lower_bound))

    def add(self, other: BodyCount) -> None:
        self.matrix_flops += other.matrix_flops
        self.vector_flops += other.vector_flops
        self.transcendentals += other.transcendentals
        self.bytes_accessed += other.bytes_accessed
        self.lower_bound += [w for w in other.lower_bound if w not in self.lower_bound]


def _size(aval: Any) -> float:
    return float(np.prod(getattr(aval, "shape", ()) or (1,)))


def inner_jaxprs(value: Any) -> Iterator[Any]:
    """The jaxprs held in an equation parameter (a Jaxpr, a ClosedJaxpr, or a tuple of them)."""
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from inner_jaxprs(v)


def _dot_flops(eqn: Any) -> float:
    (contracting, _batch) = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    inner = float(np.prod([lhs[d] for d in contracting[0]] or [1]))
    return 2.0 * _size(eqn.outvars[0].aval) * inner


def _ragged_dot_flops(eqn: Any) -> float:
    """A grouped matmul's useful work: each row of the left operand meets one group's matrix, so
    2 x (output elements) x (contracted size), whatever the number of groups."""
    lhs = eqn.invars[0].aval.shape
    numbers = eqn.params.get("ragged_dot_dimension_numbers")
    contracting = getattr(numbers, "dot_dimension_numbers", None)
    dims = contracting[0][0] if contracting else (len(lhs) - 1,)
    return 2.0 * _size(eqn.outvars[0].aval) * float(np.prod([lhs[d] for d in dims] or [1]))


def _conv_flops(eqn: Any) -> float:
    """2 x (output elements) x (the kernel's size per output feature)."""
    rhs = eqn.invars[1].aval.shape
    numbers = eqn.params.get("dimension_numbers")
    out_feature = getattr(numbers, "rhs_spec", (0,))[0]
    return 2.0 * _size(eqn.outvars[0].aval) * float(np.prod(rhs)) / max(float(rhs[out_feature]), 1.0)


_MATRIX_RULES = {"dot_general": _dot_flops, "ragged_dot_general": _ragged_dot_flops, "ragged_dot": _ragged_dot_flops,
                 "conv_general_dilated": _conv_flops}


def _while_trips(eqn: Any) -> float | None:
    """The trip count of a ``fori_loop`` lowered to a while (carry ``i, upper, ...``, cond ``i < upper``) whose
    bounds are literals; None where it cannot be told."""
    cond = eqn.params.get("cond_jaxpr")
    eqns = getattr(getattr(cond, "jaxpr", cond), "eqns", [])
    n_consts = int(eqn.params.get("cond_nconsts", 0)) + int(eqn.params.get("body_nconsts", 0))
    carry = eqn.invars[n_consts:]
    if len(eqns) != 1 or eqns[0].primitive.name != "lt" or len(carry) < 2:
        return None
    low, high = (getattr(v, "val", None) for v in carry[:2])
    if isinstance(low, (int, np.integer)) and isinstance(high, (int, np.integer)):
        return float(max(int(high) - int(low), 0))
    return None


def count_body(jaxpr: Any, expanded: bool = False) -> BodyCount:
    """The work of one run of ``jaxpr`` (nested jaxprs included: scans times their length, a while with literal
    bounds times its trips, else once; a cond's costliest branch); ``expanded``: the primitives XLA expands charged
    their expansion (:data:`EXPANDED`), as a program XLA compiles runs them."""
    total = BodyCount()
    for eqn in jaxpr.eqns:
        prim = eqn.primitive.name
        out = _size(eqn.outvars[0].aval) if eqn.outvars else 0.0
        if expanded and prim in EXPANDED:
            total.vector_flops += EXPANDED[prim][0] * out
            total.transcendentals += EXPANDED[prim][1] * out
        elif prim in _MATRIX_RULES:
            total.matrix_flops += _MATRIX_RULES[prim](eqn)
        elif prim in _TRANSCENDENTAL:
            total.transcendentals += out
        elif prim in _VECTOR:
            total.vector_flops += out
        elif prim in _TWO_FLOPS:
            total.vector_flops += 2 * out
        elif prim in _REDUCE:
            total.vector_flops += _size(eqn.invars[0].aval)
        elif prim == "scan":
            for inner in inner_jaxprs(eqn.params.get("jaxpr")):
                total.add(count_body(inner, expanded).scaled(float(eqn.params.get("length", 1))))
        elif prim == "while":
            trips = _while_trips(eqn)
            if trips is None:
                total.lower_bound.append("a while loop whose trip count is not known here, counted once")
            for inner in inner_jaxprs(eqn.params.get("body_jaxpr")):
                total.add(count_body(inner, expanded).scaled(trips if trips is not None else 1.0))
        elif prim.startswith("scatter") and eqn.params.get("update_jaxpr") is not None and len(eqn.invars) >= 3:
            # the update computation once per element of the updates (a segment sum: one add each), as XLA counts it
            per = sum(count_body(inner, expanded).flops for inner in inner_jaxprs(eqn.params.get("update_jaxpr")))
            total.vector_flops += per * _size(eqn.invars[2].aval)
        elif prim == "cond":
            branches = [count_body(b, expanded) for b in inner_jaxprs(eqn.params.get("branches"))]
            if branches:
                total.add(max(branches, key=lambda b: b.flops + b.transcendentals))
        elif any(True for v in eqn.params.values() for _ in inner_jaxprs(v)):
            for v in eqn.params.values():
                for inner in inner_jaxprs(v):
                    total.add(count_body(inner, expanded))
        elif prim not in _FREE:
            why = f"primitives without a counting rule ({prim})"
            if not any(w.startswith("primitives without") for w in total.lower_bound):
                total.lower_bound.append(why)
    return total


def _block_bytes(eqn: Any) -> float:
    """Bytes of the blocks the grid maps in and out in one grid step (each input and output block once)."""
    mapping = eqn.params.get("grid_mapping")
    out = 0.0
    for bm in getattr(mapping, "block_mappings", ()) or ():
        aval = getattr(bm, "block_aval", None)
        if aval is not None and hasattr(aval, "dtype"):
            out += _size(aval) * np.dtype(aval.dtype).itemsize
    return out


def count_kernel(eqn: Any) -> BodyCount | None:
    """A ``pallas_call`` equation counted from its body: the body times the grid's steps, and the blocks read
    and written per step as bytes; None where it has no body to read."""
    body = eqn.params.get("jaxpr")
    if body is None or not hasattr(body, "eqns"):
        return None
    mapping = eqn.params.get("grid_mapping")
    grid = tuple(getattr(mapping, "grid", ()) or ())
    if not all(isinstance(g, (int, np.integer)) for g in grid):
        steps, dynamic = 1.0, ["a grid with dynamic bounds, counted as one step"]
    else:
        steps, dynamic = float(np.prod(grid or (1,))), []
    count = count_body(body).scaled(steps)
    count.bytes_accessed = _block_bytes(eqn) * steps
    count.lower_bound += dynamic
    count.lower_bound.append("bytes: the blocks the grid maps in and out, once per step (loads beyond them, and "
                             "re-reads the cache serves, are not counted)")
    return count
