"""Faults as CI meets them, run as pytest runs them in a subprocess: a cache directory that cannot be written, a
damaged calibration cache, a run cancelled with SIGTERM. The calibrations here are FAKES (made-up figures, counted
in a file); the kernels, the profiler and the files are real."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
# Checked without importing JAX: pytester drops modules first imported inside a test, and jaxlib cannot be loaded twice.
needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")

FAKE_CALIBRATION = '''
import os
from pytest_roofline.hardware.calibration_figures import CalibrationFigures
from pytest_roofline.measurement.machine import calibration_kernels

def fake_measure_ceilings(platform, progress=None):
    """A FAKE calibration: made-up figures; each call is counted in calls.txt."""
    with open(os.path.join(os.path.dirname(__file__), "calls.txt"), "a") as fh:
        fh.write("1\\n")
    return CalibrationFigures({"f32": 5e10}, 1e10, {"f32": "fake", "memory": "fake"}, contention=0.0)

calibration_kernels.measure_ceilings = fake_measure_ceilings
'''

KERNELS = '''
import jax.numpy as jnp
FAST = dict(warmup=1, min_runs=2, max_runs=3, budget_s=0.2)

def add(x):
    return x + 1

def test_a(roofline):
    roofline.measure(add, jnp.ones(1000), **FAST)

def test_b(roofline):
    roofline.measure(add, jnp.ones(2000), **FAST)
'''


def _suite(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKE_CALIBRATION)
    pytester.makepyfile(test_k=KERNELS)


def _calibrations(pytester: pytest.Pytester) -> int:
    calls = pytester.path / "calls.txt"
    return len(calls.read_text().split()) if calls.exists() else 0


@pytest.mark.slow
@needs_jax
def test_a_cache_that_cannot_be_written_is_named_once_and_the_tests_measured(pytester: pytest.Pytester,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _suite(pytester)
    (pytester.path / "a-file").write_text("")
    monkeypatch.setenv("PYTEST_ROOFLINE_CACHE_DIR", str(pytester.path / "a-file" / "cache"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--roofline-ceilings=calibrated",
                                           "--roofline-report=r.json")
    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2)
    assert _calibrations(pytester) == 1, out  # once for the session, not once per test
    assert out.count("the calibration cannot be cached") == 1 and "PYTEST_ROOFLINE_CACHE_DIR" in out, out
    assert "please report it" not in out and "Traceback" not in out
    assert len(json.loads((pytester.path / "r.json").read_text())["results"]) == 2


@pytest.mark.slow
@needs_jax
def test_a_damaged_calibration_cache_is_named_set_aside_and_replaced(pytester: pytest.Pytester,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _suite(pytester)
    cache = pytester.path / "cache"
    monkeypatch.setenv("PYTEST_ROOFLINE_CACHE_DIR", str(cache))
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider", "--roofline-ceilings=calibrated").ret == 0
    [path] = cache.glob("calibration-*.json")
    data = json.loads(path.read_text())
    del data["details"]  # damaged: the right key, a figure's source missing
    path.write_text(json.dumps(data))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--roofline-ceilings=calibrated")
    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2)
    assert f"the calibration cache {path} is damaged (no details): set aside as {path}.damaged" in out, out
    assert "please report it" not in out and _calibrations(pytester) == 2
    assert "details" in json.loads(path.read_text()) and Path(f"{path}.damaged").exists()


SLOW_SECOND = KERNELS.split("def test_b")[0] + '''
def test_b(roofline):
    import os, pathlib, time
    pathlib.Path("second-started").write_text(str(os.getpid()))
    while True:  # cancelled here by the test that runs this suite
        time.sleep(0.05)
'''


@pytest.mark.slow
@needs_jax
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_run_cancelled_by_sigterm_keeps_what_it_measured(pytester: pytest.Pytester, name: str) -> None:
    """A real SIGTERM (as CI's cancel and ``timeout`` send it) to a real pytest process, once its first test
    measured: the summary is printed, the report written and marked incomplete (the history's readers leave an
    incomplete run out of every baseline)."""
    import signal
    import subprocess
    import sys
    import time

    pytester.makeconftest(FAKE_CALIBRATION)
    pytester.makepyfile(test_k=SLOW_SECOND)
    started = pytester.path / "second-started"
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--roofline-ceilings=calibrated",
                             "--roofline-report=r.json", "--roofline-history=hist"], cwd=pytester.path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            # the signal's default action, as a shell gives its jobs: a runner started under nohup
                            # passes SIGHUP on ignored, and an ignored signal is left ignored (base/signals.py)
                            preexec_fn=lambda: signal.signal(getattr(signal, name), signal.SIG_DFL))
    try:
        while not started.exists():  # waits on the suite's own progress, not on a clock
            assert proc.poll() is None, proc.communicate()[0]
            time.sleep(0.05)
        proc.send_signal(getattr(signal, name))
        out = proc.communicate(timeout=300)[0]
    finally:
        proc.kill()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "roofline summary" in out and "test_k.py::test_a [add]" in out, out
    data = json.loads((pytester.path / "r.json").read_text())
    assert [r["label"] for r in data["results"]] == ["add"]
    assert data["session"]["complete"] is False and f"cancelled by {name}" in data["session"]["why_incomplete"]
    [kept] = (pytester.path / "hist").glob("*.json")  # kept as the record of a cancelled night, read as incomplete
    assert json.loads(kept.read_text())["session"]["complete"] is False


HOLD = ("import sys; from pytest_roofline.plugin.lock import device_lock\n"
        "with device_lock('cpu'):\n    print('held', flush=True); sys.stdin.readline()\n")


@pytest.mark.slow
@needs_jax
def test_a_stopped_lock_holder_is_named_once_not_waited_on_per_test(pytester: pytest.Pytester,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A real process holding the device lock, stopped with SIGSTOP, beside a real pytest run of two kernels: the
    run waits on it once, and each test fails in one line that names the process and how to resume it."""
    import signal
    import subprocess
    import sys

    _suite(pytester)
    monkeypatch.setenv("TMPDIR", str(pytester.path))  # the lock files of this run and its holder only
    monkeypatch.setenv("PYTEST_ROOFLINE_CACHE_DIR", str(pytester.path / "cache"))
    holder = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    os.kill(holder.pid, signal.SIGSTOP)
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--roofline-ceilings=calibrated")
    finally:
        os.kill(holder.pid, signal.SIGCONT)
        holder.kill()
        holder.wait()
    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(failed=2)
    assert "please report it" not in out and "Traceback" not in out, out
    assert out.count("waiting for the device lock") == 1, out  # one wait for the session
    assert "which is stopped (SIGSTOP or Ctrl-Z)" in out and f"kill -CONT {holder.pid}" in out
    assert _calibrations(pytester) == 0


@pytest.mark.slow
@needs_jax
def test_three_invocations_on_a_busy_runner_calibrate_once(pytester: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A FAKE calibration that reports other processes holding 60% of the CPUs, as on a runner never quiet: the
    first invocation calibrates and keeps it as provisional, the next two use it and say so."""
    pytester.makeconftest(FAKE_CALIBRATION.replace('contention=0.0', 'contention=0.6'))
    pytester.makepyfile(test_k=KERNELS)
    monkeypatch.setenv("PYTEST_ROOFLINE_CACHE_DIR", str(pytester.path / "cache"))
    outs = []
    for _ in range(3):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--roofline-ceilings=calibrated")
        result.assert_outcomes(passed=2)
        outs.append(result.stdout.str() + result.stderr.str())
    assert _calibrations(pytester) == 1, outs
    assert "kept as provisional" in outs[0]
    assert all(out.count("using a provisional calibration") == 1 for out in outs[1:]), outs
    assert [p.name.endswith(".provisional.json") for p in (pytester.path / "cache").iterdir()] == [True]


@pytest.mark.slow
@needs_jax
@pytest.mark.parametrize("end", ["SIGTERM to the run", "SIGKILL to its worker"])
def test_an_xdist_run_cancelled_or_a_worker_lost_keeps_what_it_measured(pytester: pytest.Pytester, end: str) -> None:
    """A real pytest-xdist run (one worker), once its first test measured: SIGTERM to the run (as CI cancels it), or
    its worker killed. Before, the records went to the controller only when a worker ended: the cancelled run wrote
    no report and no summary, and a lost worker's kernels were dropped without a word."""
    import signal
    import subprocess
    import sys
    import time

    pytest.importorskip("xdist")
    pytester.makeconftest(FAKE_CALIBRATION)
    pytester.makepyfile(test_k=SLOW_SECOND)
    started = pytester.path / "second-started"
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "1",
                             "--roofline-ceilings=calibrated", "--roofline-report=r.json"], cwd=pytester.path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    try:
        while not started.exists() or not started.read_text():  # the suite's own progress, not a clock
            assert proc.poll() is None, proc.communicate()[0]
            time.sleep(0.05)
        if end.startswith("SIGTERM"):
            proc.send_signal(signal.SIGTERM)
        else:
            os.kill(int(started.read_text()), signal.SIGKILL)
        out = proc.communicate(timeout=300)[0]
    finally:
        proc.kill()
    assert "roofline summary" in out and "test_k.py::test_a [add]" in out, out
    data = json.loads((pytester.path / "r.json").read_text())
    assert [r["label"] for r in data["results"]] == ["add"] and data["session"]["complete"] is False
    if end.startswith("SIGTERM"):
        assert proc.returncode == pytest.ExitCode.INTERRUPTED and "cancelled by SIGTERM" in out, out
    else:
        assert "roofline: xdist worker gw0 went down before its end" in out, out
        assert "the 1 kernel(s) it measured in the tests it finished are in the summary and the report" in \
            " ".join(out.split()), out
