"""The third roofline: the memory a compiled program needs, and the ``max_memory=`` limit it is held to. Pure.

The compiler's memory analysis (``compiled.memory_analysis()``) states, per device, the bytes of the arguments,
the outputs, the temporaries and the part of the outputs that alias (reuse) donated arguments. The program
needs ``arguments + outputs + temporaries - aliased`` while it runs: that is its peak. (XLA's own
``peak_memory_in_bytes`` is kept beside it; on XLA:CPU it leaves temporaries out, so it is not the figure the
limit is checked against.) Where the device's allocator reports its high-water mark (GPUs, TPUs), the peak it
reached during the runs is kept too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any

from ...base.units import format_fraction, format_quantity
from ...hardware.spec import Ceiling
from .hlo_reader import HloModule

__all__ = ["MemoryFootprint", "working_set", "footprint_from_stats", "device_peak", "MemoryLimit", "parse_max_memory",
           "MemoryCheck", "check_memory", "format_bytes"]


def format_bytes(n: float) -> str:
    return format_quantity(n, "B")


@dataclass(frozen=True)
class MemoryFootprint:
    """What one device holds while the program runs, in bytes, by part."""

    arguments: int
    outputs: int
    temporaries: int
    aliased: int  # outputs that reuse donated argument buffers: counted once
    generated_code: int = 0
    host: int = 0  # host-offloaded arguments + outputs + temporaries - aliased (memory kinds), not on the device
    _: KW_ONLY  # fields from the seventh on are given by keyword
    compiler_peak: int | None = None  # XLA's peak_memory_in_bytes, as reported
    device_peak: int | None = None  # the device allocator's high-water mark after the runs
    device_peak_note: str = ""  # how that figure was read, or why there is none

    @property
    def peak_bytes(self) -> int:
        return self.arguments + self.outputs + self.temporaries - self.aliased

    def breakdown(self) -> str:
        text = (f"arguments {format_bytes(self.arguments)} + outputs {format_bytes(self.outputs)} + temporaries "
                f"{format_bytes(self.temporaries)} - aliased {format_bytes(self.aliased)}")
        if self.host:
            text += f"; {format_bytes(self.host)} more on the host"
        return text

    def describe(self) -> str:
        text = f"{format_bytes(self.peak_bytes)} ({self.breakdown()})"
        if self.device_peak is not None:
            text += f"; device peak {format_bytes(self.device_peak)} ({self.device_peak_note})"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"peak_bytes": self.peak_bytes, "arguments_bytes": self.arguments, "outputs_bytes": self.outputs,
                "temporaries_bytes": self.temporaries, "aliased_bytes": self.aliased,
                "generated_code_bytes": self.generated_code, "host_bytes": self.host,
                "compiler_peak_bytes": self.compiler_peak, "device_peak_bytes": self.device_peak,
                "device_peak_note": self.device_peak_note, "breakdown": self.breakdown()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryFootprint:
        def maybe(key: str) -> int | None:
            value = data.get(key)
            return int(value) if value is not None else None

        return cls(int(data["arguments_bytes"]), int(data["outputs_bytes"]), int(data["temporaries_bytes"]),
                   int(data["aliased_bytes"]), int(data.get("generated_code_bytes") or 0),
                   int(data.get("host_bytes") or 0), compiler_peak=maybe("compiler_peak_bytes"),
                   device_peak=maybe("device_peak_bytes"),
                   device_peak_note=str(data.get("device_peak_note") or ""))


def _int(stats: Any, name: str) -> int:
    value = getattr(stats, name, 0)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def footprint_from_stats(stats: Any) -> MemoryFootprint:
    """Read a ``CompiledMemoryStats`` (or anything with its attribute names)."""
    host = (_int(stats, "host_argument_size_in_bytes") + _int(stats, "host_output_size_in_bytes")
            + _int(stats, "host_temp_size_in_bytes") - _int(stats, "host_alias_size_in_bytes"))
    peak = getattr(stats, "peak_memory_in_bytes", None)
    return MemoryFootprint(
        arguments=_int(stats, "argument_size_in_bytes"), outputs=_int(stats, "output_size_in_bytes"),
        temporaries=_int(stats, "temp_size_in_bytes"), aliased=_int(stats, "alias_size_in_bytes"),
        generated_code=_int(stats, "generated_code_size_in_bytes"), host=max(host, 0),
        compiler_peak=int(peak) if isinstance(peak, int) and peak > 0 else None)


def device_peak(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                platform: str) -> tuple[int | None, str]:
    """The allocator's high-water mark after the runs (``device.memory_stats()['peak_bytes_in_use']``) and
    what it means: it is the process's maximum since start, so it is the runs' own peak only if they raised it."""
    if not after or "peak_bytes_in_use" not in after:
        return None, f"the {platform.upper()} device reports no allocator statistics"
    peak = int(after["peak_bytes_in_use"])
    if before is not None and int(before.get("peak_bytes_in_use", 0)) < peak:
        return peak, "allocator high-water mark, set during the runs"
    return peak, "allocator high-water mark of the process, not raised by the runs: their peak is at most this"


_UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_TEXT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(%|[a-zA-Z]*)\s*$")


@dataclass(frozen=True)
class MemoryLimit:
    """``max_memory=``: bytes, or a fraction of the device's memory capacity."""

    value: float
    fraction: bool
    origin: str

    def describe(self) -> str:
        return (f"{format_fraction(self.value)} of the device's memory" if self.fraction
                else format_bytes(self.value))


