"""Shared fixtures. Calibration uses a cache directory private to the test session."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session", autouse=True)
def _private_calibration_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Tests must not depend on, or write to, the user's calibration cache.
    if "PYTEST_ROOFLINE_CACHE_DIR" not in os.environ:
        os.environ["PYTEST_ROOFLINE_CACHE_DIR"] = str(tmp_path_factory.mktemp("roofline-cache"))
