"""Model FLOPs utilization: measure against the model's analytic FLOPs, not what the compiler executed."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from conftest import normal

BATCH, WIDTH, DEPTH = 256, 1024, 4


def mlp_loss(params, x):
    for w in params:
        x = jax.nn.relu(x @ w)
    return jnp.mean(x**2)


train_step = jax.jit(jax.grad(mlp_loss))

# Forward 2·B·W² per layer, backward twice that: 6·B·W²·L useful FLOPs (the "6ND" rule).
MODEL_FLOPS = 6 * BATCH * WIDTH * WIDTH * DEPTH


# The gradient step is three matmuls per layer (MFU medians 87.6% Xeon, about 100% Zen 4); >0.5 is
# "excellent". Threshold: half the lower median (see test_matmul.py).
@pytest.mark.roofline(min=0.43, flops=MODEL_FLOPS, bound="compute")
def test_mlp_train_step_mfu(roofline, key):
    params = [normal(jax.random.fold_in(key, i), (WIDTH, WIDTH)) * 0.03 for i in range(DEPTH)]
    x = normal(key, (BATCH, WIDTH))
    result = roofline(train_step, params, x, name="train_step")
    assert result.flops_source == "user"
