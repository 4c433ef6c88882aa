"""The per-op model cross-checked against the compiler: the sum over ops (loops counted once, as XLA does)
against ``cost_analysis()``. A mismatch is reported in the result, never hidden. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..program.counts import normalize_cost_analysis
from ..program.hlo_reader import HloModule, as_compiled
from ..program.xla_costs import computation_cost

__all__ = ["OpsCheck", "ops_check", "GATHER_BYTES"]


@dataclass(frozen=True)
class OpsCheck:
    """The sum over ops (loops counted once, as XLA does) against the compiler's cost analysis."""

    model: Mapping[str, float]
    compiler: Mapping[str, float]
    tolerance: float = 0.02
    mismatches: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def to_dict(self) -> dict[str, Any]:
        return {"model": dict(self.model), "compiler": dict(self.compiler), "tolerance": self.tolerance,
                "ok": self.ok, "mismatches": list(self.mismatches)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OpsCheck:
        return cls({str(k): float(v) for k, v in data["model"].items()},
                   {str(k): float(v) for k, v in data["compiler"].items()}, float(data["tolerance"]),
                   tuple(str(m) for m in data["mismatches"]))


# Why the per-op model reads fewer bytes than the compiler where a program gathers: said beside the mismatch.
GATHER_BYTES = "the compiler counts a gather's whole operand, the per-op model the rows it reads"


def ops_check(module: HloModule, raw_cost_analysis: Any, tolerance: float = 0.02) -> OpsCheck:
    """The sum over ops of ``module`` as the compiler counts it (loops once, conditionals at their costliest branch)
    against the compiler's analysis; a known cause of a difference is said beside it."""
    module = as_compiled(module)
    once = computation_cost(module, module.entry_name, multiply_loops=False)
    # XLA counts integer and boolean ops as FLOPs: so does the sum compared with it
    model = {"flops": once.flops + once.int_ops, "transcendentals": once.transcendentals, "bytes_accessed": once.bytes}
    if once.estimated:  # the compiler does not see a Pallas kernel's cost_estimate: nothing to compare with
        return OpsCheck(model, {}, tolerance, ())
    try:
        compiler = normalize_cost_analysis(raw_cost_analysis)
    except ValueError as exc:
        return OpsCheck(model, {}, tolerance, (f"no compiler analysis to compare with: {exc}",))
    mismatches = []
    for key, ours in model.items():
        theirs = compiler[key]
        scale = max(abs(theirs), abs(ours), 1.0)
        if abs(ours - theirs) / scale > tolerance:
            why = f" ({GATHER_BYTES})" if key == "bytes_accessed" and ours < theirs and _gathers(module) else ""
            mismatches.append(f"{key}: sum over ops {ours:.6g} vs compiler {theirs:.6g}{why}")
    return OpsCheck(model, compiler, tolerance, tuple(mismatches))




def _gathers(module: HloModule) -> bool:
    return any(i.opcode == "gather" for c in module.computations.values() for i in c.instructions)