def parse_max_memory(raw: Any, where: str, origin: str, error: type[Exception] = ValueError) -> MemoryLimit:
    """An int (bytes), a float in (0, 1] (a fraction of the device's memory) or above 1 (bytes), or a string:
    ``"512 MiB"``, ``"2GB"``, ``"40%"``."""
    problem = (f"{where}: max_memory must be bytes (an int, or a string like '512 MiB' or '2 GB') or a fraction "
               f"of the device's memory (a float in (0, 1], or a string like '40%'), got {raw!r}")
    if isinstance(raw, bool):
        raise error(problem)
    if isinstance(raw, int):
        if raw < 1:
            raise error(problem)
        return MemoryLimit(float(raw), False, origin)
    if isinstance(raw, float):
        if not raw > 0 or raw == float("inf"):
            raise error(problem)
        return MemoryLimit(raw, raw <= 1, origin)
    if isinstance(raw, str):
        m = _TEXT.match(raw)
        unit = m.group(2).lower() if m else ""
        if m and (unit == "%" or unit in _UNITS):
            number = float(m.group(1))
            if unit == "%" and 0 < number <= 100:
                return MemoryLimit(number / 100, True, origin)
            if unit != "%" and number * _UNITS[unit] >= 1:
                return MemoryLimit(number * _UNITS[unit], False, origin)
    raise error(problem)


@dataclass(frozen=True)
class MemoryCheck:
    """A footprint against a limit: the limit in bytes (None: it could not be resolved) and the verdict."""

    limit: MemoryLimit
    limit_bytes: float | None
    peak_bytes: int
    reason: str  # why it fails ("" when it passes)

    @property
    def ok(self) -> bool:
        return not self.reason

    def to_dict(self) -> dict[str, Any]:
        return {"given": self.limit.value, "fraction": self.limit.fraction, "origin": self.limit.origin,
                "limit_bytes": self.limit_bytes, "peak_bytes": self.peak_bytes, "ok": self.ok,
                "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryCheck:
        limit = data.get("limit_bytes")
        return cls(MemoryLimit(float(data["given"]), bool(data["fraction"]), str(data["origin"])),
                   float(limit) if limit is not None else None, int(data["peak_bytes"]), str(data["reason"]))


def check_memory(footprint: MemoryFootprint | None, limit: MemoryLimit, capacity: Ceiling | None,
                 device: str) -> MemoryCheck:
    """Does the program's peak fit under ``limit``? Fractions are of ``capacity`` (the hardware entry's)."""
    if footprint is None:
        return MemoryCheck(limit, None, 0, "max_memory cannot be checked: the compiler gave no memory analysis "
                                           "for this program")
    peak = footprint.peak_bytes
    limit_bytes = limit.value
    of = ""
    if limit.fraction:
        if capacity is None:
            return MemoryCheck(limit, None, peak, (
                f"max_memory={limit.value:g} is a fraction of the device's memory, but {device} has no memory "
                f"capacity in the hardware table: add memory_capacity_gb to its entry (see docs/hardware.md) or "
                f"give max_memory in bytes"))
        limit_bytes = limit.value * capacity.value
        of = f" ({format_fraction(limit.value)} of {format_bytes(capacity.value)}, {capacity.describe()})"
    if peak <= limit_bytes:
        return MemoryCheck(limit, limit_bytes, peak, "")
    return MemoryCheck(limit, limit_bytes, peak, (
        f"needs {format_bytes(peak)} of device memory, more than max_memory {format_bytes(limit_bytes)}{of} "
        f"({limit.origin}): {footprint.breakdown()}"))


def working_set(module: HloModule, footprint: MemoryFootprint | None) -> float:
    """The bytes of a program's buffers: its memory analysis where there is one, else its parameters and result."""
    if footprint is not None:
        return float(footprint.peak_bytes)
    root = module.entry.root
    return float(sum(i.shape.bytes for i in module.entry.instructions if i.opcode == "parameter") + root.shape.bytes)
