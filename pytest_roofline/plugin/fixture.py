"""What the ``roofline`` fixture does, without importing pytest: measure, decide (with
:func:`~pytest_roofline.analysis.verdict.decide.decide`), record, and fail through the callback pytest hands in."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any, NoReturn, TypeVar, cast

from ..analysis.model.exposed import ExposedCheck, ExposedLimit, check_exposed, parse_max_exposed
from ..analysis.program.memory import MemoryCheck, MemoryLimit, check_memory, parse_max_memory
from ..analysis.runs.time_spent import Stopwatch, phase
from ..analysis.verdict.census import CensusCheck, OpsLimit, check_ops, parse_max_ops
from ..analysis.verdict.decide import Decision, decide
from ..base.calls import CallError, KernelCall, split_call
from ..base.errors import MeasureError, exception_text, origin_frames
from ..base.kinds import ExpectedBound, Model
from ..base.labels import kernel_name
from ..hardware.per_device import Picked, ThresholdSetting
from ..hardware.spec import HardwareSpec
from ..history.baseline import interval_noise
from ..measurement.options import MEASURE_OPTIONS, GivenSettings, MeasureOptions
from ..records.kernel_record import Artifacts, KernelRecord, Unmeasured, series_key
from ..records.series_judgement import BaselineCheck, NoBaseline
from ..report.failure import failure_message
from ..result.recorded_result import RecordedResult
from ..result.result import Result
from .marker import BoundSetting, MarkerSpec, parse_bound_setting, pick_bound
from .mode import CallSite
from .session import RooflineSession
from .settings import ConfigError, parse_model, parse_threshold_setting

__all__ = ["RooflineFixture", "FIXTURE_SETTINGS"]

# The keywords roofline(...) takes for itself; any other goes to the kernel.
LimitT = TypeVar("LimitT")

FIXTURE_SETTINGS = ("min", "bound", "model", "max_memory", "max_ops", "max_exposed", *MEASURE_OPTIONS)


class RooflineFixture:
    """``roofline(fn, *args, **kwargs)`` measures and asserts; ``roofline.measure(...)`` only records."""

    def __init__(self, session: RooflineSession, nodeid: str, marker: MarkerSpec | None,
                 fail: Callable[[str], NoReturn], warn: Callable[[str], None],
                 add_property: Callable[[str, Any], None], *, traceback_style: str = "auto",
                 skip: Callable[[str], NoReturn] | None = None, verbosity: int = 0) -> None:
        self._session = session
        self._traceback_style = traceback_style  # pytest's --tb: how much of a kernel's own error to show
        self._verbosity = verbosity  # pytest's -v count: -vv shows a failure's full block
        self._nodeid = nodeid
        self._marker = marker
        self._fail = fail
        self._warn = warn
        self._add_property = add_property
        self._skip = skip or fail  # how a test stops where a mode that stands in for measurements stops it
        self._labels: dict[str, int] = {}
        self._bound_from = ""  # where the current call's bound came from, when the call gave one
        self._watch = Stopwatch()  # where the current call's wall time goes
        self.results: list[Result] = []

    def measure(self, fn: Callable[..., Any], *args: Any, **keywords: Any) -> Result:
        """Measure and record, never fail (a kernel that cannot be measured still fails the test); a kernel over
        ``max_memory`` is recorded with the check and warned about. Keywords as for ``roofline(...)``, but for
        ``min``, ``bound`` and ``model``, which only a call that judges takes."""
        if self._session.mode.stands_in:
            return self._stand_in(fn, args, keywords, "roofline.measure(...)")
        with Stopwatch() as self._watch:
            return self._measure_only(fn, args, keywords)

    def _measure_only(self, fn: Callable[..., Any], args: tuple[Any, ...], keywords: dict[str, Any]) -> Result:
        call, kwargs = self._split(fn, args, keywords, "roofline.measure(...)")
        judging = sorted(set(kwargs) & {"min", "bound", "model"})
        if judging:
            self._fail(f"roofline: roofline.measure(...) in {self._nodeid} only records: {judging[0]}= belongs to "
                       f"roofline(...), which judges")
        label = self._label(fn, kwargs.pop("name", None))
        limits = self._limits(kwargs)
        result = self._measure(label, call, self._options(label, self._given(kwargs)))
        recorded = RecordedResult.of(result)
        checks = self._checks(label, result, limits, self._check(label, recorded, "program"))
        judged = _Judged(label, result, recorded, decide(result.figures, None), "program", checks=checks)
        record = self._record(judged)
        if judged.decision.warning:  # an impossible result is never a silent pass
            self._warn(self._message(record, judged.decision.reason))
        for over in (checks.memory, checks.ops, checks.exposed):
            if over is not None and not over.ok:
                self._warn(self._message(record, over.reason))
        return result

    def __call__(self, fn: Callable[..., Any], *args: Any, **keywords: Any) -> Result:
        """Measure, record, and fail the test when the kernel is below its threshold, of the wrong bound, or
        needs more memory than ``max_memory``. ``roofline(fn, *args, min=..., **kernel_kwargs)``, or
        ``roofline(fn, args=(...), kwargs={...}, min=...)`` where a kernel parameter shares a setting's name."""
        if self._session.mode.stands_in:
            return self._stand_in(fn, args, keywords, "roofline(...)")
        with Stopwatch() as self._watch:
            return self._judge(fn, args, keywords)

    def _stand_in(self, fn: Callable[..., Any], args: tuple[Any, ...], keywords: dict[str, Any],
                  where: str) -> Result:
        """The session's mode answers the call in place of a measurement (:meth:`.mode.Mode.stand_in`)."""
        again = functools.partial(self.measure if where == "roofline.measure(...)" else self, fn, *args,
                                  **dict(keywords))
        call, kwargs = self._split(fn, args, keywords, where)
        label = self._label(fn, kwargs.pop("name", None))
        for setting in ("min", "bound", "model", "max_memory", "max_ops", "max_exposed"):
            kwargs.pop(setting, None)
        site = CallSite(self._nodeid, label, call, self._options(label, self._given(kwargs)), again=again,
                        restart=self._labels.clear, stop=self._skip)
        return cast(Result, self._session.mode.stand_in(site))

    def _judge(self, fn: Callable[..., Any], args: tuple[Any, ...], keywords: dict[str, Any]) -> Result:
        call, kwargs = self._split(fn, args, keywords, "roofline(...)")
        label = self._label(fn, kwargs.pop("name", None))
        min_setting, bound_setting, chosen = self._call_settings(label, kwargs.pop("min", None),
                                                                 kwargs.pop("bound", None), kwargs.pop("model", None))
        limits = self._limits(kwargs)
        # The threshold goes to the measurement, which picks it once on the hardware it measures on: the runs go
        # on while the interval of the program-level utilization straddles it, and the result carries the pick.
        aim = chosen == "program" and not self._session.mode.measure_once
        options = self._options(label, self._given(kwargs), threshold=min_setting, aim=aim)
        judged = self._judged(label, call, options, chosen, bound_setting, limits)
        record = self._record(judged)
        disagreement = self._session.agree(label, judged.decision.verdict) if judged.result.processes else ""
        if disagreement:
            self._fail(disagreement)
        if judged.decision.warning:
            self._warn(self._message(record, judged.decision.reason))
        elif judged.decision.fails:
            message = self._message(record, judged.decision.reason)
            if self._session.settings.warn_only:
                self._warn(message)
            else:
                self._fail(message)
        return judged.result

    def _judged(self, label: str, call: KernelCall, options: MeasureOptions, chosen: Model,
                bound_setting: BoundSetting | None, limits: _Limits) -> _Judged:
        """Measure and decide; a kernel short of its threshold or its baseline is measured again before it fails
        (not where the mode measures once)."""
        result = self._measure(label, call, options)
        hw = result.hardware  # a bound mapping by platform and hardware is picked from on the device measured
        bound = pick_bound(bound_setting, self._bound_origin(), hw.name, hw.platform)
        value = result.picked.value if result.picked else None
        expected = bound.value if bound else None
        recorded = RecordedResult.of(result)
        check = self._check(label, recorded, chosen)
        first: float | None = None
        decision = decide(result.figures, value, expected_bound=expected, model=chosen)
        if (decision.confirm or (check is not None and check.regressed)) and not self._session.mode.measure_once:
            first = result.utilization_for(chosen)
            # The second compile comes from JAX's cache: the first measurement's compile time is the program's.
            with Stopwatch() as again:
                second = self._measure(label, call, options)
            self._watch.add("second measurement", again.elapsed)
            result = replace(second, program=result.program)
            recorded = RecordedResult.of(result)
            check = self._check(label, recorded, chosen)
        checks = self._checks(label, result, limits, check)
        decision = decide(result.figures, value, expected_bound=expected, model=chosen, first_utilization=first,
                          baseline=checks.baseline, memory=checks.memory, ops=checks.ops, exposed=checks.exposed)
        return _Judged(label, result, recorded, decision, chosen, threshold=result.picked, bound=bound,
                       first_utilization=first, checks=checks)

    def _limits(self, kwargs: dict[str, Any]) -> _Limits:
        """The call's limits (taken from ``kwargs``), else the marker's."""
        return _Limits(self._limit("max_memory", kwargs.pop("max_memory", None), parse_max_memory),
                       self._limit("max_ops", kwargs.pop("max_ops", None), parse_max_ops),
                       self._limit("max_exposed", kwargs.pop("max_exposed", None), parse_max_exposed))

    def _checks(self, label: str, result: Result, limits: _Limits,
                baseline: BaselineCheck | NoBaseline | None) -> _Checks:
        """The result against its limits and its baseline."""
        return _Checks(baseline, self._memory_check(label, result, limits.memory),
                       check_ops(result.ops, limits.ops) if limits.ops is not None else None,
                       check_exposed(result.exposure, limits.exposed) if limits.exposed is not None else None)

    def _message(self, record: KernelRecord, reason: str) -> str:
        """A failure's or warning's text: the short block, or the full one under -vv."""
        settings = self._session.settings
        return failure_message(record, reason, full=self._verbosity >= 2, report=settings.report or settings.html or "")

    def _label(self, fn: Callable[..., Any], name: str | None) -> str:
        base = name or kernel_name(fn)
        count = self._labels.get(base, 0) + 1
        self._labels[base] = count
        return base if count == 1 else f"{base}#{count}"

    @property
    def hardware(self) -> HardwareSpec:
        """The hardware this test's kernels are measured against, before anything is measured: its name,
        platform, peaks per dtype, memory bandwidth and cache, ``critical_intensity(dtype)`` and the sizing
        helpers ``compute_bound_batch`` and ``compute_bound_size`` (detects the device; calibrates a CPU unless
        cached)."""
        try:
            return self._session.hardware()[0]
        except (MeasureError, ValueError) as exc:  # an unknown device, a failed calibration
            problem = f"roofline: roofline.hardware in {self._nodeid}: hardware detection failed: {exc}"
        self._fail(problem)  # outside the except block: the failure shows no chained traceback

    def _bound_origin(self) -> str:
        """Where the call's or the marker's ``bound`` came from."""
        return self._bound_from or f"marker of {self._nodeid}"

    def _call_settings(self, label: str, min_: Any, bound: Any,
                       model: Any) -> tuple[ThresholdSetting | None, BoundSetting | None, Model]:
        """The threshold, expected bound and model of one call: its keywords > the marker > the settings, the
        threshold as the suite's ``pytest_roofline_threshold`` hook adjusts it; a threshold or bound may be a mapping
        by platform and hardware, picked from once measured."""
        where = f"roofline(...) in {self._nodeid}"
        names = self._session.settings.hardware_names
        call_origin = f"min= in the roofline() call of {self._nodeid}"
        try:
            here = None if min_ is None else parse_threshold_setting(min_, f"{where}: min={min_!r}", call_origin, names)
            expected = None if bound is None else parse_bound_setting(
                bound, f"{where}: bound={bound!r}", f"bound= in the roofline() call of {self._nodeid}", names)
            chosen = None if model is None else parse_model(model, f"{where}: model={model!r}")
            marker = self._marker
            threshold = self._session.hooks.threshold(self._nodeid, label, self._session.settings.threshold_for(
                self._nodeid, here or (marker.min if marker else None)))
        except ConfigError as exc:
            problem = f"roofline: {exc}"
        else:
            self._bound_from = f"bound= in the roofline() call of {self._nodeid}" if expected is not None else ""
            return (threshold, expected or (marker.bound if marker else None),
                    chosen or (marker.model if marker else None) or self._session.settings.model)
        self._fail(problem)  # outside the except block: the failure shows no chained traceback

    def _memory_check(self, label: str, result: Result, limit: MemoryLimit | None) -> MemoryCheck | None:
        """The program's footprint against ``limit``; a limit that cannot be resolved fails the test."""
        if limit is None:
            return None
        check = check_memory(result.memory, limit, result.hardware.memory_capacity, result.hardware.name)
        if check.limit_bytes is None:  # a fraction without a capacity, or no memory analysis
            self._fail(f"roofline: kernel {label!r} of {self._nodeid}: {check.reason}")
        return check

    def _limit(self, name: str, raw: Any, parse: Callable[[Any, str, str, type[Exception]], LimitT]) -> LimitT | None:
        """The limit ``name`` (max_memory, max_ops, max_exposed) of the call, else of the marker; a bad value fails
        the test."""
        if raw is None:
            return cast("LimitT | None", getattr(self._marker, name)) if self._marker else None
        try:
            return parse(raw, f"roofline(...) in {self._nodeid}", f"{name}= in the roofline() call of {self._nodeid}",
                         ConfigError)
        except ConfigError as exc:
            problem = f"roofline: {exc}"
        self._fail(problem)  # outside the except block: the failure shows no chained traceback

    def _split(self, fn: Callable[..., Any], args: tuple[Any, ...], keywords: dict[str, Any],
               where: str) -> tuple[KernelCall, dict[str, Any]]:
        """The kernel's call and this call's settings (:mod:`pytest_roofline.base.calls`); a clash fails the test."""
        try:
            return split_call(fn, args, keywords, FIXTURE_SETTINGS, f"{where} in {self._nodeid}")
        except CallError as exc:
            problem = f"roofline: {exc}"
        self._fail(problem)  # outside the except block: the failure shows no chained traceback

    def _given(self, kwargs: dict[str, Any]) -> GivenSettings:
        """The call's measurement settings (the keywords the fixture does not take for itself), read and checked
        once, here; a bad value fails the test naming it."""
        try:
            return GivenSettings.read(kwargs, lambda key, value: f"roofline(...) in {self._nodeid}: {key}={value!r}:")
        except (TypeError, ValueError) as exc:
            problem = f"roofline: {exc}"
        self._fail(problem)  # outside the except block: the failure shows no chained traceback

    def _options(self, label: str, given: GivenSettings, threshold: ThresholdSetting | None = None,
                 aim: bool = True) -> MeasureOptions:
        """The measurement's options: the session's, the marker's, the call's; ``threshold``: the one the result
        is judged against (the measurement picks it on its hardware; with ``aim`` the runs go on while its interval
        straddles it)."""
        marker = self._marker.given if self._marker else GivenSettings()
        mine = replace(given.over(marker), name=label, threshold=threshold or given.threshold)
        return replace(self._session.options(mine), sample_to_threshold=aim)

    def _measure(self, label: str, call: KernelCall, options: MeasureOptions) -> Result:
        try:
            return self._session.measure(call, options, f"{self._nodeid}::{label}")
        except (MeasureError, ValueError) as exc:  # ValueError: an unknown device
            why, origin = str(exc), origin_frames(exc.__cause__, self._traceback_style)
        except Exception as exc:  # noqa: BLE001 - never a raw traceback, never a kernel missing from the report
            why = f"{label}: pytest-roofline failed while measuring it (please report it): {exception_text(exc)}"
            origin = origin_frames(exc, self._traceback_style, own=True)
        self._session.unmeasured.append(Unmeasured(self._nodeid, label, why))
        message = f"roofline: kernel {label!r} of {self._nodeid} cannot be measured: {why}"
        self._fail(f"{message}\n{origin}" if origin else message)  # outside the except: no chained traceback

    def _check(self, label: str, recorded: RecordedResult, model: Model) -> BaselineCheck | NoBaseline | None:
        """The result against the --roofline-baseline, or why there is none; None without a baseline."""
        baseline = self._session.baseline
        if baseline is None:
            return None
        drop = self._session.settings.max_drop_for(self._nodeid, self._marker.max_drop if self._marker else None)
        return baseline.judge(series_key(self._nodeid, label, recorded, model), recorded.utilization_for(model),
                              interval_noise(recorded, model), drop.value if drop else None,
                              drop.origin if drop else "")

    def _saved(self, result: Result, label: str) -> Artifacts | None:
        """The kernel's trace and HLO saved; a failure to save them (a full disk) is a warning on the first kernel
        it meets, and later kernels' traces are not tried."""
        if self._session.trace_problem:
            return None
        with phase("artifacts"):
            try:
                return Artifacts.from_dict(self._session.save(result, self._nodeid, label))
            except OSError as exc:
                where = self._session.settings.origins.get("trace_dir", "the trace directory")
                self._session.trace_problem = (f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''} "
                                               f"({where})")
        self._warn(f"roofline: kernel {label!r} of {self._nodeid}: its trace was not saved: "
                   f"{self._session.trace_problem}; no later kernel's trace is saved in this run")
        return None

    def _record(self, judged: _Judged) -> KernelRecord:
        """Keep the kernel's record in the session (its trace saved where it failed, or all are), and give pytest
        its figures as the test's properties."""
        settings, label, result, threshold = self._session.settings, judged.label, judged.result, judged.threshold
        saved = None
        if (judged.decision.fails and not self._session.mode.measure_once) or settings.trace_all:
            saved = self._saved(result, label)
        drop = settings.max_drop_for(self._nodeid, self._marker.max_drop if self._marker else None)
        hw = result.hardware
        # A bound mapping that does not name this device checks no bound here; only a threshold's is "not judged".
        unnamed = threshold.unnamed("min", hw.name, hw.platform) if threshold and threshold.value is None else ""
        value = threshold.value if threshold else None
        checks, bound = judged.checks, judged.bound
        record = KernelRecord(nodeid=self._nodeid, label=label, result=judged.recorded,
                              verdict=judged.decision.verdict, threshold=value,
                              threshold_origin=threshold.where if value is not None and threshold else "",
                              model=judged.model, expected_bound=bound.value if bound else None,
                              first_utilization=judged.first_utilization, warn_only=settings.warn_only,
                              baseline=checks.baseline, max_memory=checks.memory, artifacts=saved,
                              max_drop=drop.value if drop else None, max_drop_origin=drop.origin if drop else "",
                              threshold_key=threshold.key if threshold else "", bound_key=bound.key if bound else "",
                              not_judged=unnamed, time_spent=self._watch.spent(rest="everything else"),
                              max_ops=checks.ops, max_exposed=checks.exposed)
        self.results.append(result)
        try:
            self._session.add(record)  # kept, then handed to the suite's record hook
        except ConfigError as exc:
            problem = f"roofline: kernel {label!r} of {self._nodeid}: {exc}"
        else:
            prefix = f"roofline[{label}]"
            for key in ("utilization", "device_time_s", "roofline_time_s", "bound", "flops", "bytes_accessed",
                        "drift", "peak_memory_bytes"):
                self._add_property(f"{prefix}.{key}", getattr(result, key))
            self._add_property(f"{prefix}.verdict", judged.decision.verdict)
            self._add_property(f"{prefix}.hardware", result.hardware.name)
            return record
        self._fail(problem)  # outside the except block: the failure shows no chained traceback


@dataclass(frozen=True)
class _Limits:
    """A call's limits (else its marker's): device memory, ops per run, exposed communication."""

    memory: MemoryLimit | None
    ops: OpsLimit | None
    exposed: ExposedLimit | None


@dataclass(frozen=True)
class _Checks:
    """The result against its baseline and its limits (None: not checked)."""

    baseline: BaselineCheck | NoBaseline | None = None
    memory: MemoryCheck | None = None
    ops: CensusCheck | None = None
    exposed: ExposedCheck | None = None


@dataclass(frozen=True)
class _Judged:
    """One call's result, as recorded, and what was decided of it, against what."""

    label: str
    result: Result
    recorded: RecordedResult
    decision: Decision
    model: Model
    _: KW_ONLY
    threshold: Picked[float] | None = None
    bound: Picked[ExpectedBound] | None = None
    first_utilization: float | None = None
    checks: _Checks = _Checks()
