"""numpyro's NUTS as its docs write it: a Bayesian logistic regression, one ``NUTS.sample`` step from a warmed-up
state. The tree the sampler builds is nested while loops and conditionals whose trips and branches depend on the
data: counted from the trace, against the leapfrog steps the sampler reports (each one gradient of the log density:
a matrix-vector product forward and one backward). Real numpyro on this machine's CPU, skipped where it is not
installed (``pip install -e '.[frameworks]'``)."""

from __future__ import annotations

from typing import Any

import pytest
from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline

numpyro = library("numpyro")

import numpyro.distributions as dist  # noqa: E402
from numpyro.infer import MCMC, NUTS  # noqa: E402

N, D = 2048, 64


def model(X: Any, y: Any = None) -> None:
    w = numpyro.sample("w", dist.Normal(jnp.zeros(D), 1.0))
    numpyro.sample("y", dist.Bernoulli(logits=X @ w), obs=y)


def test_a_nuts_step_counts_the_leapfrog_steps_it_took() -> None:
    X = jax.random.normal(jax.random.PRNGKey(0), (N, D))
    y = (X @ jnp.ones(D) > 0).astype(jnp.float32)
    mcmc = MCMC(NUTS(model), num_warmup=50, num_samples=1, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(1), X, y=y)
    kernel, warmed = mcmc.sampler, mcmc.last_state

    def step(state: Any) -> Any:
        new = kernel.sample(state, (X,), {"y": y})
        return new, new.num_steps

    steps = int(jax.jit(step)(warmed)[1])
    result = pytest_roofline.measure(step, warmed, **FAST)
    gradients = steps * 2 * (2 * N * D)  # X @ w and its transpose times the residual, per leapfrog step
    # On a GPU the products are multiply-and-reduce fusions, vector work (tests/data/corpus, numpyro_nuts): their
    # FLOPs are most of the step's
    matrix = sum(result.work.matrix_flops.values()) if result.hardware.platform == "cpu" else result.flops
    assert matrix == pytest.approx(gradients, rel=0.10), (steps, matrix / gradients)
    assert result.work.branches.lines and not result.work.branches.unsure
    assert not result.impossible and not result.figures.unjudged
