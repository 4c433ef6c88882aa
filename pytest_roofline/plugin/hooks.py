"""The pytest plugin: options and ini twins, the ``roofline`` marker and fixture, header, summary, reports.

Hooks are thin: they hand off to :mod:`.settings`, :mod:`.marker`, :mod:`.session`, :mod:`.fixture` and
:mod:`pytest_roofline.report`. At start-up this module imports :mod:`.options` alone: the plugin becomes active
(its settings resolved and checked, its session started) where a roofline option, ini value or environment
variable is set, or once a collected test uses the fixture or the marker; a run that does neither imports nothing
more of it. JAX is imported only when a test uses the fixture (or, for the header line, when a test that uses it
is collected).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from .options import MARKER_LINE, OPTIONS

if TYPE_CHECKING:
    from .abort_watch import AbortWatch
    from .fixture import RooflineFixture
    from .marker import MarkerSpec
    from .session import RooflineSession
    from .settings import Settings

SESSION_KEY: pytest.StashKey[RooflineSession] = pytest.StashKey()  # set once the plugin is active (activate)
MARKER_KEY: pytest.StashKey[MarkerSpec] = pytest.StashKey()
MARKER_ERROR_KEY = pytest.StashKey[str]()  # a bad marker under an xdist worker: the test errors at setup
USED_KEY = pytest.StashKey[bool]()
COLLECTED_KEY = pytest.StashKey[bool]()
REPORT_ERROR_KEY = pytest.StashKey[list[str]]()
WRITTEN_KEY = pytest.StashKey[list[str]]()
RUN_KEY = pytest.StashKey[int]()  # tests that ran to the end (their teardown reported)
WATCH_KEY: pytest.StashKey[AbortWatch] = pytest.StashKey()
NOTHING_KEY = pytest.StashKey[list[str]]()  # tests whose roofline marker judged nothing: no kernel was measured
_NOTHING = "roofline_marked_but_measured_nothing"


class RooflineWarning(UserWarning):
    """A kernel below its threshold under --roofline-warn-only."""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("roofline", "roofline: measure JAX kernels against the hardware roofline")
    for opt in OPTIONS:
        if opt.kind == "bool":
            group.addoption(opt.flag, action="store_true", default=None, dest=f"roofline_{opt.name}", help=opt.help)
        else:
            group.addoption(opt.flag, action="store", default=None, dest=f"roofline_{opt.name}",
                            metavar=opt.metavar, help=opt.help)
        parser.addini(opt.ini, help=opt.help, type="string", default="")


def pytest_configure(config: pytest.Config) -> None:
    # The marker's full signature is imported only where markers are listed (its defaults come from the machinery).
    if config.option.markers:
        from .marker import MARKER_SIGNATURE

        config.addinivalue_line("markers", MARKER_SIGNATURE)
    else:
        config.addinivalue_line("markers", MARKER_LINE)
    config.stash[RUN_KEY] = 0
    config.pluginmanager.register(_RunCounter(config), "roofline-run-counter")
    if config.pluginmanager.hasplugin("xdist"):
        from .xdist.controller import XdistHooks

        config.pluginmanager.register(XdistHooks(config, lambda output: _merged(config, output),
                                                 lambda: _cpu_workers(config)), "roofline-xdist")
    _pin_worker()
    if _configured(config):
        activate(config)
    else:
        config.option.roofline_warn_only = False  # the default, as the settings would resolve it


def _merged(config: pytest.Config, output: dict[str, Any]) -> bool:
    """An xdist worker's records taken in (the plugin woken for them); whether it had any."""
    if held := activate(config).merge_worker_output(output):
        config.stash[USED_KEY] = True
    return held


def _configured(config: pytest.Config) -> bool:
    """Whether anything asks for the plugin at start-up: an option, an ini value, an environment variable, or a
    plugin that installs a mode (``pytest_roofline_mode``: ``pytest-roofline ab``'s processes)."""
    return (any(config.getoption(f"roofline_{opt.name}") is not None or config.getini(opt.ini)
                or os.environ.get(opt.env) for opt in OPTIONS)
            or bool(config.hook.pytest_roofline_mode.get_hookimpls()))


