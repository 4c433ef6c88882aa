"""FLOPs, transcendentals and bytes of a compiled program.

The compiler's ``cost_analysis()`` is the base (it is exact for what it counts), normalized here in one
place. Two things it does not give are read from the optimized HLO (:mod:`pytest_roofline.hlo`):

* the compute dtype of every dot / convolution, so that matrix FLOPs meet the right peak;
* while loops: XLA counts a loop body once. When the HLO states ``known_trip_count`` the counts are
  corrected by the extra ``n - 1`` iterations as estimated by :func:`instruction_cost`; when it does not,
  the counts are marked as a lower bound.

No JAX import here: the inputs are the dict (or list of dicts) and the HLO text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from math import prod
from typing import Any

from .hlo import DTYPE_BYTES, Computation, HloModule, Instruction, Shape

__all__ = [
    "CostAnalysisError",
    "Counts",
    "OpCost",
    "normalize_cost_analysis",
    "instruction_cost",
    "program_counts",
    "compute_class",
    "computation_cost",
    "executed_ops",
]

# Elementwise ops XLA's cost analysis counts as transcendentals (one per output element).
TRANSCENDENTAL_OPS = frozenset({
    "exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "power", "rsqrt", "sqrt",
    "cbrt", "tanh", "sine", "cosine", "tan", "atan2", "erf",
})
# Elementwise ops counted as one FLOP per output element.
FLOP_ELEMENTWISE_OPS = frozenset({
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "negate", "abs", "sign",
    "compare", "and", "or", "xor", "not", "floor", "ceil", "round-nearest-afz", "round-nearest-even",
    "clamp", "select", "is-finite", "shift-left", "shift-right-logical", "shift-right-arithmetic",
    "atan2", "real", "imag", "complex", "popcnt", "clz", "convert",
})
# Ops that move no data of their own (views, bookkeeping).
FREE_OPS = frozenset({
    "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "partition-id",
    "replica-id", "iota",
})


class CostAnalysisError(ValueError):
    """The compiler's cost analysis returned something that is not a set of counts."""


def normalize_cost_analysis(raw: Any) -> dict[str, float]:
    """Turn what ``compiled.cost_analysis()`` returned into ``{flops, transcendentals, bytes_accessed}``.

    Accepts a dict (jax >= 0.4.30) or a list holding one dict (older versions). Missing keys mean zero
    (XLA leaves out zero-valued keys). A negative, non-numeric or missing analysis is an error that shows
    what the compiler returned.
    """
    what = repr(raw)[:300]
    if isinstance(raw, (list, tuple)):
        if len(raw) != 1 or not isinstance(raw[0], Mapping):
            raise CostAnalysisError(f"expected one cost-analysis dict, the compiler returned {what}")
        raw = raw[0]
    if raw is None or not isinstance(raw, Mapping):
        raise CostAnalysisError(f"the compiler returned no cost analysis ({what})")
    out: dict[str, float] = {}
    for key, name in (("flops", "flops"), ("transcendentals", "transcendentals"),
                      ("bytes accessed", "bytes_accessed")):
        value = raw.get(key, 0.0)
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise CostAnalysisError(f"cost analysis key {key!r} is not a number: {what}") from None
        if value < 0 or value != value:
            raise CostAnalysisError(
                f"cost analysis key {key!r} is {value} (negative or NaN: a known XLA failure); "
                f"the compiler returned {what}. Pass flops=/bytes= to measure() to count analytically."
            )
        out[name] = value
    return out


