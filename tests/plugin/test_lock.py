"""The per-device lock that keeps xdist workers and runs side by side from timing two kernels at once: real
processes holding it, one of them stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pytest_roofline.plugin import lock
from pytest_roofline.plugin.lock import DeviceLockError, device_lock, lock_path

fcntl = pytest.importorskip("fcntl")


@pytest.fixture(autouse=True)
def _locks_of_their_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the lock between plain processes: their lock files lie in a folder of their own (this
    process's and the holders', through TMPDIR), and an xdist worker's share of the host (this suite run with
    ``-n``) is set aside, so that the real runs' locks and these never wait for each other."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(lock, "_ACTIVITY", None)
    monkeypatch.delenv(lock.SHARED_BY_VARIABLE, raising=False)


HOLD = ("import sys; from pytest_roofline.plugin.lock import device_lock\n"
        "with device_lock('cpu'):\n    print('held', flush=True); sys.stdin.readline()\n")


def _holder() -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.write("\n")
    holder.stdin.close()
    holder.wait(timeout=30)


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
def test_lock_excludes_another_process() -> None:
    holder = _holder()
    try:
        with open(lock_path("cpu"), "a") as handle:
            with pytest.raises(BlockingIOError):
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        _release(holder)
    with device_lock("cpu"):  # released: this process can take it
        pass


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
def test_a_wait_names_the_holder_and_ends_when_it_lets_go() -> None:
    holder = _holder()
    said: list[str] = []

    def say(text: str) -> None:
        said.append(text)
        if len(said) == 1:  # the holder lets go once this process has said it waits
            _release(holder)

    with device_lock("cpu", say=say) as wait:
        pass
    assert said[0].startswith(
        f"waiting for the device lock {lock_path('cpu')}, held by process {holder.pid} (-c) since "
    )
    assert said[-1] == f"got the device lock after {wait.seconds:.1f} s"
    assert wait.seconds > 0 and wait.holder == f"process {holder.pid} (-c)"  # what the summary and report keep
    with device_lock("cpu") as alone:
        assert (alone.seconds, alone.holder) == (0.0, "")


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
def test_a_stopped_holder_is_reported_not_waited_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock, "STOPPED_FOR_S", 0.2)
    monkeypatch.setattr(lock, "_STOPPED", {})
    holder = _holder()
    os.kill(holder.pid, signal.SIGSTOP)
    try:
        assert lock.holder_state(holder.pid) in ("stopped", "running")  # /proc may lag the signal by a moment
        with pytest.raises(DeviceLockError, match=rf"held by process {holder.pid} .*which is stopped .*kill -CONT"):
            with device_lock("cpu", say=lambda text: None):
                pass
        said: list[str] = []  # the next kernel of the session: fails at once, without a wait or a word
        with pytest.raises(DeviceLockError, match=rf"kill -CONT {holder.pid}"):
            with device_lock("cpu", say=said.append):
                pass
        assert said == []
        os.kill(holder.pid, signal.SIGCONT)  # resumed: waited on again as a running holder
        said = []

        def say(text: str) -> None:
            said.append(text)
            if len(said) == 1:
                _release(holder)

        with device_lock("cpu", say=say):
            pass
        assert said[0].startswith("waiting for the device lock")
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
            _release(holder)
    assert lock.holder_state(holder.pid) == "gone"


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
def test_a_stopped_sibling_worker_is_found() -> None:
    """Real processes: two children of this process, as xdist workers are children of its controller; one stopped.
    The other finds it by its parent, and only it."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    os.kill(sleeper.pid, signal.SIGSTOP)
    try:
        while lock.holder_state(sleeper.pid) != "stopped":  # /proc may lag the signal by a moment
            pass
        found = subprocess.run([sys.executable, "-c", "from pytest_roofline.plugin.lock import stopped_siblings; "
                                "print(stopped_siblings())"], capture_output=True, text=True, check=True)
        assert found.stdout.strip() == f"[{sleeper.pid}]"
    finally:
        for child in (sleeper, running):
            child.kill()
            child.wait()


def test_one_lock_for_a_cpu_however_jax_platforms_is_spelled(monkeypatch: pytest.MonkeyPatch) -> None:
    jax = pytest.importorskip("jax")
    if jax.default_backend() != "cpu":
        pytest.skip("this machine's default device is not a CPU")
    paths = set()
    for spelled in ("cpu", "", "CPU"):
        monkeypatch.setenv("JAX_PLATFORMS", spelled)
        paths.add(lock_path())
    assert paths == {lock_path("cpu")}


def test_lock_path_depends_on_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    first = lock_path("gpu")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert lock_path("gpu") != first



def test_a_pytest_started_inside_a_worker_test_does_not_share_the_host(pytester: pytest.Pytester,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pytest session run by a test of an xdist worker (pytester, in this process or a subprocess) sees the
    worker's PYTEST_XDIST_WORKER but is no worker: it takes no share of the host. Before, its tests waited for the
    turnstile held by another worker's measurement, which waited for the share of the test that started it."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.delenv("PYTEST_ROOFLINE_CPU_WORKERS", raising=False)
    monkeypatch.setattr(lock, "_ACTIVITY", None)
    pytester.makepyfile(test_k="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert lock._ACTIVITY is None



def test_a_process_started_by_a_worker_test_measures_under_that_tests_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pytest started by a test of an xdist worker (the worker's share of the host named in the environment, no
    share of its own) takes a lock of its own, not the CPU's device lock: another worker's measurement holds that
    while it waits for the very share the starting test holds, and the wait would never end."""
    monkeypatch.setenv(lock.SHARED_BY_VARIABLE, "12345")

    def never_wait(text: str) -> None:
        raise AssertionError(text)

    with open(lock_path("cpu"), "a+", encoding="utf-8") as other:  # the other worker's measurement, waiting
        fcntl.flock(other, fcntl.LOCK_EX)
        with device_lock("cpu", say=never_wait):
            pass
        monkeypatch.delenv(lock.SHARED_BY_VARIABLE)
        with pytest.raises(AssertionError, match="waiting for the device lock"):
            with device_lock("cpu", say=never_wait):
                pass


def test_a_measurement_started_inside_another_is_refused_not_waited_for() -> None:
    """A kernel whose body calls roofline.measure() (traced inside a measurement) asks for the lock its own process
    holds: refused at once, saying so (before, the second flock of one file waited for the first, for ever)."""
    with device_lock("cpu"):
        with pytest.raises(DeviceLockError, match=r"^a measurement was started inside another one, which holds the "
                                                  r"device lock \(roofline\(\.\.\.\) or roofline\.measure\(\) called"):
            with device_lock("cpu"):
                pass
    with device_lock("cpu"), pytest.raises(ValueError):  # released however the block ends
        raise ValueError("kernel failed")
    with device_lock("cpu"):
        pass
