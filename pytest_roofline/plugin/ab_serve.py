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
for a failure): the comparison judges the ratio of the two sides round by round, not each test's verdict.
"""

from __future__ import annotations

import json
import os
import time
from typing import IO, Any

import pytest

from .hooks import SESSION_KEY

__all__ = ["AbServer"]


class AbServer:
    """The plugin: replaces pytest's run loop with the request loop."""

    def __init__(self, requests_fd: int, answers_fd: int) -> None:
        self._requests: IO[str] = os.fdopen(requests_fd, "r", encoding="utf-8")
        self._answers: IO[str] = os.fdopen(answers_fd, "w", encoding="utf-8")

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
            self._say(self._run(item, roofline))
        return True

    @staticmethod
    def _run(item: pytest.Item, roofline: Any) -> dict[str, Any]:
        """Run ``item`` once, keeping the fixtures of wider scope (module, session) for its next run; what it
        measured."""
        records, unmeasured = len(roofline.records), len(roofline.unmeasured)
        start = time.perf_counter()
        # Tear down what the previous test set up and this one does not share (another module's fixtures), as
        # pytest does between two tests; then run it as pytest would with its own parent to come next.
        state = getattr(item.session, "_setupstate", None)
        if state is not None:
            state.teardown_exact(item)
        item.ihook.pytest_runtest_protocol(item=item, nextitem=item.parent)
        return {"records": [r.to_dict() for r in roofline.records[records:]],
                "unmeasured": [u.to_dict() for u in roofline.unmeasured[unmeasured:]],
                "seconds": time.perf_counter() - start}
