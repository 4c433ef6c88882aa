"""The kernel census family of an executed instruction, named by what it computes. Pure: reads the HLO.

- ``matmul`` / ``convolution``: an XLA op or fusion whose heaviest op is a dot / a convolution (an XLA:CPU
  ``ynn_fusion`` or an XLA:GPU ``kCustom`` fusion around a gemm is a matmul);
- ``copy``: a copy or transpose, or a fusion that only copies, transposes or reshapes (``copy_bitcast_fusion``,
  ``transpose_copy_fusion``): bytes moved to change a layout;
- ``collective``: all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute and their async halves;
- library calls: ``cuBLAS``, ``cuDNN``, a ``Triton`` fusion, a ``Pallas`` kernel, any other ``custom call``;
- ``XLA fusion`` / ``XLA op``: the rest (elementwise work, reductions, gathers ...)."""

from __future__ import annotations

from collections.abc import Mapping

from ..program.collectives import collective_kind
from ..program.hlo_reader import HloModule, Instruction
from ..program.pallas_costs import pallas_backend

__all__ = ["FAMILIES", "NAMED_BY_WORK", "op_family"]

FAMILIES = ("XLA fusion", "XLA op", "matmul", "convolution", "copy", "collective", "cuBLAS", "cuDNN", "Triton",
            "Pallas", "custom call")
# Families named for what the op computes rather than for its opcode.
NAMED_BY_WORK = frozenset({"matmul", "convolution", "copy"})
_LAYOUT = frozenset({"copy", "transpose", "copy-start", "copy-done"})
# What a fusion that only changes a layout holds besides copies and transposes.
_VIEWS = frozenset({"parameter", "bitcast", "reshape", "tuple", "get-tuple-element", "constant"})
_WORK = {"dot": "matmul", "convolution": "convolution"}


def _fused_family(module: HloModule | None, inst: Instruction) -> str | None:
    """``matmul``/``convolution`` where the fused computation holds one (the costlier by its result's size where
    it holds both), ``copy`` where it only moves bytes to another layout, else None."""
    if module is None:
        return None
    ops = [i for name in inst.called if (c := module.computations.get(name)) is not None for i in c.instructions]
    heavy = [i for i in ops if i.opcode in _WORK]
    if heavy:
        return _WORK[max(heavy, key=lambda i: i.shape.bytes).opcode]
    moving = [i for i in ops if i.opcode not in _VIEWS]
    if moving and all(i.opcode in _LAYOUT for i in moving):
        return "copy"
    return None


def op_family(inst: Instruction, module: HloModule | None = None) -> str:
    """The census family of one executed instruction (``module``: to look inside a fusion)."""
    if inst.opcode == "custom-call":
        target = inst.attrs.get("custom_call_target", "").strip('"')
        if target.startswith(("__cublas", "__hipblas")):
            return "cuBLAS"
        if target.startswith("__cudnn"):
            return "cuDNN"
        if pallas_backend(target) is not None:
            return "Pallas"
        return "custom call"
    if inst.opcode == "fusion":
        config = inst.backend_config.get("fusion_backend_config")
        kind = str(config.get("kind", "")) if isinstance(config, Mapping) else ""
        if kind.startswith("__triton"):
            return "Triton"
        if kind.startswith("__cudnn"):
            return "cuDNN"
        return _fused_family(module, inst) or "XLA fusion"
    if collective_kind(inst.opcode) is not None:
        return "collective"
    if inst.opcode in _LAYOUT:
        return "copy"
    return _WORK.get(inst.opcode, "XLA op")
