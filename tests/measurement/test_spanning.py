"""Two pytest processes of one JAX program on this machine (gloo collectives, two forced CPU devices each): the
suite in tests/data/spanning (a sharded matmul, a psum, an all-gather) measured in lockstep. Slow: each case
starts two pytest processes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

import pytest
from paths import DATA

DATA = DATA / "spanning"
_JAX = tuple(int(x) for x in version("jax").split(".")[:2])
# jax 0.9.0 refuses the suite's replicated host arrays on other processes' devices ("Cannot copy array to
# non-addressable device"): the two-process CPU form is checked from jax 0.10.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        _JAX < (0, 10), reason="two-process CPU suite checked from jax 0.10 (see docs/spanning-hosts.md)"
    ),
]


def _project(tmp_path: Path) -> Path:
    for name in ("conftest.py", "test_spanning_kernels.py"):
        shutil.copy(DATA / f"{name}.txt", tmp_path / name)
    return tmp_path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return int(s.getsockname()[1])


# One process that imports JAX, reads (after calibrating, the first time) this machine's ceilings from the test
# session's cache, and compiles and runs a small program: what every pytest process below does before it measures.
STARTUP = """
import jax, jax.numpy as jnp
from pytest_roofline.measurement.machine.calibration_kernels import cpu_spec
cpu_spec(jax.devices()[0].device_kind)
jax.jit(lambda a: a @ a)(jnp.ones((256, 256))).block_until_ready()
"""


@pytest.fixture(scope="module")
def deadline_s() -> float:
    """How long a two-process run may take on this machine: scaled from one process's start-up, timed after the
    calibration is in the session's cache (so that the processes below read it instead of calibrating, and the
    deadline holds on a machine of any speed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    subprocess.run([sys.executable, "-c", STARTUP], env=env, check=True, capture_output=True)
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", STARTUP], env=env, check=True, capture_output=True)
    return max(120.0, 60 * (time.monotonic() - start))


