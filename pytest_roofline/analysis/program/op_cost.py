"""The cost of one HLO instruction as a value (:class:`OpCost`), and the facts of its operands a cost reads:
their shapes, bytes, and the dtype (compute class) matrix work runs in. Pure: reads :mod:`.hlo_reader`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field, replace

from .hlo_reader import DTYPE_BYTES, Computation, HloModule, Instruction, Shape

__all__ = ["OpCost", "compute_class", "source_dtype", "shape_of", "operand_bytes"]


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
    _: KW_ONLY  # fields from the seventh on are given by keyword
    # Pallas kernels counted from their author's cost_estimate, as "name (backend)".
    estimated: tuple[str, ...] = ()
    # Elementwise integer and boolean ops (RNG bit mixing, index arithmetic): not in ``flops``, which XLA counts them in
    int_ops: float = 0.0
    # The FLOPs library calls counted in part (eigh, SVD: their reduction) may do beyond ``flops``, at most
    top_extra: float = 0.0

    def __add__(self, other: OpCost) -> OpCost:
        merged = dict(self.matrix_flops)
        for k, v in other.matrix_flops.items():
            merged[k] = merged.get(k, 0.0) + v
        unknown = self.uncounted + tuple(u for u in other.uncounted if u not in self.uncounted)
        stated = self.estimated + tuple(e for e in other.estimated if e not in self.estimated)
        return OpCost(self.flops + other.flops, self.transcendentals + other.transcendentals,
                      self.bytes + other.bytes, merged, self.custom_call_flops + other.custom_call_flops, unknown,
                      estimated=stated, int_ops=self.int_ops + other.int_ops,
                      top_extra=self.top_extra + other.top_extra)

    def scaled(self, factor: float) -> OpCost:
        return OpCost(self.flops * factor, self.transcendentals * factor, self.bytes * factor,
                      {k: v * factor for k, v in self.matrix_flops.items()}, self.custom_call_flops * factor,
                      self.uncounted, estimated=self.estimated, int_ops=self.int_ops * factor,
                      top_extra=self.top_extra * factor)

    def moving(self, nbytes: float) -> OpCost:
        """This work with ``nbytes`` of memory traffic (a called computation's work, its caller's bytes)."""
        return replace(self, bytes=nbytes)


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


def shape_of(comp: Computation, name: str) -> Shape | None:
    inst = comp.by_name.get(name)
    return inst.shape if inst is not None else None


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


def operand_bytes(comp: Computation, inst: Instruction) -> float:
    seen: set[str] = set()
    total = 0.0
    for name in inst.operands:
        if name in seen:
            continue
        seen.add(name)
        shape = shape_of(comp, name)
        if shape is not None:
            total += shape.bytes
    return total
