"""Model FLOPs utilization: measure against the model's analytic FLOPs, not what the compiler executed."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from conftest import normal

DEPTH = 2


def mlp_loss(params, x):
    for w in params:
        x = jax.nn.relu(x @ w)
    return jnp.mean(x**2)


train_step = jax.jit(jax.grad(mlp_loss))


# The gradient step is three n x n x n matmuls per layer (forward, and the two of the backward pass): 6·B·W²·L
# useful FLOPs (the "6ND" rule), with B = W = n. Square f32 matmuls are compute-bound from n = 1.5 x the critical
# intensity x 4 bytes; sized at 2x that (1792 on an H100, 512, the floor, on a CPU), the step stays compute-bound
# with its activations and the elementwise work around the matmuls. MFU > 0.5 is "excellent": 81% on Zen 4 at
# n = 512 (87.6% Xeon, about 100% Zen 4 at batch 256, width 1024); on an H100 this step at batch 256 was
# memory-bound (34%); at this size (1280) an H200 reached 37% of its TF32 peak.
@pytest.mark.roofline(bound="compute")
def test_mlp_train_step_mfu(roofline, key):
    n = max(512, roofline.hardware.compute_bound_size(jnp.float32, margin=2, multiple=128))
    params = [normal(jax.random.fold_in(key, i), (n, n)) * 0.03 for i in range(DEPTH)]
    x = normal(key, (n, n))
    result = roofline(train_step, params, x, name="train_step", flops=6 * n * n * n * DEPTH,
                      min={"cpu": 0.4, "gpu": 0.18})
    assert result.flops_source == "user"
