"""A calibration's figures as one typed value (:class:`CalibrationFigures`): what the calibration kernels measured,
how, and when; the JSON object a cache file holds (:meth:`~CalibrationFigures.to_dict`), and why a file's content
cannot be used (:func:`damage`). Pure: no files, no JAX.

The figures and their units: ``peaks`` FLOP/s per dtype, ``memory`` B/s (a donated stream), and where measured
``transcendental`` and ``integer`` (per second), ``first_touch`` (B/s of fresh pages mapped, with
``bytes_per_fault``), ``cache_memory`` (B/s in the last-level cache of ``cache_bytes``); ``references``: each
reference kernel's calibrated rate (``unmeasured``: why one has none); ``details`` says how each figure was measured
and ``spread`` how its runs spread; ``contention``: the share of the CPUs other processes used meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field, fields, replace
from typing import Any

__all__ = ["CalibrationFigures", "CONTENDED_ABOVE", "OPTIONAL_FIGURES", "damage"]

# A calibration during which other processes (or other VMs, as steal time) used more than this share of the
# CPUs is contended: a busy-loop neighbour on a 2-core VM shows as 34%, a quiet machine as 0-2%.
CONTENDED_ABOVE = 0.1
# Figures a calibration measures where it can (each with its entry in ``details``).
OPTIONAL_FIGURES = ("transcendental", "integer", "first_touch", "cache_memory")


@dataclass(frozen=True)
class CalibrationFigures:
    """What one calibration measured on this machine (see the module's docstring for each figure)."""

    peaks: Mapping[str, float]
    memory: float
    details: Mapping[str, str]
    date: str = ""  # ISO 8601 UTC, set when the calibration is taken in (see :meth:`dated`)
    _: KW_ONLY  # fields from the fifth on are given by keyword
    spread: Mapping[str, float] = field(default_factory=dict)
    references: Mapping[str, float] = field(default_factory=dict)
    unmeasured: Mapping[str, str] = field(default_factory=dict)
    contention: float | None = None
    transcendental: float | None = None
    integer: float | None = None
    first_touch: float | None = None
    bytes_per_fault: float | None = None
    cache_memory: float | None = None
    cache_bytes: int | None = None

    @property
    def contended(self) -> bool:
        """Measured while other processes used more than :data:`CONTENDED_ABOVE` of the CPUs."""
        return self.contention is not None and self.contention > CONTENDED_ABOVE

    def dated(self, date: str) -> CalibrationFigures:
        return replace(self, date=date)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of a cache file (less its key): figures not measured are left out."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or (f.name == "date" and not value):
                continue
            out[f.name] = dict(value) if isinstance(value, Mapping) else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CalibrationFigures:
        """From a cache file's object (one :func:`damage` passed; its ``key`` and unknown entries are ignored)."""
        def number(name: str) -> float | None:
            value = data.get(name)
            return float(value) if value is not None else None

        def table(name: str, kind: type) -> dict[str, Any]:
            return {str(k): kind(v) for k, v in (data.get(name) or {}).items()}

        bytes_ = data.get("cache_bytes")
        return cls(table("peaks", float), float(data["memory"]), table("details", str),
                   date=str(data.get("date") or ""), spread=table("spread", float),
                   references=table("references", float),
                   unmeasured=table("unmeasured", str), contention=number("contention"),
                   transcendental=number("transcendental"), integer=number("integer"),
                   first_touch=number("first_touch"), bytes_per_fault=number("bytes_per_fault"),
                   cache_memory=number("cache_memory"), cache_bytes=int(bytes_) if bytes_ is not None else None)


def damage(raw: bytes, key: Mapping[str, Any]) -> str | None:
    """Why a calibration cache file's content cannot be used for ``key`` (None when it can)."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return f"not UTF-8 JSON: {exc}"
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    if data.get("key") != dict(key):
        return "its key is not this machine's"
    peaks, details = data.get("peaks"), data.get("details")
    if not isinstance(peaks, dict) or not peaks:
        return "no peaks"
    if not isinstance(details, dict):
        return "no details"
    figures = {**{f"peaks.{k}": v for k, v in peaks.items()}, "memory": data.get("memory"),
               **{k: data[k] for k in OPTIONAL_FIGURES if data.get(k)}}
    for name, value in figures.items():
        if not _positive(value):
            return f"{name} is {value!r}, not a positive number"
        if name.removeprefix("peaks.") not in details:
            return f"no details for {name}"
    if (beyond := _beyond_any_cpu(figures, key)) is not None:
        return beyond
    needed = {"bytes_per_fault": "first_touch", "cache_bytes": "cache_memory"}
    for name, figure in needed.items():
        if data.get(figure) and not _positive(data.get(name)):
            return f"{name} is {data.get(name)!r}, not a positive number"
    if not isinstance(data.get("date"), str):
        return "no date"
    if not all(isinstance(data.get(name, {}), dict) for name in ("references", "spread", "unmeasured")) \
            or not _number(data.get("contention", 0.0)):
        return "references, spread, unmeasured or contention of the wrong type"
    return None


# What no CPU core reaches, with room to spare: 6 GHz x 2,048 FLOP a cycle (an Intel AMX tile unit's bf16 rate is
# 1,024; AVX-512 with two FMA units, 64 in f32), and no machine's memory: 20 TB/s (HBM on a CPU package: about 1 TB/s).
_CORE_FLOPS_MAX = 6e9 * 2048
_MEMORY_MAX = 20e12


def _beyond_any_cpu(figures: Mapping[str, Any], key: Mapping[str, Any]) -> str | None:
    """Why a CPU calibration's figure cannot be a measurement (above what its cores or any memory could do), else
    None: a hand-edited or foreign file (a provisional one claiming 1,000 PFLOP/s was used before)."""
    if key.get("platform") != "cpu":
        return None
    given = key.get("cores")
    cores: int = given if isinstance(given, int) and given > 0 else 1024
    limits = {"memory": _MEMORY_MAX, "cache_memory": 10 * _MEMORY_MAX, "transcendental": cores * _CORE_FLOPS_MAX,
              "integer": cores * _CORE_FLOPS_MAX}
    for name, value in figures.items():
        # int8 runs at twice the bf16 rate where a core has units for both (AMX: 2,048 int8 ops a cycle)
        limit = cores * _CORE_FLOPS_MAX * (2 if name == "peaks.int8" else 1) if name.startswith("peaks.") \
            else limits.get(name)
        if limit is not None and value > limit:
            return (f"{name} is {value:.3g}, above what {cores} CPU core(s) could do ({limit:.3g}): not a "
                    f"measurement")
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _positive(value: Any) -> bool:
    return _number(value) and 0 < value < float("inf")
