"""The plugin's state for one pytest process: the settings, the records of every measured kernel, and how to
measure (the JAX pipeline, or a fake handed in by a test). No pytest; JAX only through the measure callable."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from ..analysis.verdict.survey_book import SurveyBook
from ..base.calls import KernelCall
from ..hardware.per_device import Threshold, ThresholdSetting
from ..hardware.spec import HardwareSpec
from ..history.baseline import Baseline
from ..history.reports import ReportError
from ..measurement.options import GivenSettings, MeasureOptions
from ..records.kernel_record import KernelRecord, LockWaited, Unmeasured
from ..report.document import build_report
from ..report.html import plotly_missing
from ..result.result import Result
from .lock import device_lock
from .mode import PLAIN, Mode
from .settings import ConfigError, Settings

__all__ = ["RooflineSession", "Measure", "SessionHooks", "NO_HOOKS", "default_trace_root"]


class Measure(Protocol):
    def __call__(self, call: KernelCall, options: MeasureOptions, keep: Any) -> Result: ...


class SessionHooks(Protocol):
    """What the suite's own hooks are asked (``user_hooks.py``): a kernel's threshold, and each record made."""

    def threshold(self, nodeid: str, label: str, current: ThresholdSetting | None) -> ThresholdSetting | None: ...

    def record_made(self, record: KernelRecord) -> None: ...


class _NoHooks:
    def threshold(self, nodeid: str, label: str, current: ThresholdSetting | None) -> ThresholdSetting | None:
        return current

    def record_made(self, record: KernelRecord) -> None:
        pass


NO_HOOKS: SessionHooks = _NoHooks()


# A wait for the device lock this long or longer is kept and said in the summary and the report.
LOCK_WAIT_SAID_S = 1.0


def _jax_measure(call: KernelCall, options: MeasureOptions, keep: Any) -> Result:
    from ..measurement.pipeline import measure_call

    return measure_call(call, options, keep)


def _jax_hardware(settings: Settings, recalibrate: bool) -> tuple[HardwareSpec, str]:
    from ..measurement.machine.device import detect_device, resolve_hardware
    from ..measurement.processes.start_up import resolve_together

    # The device is found before the lock is taken: on a program that spans processes, JAX's start-up exchanges
    # every process's devices, which a process waiting for the lock would never reach. The ceilings (a
    # calibration, perhaps) are resolved under it, where nothing waits on another process.
    platform, device_kind = detect_device()

    def resolve(again: bool | str) -> tuple[HardwareSpec, str]:
        with device_lock(platform):
            return resolve_hardware(platform, device_kind, settings.hardware, settings.hardware_file,
                                    settings.ceilings, "replace" if again else "cached")

    try:  # the processes of one program: calibrated once per machine, and they leave start-up together
        return resolve_together(platform, device_kind, resolve, recalibrate)
    except ValueError as exc:
        if settings.hardware is None:
            raise
        raise ValueError(f"{settings.origins.get('hardware', 'hardware')}: {exc}") from None


def _jax_save(result: Result, root: str, nodeid: str, label: str) -> dict[str, str]:
    from ..measurement.artifacts import save_artifacts

    return save_artifacts(result, root, nodeid, label)


def default_trace_root() -> str:
    """Where traces go without --roofline-trace-dir and without pytest's cache: one fixed directory per user,
    in which each test's kernel replaces its previous trace, so nothing piles up from run to run."""
    user = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), f"pytest-roofline-{user}", "traces")


