"""The immutable result of one measurement, its JSON form and its one-line summary."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .hardware import Ceiling, HardwareSpec
from .model import IMPOSSIBLE_ABOVE, verdict
from .ops import OpRow, OpsCheck

MODELS = ("program", "ops")

__all__ = ["CeilingUse", "Result", "format_seconds", "format_quantity", "format_fraction"]


def format_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} us"
    return f"{s * 1e9:.3g} ns"


def format_fraction(x: float) -> str:
    """A threshold as a percentage with up to 3 significant digits: 0.9 -> 90%, 0.025 -> 2.5%."""
    return f"{x * 100:.3g}%"


def format_quantity(x: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


@dataclass(frozen=True)
class CeilingUse:
    """Which ceiling one share of the work met: ``work`` is "bf16 matrix FLOPs", "vector FLOPs", "bytes"."""

    work: str
    amount: float
    key: str
    ceiling: Ceiling
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"work": self.work, "amount": self.amount, "key": self.key, "ceiling": self.ceiling.to_dict(),
                "note": self.note}


@dataclass(frozen=True)
class Result:
    name: str
    hardware: HardwareSpec
    ceilings: str  # "datasheet" or "calibrated"
    ceilings_used: tuple[CeilingUse, ...]
    flops: float
    transcendentals: float
    bytes_accessed: float
    flops_source: str  # "compiler" or "user"
    bytes_source: str
    matrix_flops: Mapping[str, float]
    counts_lower_bound: bool
    loops: tuple[str, ...]
    intensity: float
    critical_intensity: float
    bound: str  # "compute", "memory" or "interconnect"
    compute_time_s: float
    memory_time_s: float
    roofline_time_s: float
    device_time_s: float  # median over runs
    per_run_s: tuple[float, ...]
    min_s: float
    spread: float  # (p75 - p25) / median of per_run_s
    runs: int
    timer: str  # "profiler" or "wallclock"
    timer_fallback_reason: str
    trace_method: str
    wall_min_s: float
    wall_per_run_s: tuple[float, ...]  # host wall clock around each run, in run order
    compile_time_s: float
    utilization: float
    module_name: str
    device_kind: str
    notes: tuple[str, ...] = ()
    versions: Mapping[str, str] = field(default_factory=dict)
    comms_time_s: float = 0.0  # collective bytes / interconnect bandwidth
    collective_bytes: float = 0.0
    # Per-op roofline: one row per executed op, the sum of their roofline times (a tighter bound for ops
    # that run one after another), the sum-over-ops check against the compiler, and hints.
    ops: tuple[OpRow, ...] = ()
    ops_roofline_time_s: float = 0.0
    ops_check: OpsCheck | None = None
    hints: tuple[str, ...] = ()
    hlo_text: str = field(default="", repr=False, compare=False)
    xspace: bytes = field(default=b"", repr=False, compare=False)
    exporter: Callable[[bytes, str], None] | None = field(default=None, repr=False, compare=False)

    @property
    def ops_utilization(self) -> float:
        """Sum of per-op roofline times / measured time."""
        return self.ops_roofline_time_s / self.device_time_s if self.device_time_s > 0 else 0.0

    def utilization_for(self, model: str = "program") -> float:
        """The utilization a threshold is checked against: "program" (one max() over the whole program,
        the default) or "ops" (the sum of per-op roofline times)."""
        if model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {model!r}")
        return self.utilization if model == "program" else self.ops_utilization

    def top_ops(self, count: int = 5) -> list[OpRow]:
        """The ops that lost the most time against their own roofline."""
        timed = [r for r in self.ops if r.measured_s]
        return sorted(timed, key=lambda r: -r.time_lost_s)[:count]

    @property
    def impossible(self) -> bool:
        """A utilization above 1.05 cannot happen: a peak is too low or a count too high."""
        return self.utilization > IMPOSSIBLE_ABOVE

    @property
    def suspect(self) -> str:
        """What to distrust when the utilization is impossible ("" otherwise)."""
        if not self.impossible:
            return ""
        if self.bound == "compute":
            peaks = ", ".join(f"{u.key} peak {format_quantity(u.ceiling.value, 'FLOP/s')} ({u.ceiling.describe()})"
                              for u in self.ceilings_used if not u.work.endswith("bytes"))
            return (f"the compute peak is too low or the FLOP count too high ({self.flops_source} count "
                    f"{format_quantity(self.flops, 'FLOP')}); peaks used: {peaks}")
        if self.bound == "interconnect" and self.hardware.interconnect_bandwidth is not None:
            link = self.hardware.interconnect_bandwidth
            return (f"the interconnect bandwidth {format_quantity(link.value, 'B/s')} ({link.describe()}) is too "
                    f"low or the collective byte count too high ({format_quantity(self.collective_bytes, 'B')}, "
                    f"ring model)")
        bw = self.hardware.memory_bandwidth
        return (f"the memory bandwidth {format_quantity(bw.value, 'B/s')} ({bw.describe()}) is too low or the "
                f"byte count too high ({self.bytes_source} count {format_quantity(self.bytes_accessed, 'B')}); "
                f"a working set that fits in cache runs faster than main memory")

    def verdict(self, threshold: float | None, model: str = "program") -> str:
        if self.impossible:  # the program-level bound is the loosest: above 1.05 there, a ceiling is wrong
            return "impossible"
        return verdict(self.utilization_for(model), threshold)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "hardware": self.hardware.to_dict(),
            "ceilings": self.ceilings,
            "ceilings_used": [u.to_dict() for u in self.ceilings_used],
            "device_kind": self.device_kind,
            "module_name": self.module_name,
            "flops": self.flops,
            "transcendentals": self.transcendentals,
            "bytes_accessed": self.bytes_accessed,
            "flops_source": self.flops_source,
            "bytes_source": self.bytes_source,
            "matrix_flops": dict(self.matrix_flops),
            "counts_lower_bound": self.counts_lower_bound,
            "loops": list(self.loops),
            "intensity": self.intensity,
            "critical_intensity": self.critical_intensity,
            "bound": self.bound,
            "compute_time_s": self.compute_time_s,
            "memory_time_s": self.memory_time_s,
            "comms_time_s": self.comms_time_s,
            "collective_bytes": self.collective_bytes,
            "roofline_time_s": self.roofline_time_s,
            "device_time_s": self.device_time_s,
            "per_run_s": list(self.per_run_s),
            "min_s": self.min_s,
            "spread": self.spread,
            "runs": self.runs,
            "timer": self.timer,
            "timer_fallback_reason": self.timer_fallback_reason,
            "trace_method": self.trace_method,
            "wall_min_s": self.wall_min_s,
            "wall_per_run_s": list(self.wall_per_run_s),
            "compile_time_s": self.compile_time_s,
            "utilization": self.utilization,
            "impossible": self.impossible,
            "suspect": self.suspect,
            "notes": list(self.notes),
            "versions": dict(self.versions),
            "ops_roofline_time_s": self.ops_roofline_time_s,
            "ops_utilization": self.ops_utilization,
            "ops_check": self.ops_check.to_dict() if self.ops_check else None,
            "hints": list(self.hints),
            "ops": [r.to_dict() for r in self.ops],
        }

    def __str__(self) -> str:
        timer = self.timer if not self.timer_fallback_reason else f"{self.timer}: {self.timer_fallback_reason}"
        flops = format_quantity(self.flops, "FLOP")
        if self.counts_lower_bound:
            flops = ">=" + flops
        text = (
            f"{self.name} on {self.hardware.name} [{self.ceilings}]: {self.bound}-bound, {flops}, "
            f"{format_quantity(self.bytes_accessed, 'B')}, intensity {self.intensity:.3g} "
            f"(critical {self.critical_intensity:.3g}) FLOP/B; roofline {format_seconds(self.roofline_time_s)}, "
            f"measured {format_seconds(self.device_time_s)} +/-{self.spread:.1%} over {self.runs} runs ({timer}); "
            f"utilization {self.utilization:.1%}"
        )
        if self.counts_lower_bound:
            text += " [counts are a lower bound: a while loop with unknown trip count was counted once]"
        if self.impossible:
            text += f" IMPOSSIBLE (> {IMPOSSIBLE_ABOVE:.0%}): suspect {self.suspect}"
        return text
