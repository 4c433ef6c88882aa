"""The immutable result of one measurement: its figures (:class:`~.figures.Measured`), its JSON form (the record's,
:mod:`.recorded_result`) and its paragraph in words (:mod:`.text`). Pure: no JAX."""

from __future__ import annotations

from typing import Any

from ..analysis.model.work_shares import CeilingUse
from ..analysis.program.info import ProgramInfo
from .figures import Measured
from .recorded_result import RecordedResult
from .text import describe, first_touch_text

__all__ = ["ProgramInfo", "Result", "CeilingUse"]


class Result(Measured):
    """One measurement: the hardware and the ceilings each share of the work met, the work counted, the roofline
    estimate, the timed runs, the program's facts and the per-op model (see :class:`~.figures.Measured`)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: every figure a report records (:class:`~.recorded_result.RecordedResult` declares them)."""
        return RecordedResult.of(self).to_dict()

    @property
    def first_touch_text(self) -> str:
        """Faults expected and counted, the split of the time, both utilizations ("": no first-touch term)."""
        return first_touch_text(self)

    def __str__(self) -> str:
        return describe(self)