class RooflineSession:
    """Measures under the device lock, re-calibrates when asked (once per process), and keeps the records.

    A kernel that beats a calibrated ceiling never re-calibrates it: its result is "impossible" and says which
    ceiling or count to distrust (a cache-resident working set, a stale calibration)."""

    def __init__(self, settings: Settings, trace_root: Callable[[], str] | None = None,
                 measure: Measure = _jax_measure,
                 hardware: Callable[[Settings, bool], tuple[HardwareSpec, str]] = _jax_hardware,
                 save: Callable[[Result, str, str, str], dict[str, str]] = _jax_save,
                 baseline: Baseline | None = None, *, mode: Mode = PLAIN, hooks: SessionHooks = NO_HOOKS) -> None:
        self.settings = settings
        self.baseline = baseline  # --roofline-baseline, loaded at start-up
        # Where trace artifacts go; a callable so that the directory is made only when something is saved.
        self.trace_root = trace_root or (lambda: settings.trace_dir or default_trace_root())
        self.records: list[KernelRecord] = []
        self.unmeasured: list[Unmeasured] = []  # kernels that could not be measured, with their error
        self.lock_waits: list[LockWaited] = []  # measurements that waited for the device lock
        self._handed = (0, 0, 0)  # an xdist worker's records, unmeasured kernels and lock waits handed in so far
        self.trace_problem = ""  # why traces cannot be saved (said once; later kernels' are not tried)
        self._measure = measure
        self._hardware = hardware
        self._save = save
        self._recalibrate = settings.calibrate  # --roofline-calibrate: once per process
        self.mode = mode  # how calls are served: measured and judged, unless a tool installed another mode
        self.hooks = hooks  # the suite's own: thresholds from its table, each record as it is made
        self.survey: SurveyBook | None = None  # --roofline-survey: every program the tests ran

    def options(self, given: GivenSettings) -> MeasureOptions:
        """One measurement's options: the session's hardware, ceilings, first-touch and cache settings, then
        those ``given`` (the marker's, then the call's, read and checked where they entered)."""
        s = self.settings
        base = GivenSettings(hardware=s.hardware, hardware_file=s.hardware_file, ceilings=s.ceilings,
                             first_touch=s.first_touch, cache=s.cache, counts=s.counts)
        base = self.mode.settings(base, given, lambda: self.hardware()[1])
        return MeasureOptions().overridden(given.over(base))

    def measure(self, call: KernelCall, options: MeasureOptions, key: str = "") -> Result:
        """Measure ``call`` with ``options`` (:meth:`options`), re-calibrating on the process's first measurement
        when asked. ``key`` ("nodeid::label"): the compiled program is kept where the mode keeps it
        (:meth:`.mode.Mode.keeper`; a :class:`~pytest_roofline.measurement.pipeline.Keeper`)."""
        recalibrate, self._recalibrate = self._recalibrate, False
        options = replace(options, hardware=replace(options.hardware, recalibrate=recalibrate))
        keep = self.mode.keeper(key, call, options) if key else None
        # The processes of one multi-controller program own different devices and measure in lockstep: one
        # waiting for another's lock would never reach the step the other waits for.
        if _spans_processes():
            return self._measure(call, options, keep)
        with device_lock() as wait:
            if wait.seconds >= LOCK_WAIT_SAID_S:
                self.lock_waits.append(LockWaited(key, wait.seconds, wait.holder))
            return self._measure(call, options, keep)

    def agree(self, label: str, verdict: str) -> str:
        """Every process's verdict for ``label`` (a program that spans processes): "" when they agree, else the
        message that says which process decided what."""
        from ..measurement.processes.peers import agree_verdict

        return agree_verdict(label, verdict)

    @classmethod
    def start(cls, settings: Settings, trace_root: Callable[[], str], warn: Callable[[str], None],
              mode: Mode = PLAIN, hooks: SessionHooks = NO_HOOKS) -> RooflineSession:
        """The session of a pytest process from its resolved settings: the HTML report's dependency checked and the
        baseline loaded before any test runs (a ConfigError naming the setting where either cannot be)."""
        if settings.html is not None and (missing := plotly_missing()):
            raise ConfigError(f"{settings.origins['html']}: {missing}")
        baseline = None
        if settings.baseline is not None:
            origin = settings.origins["baseline"]
            try:
                baseline = Baseline.load(settings.baseline, lambda message: warn(f"{origin}: {message}"))
            except ReportError as exc:
                raise ConfigError(f"{origin}: {exc}") from None
        return cls(settings, trace_root, baseline=baseline, mode=mode, hooks=hooks)

    def add(self, record: KernelRecord) -> None:
        """Keep a kernel's record, and hand it to the suite's hooks."""
        self.records.append(record)
        self.hooks.record_made(record)

    def hand_off(self) -> str:
        """What an xdist worker hands its controller after each test, as JSON (:meth:`merge_worker_output` takes
        it): the records, unmeasured kernels and lock waits made since the last hand-off ("" where there are none)."""
        if self._handed == (len(self.records), len(self.unmeasured), len(self.lock_waits)):
            return ""
        return json.dumps(self._since_handed())

    def _since_handed(self) -> dict[str, str]:
        records, unmeasured, waits = self._handed
        self._handed = (len(self.records), len(self.unmeasured), len(self.lock_waits))
        return {"roofline_records": json.dumps([r.to_dict() for r in self.records[records:]], default=str),
                "roofline_unmeasured": json.dumps([u.to_dict() for u in self.unmeasured[unmeasured:]]),
                "roofline_lock_waits": json.dumps([w.to_dict() for w in self.lock_waits[waits:]])}

    def worker_output(self) -> dict[str, str]:
        """What an xdist worker hands its controller at its end: what no test's hand-off carried, and the survey."""
        return {**self._since_handed(),
                **({"roofline_survey": json.dumps(self.survey.to_dict())} if self.survey is not None else {})}

    def merge_worker_output(self, output: Mapping[str, Any]) -> bool:
        """Take in a worker's records (:meth:`worker_output`); whether it had any."""
        records = [KernelRecord.from_dict(r) for r in json.loads(output.get("roofline_records") or "[]")]
        unmeasured = [Unmeasured.from_dict(u) for u in json.loads(output.get("roofline_unmeasured") or "[]")]
        self.records.extend(records)
        self.unmeasured.extend(unmeasured)
        self.lock_waits += [LockWaited.from_dict(w) for w in json.loads(output.get("roofline_lock_waits") or "[]")]
        if self.survey is not None and output.get("roofline_survey"):
            self.survey.merge(SurveyBook.from_dict(json.loads(output["roofline_survey"])))
        return bool(records or unmeasured)

    def report(self, end: Mapping[str, Any], rootdir: str, used: bool) -> dict[str, Any] | None:
        """The JSON report of this session (``end``: how the run ended,
        :func:`~pytest_roofline.report.document.session_block`), or None where nothing is to be written: no output asked
        for, nothing measured, or a process other than the first of a program that spans processes."""
        chosen = self.settings
        used = used or self.survey is not None
        if not (chosen.report or chosen.history or chosen.html) or not (self.records or used) or self.follower_line():
            return None
        settings = dict(chosen.origins)
        if isinstance(chosen.min, Threshold):
            settings["min_value"] = str(chosen.min.value)
        elif chosen.min is not None:
            settings["min_value"] = json.dumps(chosen.min.to_dict())
        report = build_report(self.records, settings, rootdir, end, self.unmeasured)
        report["lock_waits"] = [w.to_dict() for w in self.lock_waits]  # [] where no measurement waited
        if self.survey is not None:
            report["survey"] = self.survey.to_dict()
        return report

    def follower_line(self) -> str:
        """For a process other than process 0 of a program that spans processes: the one line it prints instead
        of the summary and the reports, which process 0 writes; "" otherwise."""
        spans = [r.result.processes for r in self.records if r.result.processes is not None]
        if not spans or spans[0].index == 0:
            return ""
        chosen = self.settings
        outputs = [str(p) for p in (chosen.report, chosen.html, chosen.history) if p]
        where = f" ({', '.join(outputs)})" if outputs else ""
        return (f"roofline: process {spans[0].index} of {spans[0].count}: {len(self.records)} kernel(s) measured "
                f"with the other processes; process 0 prints the summary and writes the reports{where}")

    def hardware(self) -> tuple[HardwareSpec, str]:
        """The detected hardware's ceilings and the ceilings mode in use (imports JAX; calibrates a CPU unless
        cached)."""
        recalibrate, self._recalibrate = self._recalibrate, False
        return self._hardware(self.settings, recalibrate)

    def save(self, result: Result, nodeid: str, label: str) -> dict[str, str]:
        """Save the kernel's trace and HLO; returns the paths for the record."""
        return self._save(result, self.trace_root(), nodeid, label)


def _spans_processes() -> bool:
    """Whether JAX runs as one of several processes (``jax.distributed.initialize``); False where JAX is not yet
    imported (then it is not initialized either)."""
    jax = sys.modules.get("jax")
    return jax is not None and jax.process_count() > 1
