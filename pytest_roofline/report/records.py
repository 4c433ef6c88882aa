"""The record kept for each measured kernel: the test, the label, the threshold and its origin, the verdict,
and the result's JSON. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..kinds import ExpectedBound, Model, Verdict
from ..result import Result

__all__ = ["make_record", "Unmeasured"]


@dataclass(frozen=True)
class Unmeasured:
    """A kernel that could not be measured, and why: listed in the summary, the JSON (``unmeasured``) and the
    HTML beside the measured ones."""

    nodeid: str
    label: str
    error: str

    def to_dict(self) -> dict[str, str]:
        return {"nodeid": self.nodeid, "label": self.label, "error": self.error}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Unmeasured:
        return cls(str(data["nodeid"]), str(data["label"]), str(data["error"]))


def make_record(nodeid: str, label: str, result: Result, threshold: float | None, threshold_origin: str,
                verdict: Verdict, expected_bound: ExpectedBound | None = None,
                first_utilization: float | None = None, warn_only: bool = False,
                model: Model = "program") -> dict[str, Any]:
    return {
        "nodeid": nodeid,
        "label": label,
        "threshold": threshold,
        "threshold_origin": threshold_origin,
        "verdict": verdict,
        "expected_bound": expected_bound,
        "first_utilization": first_utilization,
        "warn_only": warn_only,
        "model": model,
        "result": result.to_dict(),
    }
