"""The small suite of the nightly demo (bench/nightly_demo.py): three kernels a nightly run would track.

ROOFLINE_DEMO_SLOW=matmul makes the matmul do redundant work (a second product, added to the first), as a
careless change to a kernel would. The test states the useful FLOPs analytically (flops=), so the redundant
work shows as lost utilization instead of being counted as useful.
"""

from __future__ import annotations

import os

import jax
import pytest

SLOW = os.environ.get("ROOFLINE_DEMO_SLOW", "")
B, D, F = 256, 2048, 2048
ROWS, COLS = 4096, 4096  # 64 MiB of f32: larger than the caches


def matmul(x, w):
    if SLOW == "matmul":  # redundant: the same product computed a second time from a rescaled input
        return x @ w + (x * 0.5) @ w - (x * 0.5) @ w
    return x @ w


def row_sum(x):
    return x.sum(axis=1)


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


@pytest.fixture(scope="module")
def data():
    key = jax.random.key(0)
    return {"x": jax.random.normal(key, (B, D)), "w": jax.random.normal(key, (D, F)),
            "big": jax.random.normal(key, (ROWS, COLS))}


def test_row_sum(roofline, data):
    roofline(row_sum, data["big"])


def test_softmax(roofline, data):
    roofline(softmax, data["big"])


# Last: on a 2-core CPU VM the kernel measured right after the slowed matmul lost 10-23% in 3 of
# 5 demo runs (the machine is slower for a while after a long matrix load), which would blur the demo.
def test_matmul(roofline, data):
    roofline(matmul, data["x"], data["w"], flops=2 * B * D * F)
