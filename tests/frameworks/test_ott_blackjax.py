"""Two libraries as their docs write them, their counts against a hand count: ott-jax's Sinkhorn solver
(``jax.jit(linear.solve)(geom)``: a loop until the marginals converge, checked every 10 iterations) and blackjax's
NUTS step (``jax.jit(nuts.step)(key, state)``: a trajectory doubled until it turns, a data-dependent number of
leapfrog steps). Every loop is read from the trace, so neither count is a lower bound. Real ott-jax and blackjax on
this machine's CPU, skipped where they are not installed (``pip install -e '.[frameworks]'``)."""

from __future__ import annotations

from typing import Any

from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline


def test_sinkhorn_counts_the_iterations_that_ran() -> None:
    pointcloud = library("ott.geometry.pointcloud")
    linear = library("ott.solvers.linear")
    n, d = 1024, 16
    x = jax.random.normal(jax.random.key(0), (n, d))
    geom = pointcloud.PointCloud(x, jax.random.normal(jax.random.key(1), (n, d)) + 1.0)
    solve = jax.jit(linear.solve)
    iterations = int(solve(geom).n_iters)
    result = pytest_roofline.measure(solve, geom, **FAST)
    assert not result.work.counts_lower_bound, result.work.loops
    # Each iteration updates both potentials in the log domain: a log-sum-exp over the n x n cost matrix each, 2 n^2
    # exponentials; every tenth, the convergence check takes one more pass (n^2 more).
    hand = n * n * (2 * iterations + iterations // 10)
    assert 1.0 <= result.work.transcendentals / hand <= 1.1


def test_a_nuts_step_counts_the_leapfrog_steps_that_ran() -> None:
    blackjax = library("blackjax")
    n, d = 4096, 64
    X = jax.random.normal(jax.random.key(0), (n, d))
    y = X @ jax.random.normal(jax.random.key(1), (d,))

    def logdensity(w: Any) -> Any:
        return -0.5 * jnp.sum((y - X @ w) ** 2) - 0.5 * jnp.sum(w**2)

    nuts = blackjax.nuts(logdensity, step_size=1e-3, inverse_mass_matrix=jnp.ones(d))
    state = nuts.init(jnp.zeros(d))
    step = jax.jit(nuts.step)
    key = jax.random.key(2)
    steps = int(step(key, state)[1].num_integration_steps)
    result = pytest_roofline.measure(step, key, state, **FAST)
    assert not result.work.counts_lower_bound, result.work.loops
    # Each leapfrog step is one gradient of the log density: two matvecs with X, 4 n d FLOPs.
    assert 1.0 <= result.work.flops / (4 * n * d * steps) <= 1.1
