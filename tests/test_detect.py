"""Regression detection on synthetic series (pure): the rates README.md states are checked here.

Each synthetic series is a utilization of 60% with Gaussian noise of 2% or 5% (relative), 20 or 30 nights,
and, for a step, the level lowered by 10%, 20% or 30% for the last 1 or 5 nights. Seeds are fixed, so the
rates are exact for these draws; the assertions leave a margin under the rates seen with 1000 series
(README.md, "Regression detection").
"""

from __future__ import annotations

import random

import pytest

from pytest_roofline.history.detect import FLOOR, MIN_WINDOW, change_points, gate, judge_series, relative_noise, welch_p

N = 300


def _series(rng: random.Random, before: int, after: int, step: float, noise: float) -> list[float]:
    return ([0.6 * (1 + rng.gauss(0, noise)) for _ in range(before)]
            + [0.6 * (1 - step) * (1 + rng.gauss(0, noise)) for _ in range(after)])


def _rate(seed: int, make: object, n: int = N) -> float:
    rng = random.Random(seed)
    return sum(judge_series(make(rng)).regression for _ in range(n)) / n  # type: ignore[operator]


def test_welch_p_matches_scipy() -> None:
    # Reference values from scipy.stats.ttest_ind(a, b, equal_var=False).pvalue (scipy 1.16).
    assert welch_p([0.61, 0.59, 0.60, 0.62, 0.58], [0.55, 0.57, 0.54, 0.56]) == pytest.approx(0.00222460334889965,
                                                                                              rel=1e-9)
    assert welch_p([1, 2, 3, 4, 5, 6], [2.5, 4, 6.5, 8]) == pytest.approx(0.27894308056556893, rel=1e-9)
    assert welch_p([1.0, 1.0], [1.0, 1.0]) == 1.0


def test_relative_noise_is_the_scaled_mad() -> None:
    # median 0.6, absolute deviations 0, .01, .01, .02, .02 -> MAD .01 -> 1.4826 * .01 / .6
    assert relative_noise([0.6, 0.59, 0.61, 0.58, 0.62]) == pytest.approx(1.4826 * 0.01 / 0.6)


def test_gate_widens_with_noise_and_never_goes_under_the_floor() -> None:
    quiet = gate([0.6] * 10)
    assert quiet.allowed_drop == FLOOR and quiet.noise == 0
    noisy = gate([0.6, 0.57, 0.63, 0.6, 0.54, 0.66, 0.6, 0.6, 0.57, 0.63])
    assert noisy.allowed_drop > 0.15
    assert not noisy.regressed(0.5) and noisy.regressed(0.4)
    single = gate([0.6], extra_noise=0.02)  # one report: its own interval is the noise
    assert single.allowed_drop == pytest.approx(max(FLOOR, 4 * 0.02))


def test_a_clean_step_is_found_where_it_is() -> None:
    values = [0.6, 0.61, 0.59, 0.6, 0.62, 0.6, 0.59, 0.45, 0.46, 0.44, 0.45, 0.46]
    (cp,) = change_points(values)
    assert cp.index == 7 and cp.change == pytest.approx(0.45 / 0.6 - 1) and cp.p < 1e-3
    finding = judge_series(values)
    assert finding.regression and "dropped 25.0% at run 8 of 12" in finding.reasons[0]


def test_a_short_history_has_no_gate() -> None:
    finding = judge_series([0.6] * (MIN_WINDOW - 1) + [0.3])
    assert finding.gate is None and not finding.regression and finding.minimum_detectable_drop is None


def test_one_slow_run_after_six_steady_ones_is_flagged_by_the_gate() -> None:
    finding = judge_series([0.60, 0.61, 0.59, 0.60, 0.62, 0.60, 0.30])
    assert finding.regression and finding.reasons[0].startswith("latest run 30.0% is 50.0% below")
    assert not finding.change_points  # one run is no segment


@pytest.mark.parametrize("noise, limit", [(0.02, 0.01), (0.05, 0.02)])
def test_pure_noise_rarely_alerts(noise: float, limit: float) -> None:
    # seen with 1000 series of 30 nights: 0.1% (2% noise), 0.7% (5% noise)
    assert _rate(1, lambda rng: _series(rng, 30, 0, 0, noise)) <= limit


@pytest.mark.parametrize("noise, limit", [(0.02, 0.01), (0.05, 0.02)])
def test_one_outlier_night_in_the_past_raises_no_alert(noise: float, limit: float) -> None:
    def make(rng: random.Random) -> list[float]:
        values = _series(rng, 30, 0, 0, noise)
        values[15] *= 0.7  # one night 30% slow, then back to normal
        return values

    assert _rate(2, make) <= limit  # seen: 0.0% and 0.4%


@pytest.mark.parametrize("noise, step, after, at_least", [
    # seen with 1000 series (20 steady nights, then the step): see README.md's table
    (0.02, 0.1, 1, 0.6), (0.02, 0.2, 1, 0.95), (0.02, 0.3, 1, 0.95), (0.02, 0.1, 5, 0.9),
    (0.05, 0.1, 5, 0.1), (0.05, 0.2, 1, 0.35), (0.05, 0.2, 5, 0.8), (0.05, 0.3, 1, 0.8), (0.05, 0.3, 5, 0.95),
])
def test_steps_are_detected(noise: float, step: float, after: int, at_least: float) -> None:
    assert _rate(3, lambda rng: _series(rng, 20, after, step, noise), 200) >= at_least
