"""Adaptive stopping and the spread figure with a fake clock; page faults and CPU waiting of a run from the
operating system (no timing is asserted)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from pytest_roofline.analysis.model.contention import CONTENDED_ABOVE, OTHERS_ABOVE, waiting_share
from pytest_roofline.analysis.runs.run_stats import relative_iqr
from pytest_roofline.hardware.cpu import minor_page_faults, thread_times_ns
from pytest_roofline.measurement import timing
from pytest_roofline.measurement.options import TimingSettings


def test_relative_iqr() -> None:
    assert relative_iqr([1.0] * 5) == 0.0
    assert relative_iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx((4.0 - 2.0) / 3.0)
    assert relative_iqr([7.0]) == 0.0


class FakeClock:
    """perf_counter() that advances by the given run durations (a fake: no real time passes)."""

    def __init__(self, durations: list[float]) -> None:
        self.now = 0.0
        self.durations = itertools.cycle(durations)

    def perf_counter(self) -> float:
        return self.now

    def run(self, _args: Any) -> None:
        self.now += next(self.durations)


def runs_with(monkeypatch: pytest.MonkeyPatch, durations: list[float], **settings: Any) -> int:
    clock = FakeClock(durations)
    monkeypatch.setattr(time, "perf_counter", clock.perf_counter)  # the module measurement.timing uses
    return len(timing.run_adaptively(lambda: None, clock.run, TimingSettings(**settings)).walls)


def test_steady_kernel_stops_once_min_runs_and_min_time_are_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    assert runs_with(monkeypatch, [0.001], min_runs=5, min_time_s=0.2) == 100  # max_runs=100 caps it first
    assert runs_with(monkeypatch, [0.01], min_runs=5, min_time_s=0.2) == 20
    assert runs_with(monkeypatch, [0.1], min_runs=5, min_time_s=0.2) == 5


def test_noisy_kernel_runs_until_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    assert runs_with(monkeypatch, [0.01, 0.02], min_runs=5, budget_s=0.5, target_spread=0.02) == 34


def test_a_slow_kernel_says_it_is_being_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake clock: runs of 3 and 3.5 s in turn (too noisy to stop early), a 60 s budget. Every 10 s of timing
    gives one line, with the runs so far."""
    clock = FakeClock([3.0, 3.5])
    monkeypatch.setattr(time, "perf_counter", clock.perf_counter)
    said: list[str] = []
    monkeypatch.setattr(timing, "_progress", said.append)
    timing.run_adaptively(lambda: None, clock.run, TimingSettings(min_runs=5, budget_s=60, target_spread=0.0),
                           label="jit_slow")
    assert said[0] == "still timing jit_slow: 4 runs in 13 s (the last 3.50 s; at least 5 runs, at most 60 s)"
    assert len(said) == 4  # at 13, 26, 39 and 52 s: about every 10 s up to the budget


def test_a_warm_up_run_of_a_second_or_more_says_the_timing_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake clock: a warm-up run of 1.2 s (unprofiled) is said before the first timed run (before, a kernel of 1 s a
    run was silent for the first 10-15 s); one of 0.5 s is not."""
    said: list[str] = []
    monkeypatch.setattr(timing, "_progress", said.append)
    for run_s in (1.2, 0.5):
        clock = FakeClock([run_s])
        monkeypatch.setattr(time, "perf_counter", clock.perf_counter)
        timing.warm_up(lambda: None, clock.run, TimingSettings(min_runs=5, budget_s=60), None, probe=False,
                        label="jit_slow")
    assert said == ["timing jit_slow: a warm-up run took 1.2 s; at least 5 runs (about 6 s), at most 60 s"]


def test_a_reference_is_warmed_up_once_in_a_process_not_beside_every_kernel() -> None:
    """Two kernels warmed up beside the same reference: it runs after the first kernel's warm-up only; another
    reference is warmed up in its turn."""
    ran: list[str] = []

    def reference_run(_: object) -> None:
        ran.append("reference")

    def other_run(_: object) -> None:
        ran.append("other")

    settings = TimingSettings(warmup=2)
    for execute in (reference_run, reference_run, other_run):
        timing.warm_up(lambda: None, lambda _: ran.append("kernel"), settings,
                       timing.Beside("jit_reference", lambda: None, execute), probe=False)
    assert ran == ["kernel", "reference", "kernel", "kernel", "kernel", "kernel", "other", "kernel"]


def test_reference_runs_bracket_the_kernel_and_count_against_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake clock: kernel runs of 120 ms each get a reference after every run; runs of 10 ms one after every tenth
    (once 100 ms have passed since the last), and one after the last run whatever the time."""
    clock = FakeClock([0.12])
    monkeypatch.setattr(time, "perf_counter", clock.perf_counter)
    beside = timing.Beside("jit_reference", lambda: None, clock.run)
    runs = timing.run_adaptively(lambda: None, clock.run, TimingSettings(min_runs=5, min_time_s=0.2),
                                  beside=beside)
    assert len(runs.walls) == 5 and runs.slots == [0, 1, 2, 3, 4, 5]  # reference, kernel, reference, ...
    clock = FakeClock([0.01])
    monkeypatch.setattr(time, "perf_counter", clock.perf_counter)
    beside = timing.Beside("jit_reference", lambda: None, clock.run)
    runs = timing.run_adaptively(lambda: None, clock.run, TimingSettings(min_runs=5, min_time_s=0.2),
                                  beside=beside)
    assert runs.slots[0] == 0 and runs.slots[-1] == len(runs.walls)
    assert all(0 < b - a <= 11 for a, b in zip(runs.slots, runs.slots[1:], strict=False))  # 100 ms, float sums
    assert len(runs.refs) <= len(runs.walls) // 5  # 0.2 s of minimum time, a tenth of it references
    calibrating = timing.Beside("jit_reference", lambda: None, clock.run, every_s=0.0)  # a calibration: every run
    every = timing.run_adaptively(lambda: None, clock.run, TimingSettings(min_runs=5, min_time_s=0.2),
                                   beside=calibrating)
    assert every.slots == list(range(len(every.walls) + 1))
    # The operating system's page-fault count is kept for every run where it exists (Linux, macOS).
    if minor_page_faults() is not None:
        assert len(runs.kernel_faults()) == len(runs.walls)
        assert all(f >= 0 for f in runs.faults)
        assert len(runs.reference_faults()) == len(runs.refs)  # one per reference run: a fresh-output one is checked
    # So is the scheduler's share of waiting for a CPU (Linux).
    if thread_times_ns() is not None:
        assert len(runs.kernel_waiting()) == len(runs.walls)
        assert all(0.0 <= w <= 1.0 for w in runs.waiting)


