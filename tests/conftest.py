"""Shared fixtures. Calibration uses a cache directory private to the test session, and the tests see none of
the plugin's settings from the shell that runs them (a PYTEST_ROOFLINE_MIN exported for a user's own suite would
otherwise change what the plugin's tests judge); a test that needs one sets it itself."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

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


@pytest.fixture(scope="session", autouse=True)
def _charts_kept_across_inline_runs() -> None:
    """pytester's in-process runs drop every module first imported inside them, so each run that writes an HTML
    report would load plotly's figure classes anew (0.1-0.2 s a run): load them once, as a report does."""
    try:
        import plotly.graph_objects as go
    except ImportError:  # plotly is an extra: the HTML tests say so themselves
        return
    fig = go.Figure(go.Scatter(x=[1], y=[1], mode="lines+markers", text=["a"], hovertemplate="%{y}",
                               line={"color": "#444", "width": 2, "dash": "dot"},
                               marker={"size": [8], "color": "#d62728", "opacity": 0.6, "line": {"width": 1}}))
    fig.add_vline(x=1, line={"color": "#ff7f0e", "dash": "dash"}, annotation_text="+1%", annotation_position="top")
    fig.add_hline(y=1, line={"color": "#999", "dash": "dot"})
    fig.update_layout(title="t", height=150, margin={"l": 50}, template="plotly_white", legend={"font": {"size": 11}},
                      xaxis={"type": "log", "title": "x", "exponentformat": "SI"}, yaxis={"tickformat": ".0%"})
    fig.to_html(full_html=False, include_plotlyjs=False)


@pytest.fixture(autouse=True)
def _no_bytecode_for_pytester_files(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that writes a conftest.py or test file with pytester, runs it, and writes it again within the same
    second at the same size would run the first version again: Python's bytecode cache (and pytest's rewritten
    one) tells sources apart by their whole-second mtime and size. Such files are compiled afresh every run."""
    if "pytester" not in request.fixturenames:
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "dont_write_bytecode", True)
        patch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # pytester's subprocess runs
        yield
