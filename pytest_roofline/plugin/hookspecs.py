"""Hooks a test suite can implement in its conftest.py."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_roofline_report(config: pytest.Config, report: dict[str, Any]) -> None:
    """Called with the JSON report (a dict) before it is written; add or change fields in place,
    e.g. ``report["build"] = {"pipeline": os.environ["CI_PIPELINE_ID"]}``."""


@pytest.hookspec(firstresult=True)
def pytest_roofline_mode(config: pytest.Config) -> Any:
    """For a tool that drives pytest: a :class:`pytest_roofline.plugin.mode.Mode` that changes how this process
    serves its ``roofline(...)`` calls (``pytest-roofline ab``'s processes measure each kernel once, or only compile
    them); None for the plain mode. Asked once, when the plugin starts; a plugin that implements it starts it."""
