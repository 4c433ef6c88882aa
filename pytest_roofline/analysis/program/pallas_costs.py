"""Kernels XLA cannot see into: Pallas calls and their ``cost_estimate``. Pure: reads parsed HLO and plain data.

A ``pallas_call(..., cost_estimate=pl.CostEstimate(flops=, transcendentals=, bytes_accessed=))`` is the kernel
author's statement of its work. Where it travels:

* **TPU (Mosaic)**: into the ``tpu_custom_call``'s ``backend_config`` (``custom_call_config.cost_estimate``),
  so it can be read from the HLO alone (a dump, a profile's HLO, a program lowered for TPU on any machine).
* **GPU (Triton, Mosaic GPU)**: jax 0.10.2 drops it when lowering (the Triton and Mosaic GPU lowerings
  delete the argument), so the GPU custom call (``__gpu$xla.gpu.triton``, ``triton_kernel_call``,
  ``mosaic_gpu_v2``) never carries it. It is read from the traced program (the ``pallas_call`` equation's
  ``cost_estimate`` parameter) and matched to the custom call by the kernel's name (Triton states it) or,
  when the program's Pallas kernels all state the same estimate, to each of them.
* **Interpret mode** (CPU): no custom call at all; the estimate comes from the traced program alone.

A Pallas kernel without an estimate is named in the result's uncounted work with how to give one, never a
silent zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

from .hlo_reader import HloModule, Instruction

__all__ = ["PALLAS_TARGETS", "KernelEstimate", "TracedKernel", "parse_cost_estimate", "estimate_in_config",
           "pallas_backend", "kernel_name", "assign_estimates", "PALLAS_REMEDY"]

# Custom-call targets Pallas lowers to, and the backend each is.
PALLAS_TARGETS = {
    "tpu_custom_call": "TPU Mosaic",
    "__gpu$xla.gpu.triton": "GPU Triton",
    "triton_kernel_call": "GPU Triton",
    "triton_kernel_call_ffi": "GPU Triton",
    "mosaic_gpu": "Mosaic GPU",
    "mosaic_gpu_v2": "Mosaic GPU",
}
PALLAS_REMEDY = ("give the Pallas kernel cost_estimate=pl.CostEstimate(flops=..., transcendentals=..., "
                 "bytes_accessed=...), or flops=/bytes= to the test")


@dataclass(frozen=True)
class KernelEstimate:
    """A kernel's work as its author stated it."""

    flops: float
    transcendentals: float
    bytes_accessed: float
    # Whether the FLOPs are matrix work (MXU / tensor cores): from the kernel's body where it is known (a dot in
    # it), else assumed, so that the FLOPs meet the fast peak (a ceiling too fast understates, never flatters).
    matrix: bool = True
    # "cost_estimate": stated by its author; "body": counted by pytest-roofline from its jaxpr and grid, with
    # ``lower_bound`` saying which parts may be more
    source: str = "cost_estimate"
    lower_bound: tuple[str, ...] = ()

    @property
    def numbers(self) -> tuple[float, float, float]:
        return (self.flops, self.transcendentals, self.bytes_accessed)

    def to_dict(self) -> dict[str, Any]:
        return {"flops": self.flops, "transcendentals": self.transcendentals, "bytes_accessed": self.bytes_accessed,
                "matrix": self.matrix}


@dataclass(frozen=True)
class TracedKernel:
    """A ``pallas_call`` equation of the traced program (read by the JAX layer)."""

    name: str  # the kernel function's name
    estimate: KernelEstimate | None
    interpret: bool  # run by the Pallas interpreter (no custom call in the compiled program)
    times: float = 1.0  # how often it runs per program run (scan lengths multiplied)
    where: str = ""  # "" at the top level, else the loop or branch it sits in with an unknown count
    dtypes: tuple[str, ...] = ()  # its operands' element types, HLO spelling (f32, bf16, s8 ...)
    _: KW_ONLY  # fields from the seventh on are given by keyword
    io_bytes: float = 0.0  # bytes of its operands and results


def parse_cost_estimate(raw: Any, matrix: bool = True) -> KernelEstimate | None:
    """A cost estimate from a mapping (``backend_config``) or an object with the fields (``pl.CostEstimate``);
    None when it is absent or not a set of non-negative numbers."""
    if raw is None:
        return None
    get = raw.get if isinstance(raw, Mapping) else (lambda key, default=None: getattr(raw, key, default))
    values = []
    for key in ("flops", "transcendentals", "bytes_accessed"):
        value = get(key, 0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            return None
        values.append(float(value))
    return KernelEstimate(values[0], values[1], values[2], matrix)


def estimate_in_config(inst: Instruction) -> KernelEstimate | None:
    """The cost estimate a custom call carries in its backend_config (Mosaic TPU: custom_call_config)."""
    config = inst.backend_config
    inner = config.get("custom_call_config")
    raw = inner.get("cost_estimate") if isinstance(inner, Mapping) else None
    return parse_cost_estimate(raw if raw is not None else config.get("cost_estimate"))


def pallas_backend(target: str) -> str | None:
    return PALLAS_TARGETS.get(target)


def kernel_name(inst: Instruction) -> str:
    """The kernel's name where the custom call states it (Triton's backend_config ``name``)."""
    name = inst.backend_config.get("name") or inst.attrs.get("kernel_name", "").strip('"')
    return str(name) if name else ""


def _sanitized(name: str) -> str:
    """As ``mlir.sanitize_name`` spells a kernel name in Triton's backend_config."""
    return "".join(c if c.isalnum() or c in "_." else "_" for c in name)


def assign_estimates(module: HloModule, kernels: Sequence[TracedKernel]) -> dict[str, KernelEstimate]:
    """Estimates from the traced program for the compiled Pallas custom calls, by HLO instruction name: by kernel
    name where the call states one, else the one estimate all compiled kernels share. A call that cannot be told
    apart gets none (and stays uncounted unless it carries its own, as TPU calls do)."""
    compiled = [(k.name, k.estimate) for k in kernels if not k.interpret and k.estimate is not None]
    if not compiled:
        return {}
    distinct = {est for _, est in compiled}
    shared = next(iter(distinct)) if len(distinct) == 1 and len(compiled) == len(
        [k for k in kernels if not k.interpret]) else None
    out: dict[str, KernelEstimate] = {}
    for comp in module.computations.values():
        for inst in comp.instructions:
            target = inst.attrs.get("custom_call_target", "").strip('"')
            if inst.opcode != "custom-call" or pallas_backend(target) is None:
                continue
            name = kernel_name(inst)
            named = {est for kname, est in compiled if name and _sanitized(kname) == name}
            if len(named) == 1:
                out[inst.name] = next(iter(named))
            elif shared is not None:
                out[inst.name] = shared
    return out

