"""FLOPs, transcendentals and bytes of one HLO instruction, estimated the way XLA's cost analysis counts
them, and the compute class (dtype) of matrix work. Pure: reads :mod:`pytest_roofline.analysis.hlo`.

Bytes are operands read + result written for instructions that touch memory; a fusion's internal values are
not memory traffic. A while loop's body counts ``known_trip_count`` times when asked (XLA counts it once).
A conditional runs one branch: the costliest is counted (:func:`costliest_branch`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from math import prod

from .hlo import DTYPE_BYTES, Computation, HloModule, Instruction, Shape
from .kernels import estimate_in_config, pallas_backend

__all__ = [
    "OpCost",
    "FREE_OPS",
    "instruction_cost",
    "computation_cost",
    "costliest_branch",
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


@dataclass(frozen=True)
class OpCost:
    """Estimated cost of one HLO instruction (including what it calls, loops multiplied)."""

    flops: float = 0.0
    transcendentals: float = 0.0
    bytes: float = 0.0
    # Matrix FLOPs (dot, convolution) by compute class, e.g. {"f32": 2.1e9}; included in ``flops``.
    matrix_flops: Mapping[str, float] = field(default_factory=dict)
    # FLOPs of library custom calls (cuBLAS gemms, cuDNN convolutions) counted here; included in ``flops``.
    custom_call_flops: float = 0.0
    # Custom calls whose work this model cannot count, as "name (target)": the counts are incomplete.
    uncounted: tuple[str, ...] = ()
    # Pallas kernels counted from their author's cost_estimate, as "name (backend)".
    estimated: tuple[str, ...] = ()

    def __add__(self, other: OpCost) -> OpCost:
        merged = dict(self.matrix_flops)
        for k, v in other.matrix_flops.items():
            merged[k] = merged.get(k, 0.0) + v
        unknown = self.uncounted + tuple(u for u in other.uncounted if u not in self.uncounted)
        stated = self.estimated + tuple(e for e in other.estimated if e not in self.estimated)
        return OpCost(self.flops + other.flops, self.transcendentals + other.transcendentals,
                      self.bytes + other.bytes, merged, self.custom_call_flops + other.custom_call_flops, unknown,
                      stated)

    def scaled(self, factor: float) -> OpCost:
        return OpCost(self.flops * factor, self.transcendentals * factor, self.bytes * factor,
                      {k: v * factor for k, v in self.matrix_flops.items()}, self.custom_call_flops * factor,
                      self.uncounted, self.estimated)


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


# Library calls XLA emits as custom calls (GPU). Gemms: cuBLAS and cuBLASLt (XLA on ROCm uses the same target
# names for hipBLAS/hipBLASLt); convolutions: cuDNN (MIOpen on ROCm, same names).
GEMM_TARGET_PREFIXES = ("__cublas$", "__hipblas")
CONV_TARGET_PREFIXES = ("__cudnn$conv",)
# Custom calls that move or annotate data and compute nothing: their operands and result are the traffic.
DATA_MOVEMENT_TARGETS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "MoveToHost", "MoveToDevice",
    "AllocateBuffer", "LayoutConstraint", "annotate_device_placement", "PinToDevice", "__gpu$xla.gpu.copy",
})


def custom_call_target(inst: Instruction) -> str:
    return inst.attrs.get("custom_call_target", "").strip('"')


def _first_leaf(shape: Shape) -> Shape:
    """A library call's result: the first element of its tuple (the rest is workspace: scratch, not output)."""
    while shape.is_tuple and shape.elements_of:
        shape = shape.elements_of[0]
    return shape


def _gemm_flops(comp: Computation, inst: Instruction) -> float | None:
    """2 x batch x M x N x K of a gemm custom call, from its operands and the ``dot_dimension_numbers`` of its
    ``backend_config``; None when they are not there."""
    config = inst.backend_config.get("gemm_backend_config", inst.backend_config)
    dims = config.get("dot_dimension_numbers") if isinstance(config, dict) else None
    if not isinstance(dims, dict) or len(inst.operands) < 2:
        return None
    lhs, rhs = _shape_of(comp, inst.operands[0]), _shape_of(comp, inst.operands[1])
    if lhs is None or rhs is None or lhs.is_tuple or rhs.is_tuple:
        return None
    try:
        contracting = [int(d) for d in dims.get("lhs_contracting_dimensions", [])]
        batch = [int(d) for d in dims.get("lhs_batch_dimensions", [])]
        k = prod(lhs.dims[d] for d in contracting)
        b = prod(lhs.dims[d] for d in batch)
    except (IndexError, TypeError, ValueError):
        return None
    if k * b == 0:
        return 0.0
    # lhs = batch x M x K, rhs = batch x K x N: 2 x batch x M x N x K = 2 x |lhs| x |rhs| / (batch x K)
    return 2.0 * lhs.num_elements * rhs.num_elements / (b * k)


