"""The per-device lock that keeps xdist workers from timing two kernels at once."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_roofline.plugin.lock import device_lock, lock_path

fcntl = pytest.importorskip("fcntl")


def test_lock_excludes_another_process() -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from pytest_roofline.plugin.lock import device_lock\n"
         "with device_lock():\n    print('held', flush=True); sys.stdin.readline()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with open(lock_path(), "a") as handle:
            with pytest.raises(BlockingIOError):
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
    with device_lock():  # released: this process can take it
        pass


def test_lock_path_depends_on_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    first = lock_path()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert lock_path() != first
