"""One pytest process's run of the plugin (:class:`PluginRun`): asleep until something asks for it, then its session
(:class:`~.session.RooflineSession`); what the run collected, ran and judged nothing; what its end wrote. Every hook
of :mod:`.hooks` hands off to it in a line or two. Imported at start-up with the hooks: it imports nothing more of the
plugin until a method needs it.
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from .options import OPTIONS

if TYPE_CHECKING:
    from .abort_watch import AbortWatch
    from .fixture import RooflineFixture
    from .marker import MarkerSpec
    from .session import RooflineSession
    from .settings import Settings

__all__ = ["PluginRun", "RooflineWarning", "RUN_KEY", "plugin_run", "uses_roofline"]

MARKER_KEY: pytest.StashKey[MarkerSpec] = pytest.StashKey()  # a test's marker, read at collection
MARKER_ERROR_KEY = pytest.StashKey[str]()  # a bad marker under an xdist worker: the test errors at setup
_NOTHING = "roofline_marked_but_measured_nothing"


class RooflineWarning(UserWarning):
    """A kernel below its threshold under --roofline-warn-only."""


def uses_roofline(item: pytest.Item) -> bool:
    return "roofline" in getattr(item, "fixturenames", ()) or item.get_closest_marker("roofline") is not None


class PluginRun:
    """The plugin in one pytest process: its session once active, and the run's state. Registered as a plugin of
    its own for the tests' reports (with xdist, the controller hears of every worker's tests)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.session: RooflineSession | None = None  # once active (:meth:`activate`)
        self.used = False  # a collected test (or a worker's records) used the fixture or the marker
        self.collected = False  # collection went through to its end
        self.ran = 0  # tests that ran to the end (their teardown reported)
        self.judged_nothing: list[str] = []  # tests whose roofline marker judged nothing: no kernel was measured
        self.written: list[str] = []  # what the session's end wrote, said in the summary
        self.report_errors: list[str] = []  # a report hook that raised, a report not written
        self.watch: AbortWatch | None = None

    def configured(self) -> bool:
        """Whether anything asks for the plugin at start-up: an option, an ini value, an environment variable, or
        a plugin that installs a mode (``pytest_roofline_mode``: ``pytest-roofline ab``'s processes)."""
        config = self.config
        return (any(config.getoption(f"roofline_{opt.name}") is not None or config.getini(opt.ini)
                    or os.environ.get(opt.env) for opt in OPTIONS)
                or bool(config.hook.pytest_roofline_mode.get_hookimpls()))

    def activate(self) -> RooflineSession:
        """The plugin's session, started on first need (at start-up where configured, else when a collected test
        uses the fixture or the marker, or an xdist worker hands in records): settings resolved and checked, the
        dependency floors, the signals that end a run as Ctrl-C does, the abort watch."""
        if self.session is not None:
            return self.session
        from ..base.signals import cancel_as_interrupt
        from .mode import PLAIN
        from .session import RooflineSession
        from .settings import ConfigError
        from .user_hooks import ConftestHooks

        config = self.config
        config.add_cleanup(cancel_as_interrupt())
        self._prepare_process()
        try:
            settings = self._resolve_settings()
            session = RooflineSession.start(settings, self._trace_root, lambda text: (
                config.issue_config_time_warning(RooflineWarning(text), stacklevel=2)),
                config.hook.pytest_roofline_mode(config=config) or PLAIN, ConftestHooks(config, settings))
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        # The option reads the effective value, whichever of option, ini, env or YAML set it, so that a test's
        # own condition (e.g. an xfail that holds unless verdicts are warnings) agrees with the plugin.
        config.option.roofline_warn_only = session.settings.warn_only
        self.session, self.used = session, False
        self._extra_plugins(session)
        return session

    def _extra_plugins(self, session: RooflineSession) -> None:
        """The survey's watcher where asked for; an xdist worker that runs one test at a time where it is alone."""
        config = self.config
        if session.settings.survey:
            from .survey.watcher import SurveyPlugin

            config.pluginmanager.register(SurveyPlugin(config, self.activate, RooflineWarning), "roofline-survey")
        # An xdist worker itself (it has ``workerinput``), not a pytest its test starts, which inherits the worker's
        # PYTEST_XDIST_WORKER: that one sharing the host would wait for the share its own test holds.
        if hasattr(config, "workerinput") and self.cpu_workers() == "alone":
            from .lock import share_the_host
            from .xdist.controller import OneTestAtATime

            share_the_host()
            config.pluginmanager.register(OneTestAtATime(), "roofline-alone")

    @staticmethod
    def cpu_workers() -> str:
        """How xdist's workers share a CPU (``$PYTEST_ROOFLINE_CPU_WORKERS``, checked)."""
        from .xdist.workers import cpu_workers

        try:
            return cpu_workers(os.environ)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None

    def merged(self, output: dict[str, Any]) -> bool:
        """An xdist worker's records taken in (the plugin woken for them); whether it had any."""
        if held := self.activate().merge_worker_output(output):
            self.used = True
        return held

    def _prepare_process(self) -> None:
        """Before anything is measured: the dependency floors, the abort watch."""
        from ..base.dependencies import too_old
        from ..base.progress import set_sink

        if problem := too_old():
            raise pytest.UsageError(f"{problem} (or run pytest with -p no:roofline)")
        from ..measurement.processes.peers import set_notice
        from . import abort_watch

        config = self.config
        watch = self.watch = abort_watch.AbortWatch(lambda: abort_watch.past_capture(config))
        config.add_cleanup(watch.close)
        set_notice(abort_watch.say_past_capture(config), watch)
        set_sink(abort_watch.say_past_capture(config))  # a long step's progress, seen while its test runs

    def _resolve_settings(self) -> Settings:
        """The settings from the command line, the environment, the ini file and the YAML config (a ConfigError)."""
        from .settings import resolve_settings
        from .user_hooks import hardware_entries

        config = self.config
        cli = {opt.name: config.getoption(f"roofline_{opt.name}") for opt in OPTIONS}
        ini = {opt.name: config.getini(opt.ini) for opt in OPTIONS}
        base_dir = str(config.inipath.parent) if config.inipath else str(config.rootpath)
        ini_name = str(config.inipath.name) if config.inipath else "no ini file"
        return resolve_settings(cli, os.environ, ini, ini_name, base_dir, hardware_entries(config))

    def _trace_root(self) -> str:
        """Where traces go: --roofline-trace-dir, else pytest's cache, else a directory per user."""
        settings = self.activate().settings
        if settings.trace_dir:
            return settings.trace_dir
        cache = getattr(self.config, "cache", None)
        if cache is not None:
            return str(cache.mkdir("roofline-traces"))
        from .session import default_trace_root

        return default_trace_root()

    def collect(self, items: list[pytest.Item]) -> None:
        """Each test's marker read; the plugin woken where a test uses it (else it stays asleep)."""
        self.collected = False
        if self.session is None and not any(uses_roofline(item) for item in items):
            self.collected = True
            return
        from .marker import parse_marker
        from .settings import ConfigError

        names = self.activate().settings.hardware_names
        for item in items:
            marker = item.get_closest_marker("roofline")
            if marker is not None:
                try:
                    item.stash[MARKER_KEY] = parse_marker(marker.args, marker.kwargs, item.nodeid, names)
                except ConfigError as exc:
                    if not hasattr(self.config, "workerinput"):
                        raise pytest.UsageError(str(exc)) from None
                    # An xdist worker cannot stop the run (the controller would lose the message in an internal
                    # error): the test errors at setup with it instead.
                    item.stash[MARKER_ERROR_KEY] = str(exc)
            if uses_roofline(item):
                self.used = True
        self.collected = True

    def set_up(self, item: pytest.Item) -> None:
        """A process of a multi-process program is watched from its first test (where pytest captures its output);
        a bad marker under an xdist worker fails its test here."""
        if self.session is None:
            return
        from ..measurement.processes.peers import processes_started

        if (started := processes_started()) is not None and self.watch is not None:
            self.watch(*started, f"running {item.nodeid}")
        if error := item.stash.get(MARKER_ERROR_KEY, ""):
            pytest.fail(error, pytrace=False)

    def header(self, items: list[pytest.Item]) -> list[str]:
        """The header's line: the hardware (detected now), or why not. Called even when collection failed (pytest
        runs it in a finally): no JAX import then."""
        session = self.session
        if not self.collected or session is None or not any(uses_roofline(item) for item in items):
            return []
        from ..report.text import header_line, wrap_lines

        if self.config.option.collectonly:
            return ["roofline: hardware not detected under --collect-only (detection may calibrate a CPU)"]
        if stands_in := session.mode.stands_in:
            return [f"roofline: {stands_in}"]
        try:
            return wrap_lines([header_line(*session.hardware())])
        except Exception as exc:  # noqa: BLE001 - the header must not hide the error the tests will show
            return [f"roofline: hardware detection failed: {type(exc).__name__}: {exc}"]

    def fixture(self, request: pytest.FixtureRequest) -> RooflineFixture:
        """The ``roofline`` fixture of one test."""
        from .fixture import RooflineFixture

        session = self.activate()
        item = request.node

        def add_property(name: str, value: Any) -> None:
            item.user_properties.append((name, value))

        def warn(message: str) -> None:
            warnings.warn(RooflineWarning(message), stacklevel=3)

        def fail(message: str) -> NoReturn:
            pytest.fail(message, pytrace=False)

        def skip(message: str) -> NoReturn:
            pytest.skip(message)

        return RooflineFixture(session, item.nodeid, item.stash.get(MARKER_KEY, None), fail, warn, add_property,
                               traceback_style=str(request.config.getoption("tbstyle", "auto")), skip=skip,
                               verbosity=int(request.config.getoption("verbose", 0) or 0))

    def made_report(self, item: pytest.Item, when: str, report: pytest.TestReport) -> None:
        """A test with a roofline marker that passed without measuring a kernel: said in the summary (its marker's
        threshold judged nothing). An xdist worker hands its records in with each test's last report."""
        session = self.session
        if session is None:
            return
        if when == "teardown" and hasattr(self.config, "workerinput") and (handed := session.hand_off()):
            from .xdist.controller import HANDOFF

            setattr(report, HANDOFF, handed)
        if when == "call" and report.passed and MARKER_KEY in item.stash and not session.mode.stands_in and \
                not any(r.nodeid == item.nodeid for r in session.records) and \
                not any(u.nodeid == item.nodeid for u in session.unmeasured):
            report.user_properties.append((_NOTHING, "its roofline marker judged nothing: the test measured no kernel "
                                                     "(call the roofline fixture)"))

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.ran += 1

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.judged_nothing += [f"  {report.nodeid}: {text}" for name, text in report.user_properties
                                if name == _NOTHING]

    def summary(self, terminalreporter: Any) -> None:
        """The summary at the end (:func:`~pytest_roofline.report.ending.summary_text`); an xdist worker prints
        none."""
        state = self.session
        if hasattr(self.config, "workerinput") or state is None:
            return
        from ..report.ending import Ending, summary_text
        from .survey.watcher import judged_nothing

        end = Ending(state.records, state.unmeasured, state.lock_waits, follower=state.follower_line(),
                     nothing_judged=judged_nothing(state, self.used), marked_measured_nothing=self.judged_nothing,
                     errors=self.report_errors, written=self.written)
        for line in summary_text(end, wide=int(self.config.getoption("verbose", 0) or 0) >= 1):
            if line.title:
                terminalreporter.write_sep("=", line.text)
            else:
                terminalreporter.write_line(line.text, red=line.red)

    def finish(self, session: pytest.Session, exitstatus: int) -> None:
        """The report, its history copy and the HTML written (an xdist worker hands its records in instead); a
        report not written, or a report hook that raised, fails the run and is said in the summary."""
        state = self.session
        if state is None:
            return
        config = self.config
        if hasattr(config, "workerinput"):
            config.workeroutput.update(state.worker_output())  # type: ignore[attr-defined]
            return
        from ..base.signals import cancelled_by
        from ..report.document import session_block
        from ..report.outputs import write_outputs
        from .user_hooks import report_made

        stopped = f"cancelled by {cancelled_by()}" if cancelled_by() else session.shouldstop or session.shouldfail
        end = session_block(int(exitstatus), session.testscollected, self.ran, str(stopped or ""))
        report = state.report(end, str(config.rootpath), self.used)
        if report is None:
            return
        hook_error = report_made(config, report)  # one that raises: the report, the summary and pytest's last line
        self.written, errors = write_outputs(state.settings.outputs(), report, state.records, state.unmeasured)
        if errors := [f"roofline: {hook_error}"] * bool(hook_error) + [f"roofline report NOT written: {e}"
                                                                       for e in errors]:
            self.report_errors = errors  # never lose the summary: say so there, and fail the run
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR


RUN_KEY = pytest.StashKey[PluginRun]()


def plugin_run(config: pytest.Config) -> PluginRun:
    """The plugin's run in this pytest process (made when pytest configured the plugin)."""
    return config.stash[RUN_KEY]
