"""One side of ``pytest-roofline ab`` as a long-lived pytest process: it collects the selected tests once, then runs
the test it is asked for, as often as asked, and answers with the kernels that test measured.

Loaded by ``ab_child.py --serve`` as a plugin object. The requests come on one pipe and the answers go on another,
one JSON object per line (pytest's own output goes to the process's stdout, which the comparison keeps for error
messages)::

    -> {"items": [nodeid, ...]}                       once, after collection (and preparation)
    <- {"prepare": [nodeid, ...]}                      the first pair only: prepare these (-> {"prepared": true})
    <- {"run": nodeid}                                 run that test again (its fixtures set up and torn down)
    -> {"records": [...], "unmeasured": [...], "seconds": s}
    <- {"quit": true}                                  or the pipe closed: the session ends as pytest's would

Every roofline measurement in this process is made once (no second measurement of a shortfall, no trace saved
for a failure): the comparison judges the ratio of the two sides round by round, not each test's verdict. The first
run of a test runs it as pytest does; each of its kernels keeps its compiled program and inputs, and later runs
measure those kernels again, in the test's order and with its settings, without running the test's body (which
would build its inputs again). A test that could not measure a kernel the first time is run whole every time.

With ``prepare`` the process first finds its hardware (calibrating a CPU unless cached) and says so
(``-> {"hardware": name}``), then runs every test before its ``items`` line with each ``roofline(...)`` call
compiled and kept, nothing timed (a programs pass that defers its calls: :class:`.session.ProgramLog`); the first
request for a test makes its kept calls, in order. The two sides can then prepare at the same time, and a round
only measures. The first pair of a comparison (``first``) runs every test once without keeping its calls (one
test's inputs held at a time, as a programs pass in processes of its own would), says what it found with its
items (``"programs"``: each test's kernels' fingerprints), and then prepares only the tests the driver chose (those
whose programs differ between the sides). A test that stopped (it reads a result, or failed) is run whole when
asked. Such a process serves one round: what a test measured is not kept for another, and its inputs are freed
once it has measured.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import IO, Any

import pytest

from ..analysis.runs.time_spent import Stopwatch
from ..base.errors import MeasureError
from ..history.programs import ProgramsPass
from ..records.kernel_record import KernelRecord, Unmeasured
from ..records.recorded_result import RecordedResult
from .hooks import activate, uses_roofline
from .session import ProgramLog, Replayer, programs_found

__all__ = ["AbServer"]


class AbServer:
    """The plugin: replaces pytest's run loop with the request loop."""

    def __init__(self, requests_fd: int, answers_fd: int, prepare: bool = False, first: bool = False) -> None:
        self._requests: IO[str] = os.fdopen(requests_fd, "r", encoding="utf-8")
        self._answers: IO[str] = os.fdopen(answers_fd, "w", encoding="utf-8")
        self._kept: dict[str, list[KernelRecord]] = {}  # per test: its kernels' records, to measure them again
        self._prepare = prepare
        self._first = first  # the first pair of a comparison: a programs pass of every test, then prepare the chosen
        self._prepared: dict[str, tuple[Replayer, list[Callable[[], Any]]]] = {}  # per test: its deferred calls
        self._failed: dict[str, str] = {}  # tests that failed while being prepared, and in which step
        self._ran: set[str] = set()  # tests pytest reported on

    def _say(self, message: dict[str, Any]) -> None:
        self._answers.write(json.dumps(message) + "\n")
        self._answers.flush()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            count = session.testsfailed  # as pytest's own run loop stops
            raise session.Interrupted(f"{count} error{'s' if count != 1 else ''} during collection")
        roofline = activate(session.config)
        items = {item.nodeid: item for item in session.items}
        if self._prepare:
            self._say({"hardware": _hardware_name(roofline)})
        if self._prepare and self._first:
            found = self._pass(session.items, roofline, defer=False)  # one test's inputs at a time
            self._say({"items": list(items), "programs": found.to_dict()})
            chosen = json.loads(self._requests.readline() or '{"quit": true}')
            if chosen.get("quit"):
                return True
            self._pass([items[n] for n in chosen.get("prepare") or () if n in items], roofline, defer=True)
            self._say({"prepared": True})
        elif self._prepare:
            self._pass(session.items, roofline, defer=True)
            self._say({"items": list(items)})
        else:
            self._say({"items": list(items)})
        roofline.once = True
        for line in self._requests:
            request = json.loads(line)
            if request.get("quit"):
                break
            item = items.get(str(request.get("run")))
            if item is None:
                self._say({"error": f"no collected test {request.get('run')!r}"})
                continue
            kept = self._kept.get(item.nodeid)
            self._say(self._again(kept, roofline) if kept else self._run(item, roofline))
        return True

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._ran.add(report.nodeid)
        if report.failed:
            self._failed.setdefault(report.nodeid, f"it failed in its {report.when}")

    def _pass(self, items: list[pytest.Item], roofline: Any, *, defer: bool) -> ProgramsPass:
        """Run each of ``items`` with its calls compiled, nothing timed; with ``defer``, keep the calls of those that
        ran to their end (and their inputs, until measured). What it found is a programs pass: the first pair's
        tells the driver which tests have the same programs on both sides, to be left out of the rounds."""
        log = roofline.programs = ProgramLog(defer=defer)
        state = getattr(items[0].session, "_setupstate", None) if items else None
        if state is not None:  # a second pass: what the first left set up and the next test does not share goes
            state.teardown_exact(items[0])
        try:
            for index, item in enumerate(items):
                # the last keeps its module's and the session's fixtures, as a run of _run does
                nextitem = items[index + 1] if index + 1 < len(items) else item.parent
                item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        finally:
            roofline.programs = None
        for nodeid, deferred in log.deferred.items():
            if nodeid not in log.stopped and nodeid not in self._failed:
                self._prepared[nodeid] = deferred
        return programs_found([i.nodeid for i in items if uses_roofline(i)], log, self._failed, self._ran)

    def _run(self, item: pytest.Item, roofline: Any) -> dict[str, Any]:
        """Make a prepared test's calls, or run ``item`` as pytest would, keeping the fixtures of wider scope
        (module, session) for its next run; what it measured."""
        records, unmeasured = len(roofline.records), len(roofline.unmeasured)
        start = time.perf_counter()
        prepared = self._prepared.pop(item.nodeid, None)
        if prepared is not None:
            fixture, calls = prepared
            try:
                fixture.replay(calls)
            except (pytest.fail.Exception, pytest.skip.Exception):
                pass  # the test stopped where a run would have (a kernel below its threshold): what it measured
        else:
            # Tear down what the previous test set up and this one does not share (another module's fixtures), as
            # pytest does between two tests; then run it as pytest would with its own parent to come next.
            state = getattr(item.session, "_setupstate", None)
            if state is not None:
                state.teardown_exact(item)
            item.ihook.pytest_runtest_protocol(item=item, nextitem=item.parent)
        measured, failed = roofline.records[records:], roofline.unmeasured[unmeasured:]
        if self._prepare:  # a round's process measures each test once: its inputs go now, not at its end
            for r in measured:
                roofline.kept.pop(f"{r.nodeid}::{r.label}", None)
        elif measured and not failed and all(f"{r.nodeid}::{r.label}" in roofline.kept for r in measured):
            self._kept[item.nodeid] = list(measured)
        return {"records": [r.to_dict() for r in measured], "unmeasured": [u.to_dict() for u in failed],
                "seconds": time.perf_counter() - start}

    @staticmethod
    def _again(kept: list[KernelRecord], roofline: Any) -> dict[str, Any]:
        """Measure a test's kernels again on their kept programs and inputs; each record as the first run's, with
        the new measurement."""
        start = time.perf_counter()
        records: list[KernelRecord] = []
        unmeasured: list[Unmeasured] = []
        for record in kept:
            try:
                with Stopwatch() as watch:
                    result = roofline.remeasure(f"{record.nodeid}::{record.label}")
            except (MeasureError, ValueError) as exc:
                unmeasured.append(Unmeasured(record.nodeid, record.label, str(exc)))
                continue
            records.append(replace(record, result=RecordedResult.of(result),
                                   time_spent=watch.spent(rest="everything else")))
        return {"records": [r.to_dict() for r in records], "unmeasured": [u.to_dict() for u in unmeasured],
                "seconds": time.perf_counter() - start}


def _hardware_name(roofline: Any) -> str:
    """Find the hardware now, alone (a CPU's calibration is cached only when nothing else ran beside it); "" where
    it cannot be found (the first measurement then says why)."""
    try:
        return str(roofline.hardware()[0].name)
    except Exception:  # noqa: BLE001 - the measurement reports it, in the test it belongs to
        return ""
