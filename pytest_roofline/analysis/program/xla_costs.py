"""FLOPs, transcendentals and bytes of one HLO instruction, estimated the way XLA's cost analysis counts
them, and the compute class (dtype) of matrix work. Pure: reads :mod:`pytest_roofline.analysis.program.hlo_reader`.

Bytes are operands read + result written for instructions that touch memory; a fusion's internal values are
not memory traffic. A while loop's body counts ``known_trip_count`` times when asked (XLA counts it once).
A conditional runs one branch: the branches the trace showed, by the share of executions each took, where it was
read (``Instruction.branch_shares``), else the costliest (:func:`branch_runs`).
"""

from __future__ import annotations

import re
from math import prod

from .hlo_reader import Computation, HloModule, Instruction
from .library_calls import custom_call_cost, custom_call_target
from .op_cost import OpCost, compute_class, operand_bytes, shape_of, source_dtype

__all__ = [
    "OpCost",
    "FREE_OPS",
    "instruction_cost",
    "computation_cost",
    "costliest_branch",
    "branch_runs",
    "compute_class",
    "source_dtype",
    "custom_call_target",
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


def _dot_flops(comp: Computation, inst: Instruction) -> float:
    lhs = shape_of(comp, inst.operands[0]) if inst.operands else None
    if lhs is None or lhs.is_tuple:
        return 0.0
    contracting = prod(lhs.dims[d] for d in inst.int_list("lhs_contracting_dims"))
    return 2.0 * inst.shape.num_elements * contracting


def _conv_flops(comp: Computation, inst: Instruction) -> float:
    """2 x output elements x (kernel elements per output feature); groups are already in the kernel shape."""
    if len(inst.operands) < 2:
        return 0.0
    rhs = shape_of(comp, inst.operands[1])
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


_SLICING_OPS = frozenset({"dynamic-slice", "slice", "gather"})


def _written_bytes(comp: Computation, root: Instruction) -> float:
    """Bytes a computation's root writes: an in-place dynamic-update-slice writes only its update."""
    if root.opcode == "dynamic-update-slice" and len(root.operands) > 1:
        update = shape_of(comp, root.operands[1])
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
        return operand_bytes(comp, inst) + inst.shape.bytes
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
        shape = shape_of(comp, operand)
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
    return computation_cost(module, comp_name, multiply_loops, param_sources).moving(0.0)


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
    io_bytes = operand_bytes(comp, inst) + inst.shape.bytes
    if op == "custom-call":
        return custom_call_cost(module, comp, inst, param_sources)
    if op in ("dot", "convolution"):
        flops = _dot_flops(comp, inst) if op == "dot" else _conv_flops(comp, inst)
        dtypes = [source_dtype(module, comp, o, param_sources) for o in inst.operands[:2]]
        return OpCost(flops, 0.0, io_bytes, {compute_class(dtypes): flops})
    if op == "fusion" or op == "call" or op == "async-start":
        inner = OpCost()
        sources = tuple(source_dtype(module, comp, o, param_sources) for o in inst.operands)
        for callee in inst.called:
            inner = inner + _inner_cost(module, callee, multiply_loops, sources)
        return inner.moving(_fusion_bytes(module, comp, inst) if op == "fusion" else io_bytes)
    if op == "dynamic-slice" or op == "slice":
        return OpCost(0.0, 0.0, 2.0 * inst.shape.bytes)  # read the slice, write it
    if op == "dynamic-update-slice" and len(inst.operands) > 1:
        update = shape_of(comp, inst.operands[1])
        return OpCost(0.0, 0.0, 2.0 * (update.bytes if update is not None else inst.shape.bytes))
    if op in ("while", "conditional"):
        return _control_cost(module, inst, multiply_loops)
    if op == "scatter" and inst.called and len(inst.operands) >= 3:
        return _scatter_cost(module, comp, inst, multiply_loops, io_bytes)
    if op in ("reduce", "reduce-window"):
        in_elems = sum(
            s.num_elements for s in (shape_of(comp, o) for o in inst.operands[: len(inst.operands) // 2 or 1])
            if s is not None
        )
        reducer = _inner_cost(module, inst.called[0], multiply_loops) if inst.called else OpCost(1.0)
        applications = max(in_elems - inst.shape.num_elements, 0)
        if op == "reduce-window":
            applications = reduce_window_applications(inst)
        if reducer.int_ops and not reducer.flops:  # an integer or boolean reduction (a count, an any())
            return OpCost(0.0, 0.0, io_bytes, int_ops=reducer.int_ops * applications)
        return OpCost(max(reducer.flops, 1.0) * applications, reducer.transcendentals * applications, io_bytes)
    elements = inst.shape.num_elements
    if op in TRANSCENDENTAL_OPS:
        return OpCost(0.0, float(elements), io_bytes)
    if op in FLOP_ELEMENTWISE_OPS:
        if _integer(comp, inst):
            return OpCost(0.0, 0.0, io_bytes, int_ops=float(elements))
        return OpCost(float(elements), 0.0, io_bytes)
    # Data movement (copy, transpose, broadcast, slice, concatenate, convert, custom-call ...): bytes only.
    return OpCost(0.0, 0.0, io_bytes)


def _integer(comp: Computation, inst: Instruction) -> bool:
    """Whether an elementwise op works on integers or booleans (a comparison: on its operands' type; a conversion:
    on the type it makes), not on floating-point numbers."""
    shape = shape_of(comp, inst.operands[0]) if inst.opcode == "compare" and inst.operands else inst.shape
    dtype = shape.dtype if shape is not None else ""
    return dtype == "pred" or (dtype[:1] in ("s", "u") and dtype[1:].isdigit())


def _control_cost(module: HloModule, inst: Instruction, multiply_loops: bool) -> OpCost:
    """A while loop: its body and condition, ``known_trip_count`` times with ``multiply_loops`` (else once); a
    conditional: its branches by the share of its executions each took (:func:`branch_runs`)."""
    total = OpCost()
    if inst.opcode == "while":
        trip = inst.known_trip_count if multiply_loops else None
        for name in inst.called:  # body and condition
            total = total + computation_cost(module, name, multiply_loops)
        return total.scaled(trip if trip is not None else 1)
    for branch, share in branch_runs(module, inst, multiply_loops):
        total = total + computation_cost(module, branch, multiply_loops).scaled(share)
    return total


def _scatter_cost(module: HloModule, comp: Computation, inst: Instruction, multiply_loops: bool,
                  io_bytes: float) -> OpCost:
    """A scatter: its combiner once per element of the updates (the operands after the indices), as XLA counts it
    (a segment sum: one add per element added; an integer one, one integer op)."""
    updates = inst.operands[(len(inst.operands) + 1) // 2:]
    elements = sum(s.num_elements for s in (shape_of(comp, o) for o in updates) if s is not None)
    return _inner_cost(module, inst.called[0], multiply_loops).scaled(elements).moving(io_bytes)


def reduce_window_applications(inst: Instruction) -> int:
    """How often a reduce-window applies its reducer, as XLA's cost analysis counts it: window size - 1 per
    output element (of the first output where it returns a tuple). ``window={size=1x64 stride=1x64}``."""
    match = re.search(r"size=([\dx]+)", inst.attrs.get("window", ""))
    window = prod(int(d) for d in match.group(1).split("x")) if match else 1
    out = next(iter(inst.shape.leaves()))
    return max(window - 1, 0) * out.num_elements


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


def branch_runs(module: HloModule, inst: Instruction, multiply_loops: bool = True) -> list[tuple[str, float]]:
    """The branches of a conditional counted as run, with the share of its executions each took: those the trace
    showed (``Instruction.branch_shares``), else the costliest alone (a ceiling on the work)."""
    shares = inst.branch_shares
    if shares is not None and len(shares) == len(inst.called):
        return [(name, share) for name, share in zip(inst.called, shares, strict=True) if share > 0]
    branch = costliest_branch(module, inst, multiply_loops)
    return [(branch, 1.0)] if branch else []


def costliest_branch(module: HloModule, inst: Instruction, multiply_loops: bool = True) -> str | None:
    """The branch of a conditional counted as the one that runs: the costliest by FLOPs + bytes (a ceiling
    on the work; XLA's cost analysis does the same). None without branches."""
    costs = [(computation_cost(module, name, multiply_loops), name) for name in inst.called]
    if not costs:
        return None
    return max(costs, key=lambda pair: pair[0].flops + pair[0].bytes)[1]