def test_page_faults_of_a_run_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that touches 64 fresh pages (a new bytearray written page by page) takes at least 64 faults."""
    if minor_page_faults() is None:
        pytest.skip("this operating system does not count page faults")
    import mmap

    def touch(_args: Any) -> Any:
        buf = mmap.mmap(-1, 64 * mmap.PAGESIZE)
        for page in range(64):
            buf[page * mmap.PAGESIZE] = 1
        buf.close()

    faults = timing._timed(lambda: None, touch).faults
    assert faults is not None and 64 <= faults < 64 + 200


def test_waiting_share_is_the_waiting_part_of_the_ready_time() -> None:
    assert waiting_share((1_000, 500), (4_000, 1_500)) == pytest.approx(1_000 / 4_000)
    assert waiting_share((0, 0), (0, 0)) == 0.0
    assert waiting_share(None, (1, 1)) is None


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.slow
def test_a_run_beside_processes_that_hold_every_cpu_waits_for_one() -> None:
    """Real scheduler statistics: a run that spins for 0.4 s while twice as many busy processes as CPUs run (its
    thread gets about a third of a CPU or less) waits for a CPU during well over 10% of its ready time; its own
    on-CPU time grows; and the machine's CPU statistics show the other processes' share."""
    if thread_times_ns() is None:
        pytest.skip("this operating system keeps no scheduler statistics per thread")
    before = thread_times_ns()
    busy = "print('busy', flush=True)\nwhile True: pass"  # until killed below, however slow this machine is
    procs = [subprocess.Popen([sys.executable, "-c", busy], stdout=subprocess.PIPE, text=True)
             for _ in range(2 * (os.cpu_count() or 1))]
    try:
        for proc in procs:  # each one spinning before the run starts
            assert proc.stdout is not None and proc.stdout.readline() == "busy\n"
        waiting = timing._timed(lambda: None, lambda _: _spin(0.4)).waiting
        settings = TimingSettings(warmup=0, min_runs=4, max_runs=4, min_time_s=0.0)
        others = timing.run_adaptively(lambda: None, lambda _: _spin(0.1), settings).others
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    after = thread_times_ns()
    assert before is not None and after is not None and after[0] > before[0]
    assert waiting is not None and waiting > CONTENDED_ABOVE
    # The CPU statistics say whose the CPUs were: the busy processes used well over a tenth of them.
    if others is not None:  # /proc/stat readable
        assert others > OTHERS_ABOVE


def test_sampling_goes_on_while_the_interval_straddles_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fake kernel alternating 9.5 ms and 10.5 ms runs: its utilization (roofline 10 ms) is 95% or 105%, median
    # 100%. A threshold of 50% is decided at once; one of 100% sits inside the interval until the budget ends.
    from pytest_roofline.analysis.model.live import settled

    def rule(threshold: float) -> timing.Settled:
        return lambda walls, refs, slots: settled([0.01 / w for w in walls], threshold, 0.02)

    def runs(threshold: float) -> int:
        clock = FakeClock([0.0095, 0.0105])
        monkeypatch.setattr(time, "perf_counter", clock.perf_counter)
        settings = TimingSettings(min_runs=5, min_time_s=0.0, budget_s=0.5, target_spread=0.02)
        return len(timing.run_adaptively(lambda: None, clock.run, settings, settled=rule(threshold)).walls)

    assert runs(0.5) == 5
    assert runs(1.0) == 50  # 0.5 s budget / 10 ms


def test_settings_are_checked_where_they_are_given() -> None:
    from pytest_roofline.measurement.options import MeasureOptions

    for bad in ({"min_time_s": -1}, {"budget_s": 0}, {"timer": "sundial"}, {"min_runs": 3, "max_runs": 2},
                {"warmup": -1}, {"target_spread": -0.1}):
        with pytest.raises(ValueError):
            MeasureOptions.from_keywords(bad)


def test_the_cache_is_evicted_after_the_inputs_are_prepared_and_outside_the_clock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake eviction that takes 50 ms of the fake clock: it runs once per timed run, after that run's inputs
    are prepared, and no run's wall clock includes it; the warm check runs follow, without eviction."""
    clock = FakeClock([0.01])
    monkeypatch.setattr(time, "perf_counter", clock.perf_counter)
    order: list[str] = []

    def prepare() -> None:
        order.append("prepare")

    def evict() -> None:
        order.append("evict")
        clock.now += 0.05

    def execute(args: Any) -> None:
        order.append("run")
        clock.run(args)

    runs = timing.run_adaptively(prepare, execute, TimingSettings(min_runs=3, max_runs=3, min_time_s=0),
                                  cache=timing.CacheRuns(evict, warm_check=2))
    assert order[:9] == ["prepare", "evict", "run"] * 3
    assert order[9:] == ["prepare", "run"] * 3  # one untimed warm run, then the two warm check runs
    assert runs.walls == pytest.approx([0.01] * 3) and runs.warm == pytest.approx([0.01] * 2)


