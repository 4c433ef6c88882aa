"""Shared inputs for the example suite. Kernels are written as a JAX user would write them.

An input is a block of 65,521 normal values (numpy's generator, seeded by a JAX key) repeated to its shape: the
kernels' time does not depend on the values, and drawing every value (``jax.random.normal`` compiles and runs a
threefry program for each shape; numpy's generator draws about 100 M values a second) took 3.4-3.9 s of the
suite's 24-27 s on a 2-core VM before any kernel ran."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

BLOCK = 65_521  # a prime: rows of any power-of-two width start at different points of the block


@pytest.fixture(scope="session")
def key() -> jax.Array:
    return jax.random.key(0)


def normal(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    block = np.random.default_rng(np.asarray(jax.random.key_data(key))).standard_normal(BLOCK, dtype=np.float32)
    size = int(np.prod(shape))
    values = np.empty(max(size, BLOCK), np.float32)
    values[:BLOCK] = block
    filled = BLOCK
    while filled < size:  # doubling copies: a 64 MiB input in a few milliseconds
        step = min(filled, size - filled)
        values[filled:filled + step] = values[:step]
        filled += step
    return jnp.asarray(values[:size].reshape(shape), dtype=dtype)
