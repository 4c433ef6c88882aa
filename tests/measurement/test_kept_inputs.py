"""What a long-lived ``ab`` side keeps between rounds (``measure_call(keep=...)``, in a keeper the side owns): the
compiled program, and its inputs as host copies, so that the device holds a test's inputs only while that test is
measured. Twenty tests measured twice each on this machine's CPU, counted with ``jax.live_arrays()``: before, every
kept test's inputs stayed live until the process ended (twenty after the first round)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from pytest_roofline.base.calls import split_call
from pytest_roofline.measurement.options import MEASURE_OPTIONS, MeasureOptions
from pytest_roofline.measurement.pipeline import measure_call

jax = pytest.importorskip("jax")
jnp = jax.numpy
pytestmark = pytest.mark.slow

FAST = {"min_runs": 2, "max_runs": 2, "budget_s": 0.1, "warmup": 1, "min_time_s": 0.0}
TESTS = 20


def _kept_live(rows: set[int]) -> int:
    """Live device arrays of the shapes the tests' inputs have (one shape a test)."""
    gc.collect()
    return sum(1 for a in jax.live_arrays() if a.ndim == 2 and a.shape[1] == 96 and a.shape[0] in rows)


class _Keeper:
    kept: Any = None


def _measure(i: int, keeper: _Keeper) -> Any:
    x = jnp.full((32 + i, 96), float(i), jnp.float32)
    call, settings = split_call(lambda v: jnp.tanh(v) * 2.0, (x,), FAST, MEASURE_OPTIONS, "measure()")
    return measure_call(call, MeasureOptions.from_keywords(settings), keep=keeper)


def test_twenty_kept_tests_hold_no_inputs_on_the_device_between_rounds() -> None:
    rows = {32 + i for i in range(TESTS)}
    keepers = [_Keeper() for _ in range(TESTS)]
    first = [_measure(i, keepers[i]).flops for i in range(TESTS)]
    assert _kept_live(rows) == 0  # each test's inputs were released once it was measured
    assert all(k.kept is not None for k in keepers)  # the caller holds what was kept
    again = [_measure(i, keepers[i]).flops for i in range(TESTS)]
    assert _kept_live(rows) == 0
    assert again == first  # the kept programs, measured on the kept values
    assert all(f > 0 for f in first)
