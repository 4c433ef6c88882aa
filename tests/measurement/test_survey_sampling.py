"""The survey's sampling of a long test, on this machine's real profiler: once a test has run its first stretch in
full, it is profiled in windows, and a run a window's edge cut short is never counted (it would read faster than the
program runs). The sampling's stretches are made short here so that a test of a fraction of a second is sampled."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from pytest_roofline.analysis.runs.trace_events import RunTimes, TraceEvent
from pytest_roofline.measurement.survey.sightings import Programs, read_sightings
from pytest_roofline.measurement.survey.watch import Sampling, watching

jax = pytest.importorskip("jax")
jnp = jax.numpy

N = 192


def _three_matmuls(x: Any) -> Any:
    for _ in range(3):
        x = jnp.tanh(x @ x / N)
    return x


def test_a_long_test_is_profiled_in_windows_and_no_run_cut_by_an_edge_is_counted() -> None:
    step = jax.jit(_three_matmuls)
    y = step(jnp.ones((N, N), jnp.float32) / N).block_until_ready()
    with watching(Sampling(full_s=0.05, window_s=0.03, period_s=0.08)) as watch:
        for _ in range(200_000):  # back to back: a run is going on whenever a window starts or stops
            y = step(y)
            if len(watch.parts) >= 4:
                break
    assert watch.sampled and len(watch.parts) >= 4
    assert watch.parts[0].cut == (False, True)  # the test's start, then cut by the sampling
    assert all(p.cut == (True, True) for p in watch.parts[1:-1])  # windows, started and stopped while it ran
    assert watch.parts[-1].cut[0]  # a window the sampling started (stopped by it, or by the test's end)
    known, runs = Programs(), []
    for part in watch.parts:
        read = read_sightings(part.xspace, "t.py::test_loop", None, known, cut=part.cut)
        assert read.problems == []
        runs += [t for s in read.found if s.module == "jit__three_matmuls" for t in s.per_run_s]
    assert len(runs) >= 10
    # Every run counted holds its three matmuls: a run cut at an edge would hold one or two, and read a third or two
    # thirds of the time (a slower run is this machine's noise; a faster one by half cannot be).
    assert min(runs) > 0.5 * statistics.median(runs)


def _event(start: float, run: int) -> TraceEvent:
    return TraceEvent("/host:CPU", "t", "op", start, start + 1.0, {"run_id": run})


def test_runs_without_the_first_or_the_last_keep_the_others_numbered_in_order() -> None:
    events = tuple(_event(10.0 * r + k, r) for r in range(4) for k in range(2))
    runs = RunTimes((1.0, 2.0, 3.0, 4.0), "run_id", events, {i: i // 2 for i in range(8)},
                    {"cpu": (1.0, 2.0, 3.0, 4.0)})
    inner = runs.without(first=True, last=True)
    assert inner.per_run_s == (2.0, 3.0) and inner.per_device_s == {"cpu": (2.0, 3.0)}
    assert inner.run_of_event == {2: 0, 3: 0, 4: 1, 5: 1}
    assert runs.without(first=False, last=True).per_run_s == (1.0, 2.0, 3.0)
    assert runs.without(first=False, last=False) == runs