@pytest.mark.parametrize(("run_s", "checked"), [(0.001, 5), (0.012, 5), (0.02, 3), (0.5, 3)])
def test_the_warm_check_stops_at_three_runs_once_they_took_a_tenth_of_the_sampling_time(
        monkeypatch: pytest.MonkeyPatch, run_s: float, checked: int) -> None:
    """A fake clock, 0.5 s of minimum sampling time: five warm runs of 1 ms or 12 ms (60 ms in all); three of 20 ms
    (60 ms: a tenth reached) or of half a second."""
    clock = FakeClock([run_s])
    monkeypatch.setattr(time, "perf_counter", clock.perf_counter)
    runs = timing.run_adaptively(lambda: None, clock.run, TimingSettings(min_runs=3, max_runs=3, min_time_s=0.5),
                                  cache=timing.CacheRuns(lambda: None, warm_check=5))
    assert len(runs.warm) == checked
    # Processes in lockstep make every warm run whatever they took: each run of their program waits for all of them.
    lockstep = timing.run_adaptively(lambda: None, clock.run, TimingSettings(min_runs=3, max_runs=3, min_time_s=0.5),
                                      cache=timing.CacheRuns(lambda: None, warm_check=5),
                                      agree=lambda vote: vote != "more")
    assert len(lockstep.warm) == 5


def test_a_program_of_many_ops_keeps_its_trace_within_budget() -> None:
    # 100,000 events in all: a program of 25,000 ops per run gets 4 timed runs (below min_runs=5, at least 3) and
    # 2 warm runs to check a cold measurement; one of 50,000 ops gets 3; a small program is not held back.
    many = TimingSettings(min_runs=5, max_runs=100, ops_per_run=25_000)
    assert many.profiled_max_runs() == 4 and many.warm_check_runs(5) == 2
    assert TimingSettings(min_runs=5, ops_per_run=50_000).profiled_max_runs() == 3
    small = TimingSettings(min_runs=5, max_runs=100, ops_per_run=10)
    assert small.profiled_max_runs() == 100 and small.warm_check_runs(5) == 5
    assert TimingSettings(min_runs=2, ops_per_run=90_000).profiled_max_runs() == 2  # never more than min_runs needs


def test_every_measurement_on_a_device_evicts_with_one_buffer_made_once() -> None:
    """Making an eviction buffer touches twice the cache's pages for the first time: it is made once per device and
    size, and each call still writes the whole of it (this CPU's real device, a small size)."""
    jax = pytest.importorskip("jax")
    from pytest_roofline.measurement.machine.eviction import Evictor

    device = jax.devices()[0]
    first = Evictor.shared(device, 1 << 16)
    first()
    assert Evictor.shared(device, 1 << 16) is first
    assert int(first._buffer[0]) == 2  # made (one write), then one eviction: every element written each time
    other = Evictor.shared(device, 1 << 17)
    assert other is not first and other.nbytes == 1 << 17 and Evictor.shared(device, 1 << 17) is other
