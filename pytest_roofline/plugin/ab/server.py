"""One side of ``pytest-roofline ab`` as a serving pytest process: it collects the selected tests once, then runs
the test it is asked for, as often as asked, and answers with the kernels that test measured. The messages are
:mod:`pytest_roofline.ab.protocol`'s, the first a ``hello`` with its version; pytest's own output goes to the process's
stdout, which the comparison keeps for error messages.

Loaded by ``child.py --serve`` as a plugin object (:func:`serving`), it installs :class:`.side_modes.AbMode` through the
``pytest_roofline_mode`` hook: every measurement is made once (the comparison judges the ratio of the two sides round
by round, not each test's verdict). The first run of a test runs it as pytest does; each of its kernels keeps its
compiled program and inputs, and later runs measure those kernels again, in the test's order and with its settings,
without running the test's body (which would build its inputs again). A test that could not measure a kernel the
first time is run whole every time.

With ``prepare`` the process first finds its hardware (calibrating a CPU unless cached) and says so, then runs every
test before its ``items`` with each ``roofline(...)`` call compiled and kept, nothing timed (a programs pass that
defers its calls); the first request for a test makes its kept calls, in order. The two sides can then prepare at
the same time, and a round only measures. The first pair of a comparison (``first``) runs every test once without
keeping its calls (one test's inputs held at a time), says what it found with its items (each test's kernels'
fingerprints), and then prepares only the tests the driver asks for (those whose programs differ between the sides).
A test that stopped (it reads a result, or failed) is run whole when asked. Such a process serves one round: what a
test measured is not kept for another, and its inputs are freed once it has measured.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import IO, Any

import pytest

from ...ab.protocol import (
    REQUESTS,
    VERSION,
    Failed,
    Go,
    Hardware,
    Hello,
    Items,
    Measured,
    Message,
    Prepare,
    Prepared,
    ProtocolError,
    Quit,
    RunTest,
    decode,
    encode,
)
from ...ab.same_programs import ProgramsPass
from ...analysis.runs.time_spent import Stopwatch
from ...base.errors import MeasureError
from ...records.kernel_record import KernelRecord, Unmeasured
from ...result.recorded_result import RecordedResult
from ..hooks import activate, uses_roofline
from ..mode import Mode
from ..session import RooflineSession
from .side_modes import AbMode, ProgramLog, programs_found

__all__ = ["AbServer", "serving"]

DRIVER = "the comparison"  # who sends the requests, as an error names it


def serving(spec: str) -> AbServer:
    """The plugin of a serving process from the ``--serve`` argument of ``child.py``:
    ``REQUESTS_FD,ANSWERS_FD[,prepare][,first][,wait]``. It says hello with its protocol version at once."""
    requests_fd, answers_fd, *flags = spec.split(",")
    unknown = set(flags) - {"prepare", "first", "wait"}
    if unknown:
        raise SystemExit(f"pytest-roofline ab: --serve={spec}: unknown flag {sorted(unknown)[0]!r}")
    return AbServer(int(requests_fd), int(answers_fd), prepare="prepare" in flags, first="first" in flags,
                    wait="wait" in flags)


class AbServer:
    """The plugin: installs the mode and replaces pytest's run loop with the request loop."""

    def __init__(self, requests_fd: int, answers_fd: int, *, prepare: bool = False, first: bool = False,
                 wait: bool = False) -> None:
        self._requests: IO[str] = os.fdopen(requests_fd, "r", encoding="utf-8")
        self._answers: IO[str] = os.fdopen(answers_fd, "w", encoding="utf-8")
        # A preparing process measures each test once a round: nothing to keep (its programs are compiled already)
        self._mode = AbMode(keeps=not prepare)
        self._kept: dict[str, list[KernelRecord]] = {}  # per test: its kernels' records, to measure them again
        self._prepare = prepare
        self._first = first  # the first pair of a comparison: a programs pass of every test, then prepare the chosen
        self._wait = wait  # find the hardware only once told to go (the other process has found its own)
        self._prepared: dict[str, tuple[Any, list[Any]]] = {}  # per test: its restart and its deferred calls
        self._failed: dict[str, str] = {}  # tests that failed while being prepared, and in which step
        self._ran: set[str] = set()  # tests pytest reported on
        self._listening = True  # whether a pytest_roofline_ab hook is implemented here: said with the items
        self._say(Hello(VERSION))

    def _say(self, message: Message) -> None:
        self._answers.write(encode(message))
        self._answers.flush()

    def _request(self) -> Message:
        """The next request; Quit where the pipe closed."""
        line = self._requests.readline()
        return decode(line, REQUESTS, DRIVER) if line else Quit()

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_roofline_mode(self, config: pytest.Config) -> Mode:
        return self._mode

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            count = session.testsfailed  # as pytest's own run loop stops
            raise session.Interrupted(f"{count} error{'s' if count != 1 else ''} during collection")
        roofline = activate(session.config)
        self._listening = _listening(session.config)
        items = {item.nodeid: item for item in session.items}
        if self._prepare:
            if self._wait and not self._go():
                return True
            self._say(Hardware(_hardware_name(roofline)))
        if self._first:  # the first pair: a programs pass of every test, then the tests to time prepared
            if not self._first_pass(session.items, roofline):
                return True
        else:
            if self._prepare:  # every test's calls compiled and kept, nothing timed
                self._pass(session.items, roofline, defer=True)
            self._say(Items(tuple(items), listening=self._listening))
        self._serve(items, roofline)
        return True

    def _go(self) -> bool:
        """Wait until the driver says go (False where it asks to quit instead)."""
        request = self._request()
        if isinstance(request, Quit):
            return False
        if not isinstance(request, Go):
            raise ProtocolError(f"{DRIVER} sent {request.kind!r} where a waiting process waits for go")
        return True

    def _first_pass(self, items: list[pytest.Item], roofline: RooflineSession) -> bool:
        """The first pair's process: a programs pass of every test (one test's inputs at a time), said with the items;
        then the tests the driver asks for prepared. False where it is asked to quit instead."""
        found = self._pass(items, roofline, defer=False)
        self._say(Items(tuple(i.nodeid for i in items), found, self._listening))
        request = self._request()
        if isinstance(request, Quit):
            return False
        if not isinstance(request, Prepare):
            raise ProtocolError(f"{DRIVER} sent {request.kind!r} where a first pair's process waits for prepare")
        chosen = set(request.nodeids)
        self._pass([i for i in items if i.nodeid in chosen], roofline, defer=True)
        self._say(Prepared())
        return True

    def _serve(self, items: dict[str, pytest.Item], roofline: RooflineSession) -> None:
        """Run each test asked for until asked to quit (or the pipe closes)."""
        while not isinstance(request := self._request(), Quit):
            if not isinstance(request, RunTest):
                self._say(Failed(f"{request.kind!r} is asked once, before any test runs"))
                continue
            item = items.get(request.nodeid)
            if item is None:
                self._say(Failed(f"no collected test {request.nodeid!r}"))
                continue
            kept = self._kept.get(item.nodeid)
            self._say(self._again(kept, roofline) if kept else self._run(item, roofline))
            if request.last:  # its kernels' programs and inputs go now, not at the process's end
                self._kept.pop(item.nodeid, None)
                self._mode.release(item.nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._ran.add(report.nodeid)
        if report.failed:
            self._failed.setdefault(report.nodeid, f"it failed in its {report.when}")

    def _pass(self, items: list[pytest.Item], roofline: RooflineSession, *, defer: bool) -> ProgramsPass:
        """Run each of ``items`` with its calls compiled, nothing timed; with ``defer``, keep the calls of those that
        ran to their end (and their inputs, until measured). What it found is a programs pass: the first pair's
        tells the driver which tests have the same programs on both sides, to be left out of the rounds."""
        log = self._mode.programs = ProgramLog(defer=defer)
        if items:  # a second pass: what the first left set up and the next test does not share goes
            _tear_down_to(items[0])
        try:
            for index, item in enumerate(items):
                # the last keeps its module's and the session's fixtures, as a run of _run does
                nextitem = items[index + 1] if index + 1 < len(items) else item.parent
                item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        finally:
            self._mode.programs = None
        for nodeid, deferred in log.deferred.items():
            if nodeid not in log.stopped and nodeid not in self._failed:
                self._prepared[nodeid] = deferred
        return programs_found([i.nodeid for i in items if uses_roofline(i)], log, self._failed, self._ran)

    def _run(self, item: pytest.Item, roofline: RooflineSession) -> Measured:
        """Make a prepared test's calls, or run ``item`` as pytest would, keeping the fixtures of wider scope
        (module, session) for its next run; what it measured."""
        records, unmeasured = len(roofline.records), len(roofline.unmeasured)
        start = time.perf_counter()
        prepared = self._prepared.pop(item.nodeid, None)
        if prepared is not None:
            restart, calls = prepared
            restart()
            try:
                for call in calls:
                    call()
            except (pytest.fail.Exception, pytest.skip.Exception):
                pass  # the test stopped where a run would have (a kernel below its threshold): what it measured
        else:
            _tear_down_to(item)
            item.ihook.pytest_runtest_protocol(item=item, nextitem=item.parent)
        measured, failed = roofline.records[records:], roofline.unmeasured[unmeasured:]
        # a preparing process measures each test once a round and keeps nothing; a long-lived one keeps what it can
        # measure again
        if measured and not failed and all(f"{r.nodeid}::{r.label}" in self._mode.kept for r in measured):
            self._kept[item.nodeid] = list(measured)
        return Measured(tuple(measured), tuple(failed), time.perf_counter() - start)

    def _again(self, kept: list[KernelRecord], roofline: RooflineSession) -> Measured:
        """Measure a test's kernels again on their kept programs and inputs; each record as the first run's, with
        the new measurement."""
        start = time.perf_counter()
        records: list[KernelRecord] = []
        unmeasured: list[Unmeasured] = []
        for record in kept:
            try:
                with Stopwatch() as watch:
                    result = self._mode.remeasure(roofline, f"{record.nodeid}::{record.label}")
            except (MeasureError, ValueError) as exc:
                unmeasured.append(Unmeasured(record.nodeid, record.label, str(exc)))
                continue
            records.append(replace(record, result=RecordedResult.of(result),
                                   time_spent=watch.spent(rest="everything else")))
        return Measured(tuple(records), tuple(unmeasured), time.perf_counter() - start)


def _listening(config: pytest.Config) -> bool:
    """Whether a pytest_roofline_ab hook is implemented here (a conftest's or a plugin's)."""
    hook = getattr(config.hook, "pytest_roofline_ab", None)
    return hook is not None and bool(hook.get_hookimpls())


def _tear_down_to(item: pytest.Item) -> None:
    """Tear down what the previous test set up and ``item`` does not share (another module's fixtures), as pytest
    does between two tests, so that ``item`` can run next. pytest offers no public call for this: where its
    SetupState is not there, nothing is torn down and pytest's own check stops the run."""
    state = getattr(item.session, "_setupstate", None)
    if state is not None:
        state.teardown_exact(item)


def _hardware_name(roofline: RooflineSession) -> str:
    """Find the hardware now, alone (a CPU's calibration is cached only when nothing else ran beside it); "" where
    it cannot be found (the first measurement then says why)."""
    try:
        return str(roofline.hardware()[0].name)
    except Exception:  # noqa: BLE001 - the measurement reports it, in the test it belongs to
        return ""
