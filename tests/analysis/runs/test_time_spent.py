"""Where a measurement's wall time goes: the stopwatch's phases (nested phases keep only their own time), the
record's ``time_spent`` in JSON, and the phases of a real measurement."""

from __future__ import annotations

import time

import pytest

from pytest_roofline.analysis.runs.time_spent import PHASES, Stopwatch, TimeSpent, phase, spend


class _FakeClock:
    """A fake ``time.perf_counter`` that only the test advances: the phases' seconds are exact, however busy the
    machine (a real clock paused by the scheduler for 30 ms inside one phase made it 60 ms where 20 ms was due)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now

    def busy(self, seconds: float) -> None:
        self.now += seconds


def test_nothing_is_recorded_without_an_open_stopwatch() -> None:
    spend("compile", 1.0)  # no stopwatch open: nothing to add to, no error
    with phase("model"):
        pass


def test_nested_phases_keep_their_own_time_and_the_rest_goes_to_the_named_phase(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _FakeClock()
    monkeypatch.setattr(time, "perf_counter", clock.perf_counter)  # the clock the stopwatch reads
    with Stopwatch() as watch:
        with phase("model"):
            clock.busy(0.02)
            with phase("compile"):
                clock.busy(0.03)
            start = time.perf_counter()
            clock.busy(0.04)
            spend("timed runs", time.perf_counter() - start)  # a clock read by the step itself, inside "model"
        clock.busy(0.01)
    spent = watch.spent(rest="everything else")
    assert spent.get("compile") == pytest.approx(0.03) and spent.get("timed runs") == pytest.approx(0.04)
    # "model" kept only its own 20 ms, not the compile nor the timed runs inside it
    assert spent.get("model") == pytest.approx(0.02)
    assert spent.get("everything else") == pytest.approx(0.01)
    assert watch.elapsed == pytest.approx(0.1)
    assert spent.total == pytest.approx(watch.elapsed, rel=1e-6)  # the phases and the rest add up


def test_the_innermost_stopwatch_collects() -> None:
    with Stopwatch() as outer:
        with Stopwatch() as inner:
            spend("compile", 1.0)
        outer.add("second measurement", inner.elapsed)
    assert inner.spent().seconds == {"compile": 1.0}
    assert set(outer.spent().seconds) == {"second measurement"}


def test_an_unknown_phase_is_an_error_naming_the_phases() -> None:
    with Stopwatch() as watch, pytest.raises(ValueError, match="unknown phase 'compiling'; phases: compile, "):
        watch.add("compiling", 1.0)


def test_json_form_lists_phases_in_order_and_reads_back() -> None:
    spent = TimeSpent({"artifacts": 0.25, "compile": 1.5, "timed runs": 0.125})
    assert list(spent.to_dict()) == ["compile", "timed runs", "artifacts"]
    assert TimeSpent.from_dict(spent.to_dict()) == spent
    assert [p for p in PHASES if p in spent.seconds] == list(spent.to_dict())


@pytest.mark.slow  # compiles and profiles a kernel
@pytest.mark.parametrize("cache", ["warm", "cold"])
def test_a_real_measurement_accounts_for_its_wall_time(cache: str) -> None:
    """Every second in one phase: a cold measurement's eviction is "cache state", not also the loop's own work
    (counted twice, it left nothing for "model")."""
    import jax.numpy as jnp

    from pytest_roofline import measure
    from pytest_roofline.hardware.spec import Ceiling, HardwareSpec

    # A fake hardware entry (no calibration needed): the phases, not the utilization, are under test.
    fake = HardwareSpec("fake CPU", "cpu", {"f32": Ceiling(1e11, "override", "test fake", "2026-11-25")},
                        Ceiling(1e10, "override", "test fake", "2026-11-25"))
    x = jnp.ones((1 << 20,), jnp.float32)
    with Stopwatch() as watch:
        result = measure(lambda v: v * 2.0, x, name="double", min_runs=5, max_runs=5, hardware=fake, cache=cache)
    spent = watch.spent(rest="everything else")
    for name in ("compile", "warm-up", "timed runs", "profiler", "trace reading", "model"):
        assert spent.get(name) > 0, name
    assert (spent.get("cache state") > 0) == (cache == "cold")
    # the timed runs' phase is the wall clock of the runs that count
    assert spent.get("timed runs") == pytest.approx(sum(result.timing.wall_per_run_s), rel=1e-6)
    assert spent.total == pytest.approx(watch.elapsed, rel=1e-6)


def test_a_record_keeps_its_time_spent_in_json() -> None:
    from fakes import fake_result, record_of

    from pytest_roofline.records.kernel_record import KernelRecord

    spent = TimeSpent({"compile": 0.5, "timed runs": 1.25})
    record = record_of("t.py::test_k", "k", fake_result(0.8), "pass", time_spent=spent)
    assert record.to_dict()["time_spent"] == {"compile": 0.5, "timed runs": 1.25}
    assert KernelRecord.from_dict(record.to_dict()).time_spent == spent
    assert "time_spent" not in record_of("t.py::test_k", "k", fake_result(0.8), "pass").to_dict()
