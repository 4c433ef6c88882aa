"""dm-haiku as its docs write it: a ``hk.transform``-ed MLP applied with its params, and the gradient of a loss through
``hk.remat``. Counted against 2 x batch x (each layer's in x out), never above the roofline. Real haiku on this
machine's CPU, skipped where it is not installed (``pip install -e '.[frameworks]'``)."""

from __future__ import annotations

from typing import Any

import pytest
from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline

hk = library("haiku")

B, D, H = 128, 256, 512
LAYER_FLOPS = 2 * B * (D * H + H * H + H * D)  # three dense layers


def mlp(x: Any) -> Any:
    return hk.nets.MLP([H, H, D])(x)


def test_a_transformed_mlp_counts_its_three_layers() -> None:
    forward = hk.without_apply_rng(hk.transform(mlp))
    x = jnp.ones((B, D), jnp.float32)
    params = forward.init(jax.random.PRNGKey(0), x)
    result = pytest_roofline.measure(forward.apply, params, x, **FAST)
    matrix = sum(result.work.matrix_flops.values())
    assert matrix == pytest.approx(LAYER_FLOPS, rel=0.001)
    assert result.flops == pytest.approx(LAYER_FLOPS, rel=0.02)  # the bias adds and relus beside them
    assert not result.impossible and result.bound == "compute"


def test_a_remat_gradient_counts_what_ran_and_is_not_impossible() -> None:
    """The gradient through ``hk.remat``: the forward layers, each weight's gradient, and the inputs' gradients of the
    two layers above the first (its input needs none); what XLA recomputes or shares is what the program counts."""
    rematted = hk.without_apply_rng(hk.transform(lambda x: hk.remat(mlp)(x)))
    x = jnp.ones((B, D), jnp.float32)
    params = rematted.init(jax.random.PRNGKey(0), x)

    def loss(params: Any, x: Any) -> Any:
        return jnp.mean(rematted.apply(params, x) ** 2)

    result = pytest_roofline.measure(jax.grad(loss), params, x, **FAST)
    least = LAYER_FLOPS + LAYER_FLOPS + 2 * B * (H * H + H * D)  # forward, weight gradients, two input gradients
    matrix = sum(result.work.matrix_flops.values())
    assert least * 0.999 <= matrix <= least + LAYER_FLOPS  # at most one forward recomputed
    assert not result.impossible
