"""What a record is judged by over time: the series it belongs to (:class:`SeriesKey`) and its judgement
against a baseline (:class:`BaselineCheck`, or :class:`NoBaseline` saying why there is none), each with its
JSON form and read back from it. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..analysis.model.contention import waited_text
from ..analysis.verdict.regressions import Gate, GateState, Z

__all__ = ["SeriesKey", "BaselineCheck", "NoBaseline", "baseline_from_dict", "CheckState", "contention_text"]

CheckState = GateState | Literal["contended"]
"""A kernel against its baseline: the gate's state, or "contended" where a drop was measured while other processes
held the CPUs (its threads waited): that cannot be judged."""


def contention_text(contended: bool, waiting: float | None, side: str) -> str:
    """Why a record's figure cannot judge a drop: it was measured while contended (``side``: "current" or
    "baseline"); "" where it was not."""
    if not contended or waiting is None:
        return ""
    return f"the {side} run was measured while contended ({waited_text(waiting)})"


@dataclass(frozen=True, order=True)
class SeriesKey:
    """One kernel on one hardware entry, ceilings mode, model and JAX version: a change of any of them
    starts a new series, since utilizations across them are not the same measurement."""

    nodeid: str
    label: str
    hardware: str
    ceilings: str
    model: str
    jax: str

    @property
    def kernel(self) -> str:
        return f"{self.nodeid} [{self.label}]"

    @property
    def context(self) -> str:
        return f"{self.hardware} [{self.ceilings}], model {self.model}, jax {self.jax}"


@dataclass(frozen=True)
class BaselineCheck:
    """A kernel's current utilization against its baseline."""

    key: SeriesKey
    current: float
    gate: Gate
    origin: str  # where the baseline came from, for the message
    floor_origin: str
    contended: str = ""  # why a drop cannot be judged: a run measured while other processes held the CPUs

    @property
    def baseline(self) -> float:
        return self.gate.baseline

    @property
    def drop(self) -> float:
        return self.gate.drop(self.current)

    @property
    def regressed(self) -> bool:
        return self.state == "regression"

    @property
    def state(self) -> CheckState:
        """Regression, too noisy to judge, undecided, improved or ok
        (:meth:`~pytest_roofline.analysis.verdict.regressions.Gate.state`); contended where a run was measured while
        contended and the gate does not say ok or improved."""
        state = self.gate.state(self.current)
        return "contended" if self.contended and state in ("regression", "too noisy", "undecided") else state

    @property
    def unjudged(self) -> bool:
        """Neither a regression nor a pass: the gate cannot fire, the noise hides a drop beyond its floor, or a run
        was measured while contended."""
        return self.state in ("too noisy", "undecided", "contended")

    def with_contention(self, *why: str) -> BaselineCheck:
        """This check where the runs compared were measured while contended (``why``: "" for a quiet one)."""
        said = "; ".join(w for w in why if w)
        return replace(self, contended=said) if said else self

    def to_dict(self) -> dict[str, Any]:
        """The record's ``baseline`` field."""
        gate = self.gate
        return {"baseline": gate.baseline, "current": self.current, "drop": self.drop, "regressed": self.regressed,
                "state": self.state,
                "allowed_drop": gate.allowed_drop, "noise": gate.noise, "runs": gate.runs, "floor": gate.floor,
                "z": gate.z, "floor_origin": self.floor_origin, "origin": self.origin, "message": self.message(),
                **({"contended": self.contended} if self.contended else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], key: SeriesKey) -> BaselineCheck:
        gate = Gate(float(data["baseline"]), int(data["runs"]), float(data["noise"]), float(data["allowed_drop"]),
                    float(data["floor"]), float(data.get("z", Z)))
        return cls(key, float(data["current"]), gate, str(data["origin"]), str(data["floor_origin"]),
                   str(data.get("contended") or ""))

    def message(self) -> str:
        change = f"dropped {self.drop:.1%}" if self.drop >= 0 else f"rose {-self.drop:.1%}"
        verdict = "beyond" if self.regressed else "within"
        text = (f"utilization {self.current:.1%} {change} from the baseline's {self.baseline:.1%} ({self.origin}), "
                f"{verdict} its {self.gate.describe()}; floor from {self.floor_origin}")
        if self.state == "contended":
            return f"cannot judge: {self.contended}: {text}"
        return f"{self.gate.state_text(self.current)}: {text}" if self.unjudged else text


@dataclass(frozen=True)
class NoBaseline:
    """Why a kernel has no baseline to be judged against: it is new, or its series key differs."""

    reason: str
    regressed: bool = False

    @property
    def new_kernel(self) -> bool:
        return self.reason.startswith("no baseline for this kernel")

    def message(self) -> str:
        return self.reason

    def to_dict(self) -> dict[str, Any]:
        return {"missing": self.reason}


def baseline_from_dict(data: Mapping[str, Any] | None, key: SeriesKey) -> BaselineCheck | NoBaseline | None:
    """A record's ``baseline`` field read back (None: the run had no baseline)."""
    if not data:
        return None
    if "missing" in data:
        return NoBaseline(str(data["missing"]))
    return BaselineCheck.from_dict(data, key)
