"""A Pallas kernel with its cost estimate, and a memory assertion.

XLA cannot see into a Pallas kernel: the roofline counts what the kernel's ``cost_estimate`` states. On a GPU or
TPU the kernel is compiled; on a CPU it runs in Pallas's interpret mode, where the counts are still the
estimate's but the timings measure the interpreter, not an accelerator (the result's notes say so), so no
utilization threshold is set there.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl

ROWS, COLS, BLOCK = 4096, 512, 512  # f32: 8 MiB per array; a grid of 8 row blocks
INTERPRET = jax.devices()[0].platform == "cpu"  # compiled on GPU/TPU; interpreted on a CPU


def _axpy_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = 2.0 * x_ref[...] + y_ref[...]


def axpy(x, y):
    """2x + y, row block by row block: 2 FLOPs per element, two arrays read and one written."""
    n = x.size
    return pl.pallas_call(
        _axpy_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(x.shape[0] // BLOCK,),
        in_specs=[pl.BlockSpec((BLOCK, x.shape[1]), lambda i: (i, 0))] * 2,
        out_specs=pl.BlockSpec((BLOCK, x.shape[1]), lambda i: (i, 0)),
        cost_estimate=pl.CostEstimate(flops=2 * n, transcendentals=0, bytes_accessed=3 * n * x.dtype.itemsize),
        interpret=INTERPRET,
    )(x, y)


# The kernel holds x, y and the output: 24 MiB (25.2 MB). Pallas's interpreter adds 32 MiB of temporaries (its
# copies of the arrays it slices blocks from and writes blocks into): the footprint is the program that runs.
@pytest.mark.roofline(max_memory="64 MiB" if INTERPRET else "32 MiB")
def test_pallas_axpy(roofline):
    x = jnp.ones((ROWS, COLS), jnp.float32)
    result = roofline(axpy, x, x)
    n = ROWS * COLS
    assert (result.flops, result.bytes_accessed) == (2 * n, 3 * n * 4)  # the estimate, read back exactly
    assert result.memory.arguments + result.memory.outputs == 3 * n * 4
