"""Shared fixtures. Calibration uses a cache directory private to the test session, and the tests see none of
the plugin's settings from the shell that runs them (a PYTEST_ROOFLINE_MIN exported for a user's own suite would
otherwise change what the plugin's tests judge); a test that needs one sets it itself."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator

import pytest
import yaml  # noqa: F401 - imported once for the session, before any in-process pytester run

# An in-process pytester run removes the modules it imported when it ends; PyYAML's C loader (libyaml) keeps what
# the first import registered, so a YAML file read after a second import of PyYAML fails ("could not determine a
# constructor for the tag None"). Importing it here keeps one PyYAML for every run, whichever test file runs alone.

pytest_plugins = ["pytester"]

# The tests build many short-lived objects (syntax trees, parsed profiles, pytester's sessions) beside JAX's large
# heap: at Python's default thresholds the collector ran about 2,000 times in the quick loop, 1.7-2.2 s of its time.
gc.set_threshold(10_000, 10, 10)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (modules, JAX, the test items) lives to the end: frozen, the collector no longer walks
    it, each time and at the end (pytest's last collection and the interpreter's at exit: 0.6-0.7 s of the quick
    loop's end)."""
    gc.freeze()

# Where calibrations go (CI gives its own, else one per session, below), and the xdist worker's share of the host
# that a pytest started by one of its tests runs under.
_KEPT = {"PYTEST_ROOFLINE_CACHE_DIR", "PYTEST_ROOFLINE_HOST_SHARED_BY"}
for _name in [n for n in os.environ if n.startswith("PYTEST_ROOFLINE_") and n not in _KEPT]:
    del os.environ[_name]


@pytest.fixture(autouse=True)
def _cpu_backend(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``cpu_backend`` asserts what XLA's CPU backend makes of a program (a ``dot`` where a GPU has a
    Triton gemm fusion, CPU fusion names, the CPU's cost analysis): its programs compile and run on the CPU device,
    also on a machine whose default device is a GPU (the GPU's own programs are tested on recordings:
    tests/data/corpus)."""
    if request.node.get_closest_marker("cpu_backend") is None:
        yield
        return
    import jax

    with jax.default_device(jax.devices("cpu")[0]):
        yield


@pytest.fixture(scope="session", autouse=True)
def _private_calibration_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Tests must not depend on, or write to, the user's calibration cache.
    if "PYTEST_ROOFLINE_CACHE_DIR" not in os.environ:
        os.environ["PYTEST_ROOFLINE_CACHE_DIR"] = str(tmp_path_factory.mktemp("roofline-cache"))


@pytest.fixture(scope="session", autouse=True)
def _quick_loop_compiles_cached(request: pytest.FixtureRequest) -> None:
    """The quick loop (``-m "not slow"``) compiles some 130 small real programs to read their optimized HLO (3-4 s of
    its time on a 2-core machine): JAX's persistent compilation cache keeps them in pytest's cache folder
    (``.pytest_cache``; ``--cache-clear`` empties it, ``-p no:cacheprovider`` turns it off), so that the loop's next
    runs load the same executables. The full run compiles afresh: its tests time compiles and measure kernels."""
    config = request.config
    quick = "not slow" in (config.option.markexpr or "")
    if "jax" not in sys.modules or not quick or getattr(config, "cache", None) is None:
        return  # no test collected uses JAX (nothing is imported for it), or the slow tests run too
    import jax

    for name, value in (("jax_compilation_cache_dir", str(config.cache.mkdir("jax-compilation-cache"))),
                        ("jax_persistent_cache_min_compile_time_secs", 0.0),
                        ("jax_persistent_cache_min_entry_size_bytes", 0)):
        jax.config.update(name, value)  # type: ignore[no-untyped-call]


@pytest.fixture(scope="session", autouse=True)
def _charts_kept_across_inline_runs() -> None:
    """pytester's in-process runs drop every module first imported inside them, so each run that writes an HTML
    report would load plotly's figure classes anew (0.1-0.2 s a run): one report of fake results
    (tests/support/fakes.py), with its roofline chart and sparklines, loads them once for the session."""
    try:
        import plotly  # noqa: F401
    except ImportError:  # plotly is an extra: the HTML tests say so themselves
        return
    from fakes import fake_result, record_of

    from pytest_roofline.history.baseline import build_series
    from pytest_roofline.history.reports import Run
    from pytest_roofline.report.html import html_report

    runs = [Run(f"r{i}.json", f"2026-11-2{i}T00:00:00", None, False, None, {},
                records=(record_of("t.py::t", "kernel", fake_result(0.5 + i / 10), "pass", 0.4, "marker"),))
            for i in range(3)]
    html_report(runs[-1], build_series(runs))


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
