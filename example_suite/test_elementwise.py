"""Memory-bound kernels: normalization, softmax, a reduction and an elementwise chain XLA fuses."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from conftest import normal

ROWS, COLS = 8192, 4096  # 128 MiB of f32: no cache holds it


def rms_norm(x, scale):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * scale


def layer_norm(x, scale, bias):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale + bias


def gelu_chain(x):
    return jax.nn.gelu(x * 1.5 + 0.5) * 2.0 - 1.0


# Read x once, write once; the row statistics stay in registers: a streaming kernel, memory-bound everywhere
# (under 1 FLOP/B). On a CPU each call page-faults a fresh 128 MiB output inside the op (see test_donation.py):
# with that first touch in the roofline (the default) a single pass reaches it (medians 90% RMS norm, 87% layer
# norm on Zen 4; 13-15% of the roofline without first touch on both CPUs). An H100 streams both at 86-88% of its
# datasheet bandwidth, an H200 at 79% (RMS) and 75% (layer norm). Thresholds: half the lower median (see
# test_matmul.py).
@pytest.mark.roofline(min={"cpu": 0.45, "gpu": 0.39}, bound="memory")
def test_rms_norm(roofline, key):
    roofline(rms_norm, normal(key, (ROWS, COLS)), jnp.ones((COLS,)))


@pytest.mark.roofline(min={"cpu": 0.43, "gpu": 0.37}, bound="memory")
def test_layer_norm(roofline, key):
    roofline(layer_norm, normal(key, (ROWS, COLS)), jnp.ones((COLS,)), jnp.zeros((COLS,)))


# Softmax reads its input twice (max, then exp-sum) unless fused in one pass; one exp per element and a fresh
# 128 MiB output. On a CPU the first touch of that output is the largest term, then the exp throughput (the
# calibrated transcendental rate): it is bound by neither compute nor memory there, so the bound is declared for
# accelerators only, where the table has no transcendental rate and 0.5 FLOP/B is memory-bound. Medians 83% on
# Zen 4 with first touch, 88% of the datasheet bandwidth on an H100, 78% on an H200.
@pytest.mark.roofline(min={"cpu": 0.4, "gpu": 0.39}, bound={"gpu": "memory", "tpu": "memory"})
def test_softmax(roofline, key):
    roofline(lambda x: jax.nn.softmax(x, axis=-1), normal(key, (ROWS, COLS)), name="softmax")


# A reduction reads 128 MiB and writes 32 KiB, no big output to fault in; the roofline is reachable, but
# XLA:CPU's row reduction does not stream at the copy's rate (medians 44.8% Xeon, 46% Zen 4), while XLA:GPU's does
# (92% on an H100 and an H200): the same kernel earns a different fraction on each, so each has its threshold.
@pytest.mark.roofline(min={"cpu": 0.22, "gpu": 0.45}, bound="memory")
def test_row_sum(roofline, key):
    roofline(lambda x: x.sum(axis=-1), normal(key, (ROWS, COLS)), name="row_sum")


# Five elementwise ops fuse into one loop: one read, one write into a fresh output, no temporaries in memory;
# one tanh per element (first touch, then tanh, bound it on a CPU, like softmax): median 73% on Zen 4; memory-bound
# on accelerators, 89% on an H100, 85% on an H200.
@pytest.mark.roofline(min={"cpu": 0.35, "gpu": 0.42}, bound={"gpu": "memory", "tpu": "memory"})
def test_fused_elementwise_chain(roofline, key):
    roofline(gelu_chain, normal(key, (ROWS, COLS)))
