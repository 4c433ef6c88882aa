"""Hooks a test suite can implement in its conftest.py."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_roofline_report(config: pytest.Config, report: dict[str, Any]) -> None:
    """Called with the JSON report (a dict) before it is written; add or change fields in place,
    e.g. ``report["build"] = {"pipeline": os.environ["CI_PIPELINE_ID"]}``."""
