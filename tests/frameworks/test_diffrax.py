"""A diffrax adaptive ODE solve: a while loop of accepted and rejected steps whose trip count depends on the data,
around Runge-Kutta stages; each counted by the iterations the trace shows, against the solver's own statistics.
Real diffrax on this machine's CPU, skipped where it is not installed (``pip install -e '.[frameworks]'``)."""

from __future__ import annotations

from typing import Any

from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline

diffrax = library("diffrax")

B, D = 256, 256
STAGES = 6  # Tsit5 evaluates the vector field 6 times a step (first same as last)


def vector_field(t: Any, y: Any, w: Any) -> Any:
    return jnp.tanh(y @ w)


def solve(y0: Any, w: Any) -> Any:
    sol = diffrax.diffeqsolve(diffrax.ODETerm(vector_field), diffrax.Tsit5(), t0=0.0, t1=1.0, dt0=0.1, y0=y0, args=w,
                              stepsize_controller=diffrax.PIDController(rtol=1e-4, atol=1e-6))
    return sol.ys, sol.stats["num_steps"], sol.stats["num_rejected_steps"]


def test_an_adaptive_solve_is_counted_by_the_steps_it_took() -> None:
    y0 = jax.random.normal(jax.random.PRNGKey(1), (B, D))
    w = jax.random.normal(jax.random.PRNGKey(0), (D, D)) / 16
    _, steps, rejected = jax.jit(solve)(y0, w)
    tried = int(steps) + int(rejected)
    result = pytest_roofline.measure(solve, y0, w, **FAST)
    assert not result.counts_lower_bound, result.work.lower_bound_reason
    ran = sorted(int(loop.split(": ")[1].split()[0]) for loop in result.work.loops if "from the trace" in loop)
    assert ran == sorted([tried, STAGES]), result.work.loops
    # Each stage is one B x D x D matmul (2 FLOP a multiply-add) and its tanh; the rest of a step is vector work. The
    # first stage of the first step has no previous last stage to reuse (FSAL): one evaluation more, which the trace
    # shows (the stages' loop ran 19 times in 3 steps: 6.33 a step, read as 6 a step and counted at its 19 events).
    matmuls = (tried * STAGES + 1) * 2 * B * D * D
    assert matmuls <= result.flops <= 1.1 * matmuls, result.flops / matmuls
    assert any("from the trace" in hint for hint in result.hints)
