"""mctx's ``muzero_policy`` as its docs write it, under ``jax.jit(functools.partial(...))``: a search of nested loops
whose Dirichlet noise and action sampling run threefry's integer bit mixing. The integer ops are counted apart from
the FLOPs and never held to the f32 peak; the simulations are counted as they ran. Real mctx on this machine's CPU,
skipped where it is not installed (``pip install -e '.[frameworks]'``)."""

from __future__ import annotations

import functools
from typing import Any

from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline

mctx = library("mctx")

B, A, E, SIMULATIONS = 16, 8, 32, 8


def recurrent_fn(params: Any, rng: Any, action: Any, embedding: Any) -> Any:
    nxt = jnp.tanh(embedding @ params + action[:, None].astype(jnp.float32))
    out = mctx.RecurrentFnOutput(reward=jnp.zeros(B), discount=jnp.full(B, 0.99), prior_logits=nxt[:, :A],
                                 value=nxt[:, 0])
    return out, nxt


def test_a_muzero_search_counts_integer_work_apart_and_its_simulations_as_they_ran() -> None:
    params = jax.random.normal(jax.random.PRNGKey(0), (E, E)) / 8
    root = mctx.RootFnOutput(prior_logits=jnp.zeros((B, A)), value=jnp.zeros(B), embedding=jnp.ones((B, E)))
    policy = jax.jit(functools.partial(mctx.muzero_policy, recurrent_fn=recurrent_fn,
                                       num_simulations=SIMULATIONS))
    result = pytest_roofline.measure(policy, params, jax.random.PRNGKey(1), root, **FAST)
    assert result.work.int_ops > 0  # threefry's bit mixing, not FLOPs
    assert result.flops >= SIMULATIONS * 2 * B * E * E  # one embedding matmul a simulation
    # Held to the integer rate (this CPU's calibration), never to a FLOP peak; where no rate is known, said so.
    integer = [use for use in result.ceilings_used if use.work == "integer ops"]
    if result.hardware.integer is not None:
        assert [(u.amount, u.ceiling) for u in integer] == [(result.work.int_ops, result.hardware.integer)]
        assert result.roofline.compute_time_s >= result.work.int_ops / result.hardware.integer.value
    else:
        assert not integer and any("integer ops" in n and "not timed" in n for n in result.notes)
    assert not result.impossible and not result.figures.unjudged
