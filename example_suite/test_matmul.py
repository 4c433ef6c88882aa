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


# Batch 1 reads each weight once and does 2 FLOPs with it: pure weight streaming (f32: 0.30-0.74 seen).
# bf16 on a CPU: XLA:CPU converts the weights to f32 on every call (336 MB moved instead of 64 MB) and
# reaches 0.066-0.17 of the roofline of what it moves; on a GPU the same test streams bf16 directly.
# Memory-bound thresholds here are about half of the lowest utilization seen: the development VM's
# calibrated bandwidth swings between 54 and 96 GB/s with its neighbours, and utilization with it.
@pytest.mark.parametrize("dtype,threshold", [(jnp.float32, 0.15), (jnp.bfloat16, 0.03)], ids=["f32", "bf16"])
@pytest.mark.roofline(bound="memory")
def test_small_batch_is_memory_bound(roofline, key, dtype, threshold):
    x, w = normal(key, (1, D), dtype), normal(key, (D, F), dtype)
    roofline(dense, x, w, min=threshold)


# Batch 256 does hundreds of FLOPs per byte: the matrix units are the limit; XLA's GEMM gets close
# (0.89-0.95 seen in f32; 0.59-0.72 in bf16, whose per-call converts make it slower on a CPU). Thresholds
# leave room for the development VM's noisy phases, where the same matmul runs up to 30% slower.
@pytest.mark.parametrize("dtype,threshold", [(jnp.float32, 0.5), (jnp.bfloat16, 0.35)], ids=["f32", "bf16"])
@pytest.mark.roofline(bound="compute")
def test_large_batch_is_compute_bound(roofline, key, dtype, threshold):
    x, w = normal(key, (256, D), dtype), normal(key, (D, F), dtype)
    roofline(dense, x, w, min=threshold)


@pytest.mark.roofline(min=0.4, bound="compute")
def test_batched_matmul(roofline, key):
    # 16 independent 512x512x512 products in one call: compute-bound like one large matmul (0.63-0.94 seen).
    a, b = normal(key, (16, 512, 512)), normal(key, (16, 512, 512))
    roofline(jnp.matmul, a, b)
