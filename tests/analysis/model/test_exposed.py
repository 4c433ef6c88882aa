"""Exposed communication (analysis/runs/exposed.py): on constructed traces (fakes: exact numbers) of an async collective
half hidden behind compute and of a synchronous one with nothing beside it, on the real TPU v6e all-reduce (checked
against a reading of the trace by hand), and on a real two-device psum on this CPU, reported as fully exposed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fakes import fake_result
from paths import DATA

from pytest_roofline.analysis.model.exposed import (
    CPU_NOTE,
    CollectiveTime,
    ExposedCheck,
    ExposedLimit,
    Exposure,
    check_exposed,
    exposure,
    parse_max_exposed,
)
from pytest_roofline.analysis.model.per_op import OpRow
from pytest_roofline.analysis.runs.trace_events import RunTimes, TraceEvent
from pytest_roofline.analysis.verdict.decide import decide

US = 1e3  # ns


def _row(name: str, opcode: str, family: str, link_s: float = 0.0) -> OpRow:
    return OpRow(name, opcode, None, "main", "f32[1024]", (), dtype="vector", executions=1, flops=0.0,
                 transcendentals=0.0, bytes=4096.0, collective_bytes=0.0, compute_time_s=0.0, memory_time_s=0.0,
                 comms_time_s=link_s,
                 measured_s=None, events_per_run=1.0, family=family)


ROWS = [_row("all-reduce-start.1", "all-reduce-start", "collective", 30e-6),
        _row("all-reduce-done.1", "all-reduce-done", "collective"), _row("fusion.2", "fusion", "XLA fusion"),
        _row("all-gather.3", "all-gather", "collective", 5e-6)]


def _ev(op: str, start_us: float, end_us: float, device: int = 0) -> TraceEvent:
    return TraceEvent(f"/device:GPU:{device}", "Stream #7(Kernel)", op, start_us * US, end_us * US, {"hlo_op": op})


def test_fake_async_all_reduce_half_hidden_behind_compute() -> None:
    """A fake GPU run: the all-reduce is in flight from 0 to 40 us (start event 0-1, done event 39-40), a fusion
    computes from 10 to 30 us beside it: 20 of its 40 us are exposed. Then a synchronous all-gather, 50-60 us, with
    no compute beside it: all 10 us exposed. The run lasts 60 us: 30 us exposed, 50%."""
    ops = (_ev("all-reduce-start.1", 0, 1), _ev("fusion.2", 10, 30), _ev("all-reduce-done.1", 39, 40),
           _ev("all-gather.3", 50, 60))
    runs = RunTimes((60e-6,), "constructed", ops, {i: 0 for i in range(4)})
    found = exposure(runs, ROWS, "gpu")
    assert found is not None and found.note == ""
    (reduce, gather) = found.collectives
    assert (reduce.name, reduce.opcode) == ("all-reduce-start.1", "all-reduce")
    assert (reduce.time_s, reduce.exposed_s, reduce.link_s) == pytest.approx((40e-6, 20e-6, 30e-6))
    assert (gather.time_s, gather.exposed_s) == pytest.approx((10e-6, 10e-6))
    assert found.exposed_fraction == pytest.approx(0.5)
    assert found.lines()[0] == ("all-reduce-start.1 (all-reduce): 40 us per run, 20 us exposed (33% of the run), "
                                "30 us on the link (ring model)")
    assert Exposure.from_dict(found.to_dict()) == found


def test_fake_compute_on_another_device_hides_nothing() -> None:
    ops = (_ev("all-gather.3", 0, 10, device=0), _ev("fusion.2", 0, 10, device=1))
    runs = RunTimes((10e-6,), "constructed", ops, {0: 0, 1: 0})
    found = exposure(runs, ROWS, "gpu")
    assert found is not None and found.collectives[0].exposed_s == pytest.approx(10e-6)


def test_no_collective_no_exposure() -> None:
    runs = RunTimes((30e-6,), "constructed", (_ev("fusion.2", 10, 30),), {0: 0})
    assert exposure(runs, ROWS, "gpu") is None
    assert check_exposed(None, ExposedLimit(0.0, "here")).ok


def test_max_exposed_is_a_fraction_and_a_failure_names_the_collective() -> None:
    for bad in (True, -0.1, 1.5, "10%"):
        with pytest.raises(ValueError, match=r"marker of t: max_exposed must be a fraction of the run in \[0, 1\]"):
            parse_max_exposed(bad, "marker of t", "origin")
    found = Exposure((), 1.0)
    assert check_exposed(found, parse_max_exposed(0.1, "w", "o")).ok
    runs = RunTimes((10e-6,), "constructed", (_ev("all-gather.3", 0, 10),), {0: 0})
    over = check_exposed(exposure(runs, ROWS, "gpu"), parse_max_exposed(0.25, "w", "max_exposed in the marker of t"))
    assert over.reason.startswith("collectives left 100% of the run exposed, over max_exposed 25% (max_exposed in "
                                  "the marker of t): all-gather.3 (all-gather): 10 us per run, 10 us exposed")
    assert ExposedCheck.from_dict(over.to_dict()) == over
    decision = decide(fake_result(0.9).figures, 0.5, exposed=over)
    assert decision.verdict == "exposed" and decision.fails


def test_real_tpu_all_reduce_has_no_compute_beside_it() -> None:
    """jit__psum on 4 TPU v6e chips: one synchronous all-reduce of 121.7 ms per run on every chip and no other op
    (read by hand: the XLA Ops line of each chip holds that one event per run): all of it exposed, 80% of the
    153.1 ms run. Its link time: the ring model's 2(n-1)/n of the 5.37 GB buffer over the v6e entry's ICI."""
    pytest.importorskip("jax")
    from real_profiles import real_events, real_space

    from pytest_roofline.analysis.model.per_op import op_rows
    from pytest_roofline.analysis.model.recorded_profile import hlo_key
    from pytest_roofline.analysis.program.hlo_reader import parse_hlo
    from pytest_roofline.analysis.runs.program_runs import run_times
    from pytest_roofline.analysis.runs.trace_events import programs
    from pytest_roofline.analysis.runs.xspace import hlo_module_protos
    from pytest_roofline.hardware.table import load_shipped_table
    from pytest_roofline.measurement.profiler import hlo_text

    path = DATA / "tpu_v6e_x4_inference.xplane.pb"
    space, events = real_space(path), list(real_events(path))
    key = next(k for k in programs(events, "tpu") if k.module == "jit__psum")
    spec = load_shipped_table()["TPU v6e"]
    assert spec.interconnect_bandwidth is not None
    link = spec.interconnect_bandwidth.value
    rows = op_rows(parse_hlo(hlo_text(hlo_module_protos(space)[hlo_key(key)])), lambda _: 1e15, 1e15, 1e12,
                   interconnect=link, devices=4)
    found = exposure(run_times(events, key.module, "tpu", expected_runs=3), rows, "tpu")
    assert found is not None
    (reduce,) = found.collectives
    assert reduce.opcode == "all-reduce"
    assert reduce.time_s == pytest.approx(121.7e-3, abs=0.05e-3) and reduce.exposed_s == reduce.time_s
    assert found.exposed_fraction == pytest.approx(121.7 / 153.08, abs=0.005)
    (row,) = [r for r in rows if r.family == "collective"]
    assert reduce.link_s == pytest.approx(row.collective_bytes / link)


PSUM = r"""
import json
import jax, jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec as P
from pytest_roofline import measure
mesh = Mesh(jax.devices(), ("x",))
f = jax.jit(jax.shard_map(lambda v: jax.lax.psum(jnp.sin(v), "x"), mesh=mesh, in_specs=P("x"), out_specs=P()))
r = measure(f, jnp.ones((2 * 1024, 1024), jnp.float32), min_runs=3, max_runs=3, warmup=1, ceilings="calibrated")
print(json.dumps(r.exposure.to_dict() if r.exposure else None))
"""


@pytest.mark.slow  # a process with two forced host devices
def test_real_cpu_two_device_psum_is_fully_exposed_and_says_why() -> None:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", PSUM], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    found = Exposure.from_dict(json.loads(out.stdout.strip().splitlines()[-1]))
    assert found.note == CPU_NOTE
    (reduce,) = found.collectives
    assert reduce.opcode == "all-reduce" and reduce.time_s > 0
    assert reduce.exposed_s == pytest.approx(reduce.time_s, rel=0.05)


def test_fake_gpu_start_without_a_done_event_is_its_own_span() -> None:
    """A fake GPU run where the collective's work is the -start op's own kernel (NCCL, 0-20 us) and no -done event
    was traced; a fusion computes 5-15 us beside it on another stream: 10 of its 20 us exposed."""
    ops = (_ev("all-reduce-start.1", 0, 20), _ev("fusion.2", 5, 15))
    runs = RunTimes((20e-6,), "constructed", ops, {0: 0, 1: 0})
    found = exposure(runs, ROWS, "gpu")
    assert found is not None
    assert (found.collectives[0].time_s, found.collectives[0].exposed_s) == pytest.approx((20e-6, 10e-6))


def test_the_marker_fails_a_kernel_whose_collectives_are_exposed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake results (tests/support/fakes.py) given a made-up exposure of 40% of the run: max_exposed=0.25 in the marker
    fails them as "exposed" naming the collective; a call's max_exposed=0.5 passes."""
    from dataclasses import replace

    import fakes
    from harness import Failed, Harness

    made = fakes.fake_result
    exposed = Exposure((CollectiveTime("all-reduce.1", "all-reduce", 0.5e-3, 0.4e-3, 0.1e-3),), 1e-3)
    monkeypatch.setattr(fakes, "fake_result", lambda *a, **k: replace(made(*a, **k), exposure=exposed))
    h = Harness(0.9, 0.9, marker={"min": 0.5, "max_exposed": 0.25})
    with pytest.raises(Failed) as info:
        h.fixture(lambda x: x, 1)
    assert ("collectives left 40% of the run exposed, over max_exposed 25% (max_exposed in the marker of "
            "test_k.py::test_a): all-reduce.1 (all-reduce): 500 us per run, 400 us exposed") in str(info.value)
    assert "  exposed       collectives 40% of the run vs max_exposed 25%" in str(info.value)
    assert h.records[0].verdict == "exposed"
    h.fixture(lambda x: x, 1, max_exposed=0.5)
    assert h.records[1].verdict == "pass" and h.records[1].max_exposed is not None
