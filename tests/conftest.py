"""Shared fixtures. Calibration uses a cache directory private to the test session, and the tests see none of
the plugin's settings from the shell that runs them (a PYTEST_ROOFLINE_MIN exported for a user's own suite would
otherwise change what the plugin's tests judge); a test that needs one sets it itself."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["pytester"]

_KEPT = {"PYTEST_ROOFLINE_CACHE_DIR"}  # where calibrations go: CI gives its own, else one per session (below)
for _name in [n for n in os.environ if n.startswith("PYTEST_ROOFLINE_") and n not in _KEPT]:
    del os.environ[_name]


@pytest.fixture(scope="session", autouse=True)
def _private_calibration_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Tests must not depend on, or write to, the user's calibration cache.
    if "PYTEST_ROOFLINE_CACHE_DIR" not in os.environ:
        os.environ["PYTEST_ROOFLINE_CACHE_DIR"] = str(tmp_path_factory.mktemp("roofline-cache"))
