"""A Keras 3 model on the JAX backend: its stateless call measured with the weights as arguments, and the model
passed whole, whose weights are compiled in as constants (said so). Real keras on this machine's CPU, skipped where
it is not installed (``pip install -e '.[frameworks]'``)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline

os.environ.setdefault("KERAS_BACKEND", "jax")
keras = library("keras")

B, D, H = 256, 256, 1024


def test_a_stateless_call_counts_its_matmuls_and_reads_its_weights_as_inputs() -> None:
    if keras.backend.backend() != "jax":
        pytest.skip(f"keras runs on {keras.backend.backend()} here (KERAS_BACKEND was set before this test)")
    model = keras.Sequential([keras.Input((D,)), keras.layers.Dense(H, activation="relu"), keras.layers.Dense(D)])
    weights = [v.value for v in model.trainable_variables]
    others = [v.value for v in model.non_trainable_variables]
    x = jnp.ones((B, D))

    def forward(trainable: Any, non_trainable: Any, v: Any) -> Any:
        return model.stateless_call(trainable, non_trainable, v)[0]

    stateless = pytest_roofline.measure(forward, weights, others, x, **FAST)
    matmuls = 2 * (2 * B * D * H)
    assert matmuls <= stateless.flops <= 1.05 * matmuls
    assert not any("constants are compiled into the program" in n for n in stateless.notes)
    whole = pytest_roofline.measure(model, x, **FAST)
    assert whole.flops == pytest.approx(stateless.flops, rel=0.01)
    assert any("of constants are compiled into the program" in n for n in whole.notes)