def activate(config: pytest.Config) -> RooflineSession:
    """The plugin's session, started on first need (at start-up where configured, else when a collected test uses
    the fixture or the marker, or an xdist worker hands in records): settings resolved and checked, the
    dependency floors, the signals that end a run as Ctrl-C does, the abort watch."""
    if (session := config.stash.get(SESSION_KEY, None)) is not None:
        return session
    from ..base.signals import cancel_as_interrupt
    from .lock import share_the_host
    from .mode import PLAIN
    from .session import RooflineSession
    from .settings import ConfigError
    from .user_hooks import ConftestHooks

    config.add_cleanup(cancel_as_interrupt())
    _prepare_process(config)
    try:
        settings = _resolve_settings(config)
        session = RooflineSession.start(settings, _trace_root(config), lambda text: (
            config.issue_config_time_warning(RooflineWarning(text), stacklevel=2)),
            config.hook.pytest_roofline_mode(config=config) or PLAIN, ConftestHooks(config, settings))
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    # The option reads the effective value, whichever of option, ini, env or YAML set it, so that a test's
    # own condition (e.g. an xfail that holds unless verdicts are warnings) agrees with the plugin.
    config.option.roofline_warn_only = session.settings.warn_only
    config.stash[SESSION_KEY] = session
    config.stash[USED_KEY] = False
    if session.settings.survey:
        from .survey.watcher import SurveyPlugin

        config.pluginmanager.register(SurveyPlugin(config, lambda: config.stash[SESSION_KEY], RooflineWarning),
                                      "roofline-survey")
    # An xdist worker itself (it has ``workerinput``), not a pytest its test starts, which inherits the worker's
    # PYTEST_XDIST_WORKER: that one sharing the host would wait for the share its own test holds.
    if hasattr(config, "workerinput") and _cpu_workers(config) == "alone":
        share_the_host()
        from .xdist.controller import OneTestAtATime

        config.pluginmanager.register(OneTestAtATime(), "roofline-alone")
    return session


def _pin_worker() -> None:
    """This xdist worker's own device, before its JAX starts a backend (a test module may make arrays as it is
    imported): it sees its own device only."""
    from .xdist.workers import pin_worker

    pinned = pin_worker(os.environ.get("PYTEST_XDIST_WORKER"), os.environ)
    if pinned.variable:
        os.environ[pinned.variable] = pinned.value


def _cpu_workers(config: pytest.Config) -> str:
    from .xdist.workers import cpu_workers

    try:
        return cpu_workers(os.environ)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _prepare_process(config: pytest.Config) -> None:
    """Before anything is measured: the dependency floors, the abort watch."""
    from ..base.dependencies import too_old
    from ..base.progress import set_sink

    if problem := too_old():
        raise pytest.UsageError(f"{problem} (or run pytest with -p no:roofline)")
    from ..measurement.processes.peers import set_notice
    from . import abort_watch

    watch = config.stash[WATCH_KEY] = abort_watch.AbortWatch(lambda: abort_watch.past_capture(config))
    config.add_cleanup(watch.close)
    set_notice(abort_watch.say_past_capture(config), watch)
    set_sink(abort_watch.say_past_capture(config))  # a long step's progress, seen while its test runs


def _resolve_settings(config: pytest.Config) -> Settings:
    """The settings from the command line, the environment, the ini file and the YAML config (a ConfigError)."""
    from .settings import resolve_settings
    from .user_hooks import hardware_entries

    cli = {opt.name: config.getoption(f"roofline_{opt.name}") for opt in OPTIONS}
    ini = {opt.name: config.getini(opt.ini) for opt in OPTIONS}
    base_dir = str(config.inipath.parent) if config.inipath else str(config.rootpath)
    ini_name = str(config.inipath.name) if config.inipath else "no ini file"
    return resolve_settings(cli, os.environ, ini, ini_name, base_dir, hardware_entries(config))


def _trace_root(config: pytest.Config) -> Callable[[], str]:
    """Where traces go: --roofline-trace-dir, else pytest's cache, else a directory per user."""

    def trace_root() -> str:
        settings = config.stash[SESSION_KEY].settings
        if settings.trace_dir:
            return settings.trace_dir
        cache = getattr(config, "cache", None)
        if cache is not None:
            return str(cache.mkdir("roofline-traces"))
        from .session import default_trace_root

        return default_trace_root()

    return trace_root


def uses_roofline(item: pytest.Item) -> bool:
    return "roofline" in getattr(item, "fixturenames", ()) or item.get_closest_marker("roofline") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[COLLECTED_KEY] = False
    if SESSION_KEY not in config.stash and not any(uses_roofline(item) for item in items):
        config.stash[COLLECTED_KEY] = True
        return  # nothing here measures: the plugin stays asleep
    from .marker import parse_marker
    from .settings import ConfigError

    names = activate(config).settings.hardware_names
    for item in items:
        marker = item.get_closest_marker("roofline")
        if marker is not None:
            try:
                item.stash[MARKER_KEY] = parse_marker(marker.args, marker.kwargs, item.nodeid, names)
            except ConfigError as exc:
                if not hasattr(config, "workerinput"):
                    raise pytest.UsageError(str(exc)) from None
                # An xdist worker cannot stop the run (the controller would lose the message in an internal
                # error): the test errors at setup with it instead.
                item.stash[MARKER_ERROR_KEY] = str(exc)
        if uses_roofline(item):
            config.stash[USED_KEY] = True
    config.stash[COLLECTED_KEY] = True


