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


# Read x once, write once; the row statistics stay in registers: a streaming kernel. On a CPU each call
# page-faults a fresh 128 MiB output inside the op (see test_donation.py), so these reach only
# 13.8 / 14.6 / 19.1% (RMS norm) and 12.3 / 13.6 / 19.2% (layer norm) on the development VM.
# Thresholds here are 0.7x the median (see test_matmul.py).
@pytest.mark.roofline(min=0.11, bound="memory")
def test_rms_norm(roofline, key):
    roofline(rms_norm, normal(key, (ROWS, COLS)), jnp.ones((COLS,)))


@pytest.mark.roofline(min=0.1, bound="memory")
def test_layer_norm(roofline, key):
    roofline(layer_norm, normal(key, (ROWS, COLS)), jnp.ones((COLS,)), jnp.zeros((COLS,)))


# Softmax reads its input twice (max, then exp-sum) unless fused in one pass; one exp per element. On a CPU
# the exp throughput, not memory, bounds it (the calibrated transcendental rate); on GPUs, whose table has no
# transcendental rate, it is memory-bound: no bound= here. 55.3 / 65.8 / 102.1% (live ceilings overshoot
# beside a neighbour: the exp reference slows more than this kernel; quiet runs 55-59-63%, threshold 0.7x that).
@pytest.mark.roofline(min=0.41)
def test_softmax(roofline, key):
    roofline(lambda x: jax.nn.softmax(x, axis=-1), normal(key, (ROWS, COLS)), name="softmax")


# A reduction reads 128 MiB and writes 32 KiB, no big output to fault in: 40.8 / 44.8 / 61.6%.
@pytest.mark.roofline(min=0.32, bound="memory")
def test_row_sum(roofline, key):
    roofline(lambda x: x.sum(axis=-1), normal(key, (ROWS, COLS)), name="row_sum")


# Five elementwise ops fuse into one loop: one read, one write, no temporaries in memory; one tanh per element
# (transcendental-bound on a CPU, like softmax): 36.1 / 49.1 / 66.8%; quiet runs 36-39-50%, threshold 0.7x that.
@pytest.mark.roofline(min=0.27)
def test_fused_elementwise_chain(roofline, key):
    roofline(gelu_chain, normal(key, (ROWS, COLS)))
