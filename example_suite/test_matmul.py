"""Matmul at several batch sizes: the critical batch size of the roofline, shown in practice.

For x[B, D] @ w[D, F] the intensity is about B FLOPs per byte in bf16 (B/2 in f32) while B << D, F.
Below the hardware's critical intensity (a few FLOP/B on a CPU, ~295 on an H100) the kernel is
memory-bound: it streams the weights once per call. Above it, compute-bound.
"""

from __future__ import annotations

import jax.numpy as jnp
import pytest
from conftest import normal

D, F = 4096, 8192  # 128 MiB of f32 weights: larger than any CPU cache, so the weights stream from DRAM


def dense(x, w):
    return x @ w


# Thresholds in the example suite are 0.7x the median utilization on the 2-core Intel Xeon development VM
# over 10 runs with --roofline-calibrate and a neighbour process busy during half of them (live ceilings),
# or 0.7x the median of the quiet runs where that is lower (live ceilings overshoot for some kernels beside
# a neighbour); each comment gives min / median / max of those runs. Other machines reach other figures.

# Batch 1 reads each weight once and does 2 FLOPs with it: pure weight streaming (f32: 42.7 / 45.8 / 53.6%).
# bf16 on a CPU: XLA:CPU converts the weights to f32 on every call (336 MB moved instead of 64 MB) and
# reaches 19.4 / 27.4 / 32.3% of the roofline of what it moves; on a GPU the same test streams bf16 directly.
@pytest.mark.parametrize("dtype,threshold", [(jnp.float32, 0.33), (jnp.bfloat16, 0.192)], ids=["f32", "bf16"])
@pytest.mark.roofline(bound="memory")
def test_small_batch_is_memory_bound(roofline, key, dtype, threshold):
    x, w = normal(key, (1, D), dtype), normal(key, (D, F), dtype)
    roofline(dense, x, w, min=threshold)


# Batch 256 does hundreds of FLOPs per byte: the matrix units are the limit; XLA's GEMM gets close
# (f32: 77.8 / 86.3 / 96.7%; bf16, whose per-call converts make it slower on a CPU: 71.5 / 76.3 / 86.8%).
@pytest.mark.parametrize("dtype,threshold", [(jnp.float32, 0.61), (jnp.bfloat16, 0.54)], ids=["f32", "bf16"])
@pytest.mark.roofline(bound="compute")
def test_large_batch_is_compute_bound(roofline, key, dtype, threshold):
    x, w = normal(key, (256, D), dtype), normal(key, (D, F), dtype)
    roofline(dense, x, w, min=threshold)


@pytest.mark.roofline(min=0.46, bound="compute")
def test_batched_matmul(roofline, key):
    # 16 independent 512x512x512 products in one call: compute-bound like one large matmul (64.2 / 85.2 / 96.7%;
    # quiet runs 64-65-97%, the median beside a neighbour is overshot: threshold 0.7x the quiet median).
    a, b = normal(key, (16, 512, 512)), normal(key, (16, 512, 512))
    roofline(jnp.matmul, a, b)
