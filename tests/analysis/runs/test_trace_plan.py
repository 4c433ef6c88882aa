"""Which runs are read from the trace: the rule, and its words (pure: numbers in, a plan out)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_roofline.analysis.runs.trace_plan import EVERY_RUN, READ_FLOOR_S, READ_S_PER_EVENT, trace_plan


def test_a_program_whose_reading_costs_no_more_than_its_run_is_read_every_run() -> None:
    # 1,000 events cost about 20 ms to read: a run of 50 ms is read every time.
    plan = trace_plan(1_000, 0.050, 100, forced=False)
    assert plan.traced is None and plan.events == 1_000
    assert plan.reading_s == pytest.approx(1_000 * READ_S_PER_EVENT)


def test_a_small_program_is_read_every_run_whatever_its_run_costs() -> None:
    # 100 events a run of 10 us: reading costs 200 times the run, but all 100 runs together stay under the floor.
    assert 100 * READ_S_PER_EVENT * 100 <= READ_FLOOR_S
    assert trace_plan(100, 10e-6, 100, forced=False).traced is None


def test_a_program_of_many_events_a_run_is_read_once() -> None:
    # mctx's MuZero search on a 2-core CPU: 137,000 events a run of 20 ms (its run under the profiler took 55 ms).
    plan = trace_plan(137_000, 0.055, 100, forced=False)
    assert plan.traced == 1
    text = plan.reason(0.054, [0.020, 0.019, 0.021])
    assert "137,000 trace events a run" in text and "2.74 s a run" in text
    assert "device time 54 ms; the profiler slowed that run" not in text  # no traced wall given yet
    slowed = replace(plan, traced_wall_s=0.055).reason(0.054, [0.020, 0.019, 0.021])
    assert "the profiler slowed that run 2.8x" in slowed and "wall clock" in slowed


@pytest.mark.parametrize("events", [None, 137_000])
def test_the_profiler_times_every_run_where_asked_or_not_probed(events: int | None) -> None:
    assert trace_plan(events, 0.02, 100, forced=True) == EVERY_RUN
    assert trace_plan(None, 0.02, 100, forced=False) == EVERY_RUN
    assert EVERY_RUN.reason(0.01, [0.01]) == ""


def test_the_timer_is_chosen_once_by_one_rule() -> None:
    """The four timers: the wall clock where asked; lockstep wherever the processes of a program decide together
    (every run traced, whatever the events); one run traced where reading every run would cost too much; else every
    run traced."""
    from pytest_roofline.analysis.runs.trace_plan import choose_timer

    many = trace_plan(50_000, 0.01, 100, forced=False)  # 1 s of reading a run of 10 ms: one run traced
    few = trace_plan(10, 0.01, 100, forced=False)
    assert choose_timer("wallclock", False, many) == "wall clock"
    assert choose_timer("wallclock", True, few) == "wall clock"  # asked for: no trace to match across processes
    assert choose_timer("auto", True, trace_plan(50_000, 0.01, 100, forced=True)) == "processes in lockstep"
    assert choose_timer("auto", False, many) == "one run traced"
    assert choose_timer("auto", False, few) == "every run traced"
    assert choose_timer("profiler", False, trace_plan(50_000, 0.01, 100, forced=True)) == "every run traced"
    assert choose_timer("auto", False, trace_plan(None, 0.0, 100, forced=False)) == "every run traced"  # not probed
