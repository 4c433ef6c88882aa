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
