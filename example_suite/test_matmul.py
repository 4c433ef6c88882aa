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


# How thresholds are set in the example suite: each comment says what the model expects the kernel to reach (a
# single fused pass or a GEMM can reach its roofline, first touch of fresh pages included; extra passes XLA:CPU
# makes cost what they cost), and the threshold is half the lower of the medians measured on the two CPU families
# seen so far (a 2-core Intel Xeon VM and a 2-core AMD EPYC Zen 4 VM, live ceilings): a 2x margin for other
# machines. The figures are in docs/measurements.md.

# Batch 1 reads each weight once and does 2 FLOPs with it: pure weight streaming, roofline reachable (f32:
# medians 45.8% Xeon, 64% Zen 4; XLA:CPU's gemv loop is not a stream). bf16 on a CPU: XLA:CPU converts the
# weights into a fresh 134 MB f32 temporary on every call; with the first touch of that temporary in the
# roofline it reaches 97% on Zen 4 (17% without); on a GPU the same test streams bf16 directly.
@pytest.mark.parametrize("dtype,threshold", [(jnp.float32, 0.22), (jnp.bfloat16, 0.4)], ids=["f32", "bf16"])
@pytest.mark.roofline(bound="memory")
def test_small_batch_is_memory_bound(roofline, key, dtype, threshold):
    x, w = normal(key, (1, D), dtype), normal(key, (D, F), dtype)
    roofline(dense, x, w, min=threshold)


# Batch 256 does hundreds of FLOPs per byte: the matrix units are the limit; XLA's GEMM gets close (f32 medians
# 86% Xeon, 97-104% Zen 4; bf16, whose per-call converts make it slower on a CPU: 76% Xeon, 95% Zen 4).
@pytest.mark.parametrize("dtype,threshold", [(jnp.float32, 0.43), (jnp.bfloat16, 0.38)], ids=["f32", "bf16"])
@pytest.mark.roofline(bound="compute")
def test_large_batch_is_compute_bound(roofline, key, dtype, threshold):
    x, w = normal(key, (256, D), dtype), normal(key, (D, F), dtype)
    roofline(dense, x, w, min=threshold)


@pytest.mark.roofline(min=0.32, bound="compute")
def test_batched_matmul(roofline, key):
    # 16 independent 512x512x512 products in one call: compute-bound like one large matmul, roofline reachable
    # (medians 65% quiet Xeon, 72% Zen 4).
    a, b = normal(key, (16, 512, 512)), normal(key, (16, 512, 512))
    roofline(jnp.matmul, a, b)
