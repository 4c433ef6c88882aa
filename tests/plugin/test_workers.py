"""One xdist worker per accelerator, on FAKE device lists (a made-up /proc or /dev tree under tmp_path, made-up
variables): which device each worker gets, and that the timing lock is then per device; on a CPU host nothing
is pinned and every worker shares the host-wide lock."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from paths import SUPPORT

from pytest_roofline.plugin.lock import lock_path
from pytest_roofline.plugin.xdist.workers import Accelerators, list_accelerators, pin_worker

pytest_plugins = ["pytester"]


def fake_host(tmp_path: Path, nvidia: int = 0, tpu: int = 0) -> str:
    """A FAKE host tree: ``nvidia`` GPUs in /proc/driver/nvidia/gpus, ``tpu`` chips as /dev/accelN."""
    for i in range(nvidia):
        (tmp_path / f"proc/driver/nvidia/gpus/0000:{i:02x}:00.0").mkdir(parents=True)
    (tmp_path / "dev").mkdir(parents=True, exist_ok=True)
    for i in range(tpu):
        (tmp_path / f"dev/accel{i}").touch()
    return str(tmp_path)


def test_workers_go_round_robin_over_the_gpus_of_a_host(tmp_path: Path) -> None:
    root = fake_host(tmp_path, nvidia=4)
    found = list_accelerators({}, root)
    assert found == Accelerators("CUDA_VISIBLE_DEVICES", ("0", "1", "2", "3"), "4 GPUs in /proc/driver/nvidia/gpus")
    pins = [pin_worker(f"gw{k}", {}, lambda: found) for k in range(6)]
    assert [(p.variable, p.value) for p in pins] == [("CUDA_VISIBLE_DEVICES", v) for v in "012301"]
    assert pins[5].why == "worker gw5 on device 1 of 4 (4 GPUs in /proc/driver/nvidia/gpus)"


def test_the_users_own_device_list_is_what_workers_share(tmp_path: Path) -> None:
    env = {"CUDA_VISIBLE_DEVICES": "4,6"}
    found = list_accelerators(env, fake_host(tmp_path, nvidia=8))
    assert found is not None and found.ids == ("4", "6")
    assert [pin_worker(f"gw{k}", env, lambda: found).value for k in range(3)] == ["4", "6", "4"]
    tpu = list_accelerators({}, fake_host(tmp_path / "t", tpu=4))
    assert tpu is not None and tpu.variable == "TPU_VISIBLE_CHIPS" and len(tpu.ids) == 4


def test_nothing_is_pinned_on_a_cpu_host_with_one_device_or_outside_xdist(tmp_path: Path) -> None:
    cpu = fake_host(tmp_path)
    assert list_accelerators({}, cpu) is None
    assert pin_worker("gw1", {}, lambda: list_accelerators({}, cpu)).why == (
        "no accelerators: the CPU is shared, with one host-wide timing lock")
    one = Accelerators("CUDA_VISIBLE_DEVICES", ("0",), "1 GPU")
    assert pin_worker("gw1", {}, lambda: one).variable == ""
    assert pin_worker(None, {}, lambda: one).why == "not an xdist worker"
    assert pin_worker("master", {}, lambda: one).variable == ""
    two = Accelerators("CUDA_VISIBLE_DEVICES", ("0", "1"), "2 GPUs")
    assert pin_worker("gw1", {"PYTEST_ROOFLINE_PIN_WORKERS": "0"}, lambda: two).variable == ""


def test_pinned_workers_take_different_locks_and_cpu_workers_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TPU_VISIBLE_CHIPS", raising=False)
    two = Accelerators("CUDA_VISIBLE_DEVICES", ("0", "1"), "2 GPUs")
    paths = []
    for worker in ("gw0", "gw1", "gw2"):
        pinned = pin_worker(worker, {}, lambda: two)
        monkeypatch.setenv(pinned.variable, pinned.value)
        paths.append(lock_path("gpu"))
    assert paths[0] != paths[1] and paths[0] == paths[2]  # gw2 shares gw0's device, and its lock
    assert lock_path("cpu").endswith("-cpu.lock")  # a CPU: one lock for the host, whatever is visible


ALONE = """
import time
from pathlib import Path

import pytest
from fakes import FAKE_CPU, fake_result
from pytest_roofline.plugin.hooks import activate, plugin_run
from pytest_roofline.plugin.session import RooflineSession

LOG = Path(__file__).parent / "intervals.txt"


def _interval(kind, seconds):
    start = time.monotonic()
    time.sleep(seconds)
    with LOG.open("a") as fh:
        fh.write(f"{kind} {start} {time.monotonic()}\\n")


def measure(call, options, keep):
    _interval("measure", 0.3)  # stands in for a kernel's timed runs
    return fake_result(0.5)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    old = activate(config)
    plugin_run(config).session = RooflineSession(old.settings, old.trace_root, measure=measure,
                                                hardware=lambda settings, recalibrate: (FAKE_CPU, "calibrated"),
                                                save=lambda *a: {"trace_dir": "", "perfetto": "", "hlo": "",
                                                                 "xplane": ""})
"""

ALONE_TESTS = """
import pytest
from conftest import _interval

@pytest.mark.parametrize("i", range(4))
def test_kernel(roofline, i):
    roofline.measure(len, [i])

@pytest.mark.parametrize("i", range(8))
def test_other(i):
    _interval("other", 0.1)  # another worker's test: Python work on the same cores
"""


@pytest.mark.slow  # two real xdist workers
@pytest.mark.skipif(importlib.util.find_spec("xdist") is None, reason="pytest-xdist is not installed")
def test_cpu_workers_measure_alone_no_other_test_beside_a_measurement(pytester: pytest.Pytester,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Two real xdist workers on this CPU, a fake measurement (0.3 s of sleep, named as such) in four tests and
    eight other tests: no other test's interval overlaps a measurement's, and the run says so once at start."""
    pytester.makeconftest(ALONE)
    pytester.makepyfile(test_k=ALONE_TESTS)
    monkeypatch.setenv("PYTHONPATH", str(SUPPORT))  # the workers import tests/support/fakes.py
    monkeypatch.delenv("PYTEST_ROOFLINE_CPU_WORKERS", raising=False)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(["roofline: 2 xdist workers share this CPU's * cores: each kernel is measured alone*"])
    intervals = [line.split() for line in (pytester.path / "intervals.txt").read_text().splitlines()]
    measures = [(float(a), float(b)) for kind, a, b in intervals if kind == "measure"]
    others = [(float(a), float(b)) for kind, a, b in intervals if kind == "other"]
    assert len(measures) == 4 and len(others) == 8
    beside = [(m, o) for m in measures for o in others if o[0] < m[1] and m[0] < o[1]]
    assert not beside, beside
