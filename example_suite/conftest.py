"""Shared inputs for the example suite. Kernels are written as a JAX user would write them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest


@pytest.fixture(scope="session")
def key() -> jax.Array:
    return jax.random.key(0)


def normal(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    return jax.random.normal(key, shape, jnp.float32).astype(dtype)