def _conv_custom_flops(comp: Computation, inst: Instruction, target: str) -> float | None:
    """A cuDNN convolution's FLOPs, as the forward convolution it computes or differentiates:
    2 x forward-output elements x kernel elements per output feature."""
    if len(inst.operands) < 2:
        return None
    a, b = _shape_of(comp, inst.operands[0]), _shape_of(comp, inst.operands[1])
    result = _first_leaf(inst.shape)
    if a is None or b is None:
        return None
    if "BackwardFilter" in target:
        forward_out, kernel = b, result  # operands: input, output gradient; result: the kernel gradient
    elif "BackwardInput" in target:
        forward_out, kernel = a, b  # operands: output gradient, kernel; result: the input gradient
    else:
        forward_out, kernel = result, b  # operands: input, kernel (bias, side input); result: output
    labels = inst.attrs.get("dim_labels", "")
    try:
        kernel_labels = labels.split("_")[1].split("->")[0]
        out_feature = kernel.dims[kernel_labels.index("o")]
    except (IndexError, ValueError):
        return None
    return 2.0 * forward_out.num_elements * kernel.num_elements / max(out_feature, 1)


def _custom_call_cost(module: HloModule, comp: Computation, inst: Instruction,
                      param_sources: tuple[str, ...] | None) -> OpCost:
    """Gemm and convolution library calls counted from their operands; data-movement calls as bytes; any
    other custom call is bytes plus a name in ``uncounted``."""
    target = custom_call_target(inst)
    written = _first_leaf(inst.shape).bytes if inst.shape.is_tuple else inst.shape.bytes
    io_bytes = _operand_bytes(comp, inst) + written
    flops: float | None = None
    if target.startswith(GEMM_TARGET_PREFIXES):
        flops = _gemm_flops(comp, inst)
    elif target.startswith(CONV_TARGET_PREFIXES):
        flops = _conv_custom_flops(comp, inst, target)
    elif target in DATA_MOVEMENT_TARGETS:
        return OpCost(0.0, 0.0, io_bytes)
    elif pallas_backend(target) is not None:
        return _pallas_cost(module, comp, inst, target, io_bytes, param_sources)
    if flops is None:
        return OpCost(0.0, 0.0, io_bytes, uncounted=(f"{inst.name} ({target or 'no target'})",))
    dtypes = [source_dtype(module, comp, o, param_sources) for o in inst.operands[:2]]
    return OpCost(flops, 0.0, io_bytes, {compute_class(dtypes): flops}, custom_call_flops=flops)


def _pallas_cost(module: HloModule, comp: Computation, inst: Instruction, target: str, io_bytes: float,
                 param_sources: tuple[str, ...] | None) -> OpCost:
    """A Pallas kernel: the work its cost_estimate states (in its backend_config, or from the traced program);
    without one, its operands and result as bytes and its name in ``uncounted``."""
    backend = pallas_backend(target)
    stated, traced = estimate_in_config(inst), module.kernel_estimates.get(inst.name)
    # The traced program's estimate knows whether the body does matrix work; the call's own numbers win.
    est = traced if traced is not None and (stated is None or stated.numbers == traced.numbers) else stated
    if est is None:
        return OpCost(0.0, 0.0, io_bytes, uncounted=(f"{inst.name} ({target}: a {backend} Pallas kernel without a "
                                                      f"cost_estimate)",))
    dtypes = [source_dtype(module, comp, o, param_sources) for o in inst.operands[:2]]
    matrix = {compute_class(dtypes): est.flops} if est.matrix and est.flops else {}
    return OpCost(est.flops, est.transcendentals, est.bytes_accessed, matrix, custom_call_flops=est.flops,
                  estimated=(f"{inst.name} ({backend})",))


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
    return OpCost(c.flops, c.transcendentals, 0.0, c.matrix_flops, c.custom_call_flops, c.uncounted, c.estimated)


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
    if op == "custom-call":
        return _custom_call_cost(module, comp, inst, param_sources)
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
        return OpCost(inner.flops, inner.transcendentals, moved, inner.matrix_flops, inner.custom_call_flops,
                      inner.uncounted, inner.estimated)
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
        branch = costliest_branch(module, inst, multiply_loops)
        return computation_cost(module, branch, multiply_loops) if branch else OpCost()
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




def costliest_branch(module: HloModule, inst: Instruction, multiply_loops: bool = True) -> str | None:
    """The branch of a conditional counted as the one that runs: the costliest by FLOPs + bytes (a ceiling
    on the work; XLA's cost analysis does the same). None without branches."""
    costs = [(computation_cost(module, name, multiply_loops), name) for name in inst.called]
    if not costs:
        return None
    return max(costs, key=lambda pair: pair[0].flops + pair[0].bytes)[1]
