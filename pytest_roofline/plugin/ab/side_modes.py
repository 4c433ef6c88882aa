"""The modes of ``pytest-roofline ab``'s processes, installed through the ``pytest_roofline_mode`` hook; the plugin's
session and fixture know only :class:`~..mode.Mode`.

:class:`AbMode` measures each kernel once, as a round's side does (the rounds are the sample), keeps each kernel's
call to measure it again on request, and while its :attr:`AbMode.programs` is set it is a programs pass: each call
compiled and fingerprinted, nothing timed (:class:`ProgramLog`). This module is also a pytest plugin, loaded in a
side's processes with ``-p`` (so that xdist's workers load it too): there the task the driver started the process for
(:mod:`pytest_roofline.ab.side_task`) says which mode to install, or, in the head's process that ab starts once its
verdicts are in, hands them to the suite's hooks.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import pytest

from ...ab.protocol import ProtocolError
from ...ab.same_programs import ProgramsOfTest, ProgramsPass
from ...ab.side_task import SideTask, task_from
from ...base.calls import KernelCall
from ...base.errors import exception_text
from ...base.files import write_text_atomic
from ...measurement.options import GivenSettings, MeasureOptions
from ...result.result import Result
from ..mode import CallSite, Mode

__all__ = ["AbMode", "ProgramLog", "ProgramsPassWriter", "programs_found", "NotMeasured", "ONCE_TIMING"]

# The timing of a measurement made once, where the test sets none: one warm-up run and a shorter least sampling time
# and budget; the rounds, each pairing the two sides seconds apart, are the sample.
ONCE_TIMING = GivenSettings(warmup=1, min_time_s=0.05, budget_s=0.25)


def _fingerprint(call: KernelCall, options: MeasureOptions) -> str:
    from ...measurement.fingerprint import compile_fingerprint

    return compile_fingerprint(call, options)


class ProgramLog:
    """A programs pass in this process: each test's kernels' fingerprints by label, and why a test stopped before
    its end, where one did. With ``defer`` (a serving process preparing a round) each call is also kept, to be made
    later with nothing else running."""

    def __init__(self, defer: bool = False) -> None:
        self.kernels: dict[str, dict[str, str]] = {}
        self.stopped: dict[str, str] = {}
        self.defer = defer
        # per test: how to restart its labels, and its calls
        self.deferred: dict[str, tuple[Callable[[], None], list[Callable[[], Any]]]] = {}

    def later(self, site: CallSite) -> None:
        self.deferred.setdefault(site.nodeid, (site.restart, []))[1].append(site.again)

    def add(self, nodeid: str, label: str, fingerprint: str) -> None:
        self.kernels.setdefault(nodeid, {})[label] = fingerprint

    def stop(self, nodeid: str, why: str) -> None:
        self.stopped.setdefault(nodeid, why)


class NotMeasured:
    """What ``roofline(...)`` returns in a programs pass, where nothing is measured: reading anything of it stops the
    test (the comparison then times that test's kernels in its rounds instead of trusting what it saw)."""

    def __init__(self, label: str, stop: Callable[[], NoReturn]) -> None:
        self._label = label
        self._stop = stop

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("__"):  # a protocol probe (numpy's __array__, copy's hooks), not a read of the result
            raise AttributeError(name)
        self._stop()

    def __repr__(self) -> str:
        return f"<{self._label}: not measured (programs pass)>"


@dataclass
class KeptKernel:
    """A kernel a side measures again: its call and settings, and where the measurement keeps its compiled program
    and inputs (``kept``: a :class:`~pytest_roofline.measurement.pipeline.Keeper`)."""

    call: KernelCall
    options: MeasureOptions
    kept: Any = None


class AbMode(Mode):
    """A side's process: each kernel measured once with :data:`ONCE_TIMING` and calibrated ceilings where live ones
    would be used (a live reference kernel keeps its buffers' placement in a long-lived process, an offset that would
    tilt every round of one side; the two sides measured seconds apart cancel the machine's drift instead)."""

    measure_once = True

    def __init__(self, programs: ProgramLog | None = None,
                 fingerprint: Callable[[KernelCall, MeasureOptions], str] = _fingerprint, *,
                 keeps: bool = False) -> None:
        self.programs = programs  # set: a programs pass, nothing measured
        self.keeps = keeps  # a serving process: each kernel's program kept to measure again
        self.kept: dict[str, KeptKernel] = {}  # "nodeid::label": to measure again (see :meth:`release`)
        self._fingerprint = fingerprint
        self._ceilings: str | None = None

    @property
    def stands_in(self) -> str:
        return "programs pass: each kernel compiled and fingerprinted, nothing timed" if self.programs else ""

    def settings(self, base: GivenSettings, given: GivenSettings,
                 ceilings_mode: Callable[[], str]) -> GivenSettings:
        base = ONCE_TIMING.over(base)
        if given.ceilings is not None or base.ceilings not in ("auto", "live"):
            return base
        if self._ceilings is None:
            self._ceilings = ceilings_mode()
        return GivenSettings(ceilings="calibrated").over(base) if self._ceilings == "live" else base

    def keeper(self, key: str, call: KernelCall, options: MeasureOptions) -> KeptKernel | None:
        if not self.keeps:
            return None
        kept = self.kept.get(key)
        if kept is None or kept.call is not call:
            kept = self.kept[key] = KeptKernel(call, options)
        return kept

    def remeasure(self, session: Any, key: str) -> Result:
        """Measure a kernel of this process again: its compiled program, on the inputs its first measurement kept,
        with the same settings (``session``: the plugin's RooflineSession)."""
        kept = self.kept[key]
        return session.measure(kept.call, kept.options, key)  # type: ignore[no-any-return]

    def release(self, nodeid: str) -> None:
        """A test this process will not measure again: its kernels' compiled programs and the host copies of their
        inputs go."""
        for key in [k for k in self.kept if k.startswith(f"{nodeid}::")]:
            del self.kept[key]

    def stand_in(self, site: CallSite) -> Any:
        """Compile the kernel, log its fingerprint, time nothing; the value returned stops the test (a skip) where
        the test reads it."""
        log = self.programs
        assert log is not None
        if log.defer:  # made again later, the same call with the same inputs
            log.later(site)
        found = ""
        try:
            found = self._fingerprint(site.call, site.options)
        except Exception as exc:  # noqa: BLE001 - the timed rounds measure it and show its error
            log.stop(site.nodeid, f"{site.label} did not compile: {exception_text(exc)}")
        log.add(site.nodeid, site.label, found)

        def stop() -> NoReturn:
            why = f"it reads the result of {site.label}, which the programs pass does not measure"
            log.stop(site.nodeid, why)
            site.stop(f"roofline: programs pass: {why}")

        return NotMeasured(site.label, stop)


class ProgramsPassWriter:
    """A programs pass in processes of its own: the tests that use roofline (``uses``), which of them failed, and at
    the end the JSON file of every such test's kernels' fingerprints
    (:class:`~pytest_roofline.ab.same_programs.ProgramsPass`)."""

    def __init__(self, path: str, log: ProgramLog, uses: Callable[[Any], bool]) -> None:
        self._path = path
        self._log = log
        self._uses = uses
        self._tests: list[str] = []
        self._failed: dict[str, str] = {}
        self._ran: set[str] = set()  # tests pytest reported on (-x, --maxfail or a Ctrl-C leave others unrun)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._tests = [item.nodeid for item in session.items if self._uses(item)]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._ran.add(report.nodeid)
        if report.failed:
            self._failed.setdefault(report.nodeid, f"it failed in its {report.when}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        found = programs_found(self._tests, self._log, self._failed, self._ran)
        worker = os.environ.get("PYTEST_XDIST_WORKER")  # each xdist worker its own file, merged by ab
        path = f"{self._path}.{worker}" if worker else self._path
        write_text_atomic(path, json.dumps(found.to_dict(), indent=1) + "\n")


def programs_found(tests: Sequence[str], log: ProgramLog, failed: Mapping[str, str],
                   ran: Container[str]) -> ProgramsPass:
    """What a programs pass found: each of ``tests`` (those that use roofline) with its kernels' fingerprints and
    why it stopped before its end (it read a result, it ``failed``, or it never ``ran``); the device."""
    found = {}
    for nodeid in tests:
        stopped = (log.stopped.get(nodeid) or failed.get(nodeid, "")
                   or ("" if nodeid in ran else "it did not run (the session stopped before it)"))
        found[nodeid] = ProgramsOfTest(nodeid, log.kernels.get(nodeid, {}), not stopped, stopped)
    jax = sys.modules.get("jax")  # imported where a kernel was compiled
    device = str(jax.devices()[0].device_kind) if jax is not None and log.kernels else ""
    return ProgramsPass(found, device)


@pytest.hookimpl(trylast=True, optionalhook=True)  # a serving process's own mode (server.py) goes first; the
# plugin may be disabled (-p no:roofline): then no hook asks
def pytest_roofline_mode(config: pytest.Config) -> Mode | None:
    """The mode the driver's task asks for, in every process of the side (xdist's workers too); the programs pass's
    file written at the end."""
    task = _task()
    if task is not None and task.task == "programs":
        from ..hooks import uses_roofline

        log = ProgramLog()
        config.pluginmanager.register(ProgramsPassWriter(task.path, log, uses_roofline), "roofline-programs-pass")
        return AbMode(programs=log)
    if task is not None and task.task == "once":
        return AbMode()
    return None


def _task() -> SideTask | None:
    try:
        return task_from(os.environ)
    except ProtocolError as exc:
        raise pytest.UsageError(f"pytest-roofline ab: {exc}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> bool | None:
    """The process of the head that ab starts once its verdicts are in (its task ``verdicts``): the comparison
    handed to the suite's ``pytest_roofline_ab`` hooks, and nothing collected."""
    task = _task()
    if task is None or task.task != "verdicts":
        return None
    path = task.path
    hook = getattr(session.config.hook, "pytest_roofline_ab", None)  # absent where the plugin is disabled
    if hook is not None:
        with open(path, encoding="utf-8") as file:
            hook(config=session.config, comparison=json.load(file))
    session.items = []
    return True