@dataclass(frozen=True)
class OpCost:
    """Estimated cost of one HLO instruction (including what it calls, loops multiplied)."""

    flops: float = 0.0
    transcendentals: float = 0.0
    bytes: float = 0.0
    # Matrix FLOPs (dot, convolution) by compute class, e.g. {"f32": 2.1e9}; included in ``flops``.
    matrix_flops: Mapping[str, float] = field(default_factory=dict)

    def __add__(self, other: OpCost) -> OpCost:
        merged = dict(self.matrix_flops)
        for k, v in other.matrix_flops.items():
            merged[k] = merged.get(k, 0.0) + v
        return OpCost(self.flops + other.flops, self.transcendentals + other.transcendentals,
                      self.bytes + other.bytes, merged)

    def scaled(self, factor: float) -> OpCost:
        return OpCost(self.flops * factor, self.transcendentals * factor, self.bytes * factor,
                      {k: v * factor for k, v in self.matrix_flops.items()})


_CLASS_RANK = {"int8": 0, "fp8": 1, "bf16": 2, "f16": 2, "f32": 3, "f64": 4}


def _dtype_class(dtype: str) -> str:
    if dtype in ("bf16", "f16", "f32", "f64"):
        return dtype
    if dtype.startswith("f8") or dtype.startswith("f4"):
        return "fp8"
    if dtype in ("s8", "u8", "s4", "u4"):
        return "int8"
    if dtype in ("s32", "u32", "s16", "u16", "s64", "u64"):
        return "int8"  # integer dots run on the integer path; int8 is the only integer peak tables give
    if dtype in ("c64",):
        return "f32"
    if dtype in ("c128",):
        return "f64"
    return "f32"


def compute_class(operand_dtypes: list[str]) -> str:
    """The class of the widest operand: a bf16 x int8 dot is a bf16 dot, f32 x bf16 is f32."""
    classes = [_dtype_class(d) for d in operand_dtypes] or ["f32"]
    return max(classes, key=lambda c: _CLASS_RANK[c])


def _shape_of(comp: Computation, name: str) -> Shape | None:
    inst = comp.by_name.get(name)
    return inst.shape if inst is not None else None


def _dot_flops(comp: Computation, inst: Instruction) -> float:
    lhs = _shape_of(comp, inst.operands[0]) if inst.operands else None
    if lhs is None or lhs.is_tuple:
        return 0.0
    contracting = prod(lhs.dims[d] for d in inst.int_list("lhs_contracting_dims"))
    return 2.0 * inst.shape.num_elements * contracting


def _conv_flops(comp: Computation, inst: Instruction) -> float:
    """2 x output elements x (kernel elements per output feature); groups are already in the kernel shape."""
    if len(inst.operands) < 2:
        return 0.0
    rhs = _shape_of(comp, inst.operands[1])
    if rhs is None or rhs.is_tuple:
        return 0.0
    labels = inst.attrs.get("dim_labels", "")
    try:
        rhs_labels = labels.split("_")[1].split("->")[0]
        out_feature = rhs.dims[rhs_labels.index("o")]
    except (IndexError, ValueError):
        out_feature = rhs.dims[-1] if rhs.dims else 1
    per_output = rhs.num_elements / max(out_feature, 1)
    return 2.0 * inst.shape.num_elements * per_output


_VIEW_OPS = frozenset({"bitcast", "copy", "transpose", "reshape", "broadcast"})


def _narrower(a: str, b: str) -> str:
    return a if DTYPE_BYTES.get(a, 4) <= DTYPE_BYTES.get(b, 4) else b


