"""Facts of a compiled program that a result carries: its module name, device, compile time, versions. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProgramInfo"]


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

    @property
    def static_text(self) -> str:
        """The static arguments in one sentence ("" where there were none)."""
        if not self.static:
            return ""
        return f"static (not arrays, compiled in): {'; '.join(self.static)}"

    def to_dict(self) -> dict[str, Any]:
        return {"module_name": self.module_name, "device_kind": self.device_kind,
                "compile_time_s": self.compile_time_s, "compile_cached": self.compile_cached,
                "versions": dict(self.versions), "static_arguments": list(self.static)}
