"""Shared inputs for the example suite. Kernels are written as a JAX user would write them.

An input is a stretch of one host array of normal values (a block of 65,521 values from numpy's generator,
repeated), starting at a point the JAX key picks, copied to the device in the dtype asked for. The kernels' time
does not depend on the values. Drawing every value (``jax.random.normal`` compiles and runs a threefry program for
each shape) took 3.4-3.9 s of the suite's 24-27 s on a 2-core VM before any kernel ran; filling a fresh host array
for each input, 1.2 s of its 19 s."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

BLOCK = 65_521  # a prime: rows of any power-of-two width start at different points of the block
_repeated_values: dict[np.dtype, np.ndarray] = {}  # per dtype, the block repeated: grown to the largest input


@pytest.fixture(scope="session")
def key() -> jax.Array:
    return jax.random.key(0)


def _repeated(size: int, dtype: np.dtype) -> np.ndarray:
    """At least ``size + BLOCK`` values in ``dtype``: the block repeated, made once per dtype (bfloat16 is numpy's
    through ml_dtypes) and grown where a larger input needs it."""
    kept = _repeated_values.get(dtype, np.empty(0, dtype))
    if kept.size < size + BLOCK:
        values = np.empty(max(size + BLOCK, 2 * kept.size), dtype)
        values[:BLOCK] = np.random.default_rng(0).standard_normal(BLOCK, dtype=np.float32).astype(dtype)
        filled = BLOCK
        while filled < values.size:  # doubling copies: 64 MiB in a few milliseconds
            step = min(filled, values.size - filled)
            values[filled:filled + step] = values[:step]
            filled += step
        kept = _repeated_values[dtype] = values
    return kept


def normal(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    size = int(np.prod(shape))
    start = int(np.random.default_rng(np.asarray(jax.random.key_data(key))).integers(BLOCK))
    # One copy to the device (converting there would compile a program for each shape).
    return jnp.asarray(_repeated(size, np.dtype(dtype))[start:start + size].reshape(shape))