def _run_both(project: Path, extra_env: dict[str, str], *args: str, timeout: float,
              quiet: bool = True) -> list[subprocess.CompletedProcess[str]]:
    keep = ("PYTEST_ROOFLINE_CACHE_DIR",)  # the session's calibration, never the user's
    env = {k: v for k, v in os.environ.items()
           if k in keep or not k.startswith(("PYTEST_ROOFLINE", "XLA_FLAGS", "JAX_PLATFORMS"))}
    env.update(DEMO_PORT=str(_free_port()), PYTEST_ROOFLINE_PEER_TIMEOUT="120", **extra_env)
    procs = []
    for i in (0, 1):
        cmd = [sys.executable, "-m", "pytest", *(["-q"] if quiet else []), "-p", "no:cacheprovider",
               f"--junitxml={project}/junit{i}.xml", *args]
        procs.append(subprocess.Popen(cmd, cwd=project, env={**env, "DEMO_PROCESS": str(i)}, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=timeout)
            outs.append(subprocess.CompletedProcess(p.args, p.returncode, out, ""))
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return outs


def _verdicts(junit: Path) -> dict[str, str]:
    return {prop.get("name", ""): prop.get("value", "") for prop in ET.parse(junit).iter("property")
            if prop.get("name", "").endswith(".verdict")}


def test_two_processes_measure_as_one_and_process_0_reports(tmp_path: Path, deadline_s: float) -> None:
    project = _project(tmp_path)
    first, second = _run_both(project, {}, "--roofline-report=report.json", timeout=deadline_s)
    assert first.returncode == 0 and second.returncode == 0, first.stdout[-3000:] + second.stdout[-3000:]
    assert "roofline summary" in first.stdout and "roofline summary" not in second.stdout
    assert "roofline: process 1 of 2: 3 kernel(s) measured with the other processes; process 0" in second.stdout
    # both processes judged every kernel, alike
    assert _verdicts(project / "junit0.xml") == _verdicts(project / "junit1.xml") != {}
    report = json.loads((project / "report.json").read_text())
    results = {r["label"]: r["result"] for r in report["results"]}
    assert set(results) == {"matmul", "psum", "all_gather"}
    for label, result in results.items():
        processes = result["processes"]
        assert processes["count"] == 2 and processes["index"] == 0
        assert processes["topology"] == "2 processes x 2 devices (4 devices)"
        assert set(processes["per_process_median_s"]) == {"0", "1"}
        assert len(processes["per_device_median_s"]) == 4
        # the run time is the slowest device's: at least each process's own
        assert result["device_time_s"] >= max(processes["per_process_median_s"].values()) * 0.999, label
    # the collectives cross between the two processes; the matmul has none
    assert results["matmul"]["processes"]["hosts"]["host_bytes"] == 0
    psum = results["psum"]["processes"]["hosts"]
    per_device = 256 * 1024 * 4  # each of the 4 devices all-reduces its f32[256,1024] shard
    assert psum["local_bytes"] == pytest.approx(2 * 3 / 4 * per_device)  # ring model, one hop per device
    assert psum["host_bytes"] == pytest.approx(2 * 3 / 4 * per_device)  # one crossing hop per host
    assert psum["lower_bound"] is True  # a CPU has no host-link figure


def test_the_slowed_process_is_named(tmp_path: Path, deadline_s: float) -> None:
    project = _project(tmp_path)
    first, second = _run_both(project, {"DEMO_SLOW_PROCESS": "0"}, "-k", "matmul", "--roofline-report=slow.json",
                              timeout=deadline_s)
    assert first.returncode == 0 and second.returncode == 0, first.stdout[-3000:] + second.stdout[-3000:]
    (result,) = [r["result"] for r in json.loads((project / "slow.json").read_text())["results"]]
    processes = result["processes"]
    assert processes["decided_by"]["process"] == 0
    assert processes["per_process_median_s"]["0"] > 2 * processes["per_process_median_s"]["1"]
    assert "slowest device process 0" in processes["text"]


def test_a_process_that_dies_stops_the_other_with_a_message(tmp_path: Path, deadline_s: float) -> None:
    """Process 1 dies once process 0 is ready to time the psum and waits for it (an event, not a clock). JAX's
    coordinator then stops process 0 (heartbeats missed for 15 s), inside pytest's capture; its abort watch says
    why on the terminal, with JAX's own reason."""
    project = _project(tmp_path)
    first, second = _run_both(project, {"DEMO_DIE": "1", "DEMO_HEARTBEAT_S": "15"}, timeout=deadline_s)
    assert second.returncode == 3, second.stdout[-3000:]  # it died in its second test
    assert first.returncode != 0
    assert ("roofline: process 0 of 2 ended abruptly (its last word: ready to time kernel 'psum'): JAX said: "
            "Terminating process because the JAX distributed service detected fatal errors.") in first.stdout, \
        first.stdout[-3000:]
    assert "The following tasks are unhealthy (stopped sending heartbeats): 1" in first.stdout


def test_two_processes_start_from_an_empty_calibration_cache(tmp_path: Path, deadline_s: float) -> None:
    """Nothing cached, started as a user would (no -q: the header detects the hardware): one process calibrates
    under the device lock while the other waits for it, and neither holds the lock while JAX's start-up exchanges
    the processes' devices (a process holding it there could keep the other from ever reaching that exchange). The
    deadline is three of the module's (which scales with this machine's start-up): room for a calibration made
    while the other process waits."""
    (tmp_path / "project").mkdir()
    project = _project(tmp_path / "project")
    empty = tmp_path / "empty"
    first, second = _run_both(project, {"PYTEST_ROOFLINE_CACHE_DIR": str(empty)}, "-k", "matmul",
                              timeout=3 * deadline_s, quiet=False)
    assert first.returncode == 0 and second.returncode == 0, first.stdout[-3000:] + second.stdout[-3000:]
    both = first.stdout + second.stdout
    assert both.count("calibrating this machine's ceilings once") == 1, both[-3000:]  # the other read the cache
    assert both.count("roofline: CPU ") == 2  # each header names the hardware
    assert len(list(empty.glob("calibration-cpu-*.json"))) == 1


FAKE_CONTENDED_CALIBRATION = '''

# A FAKE calibration, made up: contended (so never cached: a second process would calibrate again), logged.
from pytest_roofline.hardware.calibration_figures import CalibrationFigures
from pytest_roofline.measurement.machine import calibration_kernels


def _log(event):
    with open(os.environ["DEMO_EVENTS"], "a") as fh:
        fh.write(f"{event} {os.environ['DEMO_PROCESS']}\\n")


def _fake_measure_ceilings(platform, progress=None):
    _log("calibration-start")
    figures = CalibrationFigures({"f32": 5e10}, 1e10, {"f32": "fake", "memory": "fake"}, contention=0.5)
    _log("calibration-end")
    return figures


calibration_kernels.measure_ceilings = _fake_measure_ceilings
'''

CROSS_STEP = '''
import os

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

MESH = Mesh(jax.devices(), ("x",))


def test_a_cross_process_step_before_measuring(roofline):
    with open(os.environ["DEMO_EVENTS"], "a") as fh:
        fh.write(f"test-start {os.environ['DEMO_PROCESS']}\\n")
    # checks the value's equality across the processes: every process must be here
    x = jax.device_put(jnp.ones((256, 256), jnp.float32), NamedSharding(MESH, P()))
    roofline.measure(jax.jit(lambda a: a @ a), x, name="replicated_matmul")
'''


@pytest.mark.parametrize("quiet", [False, True], ids=["header", "quiet"])
def test_processes_of_one_program_start_together_from_an_empty_cache(tmp_path: Path, deadline_s: float,
                                                                      quiet: bool) -> None:
    """Nothing cached and a calibration that is never cached (a fake, contended): one calibration serves both
    processes, and neither enters its test, whose body starts with a cross-process step, while the other is still
    calibrating (that process waited beyond gloo's 30 s and both tests failed). Checked by the order of the events,
    not by a clock; with and without the header (-q detects the hardware at the first measurement)."""
    (tmp_path / "project").mkdir()
    project = _project(tmp_path / "project")
    (project / "conftest.py").write_text((project / "conftest.py").read_text() + FAKE_CONTENDED_CALIBRATION)
    (project / "test_cross_step.py").write_text(CROSS_STEP)
    events = tmp_path / "events.txt"
    first, second = _run_both(project, {"PYTEST_ROOFLINE_CACHE_DIR": str(tmp_path / "empty"),
                                        "DEMO_EVENTS": str(events)},
                              "test_cross_step.py", "--roofline-ceilings=calibrated", timeout=deadline_s, quiet=quiet)
    assert first.returncode == 0 and second.returncode == 0, first.stdout[-3000:] + second.stdout[-3000:]
    said = events.read_text().split("\n")
    order = [line.split()[0] for line in said if line]
    assert order.count("calibration-end") == 1, said  # one calibration for both processes
    assert order.index("calibration-end") < order.index("test-start"), said  # no test began before it ended
    assert order.count("test-start") == 2
