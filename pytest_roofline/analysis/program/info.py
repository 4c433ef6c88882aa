"""Facts of a compiled program that a result carries: its module name, device, compile time, versions, static
arguments, and the work its source asks for. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ...base.units import format_quantity

__all__ = ["ProgramInfo", "static_text", "SourceWork", "MORE_THAN_SOURCE", "more_than_source_text"]

# A compiled program that does more than this many times the FLOPs its source asks for is said to (a ragged dot
# run dense, a causal mask computed in full).
MORE_THAN_SOURCE = 1.5


def static_text(static: tuple[str, ...]) -> str:
    """The static arguments in one sentence ("" where there were none)."""
    return f"static (not arrays, compiled in): {'; '.join(static)}" if static else ""


@dataclass(frozen=True)
class ProgramInfo:
    """Facts of the compiled program: its HLO module name, the device it ran on, compile time (tracing, lowering
    and compiling; ``compile_cached``: XLA did not compile, the program came from JAX's in-memory cache because
    it was compiled earlier in the process), versions; the arguments that were static."""

    module_name: str
    device_kind: str
    compile_time_s: float
    versions: Mapping[str, str] = field(default_factory=dict)
    compile_cached: bool = False
    static: tuple[str, ...] = ()  # the arguments compiled into the program (not arrays), in words
    _: KW_ONLY  # fields from the seventh on are given by keyword
    fingerprint: str = ""  # the program, device, versions, flags and roofline settings hashed (measurement/fingerprint)

    @property
    def static_text(self) -> str:
        return static_text(self.static)


@dataclass(frozen=True)
class SourceWork:
    """The work the program as written asks for, counted from its jaxpr (dots, ragged dots and convolutions by their
    useful FLOPs, elementwise work and reductions; scans times their length); ``unknown``: why it cannot be
    compared with the compiled program ("" where it can: no while loop of unknown trip count, no Pallas kernel,
    every primitive counted)."""

    flops: float
    transcendentals: float = 0.0
    unknown: str = ""

    def factor(self, compiled_flops: float) -> float | None:
        """The compiled program's FLOPs over the source's (None where they cannot be compared)."""
        if self.unknown or self.flops <= 0:
            return None
        return compiled_flops / self.flops

    def to_dict(self) -> dict[str, Any]:
        return {"flops": self.flops, "transcendentals": self.transcendentals, "unknown": self.unknown}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SourceWork:
        return cls(float(data["flops"]), float(data.get("transcendentals") or 0.0), str(data.get("unknown") or ""))


def more_than_source_text(compiled_flops: float, source_flops: float) -> str:
    """"the compiled program does 8.0x the FLOPs the source asks for (8.62 GFLOP against 1.07 GFLOP)"."""
    return (f"the compiled program does {compiled_flops / source_flops:.1f}x the FLOPs the source asks for "
            f"({format_quantity(compiled_flops, 'FLOP')} against {format_quantity(source_flops, 'FLOP')})")
