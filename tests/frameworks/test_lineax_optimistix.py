"""lineax and optimistix as their docs write them: a conjugate-gradient solve whose stabilising matrix-vector product
runs every tenth iteration inside a ``lax.cond`` (before, it was charged on all 20 and the solve read 126-154%
"impossible"), and a Newton root find given its data through ``args=``, which reaches ``optimistix.root_find`` as
written (before, the plugin took it for its own explicit form). Counted against the steps the solvers report. Real
lineax and optimistix on this machine's CPU, skipped where they are not installed."""

from __future__ import annotations

from typing import Any

import pytest
from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline

lx = library("lineax")
optx = library("optimistix")

N, STEPS = 512, 20


def _spd() -> Any:
    m = jax.random.normal(jax.random.PRNGKey(0), (N, N)) / jnp.sqrt(N)
    return m @ m.T + jnp.eye(N)


def test_a_cg_solve_counts_its_iterations_and_the_stabilising_products_that_ran() -> None:
    def cg(a: Any, b: Any) -> Any:
        operator = lx.MatrixLinearOperator(a, lx.positive_semidefinite_tag)
        sol = lx.linear_solve(operator, b, solver=lx.CG(rtol=1e-12, atol=1e-12, max_steps=STEPS), throw=False)
        return sol.value, sol.stats["num_steps"]

    a, b = _spd(), jnp.ones(N)
    steps = int(jax.jit(cg)(a, b)[1])
    result = pytest_roofline.measure(cg, a, b, **FAST)
    if " conditional(" in result.hlo_text:
        products = steps + steps // 10  # one a step, and the stabilising one every tenth
        matrix = sum(result.work.matrix_flops.values())
        assert matrix == pytest.approx(products * 2 * N * N, rel=0.10), (steps, matrix / (2 * N * N))
    else:  # XLA:GPU made the cond a select (both products run every step), each a multiply-and-reduce fusion
        products = 2 * steps
        assert result.flops == pytest.approx(products * 2 * N * N, rel=0.10), (steps, result.flops / (2 * N * N))
    assert any(f"{steps} iterations ran (from the trace)" in loop for loop in result.work.loops), result.work.loops
    assert not result.impossible and not result.figures.unjudged


def test_a_newton_root_find_takes_its_args_as_written_and_counts_its_lu_solves() -> None:
    def fn(y: Any, args: Any) -> Any:
        return args @ y - jnp.tanh(y) - 1.0

    a = _spd()[:128, :128]
    solver = optx.Newton(rtol=1e-6, atol=1e-6)
    steps = int(optx.root_find(fn, solver, jnp.zeros(128), args=a).stats["num_steps"])
    result = pytest_roofline.measure(optx.root_find, fn, solver, jnp.zeros(128), args=a, **FAST)
    assert any(f"{steps} iterations ran (from the trace)" in loop for loop in result.work.loops), result.work.loops
    lu = steps * (2 * 128**3 / 3)  # one LU factorization a Newton step (LAPACK or cuSOLVER getrf, from its shape)
    assert result.flops >= lu and not result.work.uncounted
    assert not result.impossible
