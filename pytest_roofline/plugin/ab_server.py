"""One side of ``pytest-roofline ab`` as a long-lived pytest process: it collects the selected tests once, then runs
the test it is asked for, as often as asked, and answers with the kernels that test measured.

Loaded by ``ab_child.py --serve`` as a plugin object. The requests come on one pipe and the answers go on another,
one JSON object per line (pytest's own output goes to the process's stdout, which the comparison keeps for error
messages)::

    -> {"items": [nodeid, ...]}                       once, after collection
    <- {"run": nodeid}                                 run that test again (its fixtures set up and torn down)
    -> {"records": [...], "unmeasured": [...], "seconds": s}
    <- {"quit": true}                                  or the pipe closed: the session ends as pytest's would

Every roofline measurement in this process is made once (no second measurement of a shortfall, no trace saved
for a failure): the comparison judges the ratio of the two sides round by round, not each test's verdict. The first
run of a test runs it as pytest does; each of its kernels keeps its compiled program and inputs, and later runs
measure those kernels again, in the test's order and with its settings, without running the test's body (which
would build its inputs again). A test that could not measure a kernel the first time is run whole every time.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from typing import IO, Any

import pytest

from ..analysis.runs.time_spent import Stopwatch
from ..base.errors import MeasureError
from ..records.kernel_record import KernelRecord, Unmeasured
from ..records.recorded_result import RecordedResult
from .hooks import SESSION_KEY

__all__ = ["AbServer"]


class AbServer:
    """The plugin: replaces pytest's run loop with the request loop."""

    def __init__(self, requests_fd: int, answers_fd: int) -> None:
        self._requests: IO[str] = os.fdopen(requests_fd, "r", encoding="utf-8")
        self._answers: IO[str] = os.fdopen(answers_fd, "w", encoding="utf-8")
        self._kept: dict[str, list[KernelRecord]] = {}  # per test: its kernels' records, to measure them again

    def _say(self, message: dict[str, Any]) -> None:
        self._answers.write(json.dumps(message) + "\n")
        self._answers.flush()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            count = session.testsfailed  # as pytest's own run loop stops
            raise session.Interrupted(f"{count} error{'s' if count != 1 else ''} during collection")
        roofline = session.config.stash[SESSION_KEY]
        roofline.once = True
        items = {item.nodeid: item for item in session.items}
        self._say({"items": list(items)})
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

    def _run(self, item: pytest.Item, roofline: Any) -> dict[str, Any]:
        """Run ``item`` as pytest would, keeping the fixtures of wider scope (module, session) for its next run;
        what it measured."""
        records, unmeasured = len(roofline.records), len(roofline.unmeasured)
        start = time.perf_counter()
        # Tear down what the previous test set up and this one does not share (another module's fixtures), as
        # pytest does between two tests; then run it as pytest would with its own parent to come next.
        state = getattr(item.session, "_setupstate", None)
        if state is not None:
            state.teardown_exact(item)
        item.ihook.pytest_runtest_protocol(item=item, nextitem=item.parent)
        measured, failed = roofline.records[records:], roofline.unmeasured[unmeasured:]
        if measured and not failed and all(f"{r.nodeid}::{r.label}" in roofline.kept for r in measured):
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
