"""Conditionals measured end to end on the CPU, from real profiler traces: the branch that ran is what is counted, a
conditional inside a loop is charged by how often each branch ran, and none of them is called impossible."""

from __future__ import annotations

from typing import Any

import pytest

import pytest_roofline

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.slow
jnp = jax.numpy
lax = jax.lax

FAST = {"min_runs": 3, "max_runs": 5, "budget_s": 0.3, "warmup": 1}
N = 1024


def test_a_cond_whose_cheap_branch_ran_counts_that_branch() -> None:
    """``lax.cond(False, dear, cheap)``: the dear branch (two 1024^3 matmuls, 4.29 GFLOP) was counted before, and
    the kernel read 1092% "impossible"; the branch that ran adds 1 to each element (1 MFLOP)."""
    w = jnp.full((N, N), 1e-3, jnp.float32)

    def choose(x: Any, w: Any, p: Any) -> Any:
        return lax.cond(p, lambda v: jnp.tanh(v @ w @ w), lambda v: v + 1.0, x)

    r = pytest_roofline.measure(choose, jnp.ones((N, N), jnp.float32), w, jnp.array(False), **FAST)
    assert r.flops == pytest.approx(N * N, rel=0.01)
    assert not r.impossible and not r.figures.unjudged
    (line,) = r.work.branches.lines
    assert line.endswith(": ran branch 0 1 times per run (from the trace)") and not r.work.branches.unsure
    assert r.census.ops_per_run == pytest.approx(sum(row.events_per_run for row in r.ops))  # only ops that ran
    assert "matmul" not in r.census.text()
    assert all(row.measured_s is not None for row in r.ops)
    assert r.to_dict()["conditionals"] == [line]


def test_a_cond_inside_a_loop_is_charged_by_how_often_each_branch_ran() -> None:
    """A stabilising matvec every tenth of 20 iterations (lineax CG's shape): 2 matvecs and 18 scalings ran."""
    a = jnp.full((N, N), 1e-3, jnp.float32)

    def iterate(v: Any, a: Any) -> Any:
        def body(i: Any, u: Any) -> Any:
            return lax.cond(i % 10 == 0, lambda w: jnp.tanh(a @ w), lambda w: w * 0.5, u)

        return lax.fori_loop(0, 20, body, v)

    r = pytest_roofline.measure(iterate, jnp.ones((N,), jnp.float32), a, **FAST)
    if " conditional(" not in r.hlo_text:
        # XLA:GPU turns this cond into a select: both branches run every trip (tests/data/corpus, cond_in_loop),
        # and what ran is counted: 20 matvecs and their tanh
        assert r.flops == pytest.approx(20 * (2 * N * N), rel=0.10) and not r.work.branches.lines
        assert r.transcendentals == pytest.approx(20 * N, rel=0.10) and not r.impossible
        return
    analytic = 2 * (2 * N * N) + 18 * N
    assert r.flops == pytest.approx(analytic, rel=0.10)
    assert r.transcendentals == pytest.approx(2 * N, rel=0.10)
    (line,) = r.work.branches.lines
    assert line.endswith(": ran branch 0 18, branch 1 2 times per run (from the trace)")
    assert not r.impossible


def test_a_search_that_ran_no_iteration_is_counted_as_none_not_as_a_lower_bound() -> None:
    """A line search inside a solver's loop whose first step is accepted (jaxopt's LBFGS: its zoom search ran no
    iteration): its body shows no event, its condition one per search; before, its body was counted once and the
    counts called a lower bound. Four outer steps of a matvec, each with a search of two matmuls that never runs."""
    a = jnp.full((N, N), 1e-3, jnp.float32)

    def solve(v: Any, a: Any, tries: Any) -> Any:
        def step(i: Any, u: Any) -> Any:
            u = jnp.tanh(a @ u)

            def search(c: Any) -> Any:
                k, w = c
                return k + 1, w @ a @ a

            return lax.while_loop(lambda c: c[0] < tries, search, (0, u[None]))[1][0]

        return lax.fori_loop(0, 4, step, v)

    r = pytest_roofline.measure(solve, jnp.ones((N,), jnp.float32), a, jnp.array(0), **FAST)
    assert not r.work.counts_lower_bound, r.work.loops
    assert any(loop.endswith(": 0 iterations ran (from the trace)") for loop in r.work.loops)
    assert r.flops == pytest.approx(4 * 2 * N * N, rel=0.10)  # the four matvecs; no search's matmuls
