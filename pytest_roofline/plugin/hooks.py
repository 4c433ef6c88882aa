"""The pytest plugin's hooks, each a line or two that hands off to the run (:class:`.pytest_run.PluginRun`): options and
ini twins, the ``roofline`` marker and fixture, header, summary, reports.

At start-up this module imports :mod:`.options` and :mod:`.pytest_run` alone: the plugin becomes active (its settings
resolved and checked, its session started) where a roofline option, ini value or environment variable is set, or once
a collected test uses the fixture or the marker; a run that does neither imports nothing more of it. JAX is imported
only when a test uses the fixture (or, for the header line, when a test that uses it is collected).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

from .options import MARKER_LINE, OPTIONS
from .pytest_run import RUN_KEY, PluginRun, RooflineWarning, plugin_run, uses_roofline

if TYPE_CHECKING:
    from .fixture import RooflineFixture
    from .session import RooflineSession

__all__ = ["activate", "uses_roofline", "RooflineWarning", "plugin_run"]


def activate(config: pytest.Config) -> RooflineSession:
    """The plugin's session, started on first need (:meth:`.pytest_run.PluginRun.activate`)."""
    return plugin_run(config).activate()


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
    run = config.stash[RUN_KEY] = PluginRun(config)
    config.pluginmanager.register(run, "roofline-run")
    if config.pluginmanager.hasplugin("xdist"):
        from .xdist.controller import XdistHooks

        config.pluginmanager.register(XdistHooks(config, run.merged, run.cpu_workers), "roofline-xdist")
    _pin_worker()
    if run.configured():
        run.activate()
    else:
        config.option.roofline_warn_only = False  # the default, as the settings would resolve it


def _pin_worker() -> None:
    """This xdist worker's own device, before its JAX starts a backend (a test module may make arrays as it is
    imported): it sees its own device only."""
    from .xdist.workers import pin_worker

    pinned = pin_worker(os.environ.get("PYTEST_XDIST_WORKER"), os.environ)
    if pinned.variable:
        os.environ[pinned.variable] = pinned.value


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    plugin_run(config).collect(items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    plugin_run(item.config).set_up(item)


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    return plugin_run(config).header(items)


@pytest.fixture
def roofline(request: pytest.FixtureRequest) -> RooflineFixture:
    """Measure jitted JAX kernels against the roofline: ``roofline(fn, *args, name=..., min=..., bound=...)``
    measures, records and fails below the threshold; ``roofline.measure(fn, *args)`` records only."""
    return plugin_run(request.config).fixture(request)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    plugin_run(item.config).made_report(item, call.when, report)
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    plugin_run(config).summary(terminalreporter)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    plugin_run(session.config).finish(session, exitstatus)
