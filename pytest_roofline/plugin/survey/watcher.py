"""``--roofline-survey`` in pytest: a profile of each test's call, the programs it ran kept once each in the session's
book, the tests that ran a gated program below its threshold failed after their call, the table at the end. Thin: the
profile and its reading are :mod:`~pytest_roofline.measurement.survey`, the book and the gate
:mod:`~pytest_roofline.analysis.verdict.survey_book`, the table :mod:`~pytest_roofline.report.survey_report`.

No test's outcome changes but for the gate: where the profile cannot be read, the test stands and the summary says
so. A test that imports no JAX is not profiled.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from ...analysis.model.contention import contended, waiting_share
from ...analysis.verdict.survey_book import Sighting, SurveyBook, below, by_test, program_setting
from ...hardware.cpu import Contention, thread_times_ns
from ...hardware.per_device import pick_threshold
from .gates import stated_work

if TYPE_CHECKING:
    from ...analysis.model.recorded_profile import Work
    from ...hardware.spec import HardwareSpec
    from ...measurement.survey.sightings import Programs
    from ...measurement.survey.watch import Part
    from ..session import RooflineSession

__all__ = ["SurveyPlugin", "judged_nothing"]


def judged_nothing(state: RooflineSession, used: bool) -> str:
    """The line a run with a threshold says where nothing was judged: no test used the fixture or the marker, and no
    survey ran ("" otherwise)."""
    if state.records or state.unmeasured or used or state.survey is not None or "min" not in state.settings.origins:
        return ""
    return (f"roofline: {state.settings.origins['min']} judged nothing: no test used the roofline fixture or marker "
            f"(--roofline-survey measures every jitted program the tests run, and names those below it)")


class SurveyPlugin:
    def __init__(self, config: pytest.Config, session: Callable[[], RooflineSession], warning: type[Warning]) -> None:
        """``session``: the plugin's session, looked up each time (a conftest may put another in its place)."""
        self.config = config
        self._session = session
        self.book = SurveyBook()
        session().survey = self.book  # also on xdist's controller, which merges the workers' books into it
        # How long the test's threads ran and waited for a CPU, and how much of the machine other processes used
        # meanwhile (a test may fake either): its own threads waiting for each other is no neighbour.
        self.thread_times = thread_times_ns
        self.contention = Contention
        self.failures: dict[str, list[str]] = {}
        self._warning = warning
        self._spec: HardwareSpec | None = None
        self._known: Programs | None = None
        self._stated = stated_work(self.session.settings.programs)

    @property
    def session(self) -> RooflineSession:
        """The plugin's session, which holds the book (for the reports and xdist's controller)."""
        session = self._session()
        session.survey = self.book
        return session

    def _hardware(self) -> HardwareSpec | None:
        """The detected hardware's ceilings, found before the first test is profiled (a CPU calibrates then, where
        nothing of it is in a test's profile)."""
        if self._known is None:
            from ...measurement.survey.sightings import Programs

            self._known = Programs()
            try:
                self._spec, mode = self.session.hardware()
                self.book.hardware = f"{self._spec.name} ({'calibrated' if mode == 'live' else mode} ceilings)"
            except Exception as exc:  # noqa: BLE001 - the survey goes on with counts and times
                self.book.problems.append(f"hardware: {type(exc).__name__}: {exc}: counts and times only")
        return self._spec

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        if "jax" not in sys.modules:
            return (yield)
        spec = self._hardware()
        from ...measurement.survey.watch import watching

        context, others = watching(), self.contention()
        before, started = self.thread_times(), time.perf_counter()
        watch, _ = context.__enter__(), others.__enter__()
        try:
            return (yield)
        finally:
            others.__exit__(None, None, None)
            waited = contended(waiting_share(before, self.thread_times()), others.share)
            begun = time.perf_counter()
            context.__exit__(None, None, None)  # the profiler stops: part of the survey's cost
            self._read(item.nodeid, watch.parts, watch.problem, spec, waited)
            if watch.sampled:
                self.book.sampled[item.nodeid] = (watch.profiled_s, begun - started)
            self.book.reading_s += time.perf_counter() - begun

    def _read(self, nodeid: str, parts: list[Part], problem: str, spec: HardwareSpec | None,
              waited: bool) -> None:
        self.book.tests += 1
        if problem:
            self.book.problems.append(f"{nodeid}: {problem}")
        assert self._known is not None
        found, problems = _parts_read(parts, nodeid, spec, self._known, self._stated)
        found = [replace(s, contended=waited) for s in found]
        self.book.problems += problems
        if waited and found:
            self.book.contended.append(nodeid)
        for s in by_test(found):
            self.book.add(s)
            if not waited:  # a neighbour never fails a test: runs made while it held the CPUs are not judged
                self._judge(s, spec)

    def _judge(self, s: Sighting, spec: HardwareSpec | None) -> None:
        settings = self.session.settings
        gate, gated = program_setting(s.module, settings.programs, None)
        setting = gate.min if gated else settings.min
        picked = pick_threshold(setting, spec.name if spec else "", s.platform)
        if picked is None or picked.value is None or not below(s, picked.value):
            return
        fails = (gated or settings.survey_strict) and not settings.warn_only
        self.book.note_below(s, picked.value, picked.where, fails)
        line = (f"program {s.module} ran at {s.utilization:.1%} of its roofline here, below {picked.value:.0%} "
                f"({picked.where}): {s.bound}-bound, the median of {len(s.per_run_s)} run(s)"
                + (f"; top op {s.top_op}" if s.top_op else ""))
        if fails:
            self.failures.setdefault(s.nodeid, []).append(line)
        elif gated or settings.survey_strict:
            warnings.warn(self._warning(f"roofline survey: {line}"), stacklevel=2)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        lines = self.failures.pop(item.nodeid, None) if call.when == "call" else None
        if lines and report.passed:
            report.outcome = "failed"
            report.longrepr = "\n".join(["roofline survey: a program this test ran is below its threshold", *lines])
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self.session  # noqa: B018 - the book into the session, which reports it (and hands it to xdist's controller)

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if hasattr(config, "workerinput"):
            return
        from ...report.survey_report import survey_lines

        terminalreporter.write_sep("=", "roofline survey (worst first by time lost)")
        for line in survey_lines(self.book, every=int(config.getoption("verbose", 0) or 0) >= 1):
            terminalreporter.write_line(line)


def _parts_read(parts: list[Part], nodeid: str, spec: HardwareSpec | None, known: Programs,
                stated: Callable[[str, str], Work | None]) -> tuple[list[Sighting], list[str]]:
    """A test's programs over the parts of its profile, and what could not be read; a program whose only runs lay at a
    sampled window's edge, in every part that held it, is said so."""
    from ...measurement.survey.sightings import read_sightings

    found: list[Sighting] = []
    problems: list[str] = []
    at_edges: dict[str, None] = {}
    for part in parts:
        try:
            read = read_sightings(part.xspace, nodeid, spec, known, stated, cut=part.cut)
        except Exception as exc:  # noqa: BLE001 - a profile the survey cannot read changes no test's outcome
            problems.append(f"{nodeid}: the profile could not be read: {type(exc).__name__}: {exc}")
            continue
        found += read.found
        problems += read.problems
        at_edges.update(dict.fromkeys(read.at_edges))
    seen = {s.module for s in found}
    problems += [f"{nodeid}: {name}: not counted: its only runs seen lay at the edge of a sampled window, where a run "
                 "may be cut short" for name in at_edges if name not in seen]
    return found, problems