def pytest_runtest_setup(item: pytest.Item) -> None:
    if SESSION_KEY not in item.config.stash:
        return
    from ..measurement.processes.peers import processes_started

    # A process of a multi-process program is watched from its first test (where pytest captures its output).
    if (started := processes_started()) is not None:
        item.config.stash[WATCH_KEY](*started, f"running {item.nodeid}")
    error = item.stash.get(MARKER_ERROR_KEY, "")
    if error:
        pytest.fail(error, pytrace=False)


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    # pytest calls this even when collection failed (it runs in a finally): no JAX import then.
    if not config.stash.get(COLLECTED_KEY, False) or SESSION_KEY not in config.stash or \
            not any(uses_roofline(item) for item in items):
        return []
    from ..report.text import header_line, wrap_lines

    if config.option.collectonly:
        return ["roofline: hardware not detected under --collect-only (detection may calibrate a CPU)"]
    if stands_in := config.stash[SESSION_KEY].mode.stands_in:
        return [f"roofline: {stands_in}"]
    try:
        return wrap_lines([header_line(*config.stash[SESSION_KEY].hardware())])
    except Exception as exc:  # noqa: BLE001 - the header must not hide the error the tests will show
        return [f"roofline: hardware detection failed: {type(exc).__name__}: {exc}"]


@pytest.fixture
def roofline(request: pytest.FixtureRequest) -> RooflineFixture:
    """Measure jitted JAX kernels against the roofline: ``roofline(fn, *args, name=..., min=..., bound=...)``
    measures, records and fails below the threshold; ``roofline.measure(fn, *args)`` records only."""
    from .fixture import RooflineFixture

    session = activate(request.config)
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


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or SESSION_KEY not in config.stash:
        return
    from ..report.text import summary_lines, wrap_lines

    state = config.stash[SESSION_KEY]
    follower = state.follower_line()
    if follower:  # one of several processes of a program, not the first: process 0 reports
        terminalreporter.write_line(follower)
        return
    if state.records or state.unmeasured:
        terminalreporter.write_sep("=", "roofline summary (worst first)")
        wide = int(config.getoption("verbose", 0) or 0) >= 1
        for line in summary_lines(state.records, state.unmeasured, wide=wide, lock_waits=state.lock_waits):
            terminalreporter.write_line(line)
    from .survey.watcher import judged_nothing

    if line := judged_nothing(state, config.stash.get(USED_KEY, False)):
        terminalreporter.write_line(line)
    nothing = config.stash.get(NOTHING_KEY, [])
    if nothing:
        terminalreporter.write_line(f"roofline: marked, measured nothing ({len(nothing)}):")
        for line in wrap_lines(nothing):
            terminalreporter.write_line(line)
    for error in config.stash.get(REPORT_ERROR_KEY, []):  # a report hook that raised, a report not written
        terminalreporter.write_line(error, red=True)
    for line in config.stash.get(WRITTEN_KEY, []):
        terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if SESSION_KEY not in config.stash:
        return
    from ..base.signals import cancelled_by
    from ..report.document import session_block
    from .user_hooks import report_made

    state = config.stash[SESSION_KEY]
    if hasattr(config, "workerinput"):  # an xdist worker: hand the records to the controller
        config.workeroutput.update(state.worker_output())  # type: ignore[attr-defined]
        return
    stopped = f"cancelled by {cancelled_by()}" if cancelled_by() else session.shouldstop or session.shouldfail
    end = session_block(int(exitstatus), session.testscollected, config.stash.get(RUN_KEY, 0), str(stopped or ""))
    report = state.report(end, str(config.rootpath), config.stash.get(USED_KEY, False))
    if report is None:
        return
    hook_error = report_made(config, report)  # one that raises: the report, the summary and pytest's last line come
    config.stash[WRITTEN_KEY], errors = state.write(report)
    if errors := [f"roofline: {hook_error}"] * bool(hook_error) + [f"roofline report NOT written: {e}" for e in errors]:
        config.stash[REPORT_ERROR_KEY] = errors  # never lose the summary: say so there, and fail the run
        if session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR


class _RunCounter:
    """Counts the tests that ran to the end, and those whose marker judged nothing (with xdist, the controller
    hears of every worker's tests)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        config.stash[NOTHING_KEY] = []

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.config.stash[RUN_KEY] += 1

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.config.stash[NOTHING_KEY] += [f"  {report.nodeid}: {text}" for name, text in report.user_properties
                                           if name == _NOTHING]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A test with a roofline marker that passed without measuring a kernel: said in the summary (its marker's
    threshold judged nothing). An xdist worker hands its records in with each test's last report."""
    report = yield
    if call.when == "teardown" and hasattr(item.config, "workerinput") and SESSION_KEY in item.config.stash and \
            (handed := item.config.stash[SESSION_KEY].hand_off()):
        from .xdist.controller import HANDOFF

        setattr(report, HANDOFF, handed)
    if call.when == "call" and report.passed and MARKER_KEY in item.stash:
        state = item.config.stash[SESSION_KEY]
        if not state.mode.stands_in and not any(r.nodeid == item.nodeid for r in state.records) and \
                not any(u.nodeid == item.nodeid for u in state.unmeasured):
            report.user_properties.append((_NOTHING, "its roofline marker judged nothing: the test measured no kernel "
                                                     "(call the roofline fixture)"))
    return report
