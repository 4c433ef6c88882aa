"""Transformer pieces: a gated MLP block and attention, naive and fused."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from conftest import normal

TOKENS, MODEL, HIDDEN = 512, 1024, 4096


def gated_mlp(x, w_up, w_gate, w_down):
    return (jax.nn.silu(x @ w_gate) * (x @ w_up)) @ w_down


# Three large matmuls dominate (6·T·D·H FLOPs); the elementwise gate is fused and nearly free
# (medians 82.6% Xeon, 90% Zen 4; thresholds are half the lower median, see test_matmul.py).
@pytest.mark.roofline(min=0.41, bound="compute")
def test_gated_mlp_block(roofline, key):
    x = normal(key, (TOKENS, MODEL))
    w_up, w_gate = normal(key, (MODEL, HIDDEN)), normal(key, (MODEL, HIDDEN))
    w_down = normal(key, (HIDDEN, MODEL))
    roofline(gated_mlp, x, w_up, w_gate, w_down)


BATCH, HEADS, SEQ, HEAD_DIM = 4, 8, 512, 64


def naive_attention(q, k, v):
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(q.shape[-1]).astype(q.dtype)
    return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)


def qkv(key):
    shape = (BATCH, SEQ, HEADS, HEAD_DIM)
    return normal(key, shape), normal(jax.random.fold_in(key, 1), shape), normal(jax.random.fold_in(key, 2), shape)


# The score matrix (B·H·S·S floats) goes to memory and back around the softmax: well below the roofline
# (medians 25.2% Xeon, 43% Zen 4 with the first touch of the score matrix).
@pytest.mark.roofline(min=0.12)
def test_naive_attention(roofline, key):
    roofline(naive_attention, *qkv(key))


# jax.nn.dot_product_attention picks XLA's fused implementation where one exists (cuDNN on GPU); on a
# CPU it is the generic path with an extra transpose (medians 17.2% Xeon, 56% Zen 4).
@pytest.mark.roofline(min=0.08)
def test_dot_product_attention(roofline, key):
    roofline(jax.nn.dot_product_attention, *qkv(key))
