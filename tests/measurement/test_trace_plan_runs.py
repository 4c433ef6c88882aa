"""A program of many trace events a run, measured for real on this machine's CPU: one warm-up run is read for the
per-op times and what ran, the timed runs run without the profiler; a small program is still read every run."""

from __future__ import annotations

from typing import Any

import pytest

import pytest_roofline

jax = pytest.importorskip("jax")
jnp = jax.numpy

pytestmark = pytest.mark.slow

FAST = {"min_runs": 3, "max_runs": 5, "budget_s": 0.3, "warmup": 1}
ITERATIONS, N = 6000, 16  # about 96,000 events a run: 16 a trip (a 16x16 matmul, a tanh, a cond, their consumers)


def body(i: Any, v: Any) -> Any:
    v = jnp.tanh(v @ v) + 1e-6
    return jax.lax.cond(v[0, 0] > 0, lambda w: w * 0.5, lambda w: w + 1.0, v)


def test_a_loop_of_many_events_a_run_is_traced_once_and_counted_as_it_ran() -> None:
    loop = jax.jit(lambda x: jax.lax.fori_loop(0, ITERATIONS, body, x))
    result = pytest_roofline.measure(loop, jnp.linspace(-1.0, 1.0, N * N).reshape(N, N), **FAST)
    assert result.timer == "wallclock"
    reason = result.timer_fallback_reason
    assert "trace events a run" in reason and "the last warm-up run was profiled" in reason
    assert result.runs >= 3  # the timed runs, none of them profiled
    # The trips counted from the one traced run: a 16x16x16 matmul each.
    assert sum(result.work.matrix_flops.values()) == ITERATIONS * 2 * N**3
    assert any(row.executions >= ITERATIONS for row in result.ops)
    assert result.idle is None  # the traced run was slowed by the profiler: its gaps are not the program's
    assert not result.impossible


def test_a_small_program_is_still_timed_from_the_trace_every_run() -> None:
    result = pytest_roofline.measure(jax.jit(lambda x: x * 2.0 + 1.0), jnp.ones((256, 256)), **FAST)
    assert result.timer == "profiler" and not result.timer_fallback_reason