def source_dtype(module: HloModule, comp: Computation, name: str,
                 param_sources: tuple[str, ...] | None = None, depth: int = 0) -> str:
    """The dtype a value had before compiler-inserted converts and views.

    XLA:CPU computes a bf16 dot as convert-to-f32, f32 dot, convert back: the kernel is still a bf16
    matmul (and the bf16 ceiling is calibrated through the same converts), so the dot's class is bf16.
    """
    inst = comp.by_name.get(name)
    if inst is None or inst.shape.is_tuple or depth > 32:
        return "f32" if inst is None or inst.shape.is_tuple else inst.shape.dtype
    if inst.opcode == "parameter":
        try:
            index = int(inst.literal)
        except ValueError:
            return inst.shape.dtype
        if param_sources is not None and index < len(param_sources):
            return param_sources[index]
        return inst.shape.dtype
    if inst.opcode == "convert" and inst.operands:
        return _narrower(source_dtype(module, comp, inst.operands[0], param_sources, depth + 1), inst.shape.dtype)
    if inst.opcode in _VIEW_OPS and inst.operands:
        return source_dtype(module, comp, inst.operands[0], param_sources, depth + 1)
    if inst.opcode == "fusion" and inst.called:
        callee = module.computations.get(inst.called[0])
        if callee is not None and callee.root.opcode in _VIEW_OPS | {"convert"}:
            inner_sources = tuple(source_dtype(module, comp, o, param_sources, depth + 1) for o in inst.operands)
            return source_dtype(module, callee, callee.root.name, inner_sources, depth + 1)
    return inst.shape.dtype


def _operand_bytes(comp: Computation, inst: Instruction) -> float:
    seen: set[str] = set()
    total = 0.0
    for name in inst.operands:
        if name in seen:
            continue
        seen.add(name)
        shape = _shape_of(comp, name)
        if shape is not None:
            total += shape.bytes
    return total


_SLICING_OPS = frozenset({"dynamic-slice", "slice", "gather"})


def _written_bytes(comp: Computation, root: Instruction) -> float:
    """Bytes a computation's root writes: an in-place dynamic-update-slice writes only its update."""
    if root.opcode == "dynamic-update-slice" and len(root.operands) > 1:
        update = _shape_of(comp, root.operands[1])
        return float(update.bytes) if update is not None else float(root.shape.bytes)
    if root.opcode == "tuple":
        total = 0.0
        for name in root.operands:
            inst = comp.by_name.get(name)
            if inst is not None:
                total += _written_bytes(comp, inst)
        return total
    return float(root.shape.bytes)


def _in_place_targets(comp: Computation) -> set[str]:
    """Names of the values the root updates in place (operand 0 of a root dynamic-update-slice)."""
    root = comp.root
    roots = [comp.by_name[n] for n in root.operands if n in comp.by_name] if root.opcode == "tuple" else [root]
    return {r.operands[0] for r in roots if r.opcode == "dynamic-update-slice" and r.operands}


def _fusion_bytes(module: HloModule, comp: Computation, inst: Instruction) -> float:
    """Memory traffic of a fusion as XLA counts it: parameters read only through slices cost the slices;
    a buffer updated in place is not read; the write is what the root writes."""
    callee = module.computations.get(inst.called[0]) if inst.called else None
    if callee is None:
        return _operand_bytes(comp, inst) + inst.shape.bytes
    users: dict[str, list[Instruction]] = {}
    for inner in callee.instructions:
        for operand in inner.operands:
            users.setdefault(operand, []).append(inner)
    in_place = _in_place_targets(callee)
    params = {int(i.literal): i for i in callee.instructions if i.opcode == "parameter" and i.literal.isdigit()}
    read = 0.0
    seen: set[str] = set()
    for index, operand in enumerate(inst.operands):
        if operand in seen:
            continue
        seen.add(operand)
        shape = _shape_of(comp, operand)
        full = float(shape.bytes) if shape is not None else 0.0
        param = params.get(index)
        uses = users.get(param.name, []) if param is not None else []
        if param is None or not uses:
            read += full
            continue
        touched = 0.0
        for use in uses:
            if use.opcode in _SLICING_OPS and use.operands[0] == param.name:
                touched += use.shape.bytes  # only the slice is read
            elif use.opcode == "dynamic-update-slice" and use.operands[0] == param.name and param.name in in_place:
                continue  # the buffer updated in place is not read
            else:
                touched = full
                break
        read += min(touched, full)
    return read + _written_bytes(callee, callee.root)


def _inner_cost(module: HloModule, comp_name: str, multiply_loops: bool,
                param_sources: tuple[str, ...] | None = None) -> OpCost:
    """FLOPs of a called computation (fusion body, reducer); its internal values are not memory traffic."""
    c = computation_cost(module, comp_name, multiply_loops, param_sources)
    return OpCost(c.flops, c.transcendentals, 0.0, c.matrix_flops)


