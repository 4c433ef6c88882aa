"""Transformer pieces: a gated MLP block and attention, naive and fused."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from conftest import normal


def gated_mlp(x, w_up, w_gate, w_down):
    return (jax.nn.silu(x @ w_gate) * (x @ w_up)) @ w_down


# Three matmuls dominate (6·T·D·H FLOPs); the elementwise gate is fused and nearly free. With tokens = model width
# = n and hidden = 2n, each matmul has at least the intensity of a square one (n/6 FLOP/B in f32): n at 2x the
# critical intensity (1792 on an H100, the 512 floor on a CPU) keeps the block compute-bound: 62-78% on Zen 4 at
# n = 512. At 512 tokens x 1024 it was compute-bound on a CPU (medians 82.6% Xeon, 90% Zen 4) but memory-bound on
# an H100 (23%). At this size (1280) an H200 ran it at 33% of its TF32 peak.
@pytest.mark.roofline(min={"cpu": 0.31, "gpu": 0.16}, bound="compute")
def test_gated_mlp_block(roofline, key):
    n = max(512, roofline.hardware.compute_bound_size(jnp.float32, margin=2, multiple=128))
    keys = jax.random.split(key, 4)
    x = normal(keys[0], (n, n))
    w_up, w_gate, w_down = normal(keys[1], (n, 2 * n)), normal(keys[2], (n, 2 * n)), normal(keys[3], (2 * n, n))
    roofline(gated_mlp, x, w_up, w_gate, w_down)


BATCH, HEADS, SEQ, HEAD_DIM = 4, 8, 512, 64


def naive_attention(q, k, v):
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)


def qkv(key):
    shape = (BATCH, SEQ, HEADS, HEAD_DIM)
    return normal(key, shape), normal(jax.random.fold_in(key, 1), shape), normal(jax.random.fold_in(key, 2), shape)


# The score matrix (B·H·S·S floats) goes to memory and back around the softmax: 12 FLOP/B. That is memory-bound
# on every accelerator (ridge points of 65-560 FLOP/B) and compute-bound on a CPU (a few FLOP/B), where it stays
# well below the roofline (medians 25.2% Xeon, 43% Zen 4 with the first touch of the score matrix); an H100 ran
# it at 83% of its memory bandwidth, an H200 at 68%.
@pytest.mark.roofline(min={"cpu": 0.12, "gpu": 0.33}, bound={"gpu": "memory", "tpu": "memory"})
def test_naive_attention(roofline, key):
    roofline(naive_attention, *qkv(key))


# jax.nn.dot_product_attention picks XLA's fused implementation where one exists (cuDNN on GPU); on a CPU it is the
# generic path with an extra transpose (medians 17.2% Xeon, 56% Zen 4); on an H100, 83%, on an H200, 68% (memory-bound
# like the naive one: at this size the score matrix is what the XLA path moves).
@pytest.mark.roofline(min={"cpu": 0.08, "gpu": 0.33}, bound={"gpu": "memory", "tpu": "memory"})
def test_dot_product_attention(roofline, key):
    roofline(jax.nn.dot_product_attention, *qkv(key))
