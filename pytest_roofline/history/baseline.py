"""Series per kernel over a history, and a baseline to judge a new run against.

A baseline is a report (one value per kernel) or a history directory (per kernel, the complete runs'
values). A kernel's current utilization regresses when it lies below the baseline by more than the gate
of :mod:`pytest_roofline.analysis.verdict.regressions`: with three or more earlier runs the history's own noise widens
it, over a floor of
:data:`~..analysis.verdict.regressions.FLOOR`; with one report the noise is what the two measurements' 95% intervals
show, over a floor of :data:`SINGLE_RUN_FLOOR` (one run says nothing of how much nights differ). ``max_drop`` (marker,
YAML thresholds block, ``--roofline-max-drop``) replaces the floor. Pure but for reading files."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..analysis.verdict.regressions import FLOOR, MIN_WINDOW, Z, gate, history_gate
from ..base.kinds import Model
from ..records.kernel_record import KernelRecord
from ..records.series_judgement import BaselineCheck, NoBaseline, SeriesKey, contention_text
from ..result.recorded_result import RecordedResult
from .reports import ReportError, Run, load_history, load_run

__all__ = ["SINGLE_RUN_FLOOR", "Series", "build_series", "BaselineCheck", "NoBaseline", "Baseline", "interval_noise"]

SINGLE_RUN_FLOOR = 0.10  # asv's default threshold for a change between two runs
Z95 = 1.96  # a 95% interval spans +/- Z95 standard deviations (normal)


@dataclass(frozen=True)
class Series:
    key: SeriesKey
    runs: tuple[Run, ...]  # complete runs that measured this kernel, oldest first
    values: tuple[float, ...]
    compile_s: tuple[float, ...] = ()  # the kernel's compile time in each run (0: cached or not recorded)


def build_series(runs: Iterable[Run]) -> list[Series]:
    """Group the records of the complete ``runs`` (oldest first) into series; incomplete runs are left out."""
    points: dict[SeriesKey, list[tuple[Run, float, float]]] = {}
    for run in runs:
        if run.complete:
            for record in run.records:
                points.setdefault(record.key, []).append((run, record.utilization, record.result.compile_measured_s))
    return [Series(k, tuple(r for r, _, _ in p), tuple(v for _, v, _ in p), tuple(c for _, _, c in p))
            for k, p in sorted(points.items())]


def interval_noise(result: RecordedResult, model: Model) -> float:
    """Relative standard deviation implied by a result's 95% utilization interval (0 when it has none, and on the
    per-op model, which has no interval)."""
    interval = result.utilization_interval
    if interval is None or result.utilization <= 0 or model == "ops":
        return 0.0
    return (interval[1] - interval[0]) / (2 * Z95 * result.utilization)


class Baseline:
    """Per series, the values a new run is judged against."""

    def __init__(self, path: str, values: Mapping[SeriesKey, Sequence[float]],
                 records: Mapping[SeriesKey, KernelRecord], describe: Mapping[SeriesKey, str],
                 compile_s: Mapping[SeriesKey, Sequence[float]] | None = None) -> None:
        self.path = path
        self.values = dict(values)
        self.compile_s = dict(compile_s or {})  # per series, the baseline's compile times
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
            return cls(path, values, records, describe, {s.key: s.compile_s for s in series})
        run = load_run(path)
        if not run.complete:
            raise ReportError(f"{path}: this report's run was incomplete ({run.why_incomplete}); it cannot be a "
                              "baseline")
        latest = {record.key: record for record in run.records}
        return cls(path, {k: (r.utilization,) for k, r in latest.items()}, latest,
                   {k: f"report {path}, {run.short}" for k in latest},
                   {k: (r.result.compile_measured_s,) for k, r in latest.items()})

    def check(self, key: SeriesKey, current: float, noise: float, max_drop: float | None = None,
              max_drop_origin: str = "") -> BaselineCheck | None:
        """The ``current`` utilization of series ``key`` (``noise``: its own, from :func:`interval_noise`) against
        the baseline; None when the baseline has no such series."""
        values = self.values.get(key)
        if not values:
            return None
        if len(values) >= MIN_WINDOW:
            floor, floor_origin = (max_drop, max_drop_origin) if max_drop is not None else (FLOOR, "the default")
            judged = history_gate(list(values), floor, Z)
            assert judged is not None
        else:
            floor, floor_origin = ((max_drop, max_drop_origin) if max_drop is not None
                                   else (SINGLE_RUN_FLOOR, "the default for a one-run baseline"))
            earlier = self.records[key]
            both = math.hypot(interval_noise(earlier.result, earlier.model), noise)
            judged = gate(list(values), floor, Z, extra_noise=both)
        return BaselineCheck(key, current, judged, self._describe[key], floor_origin)

    def judge(self, key: SeriesKey, current: float, noise: float, max_drop: float | None = None,
              max_drop_origin: str = "") -> BaselineCheck | NoBaseline:
        """The ``current`` utilization of series ``key`` against its baseline, or why there is none."""
        check = self.check(key, current, noise, max_drop, max_drop_origin)
        return check if check is not None else NoBaseline(self.missing(key))

    def judge_record(self, record: KernelRecord, max_drop: float | None = None,
                     max_drop_origin: str = "") -> BaselineCheck | NoBaseline:
        """A recorded kernel against its series' baseline (``compare``): where it, or the one report it is compared
        with, was measured while contended, a drop cannot be judged."""
        check = self.judge(record.key, record.utilization, interval_noise(record.result, record.model), max_drop,
                           max_drop_origin)
        if isinstance(check, NoBaseline):
            return check
        earlier = self.records.get(record.key)
        return check.with_contention(
            contention_text(record.result.contended, record.result.cpu_waiting, "current"),
            contention_text(earlier.result.contended, earlier.result.cpu_waiting, "baseline")
            if earlier is not None and len(self.values.get(record.key, ())) == 1 else "")

    def missing(self, key: SeriesKey) -> str:
        """Why the baseline has no series ``key``: the kernel is new, or what differs."""
        same_kernel = [k for k in self.values if (k.nodeid, k.label) == (key.nodeid, key.label)]
        if not same_kernel:
            return f"no baseline for this kernel in {self.path} (a new kernel)"
        other = same_kernel[-1]
        differs = [f"{name} {getattr(other, name)!r} there, {getattr(key, name)!r} here"
                   for name in ("hardware", "ceilings", "model", "jax") if getattr(other, name) != getattr(key, name)]
        return f"no comparable baseline in {self.path}: {'; '.join(differs)} (a new series starts)"


def _record_of(run: Run, key: SeriesKey) -> KernelRecord:
    return next(r for r in run.records if r.key == key)


def _describe_runs(path: str, series: Series) -> str:
    n = len(series.values)
    if n == 1:
        return f"1 run in {path}, {series.runs[0].short}"
    return f"{n} runs in {path}, {series.runs[0].short} to {series.runs[-1].short}"
