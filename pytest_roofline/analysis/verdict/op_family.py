"""The kernel census family of an executed instruction: an XLA fusion or op, a copy, a collective, or a library
call (cuBLAS, cuDNN), a Triton fusion or a Pallas kernel. Pure: reads :mod:`.hlo`."""

from __future__ import annotations

from collections.abc import Mapping

from ..program.collectives import collective_kind
from ..program.hlo_reader import Instruction
from ..program.pallas_costs import pallas_backend

__all__ = ["FAMILIES", "op_family"]

FAMILIES = ("XLA fusion", "XLA op", "copy", "collective", "cuBLAS", "cuDNN", "Triton", "Pallas", "custom call")
_LAYOUT = frozenset({"copy", "transpose", "copy-start", "copy-done"})


def op_family(inst: Instruction) -> str:
    """The census family of one executed instruction."""
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
        return "XLA fusion"
    if collective_kind(inst.opcode) is not None:
        return "collective"
    if inst.opcode in _LAYOUT:
        return "copy"
    return "XLA op"
