"""Order statistics and numbers as people read them (base/quantiles.py, base/units.py): against hand-worked values and
numpy's linear percentile."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pytest_roofline.base.quantiles import quantile, relative_iqr
from pytest_roofline.base.units import format_bytes, format_fraction, format_quantity, format_seconds


def test_a_quantile_interpolates_between_order_statistics_as_numpy_does() -> None:
    assert quantile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.5  # sorted 1 2 3 4: halfway between 2 and 3
    assert quantile([4.0, 1.0, 3.0, 2.0], 0.2) == pytest.approx(1.6)  # position 0.6 between 1 and 2
    assert quantile([7.0], 0.9) == 7.0 and quantile([1.0, 9.0], 0.0) == 1.0 and quantile([1.0, 9.0], 1.0) == 9.0
    rng = random.Random(0)
    for _ in range(50):
        values = [rng.lognormvariate(0, 1) for _ in range(rng.randint(1, 40))]
        q = rng.random()
        assert quantile(values, q) == pytest.approx(float(np.percentile(values, 100 * q)))
    with pytest.raises(ValueError, match="no values"):
        quantile([], 0.5)


def test_the_relative_iqr_is_the_quartiles_distance_over_the_median() -> None:
    assert relative_iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx((4.0 - 2.0) / 3.0)
    assert relative_iqr([5.0, 5.0, 5.0]) == 0.0
    assert relative_iqr([3.0]) == 0.0  # one run has no spread
    assert relative_iqr([0.0, 0.0, 1.0]) == 0.0  # a median of zero: no ratio


@pytest.mark.parametrize(("seconds", "text"), [(2.5, "2.5 s"), (1.0, "1 s"), (0.0123, "12.3 ms"), (4.5e-5, "45 us"),
                                               (3e-9, "3 ns"), (1234.0, "1.23e+03 s")])
def test_seconds_take_the_largest_unit_below_them(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


def test_quantities_take_si_prefixes_and_bytes_binary_ones() -> None:
    assert format_quantity(2.5e12, "FLOP/s") == "2.5 TFLOP/s" and format_quantity(49e9, "B/s") == "49 GB/s"
    assert format_quantity(999.0, "B") == "999 B" and format_quantity(-3e6, "B") == "-3 MB"
    assert format_quantity(1.2e18, "FLOP") == "1.2e+03 PFLOP"
    assert format_bytes(64 * 2**20) == "64 MiB" and format_bytes(1536) == "1.5 KiB" and format_bytes(12) == "12 B"
    assert format_fraction(0.9) == "90%" and format_fraction(0.025) == "2.5%" and format_fraction(0.12345) == "12.3%"
