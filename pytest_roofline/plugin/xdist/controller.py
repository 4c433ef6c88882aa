"""The controller's side of pytest-xdist: each worker hands its records in with every test's last report (so a run
cancelled by SIGTERM or Ctrl-C, or a worker that dies, keeps every kernel measured in a finished test), and the
rest when it goes down; a worker lost before its end is said in the summary; how workers share a CPU is said once
at the start. Each worker measures one kernel at a time on a CPU (:class:`OneTestAtATime`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["XdistHooks", "OneTestAtATime", "HANDOFF"]

# The attribute of a test's teardown report that carries a worker's records (xdist sends a report's own attributes
# to the controller with it).
HANDOFF = "roofline_handoff"


class XdistHooks:
    """``take(output)`` merges a worker's output into the plugin's session (activating it) and says whether it held
    anything; ``cpu_workers()`` is how workers share a CPU ("" with accelerators)."""

    def __init__(self, config: pytest.Config, take: Callable[[dict[str, Any]], bool],
                 cpu_workers: Callable[[], str]) -> None:
        self.config = config
        self.take = take
        self.cpu_workers = cpu_workers
        self.handed: dict[str, int] = {}  # per worker, the kernels handed in test by test
        self.lost: list[str] = []

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        workers = getattr(self.config.option, "numprocesses", None)
        if hasattr(self.config, "workerinput") or not isinstance(workers, int) or workers < 2:
            return
        from .workers import cpu_workers_line

        mode = self.cpu_workers()
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if mode and reporter is not None:
            reporter.write_line(cpu_workers_line(workers, os.cpu_count() or 1, mode))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        handed = getattr(report, HANDOFF, None)
        if not handed or hasattr(self.config, "workerinput"):
            return
        output = json.loads(handed)
        self.take(output)
        node = getattr(report, "node", None)  # the worker that ran it, as xdist attaches it
        worker = str(node.gateway.id) if node is not None else ""
        self.handed[worker] = self.handed.get(worker, 0) + len(json.loads(output["roofline_records"]))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {})
        if "roofline_records" in output:  # else that worker measured nothing: the plugin slept there
            self.take(output)
        if error is not None:
            kept = self.handed.get(str(node.gateway.id), 0)
            self.lost.append(f"roofline: xdist worker {node.gateway.id} went down before its end ({error}): the "
                             f"{kept} kernel(s) it measured in the tests it finished are in the summary and the "
                             f"report; a kernel of the test it was running is not")

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.lost:  # nothing of the report's text imported by a run that never measured
            return
        from ...report.text import wrap_lines

        for line in wrap_lines(self.lost):
            terminalreporter.write_line(line, yellow=True)


class OneTestAtATime:
    """An xdist worker on a CPU: each test holds the host's activity lock shared, so that a measurement (which
    holds it alone) never runs beside another worker's test."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        from ..lock import around_a_test

        with around_a_test():
            return (yield)
