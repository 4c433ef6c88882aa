"""A flax.nnx block and its optax AdamW step, jitted with nnx.jit and passed as modules and an optimizer. Real flax
and optax on this machine's CPU, skipped where they are not installed (``pip install -e '.[frameworks]'``)."""

from __future__ import annotations

from typing import Any

import pytest
from frameworks import FAST, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline

nnx = library("flax.nnx")
optax = library("optax")

B, D, H = 256, 256, 1024


class Block(nnx.Module):  # type: ignore[name-defined,misc]  # flax is untyped here (importorskip)
    def __init__(self, rngs: Any) -> None:
        self.norm = nnx.LayerNorm(D, rngs=rngs)
        self.up = nnx.Linear(D, H, rngs=rngs)
        self.down = nnx.Linear(H, D, rngs=rngs)

    def __call__(self, x: Any) -> Any:
        return x + self.down(nnx.gelu(self.up(self.norm(x))))


@nnx.jit  # type: ignore[untyped-decorator]
def train_step(model: Any, optimizer: Any, x: Any) -> Any:
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean(m(x) ** 2))(model)
    optimizer.update(model, grads)
    return loss


def test_a_module_forward_and_its_adamw_step_count_their_matmuls() -> None:
    model = Block(nnx.Rngs(0))
    x = jnp.ones((B, D))
    matmuls = 2 * (2 * B * D * H)
    forward = pytest_roofline.measure(nnx.jit(lambda m, v: m(v)), model, x, **FAST)
    assert matmuls <= forward.flops <= 1.05 * matmuls
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
    step = pytest_roofline.measure(train_step, model, optimizer, x, **FAST)
    assert 2.9 * matmuls <= step.flops <= 3.1 * matmuls, step.flops / matmuls
    assert step.source_flops is not None and abs(step.flops / step.source_flops - 1) < 0.05
    plain = pytest_roofline.measure(lambda m, v: m(v), model, x, **FAST)  # a plain function of a module
    assert plain.flops == pytest.approx(forward.flops, rel=0.01)
