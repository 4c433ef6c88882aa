"""One hardware figure and where it came from (:class:`Ceiling`), and the figures of a device that sizing and
peak selection read (:class:`DeviceFigures`, which :class:`~.spec.HardwareSpec` has). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Ceiling", "DeviceFigures"]


@dataclass(frozen=True)
class Ceiling:
    """One hardware figure and where it came from.

    ``origin`` is "datasheet", "calibration", "override" or "theoretical"; ``source`` says which
    document, measurement or file; ``date`` when it was read or measured.
    """

    value: float
    origin: str
    source: str
    date: str

    def describe(self) -> str:
        return f"{self.origin}: {self.source} ({self.date})"

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "origin": self.origin, "source": self.source, "date": self.date}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ceiling:
        return cls(float(data["value"]), str(data["origin"]), str(data["source"]), str(data.get("date") or ""))

    @classmethod
    def maybe(cls, data: Mapping[str, Any] | None) -> Ceiling | None:
        """The ceiling of a JSON field that may be null."""
        return cls.from_dict(data) if data else None


class DeviceFigures(Protocol):
    """What peak selection and sizing read of a device."""

    @property
    def name(self) -> str: ...

    @property
    def platform(self) -> str: ...

    @property
    def peaks(self) -> Mapping[str, Ceiling]: ...

    @property
    def memory_bandwidth(self) -> Ceiling: ...
