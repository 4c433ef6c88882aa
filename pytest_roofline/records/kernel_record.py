"""The record kept for each kernel of a run: :class:`KernelRecord` (the test, the label, the threshold and its
origin, the verdict and what qualified it, the measurement as
:class:`~pytest_roofline.result.recorded_result.RecordedResult`), and :class:`Unmeasured` for a kernel that could not
be measured. Typed and frozen from the plugin to the text, JSON, HTML and history readers; JSON only at the file
boundary (:meth:`KernelRecord.to_dict`, :meth:`KernelRecord.from_dict`). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any

from ..analysis.model.exposed import ExposedCheck
from ..analysis.program.memory import MemoryCheck
from ..analysis.runs.time_spent import TimeSpent
from ..analysis.verdict.census import CensusCheck
from ..base.kinds import EXPECTED_BOUNDS, MODELS, VERDICTS, ExpectedBound, Model, Verdict, choose
from ..result.recorded_result import RecordedResult
from .series_judgement import BaselineCheck, NoBaseline, SeriesKey, baseline_from_dict

__all__ = ["KernelRecord", "Artifacts", "Unmeasured", "LockWaited"]


@dataclass(frozen=True)
class Artifacts:
    """Where a kernel's trace and HLO were saved (a path is "" where nothing was written)."""

    trace_dir: str
    hlo: str = ""
    perfetto: str = ""
    xplane: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"trace_dir": self.trace_dir, "hlo": self.hlo, "perfetto": self.perfetto, "xplane": self.xplane}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Artifacts | None:
        """The artifacts of a record (None when it has none)."""
        if not data.get("trace_dir"):
            return None
        return cls(*(str(data.get(key) or "") for key in ("trace_dir", "hlo", "perfetto", "xplane")))


@dataclass(frozen=True)
class KernelRecord:
    """One measured kernel of a run, as every report shows it."""

    nodeid: str
    label: str
    result: RecordedResult
    verdict: Verdict
    threshold: float | None = None
    threshold_origin: str = ""
    _: KW_ONLY  # fields from the seventh on are given by keyword
    model: Model = "program"
    expected_bound: ExpectedBound | None = None
    first_utilization: float | None = None  # the first of two measurements, when a failure was measured again
    warn_only: bool = False
    baseline: BaselineCheck | NoBaseline | None = None
    max_memory: MemoryCheck | None = None
    artifacts: Artifacts | None = None
    max_drop: float | None = None  # the floor of its baseline gates (marker, YAML, option), where one was set
    max_drop_origin: str = ""
    # Which key of a per-device mapping (min={"cpu": ..., "gpu": ...}) gave the threshold and the bound ("" for one
    # value for every device), and why a mapping gave no threshold on this device (then measured, not judged).
    threshold_key: str = ""
    bound_key: str = ""
    not_judged: str = ""
    time_spent: TimeSpent | None = None  # where the wall time of measuring it went, phase by phase
    max_ops: CensusCheck | None = None  # its census against max_ops=, where one was set
    max_exposed: ExposedCheck | None = None  # its exposed communication against max_exposed=, where one was set

    @property
    def kernel(self) -> str:
        return f"{self.nodeid} [{self.label}]"

    @property
    def utilization(self) -> float:
        """The utilization the record's threshold was checked against (its model's)."""
        return self.result.utilization_for(self.model)

    @property
    def key(self) -> SeriesKey:
        """The series this record belongs to in a history."""
        return series_key(self.nodeid, self.label, self.result, self.model)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (a report's ``results`` entry)."""
        out: dict[str, Any] = {
            "nodeid": self.nodeid, "label": self.label, "threshold": self.threshold,
            "threshold_origin": self.threshold_origin, "verdict": self.verdict, "expected_bound": self.expected_bound,
            "first_utilization": self.first_utilization, "warn_only": self.warn_only, "model": self.model,
            "result": self.result.to_dict(),
        }
        if self.baseline is not None:
            out["baseline"] = self.baseline.to_dict()
        if self.max_memory is not None:
            out["max_memory"] = self.max_memory.to_dict()
        if self.artifacts is not None:
            out.update(self.artifacts.to_dict())
        if self.max_drop is not None:
            out["max_drop"] = {"value": self.max_drop, "origin": self.max_drop_origin}
        for key in ("threshold_key", "bound_key", "not_judged"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.time_spent is not None:
            out["time_spent"] = self.time_spent.to_dict()
        if self.max_ops is not None:
            out["max_ops"] = self.max_ops.to_dict()
        if self.max_exposed is not None:
            out["max_exposed"] = self.max_exposed.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KernelRecord:
        """Read :meth:`to_dict`'s form back; a missing or wrong field raises ``KeyError``, ``TypeError`` or
        ``ValueError`` naming it."""
        result = RecordedResult.from_dict(data["result"])
        model = _choice("model", data.get("model") or "program", MODELS)
        threshold, first = data.get("threshold"), data.get("first_utilization")
        expected = data.get("expected_bound")
        memory = data.get("max_memory")
        nodeid, label = str(data["nodeid"]), str(data["label"])
        drop = data.get("max_drop") or {}
        return cls(
            nodeid, label, result, _choice("verdict", data["verdict"], VERDICTS),
            float(threshold) if threshold is not None else None, str(data.get("threshold_origin") or ""), model=model,
            expected_bound=_choice("expected_bound", expected, EXPECTED_BOUNDS) if expected else None,
            first_utilization=float(first) if first is not None else None, warn_only=bool(data.get("warn_only", False)),
            baseline=baseline_from_dict(data.get("baseline"), series_key(nodeid, label, result, model)),
            max_memory=MemoryCheck.from_dict(memory) if memory else None, artifacts=Artifacts.from_dict(data),
            max_drop=float(drop["value"]) if drop else None,
            max_drop_origin=str(drop.get("origin") or "") if drop else "",
            threshold_key=str(data.get("threshold_key") or ""), bound_key=str(data.get("bound_key") or ""),
            not_judged=str(data.get("not_judged") or ""),
            time_spent=TimeSpent.from_dict(data["time_spent"]) if data.get("time_spent") else None,
            max_ops=CensusCheck.from_dict(data["max_ops"]) if data.get("max_ops") else None,
            max_exposed=ExposedCheck.from_dict(data["max_exposed"]) if data.get("max_exposed") else None)


def series_key(nodeid: str, label: str, result: RecordedResult, model: Model) -> SeriesKey:
    """The series of a kernel measured with ``result`` on ``model``."""
    return SeriesKey(nodeid, label, result.hardware.name, result.ceilings, model, result.versions.get("jax") or "?")


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> Any:
    return choose(value, choices, f"{name} {value!r}")


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


@dataclass(frozen=True)
class LockWaited:
    """A measurement that waited for the device lock (another process's measurement, or another xdist worker's
    test): that time is in the test's own duration as pytest counts it, and in no figure of the kernel's."""

    kernel: str  # "nodeid::label"
    seconds: float
    holder: str = ""  # who held it, as the lock file says ("process 123 (pytest ...)"), where known

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "seconds": self.seconds, "holder": self.holder}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LockWaited:
        return cls(str(data["kernel"]), float(data["seconds"]), str(data.get("holder") or ""))