def instruction_cost(module: HloModule, comp: Computation, inst: Instruction,
                     multiply_loops: bool = True, param_sources: tuple[str, ...] | None = None) -> OpCost:
    """Estimate FLOPs / transcendentals / bytes of one instruction, the way XLA's cost analysis does.

    Bytes are operands read + result written for instructions that touch memory; a fusion's internal
    values are not memory traffic. With ``multiply_loops`` a while loop's body counts ``known_trip_count``
    times (otherwise once, as XLA counts it).
    """
    op = inst.opcode
    if op in FREE_OPS:
        return OpCost()
    io_bytes = _operand_bytes(comp, inst) + inst.shape.bytes
    if op in ("dot", "convolution"):
        flops = _dot_flops(comp, inst) if op == "dot" else _conv_flops(comp, inst)
        dtypes = [source_dtype(module, comp, o, param_sources) for o in inst.operands[:2]]
        return OpCost(flops, 0.0, io_bytes, {compute_class(dtypes): flops})
    if op == "fusion" or op == "call" or op == "async-start":
        inner = OpCost()
        sources = tuple(source_dtype(module, comp, o, param_sources) for o in inst.operands)
        for callee in inst.called:
            inner = inner + _inner_cost(module, callee, multiply_loops, sources)
        moved = _fusion_bytes(module, comp, inst) if op == "fusion" else io_bytes
        return OpCost(inner.flops, inner.transcendentals, moved, inner.matrix_flops)
    if op == "dynamic-slice" or op == "slice":
        return OpCost(0.0, 0.0, 2.0 * inst.shape.bytes)  # read the slice, write it
    if op == "dynamic-update-slice" and len(inst.operands) > 1:
        update = _shape_of(comp, inst.operands[1])
        return OpCost(0.0, 0.0, 2.0 * (update.bytes if update is not None else inst.shape.bytes))
    if op == "while":
        trip = inst.known_trip_count if multiply_loops else None
        total = OpCost()
        for name in inst.called:  # body and condition
            total = total + computation_cost(module, name, multiply_loops)
        return total.scaled(trip if trip is not None else 1)
    if op == "conditional":
        branches = [computation_cost(module, name, multiply_loops) for name in inst.called]
        # One branch runs: count the most expensive (a ceiling on the work, XLA does the same).
        return max(branches, key=lambda c: c.flops + c.bytes, default=OpCost())
    if op in ("reduce", "reduce-window"):
        in_elems = sum(
            s.num_elements for s in (_shape_of(comp, o) for o in inst.operands[: len(inst.operands) // 2 or 1])
            if s is not None
        )
        reducer = _inner_cost(module, inst.called[0], multiply_loops) if inst.called else OpCost(1.0)
        per_apply = max(reducer.flops, 1.0)
        applications = max(in_elems - inst.shape.num_elements, 0)
        if op == "reduce-window":
            applications = in_elems
        return OpCost(per_apply * applications, reducer.transcendentals * applications, io_bytes)
    elements = inst.shape.num_elements
    if op in TRANSCENDENTAL_OPS:
        return OpCost(0.0, float(elements), io_bytes)
    if op in FLOP_ELEMENTWISE_OPS:
        return OpCost(float(elements), 0.0, io_bytes)
    # Data movement (copy, transpose, broadcast, slice, concatenate, convert, custom-call ...): bytes only.
    return OpCost(0.0, 0.0, io_bytes)


def computation_cost(module: HloModule, comp_name: str, multiply_loops: bool,
                     param_sources: tuple[str, ...] | None = None) -> OpCost:
    """The summed cost of a computation's instructions (``param_sources``: its parameters' source dtypes)."""
    comp = module.computations.get(comp_name)
    total = OpCost()
    if comp is None:
        return total
    for inst in comp.instructions:
        total = total + instruction_cost(module, comp, inst, multiply_loops, param_sources)
    return total


@dataclass(frozen=True)
class Counts:
    """What the roofline needs to know about a program's work."""

    flops: float
    transcendentals: float
    bytes_accessed: float
    # Matrix (dot / convolution) FLOPs by compute class; the rest of ``flops`` is vector work.
    matrix_flops: Mapping[str, float]
    lower_bound: bool  # a while loop without a known trip count: the body was counted once
    loops: tuple[str, ...]  # one line per while loop: its name and trip count (or "unknown")
    dot_precisions: tuple[str, ...]  # operand_precision values seen on dots ("default" when unset)

    @property
    def vector_flops(self) -> float:
        return max(self.flops - sum(self.matrix_flops.values()), 0.0)


def _while_loops(module: HloModule) -> list[Instruction]:
    return [i for c in module.computations.values() for i in c.instructions if i.opcode == "while"]


def _dot_precisions(module: HloModule) -> tuple[str, ...]:
    seen: list[str] = []
    for comp in module.computations.values():
        for inst in comp.instructions:
            if inst.opcode in ("dot", "convolution"):
                raw = inst.attrs.get("operand_precision", "").strip("{}")
                values = {p.strip().lower() for p in raw.split(",") if p.strip()} or {"default"}
                for p in sorted(values):
                    if p not in seen:
                        seen.append(p)
    return tuple(seen)


def program_counts(raw_cost_analysis: Any, module: HloModule) -> Counts:
    """The program's counts: the compiler's analysis, with loop trip counts applied from the HLO."""
    base = normalize_cost_analysis(raw_cost_analysis)
    once = computation_cost(module, module.entry_name, multiply_loops=False)
    full = computation_cost(module, module.entry_name, multiply_loops=True)
    loops = _while_loops(module)
    lower_bound = any(loop.known_trip_count is None for loop in loops)
    descriptions = tuple(
        f"{loop.name}: trip count {loop.known_trip_count}" if loop.known_trip_count is not None
        else f"{loop.name}: trip count unknown (body counted once)"
        for loop in loops
    )
    # XLA's totals count every loop body once; add the iterations it left out.
    extra = OpCost(full.flops - once.flops, full.transcendentals - once.transcendentals,
                   full.bytes - once.bytes)
    # Matrix FLOPs: from the HLO, scaled so that their sum never exceeds the compiler's FLOP total.
    matrix = dict(full.matrix_flops)
    total_flops = base["flops"] + extra.flops
    matrix_sum = sum(matrix.values())
    if matrix_sum > total_flops > 0:
        matrix = {k: v * total_flops / matrix_sum for k, v in matrix.items()}
    return Counts(
        flops=total_flops,
        transcendentals=base["transcendentals"] + extra.transcendentals,
        bytes_accessed=base["bytes_accessed"] + extra.bytes,
        matrix_flops=matrix,
        lower_bound=lower_bound,
        loops=descriptions,
        dot_precisions=_dot_precisions(module),
    )


def executed_ops(module: HloModule, comp_name: str | None = None, depth: int = 0) -> int:
    """How many top-level ops one run executes (loop bodies times their trip count, once if unknown).

    Each is one event in a CPU trace: the timing caps its runs so that the trace stays small enough to read.
    """
    comp = module.computations.get(comp_name or module.entry_name)
    if comp is None or depth > 16:
        return 0
    total = 0
    for inst in comp.instructions:
        if inst.opcode in FREE_OPS:
            continue
        if inst.opcode == "while":
            trips = inst.known_trip_count or 1
            inner = sum(executed_ops(module, name, depth + 1) for name in inst.called)  # body and condition
            total += trips * max(inner, 1)
        elif inst.opcode in ("call", "conditional"):
            total += max((executed_ops(module, c, depth + 1) for c in inst.called), default=1)
        else:
            total += 1
    return total
