"""Series per kernel over a history, and a baseline to judge a new run against.

A baseline is a report (one value per kernel) or a history directory (per kernel, the complete runs'
values). A kernel's current utilization regresses when it lies below the baseline by more than the gate
of :mod:`.detect`: with three or more earlier runs the history's own noise widens it, over a floor of
:data:`~.detect.FLOOR`; with one report the noise is what the two measurements' 95% intervals show, over a
floor of :data:`SINGLE_RUN_FLOOR` (one run says nothing of how much nights differ). ``max_drop`` (marker,
YAML thresholds block, ``--roofline-max-drop``) replaces the floor. Pure but for reading files."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .detect import FLOOR, MIN_WINDOW, Gate, Z, gate, history_gate
from .reports import ReportError, Run, SeriesKey, load_history, load_run, record_utilization, series_key

__all__ = ["SINGLE_RUN_FLOOR", "Series", "build_series", "BaselineCheck", "NoBaseline", "Baseline", "interval_noise"]

SINGLE_RUN_FLOOR = 0.10  # asv's default threshold for a change between two runs
Z95 = 1.96  # a 95% interval spans +/- Z95 standard deviations (normal)


@dataclass(frozen=True)
class Series:
    key: SeriesKey
    runs: tuple[Run, ...]  # complete runs that measured this kernel, oldest first
    values: tuple[float, ...]


def build_series(runs: Iterable[Run]) -> list[Series]:
    """Group the records of the complete ``runs`` (oldest first) into series; incomplete runs are left out."""
    points: dict[SeriesKey, list[tuple[Run, float]]] = {}
    for run in runs:
        if run.complete:
            for record in run.records:
                points.setdefault(series_key(record), []).append((run, record_utilization(record)))
    return [Series(k, tuple(r for r, _ in p), tuple(v for _, v in p)) for k, p in sorted(points.items())]


def interval_noise(record: Mapping[str, Any]) -> float:
    """Relative standard deviation implied by a record's 95% utilization interval (0 when it has none)."""
    result = record["result"]
    interval = result.get("utilization_interval")
    value = result.get("utilization") or 0.0
    if not interval or value <= 0 or record.get("model") == "ops":
        return 0.0
    return (float(interval[1]) - float(interval[0])) / (2 * Z95 * float(value))


@dataclass(frozen=True)
class BaselineCheck:
    """A kernel's current utilization against its baseline."""

    key: SeriesKey
    current: float
    gate: Gate
    origin: str  # where the baseline came from, for the message
    floor_origin: str

    @property
    def baseline(self) -> float:
        return self.gate.baseline

    @property
    def drop(self) -> float:
        return self.gate.drop(self.current)

    @property
    def regressed(self) -> bool:
        return self.gate.regressed(self.current)

    def to_dict(self) -> dict[str, Any]:
        """The record's ``baseline`` field."""
        gate = self.gate
        return {"baseline": gate.baseline, "current": self.current, "drop": self.drop, "regressed": self.regressed,
                "allowed_drop": gate.allowed_drop, "noise": gate.noise, "runs": gate.runs, "floor": gate.floor,
                "floor_origin": self.floor_origin, "origin": self.origin, "message": self.message()}

    def message(self) -> str:
        change = f"dropped {self.drop:.1%}" if self.drop >= 0 else f"rose {-self.drop:.1%}"
        verdict = "beyond" if self.regressed else "within"
        return (f"utilization {self.current:.1%} {change} from the baseline's {self.baseline:.1%} ({self.origin}), "
                f"{verdict} its {self.gate.describe()}; floor from {self.floor_origin}")


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


class Baseline:
    """Per series, the values a new run is judged against."""

    def __init__(self, path: str, values: Mapping[SeriesKey, Sequence[float]],
                 records: Mapping[SeriesKey, Mapping[str, Any]], describe: Mapping[SeriesKey, str]) -> None:
        self.path = path
        self.values = dict(values)
        self.records = dict(records)  # the latest baseline record of each series
        self._describe = dict(describe)

    @classmethod
    def load(cls, path: str, warn: Callable[[str], None] | None = None) -> Baseline:
        """A report file, or a history directory (its complete runs; partial ones are left out, and so are files
        that are not readable reports: ``warn`` names each)."""
        if Path(path).is_dir():
            runs = load_history(path, warn)
            series = build_series(runs)
            if not series:
                raise ReportError(f"{path}: no complete run in this history directory to use as a baseline")
            values = {s.key: s.values for s in series}
            records = {s.key: _record_of(s.runs[-1], s.key) for s in series}
            describe = {s.key: _describe_runs(path, s) for s in series}
            return cls(path, values, records, describe)
        run = load_run(path)
        if not run.complete:
            raise ReportError(f"{path}: this report's run was incomplete ({run.why_incomplete}); it cannot be a "
                              "baseline")
        values, records, describe = {}, {}, {}
        for record in run.records:
            key = series_key(record)
            values[key] = (record_utilization(record),)
            records[key] = record
            describe[key] = f"report {path}, {run.short}"
        return cls(path, values, records, describe)

    def check(self, record: Mapping[str, Any], max_drop: float | None = None,
              max_drop_origin: str = "") -> BaselineCheck | None:
        """The current ``record`` against its series' baseline; None when the baseline has no such series."""
        key = series_key(record)
        values = self.values.get(key)
        if not values:
            return None
        current = record_utilization(record)
        if len(values) >= MIN_WINDOW:
            floor, floor_origin = (max_drop, max_drop_origin) if max_drop is not None else (FLOOR, "the default")
            judged = history_gate(list(values), floor, Z)
            assert judged is not None
        else:
            floor, floor_origin = ((max_drop, max_drop_origin) if max_drop is not None
                                   else (SINGLE_RUN_FLOOR, "the default for a one-run baseline"))
            noise = math.hypot(interval_noise(self.records[key]), interval_noise(record))
            judged = gate(list(values), floor, Z, extra_noise=noise)
        return BaselineCheck(key, current, judged, self._describe[key], floor_origin)

    def judge(self, record: Mapping[str, Any], max_drop: float | None = None,
              max_drop_origin: str = "") -> BaselineCheck | NoBaseline:
        """The current ``record`` against its series' baseline, or why there is none."""
        check = self.check(record, max_drop, max_drop_origin)
        return check if check is not None else NoBaseline(self.missing(record))

    def missing(self, record: Mapping[str, Any]) -> str:
        """Why the baseline has no series for ``record``: the kernel is new, or what differs."""
        key = series_key(record)
        same_kernel = [k for k in self.values if (k.nodeid, k.label) == (key.nodeid, key.label)]
        if not same_kernel:
            return f"no baseline for this kernel in {self.path} (a new kernel)"
        other = same_kernel[-1]
        differs = [f"{name} {getattr(other, name)!r} there, {getattr(key, name)!r} here"
                   for name in ("hardware", "ceilings", "model", "jax") if getattr(other, name) != getattr(key, name)]
        return f"no comparable baseline in {self.path}: {'; '.join(differs)} (a new series starts)"


def _record_of(run: Run, key: SeriesKey) -> Mapping[str, Any]:
    return next(r for r in run.records if series_key(r) == key)


def _describe_runs(path: str, series: Series) -> str:
    n = len(series.values)
    if n == 1:
        return f"1 run in {path}, {series.runs[0].short}"
    return f"{n} runs in {path}, {series.runs[0].short} to {series.runs[-1].short}"
