"""Regression detection (pure): Welch's test, the noise, the gate, change points, and the alert rates docs/ci.md
states ("Regression detection"), which must be exactly what bench/detection_rates.py prints: its seeds are
fixed, so every rate is reproducible to the 0.1% it is stated to.
"""

from __future__ import annotations

import importlib.util

import pytest
from paths import ROOT

from pytest_roofline.analysis.verdict.regressions import (
    FLOOR,
    MIN_WINDOW,
    change_points,
    gate,
    judge_series,
    relative_noise,
    welch_p,
)


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


@pytest.mark.slow  # 24 cells of 1000 series: about 5 s
def test_the_guides_rates_are_exactly_what_the_bench_prints() -> None:
    spec = importlib.util.spec_from_file_location("detection_rates", ROOT / "bench" / "detection_rates.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    readme = (ROOT / "docs" / "ci.md").read_text()
    start = readme.index("case                                noise 2%")
    stated = readme[start:readme.index("```", start)].rstrip("\n").split("\n")
    assert len(stated) == 13  # the header and 12 cases, 24 rates
    assert stated == bench.table(1000)  # every rate, at the 0.1% it is stated to


def test_a_gate_wider_than_the_baseline_is_too_noisy_and_a_hidden_drop_undecided() -> None:
    wild = gate([0.30, 0.95, 0.42, 1.0, 0.25, 0.8])
    assert wild.allowed_drop > 1.0 and wild.too_noisy
    assert wild.state(0.0) == "too noisy" and wild.state(0.9) == "too noisy"  # not even a drop to zero fires it
    noisy = gate([0.60, 0.70, 0.55, 0.66, 0.50, 0.62])
    assert 0.5 < noisy.allowed_drop < 0.7 and not noisy.too_noisy
    assert noisy.state(0.42) == "undecided"  # a 31% drop: beyond the 5% floor, inside the gate
    assert noisy.state(0.2) == "regression" and noisy.state(0.60) == "ok" and noisy.state(1.2) == "improved"
    assert noisy.state_text(0.42).startswith("undecided: dropped 31.1%, beyond the 5% floor, inside its gate 60.1%")
    quiet = gate([0.6] * 10)
    assert quiet.state(0.58) == "ok" and quiet.state(0.5) == "regression"  # within the floor; beyond it


def test_a_constant_history_has_no_change_point_however_its_sums_round() -> None:
    """0.1 four hundred times: its two sides' means differ in the last bit, and the t-test read that as certain
    (before: 64 change points, each searched again)."""
    assert change_points([0.1] * 400) == []
    assert welch_p([0.1] * 300, [0.1] * 100) == 1.0 and welch_p([0.5] * 5, [0.4] * 5) == 0.0


def test_the_split_search_sums_pairs_without_a_table_of_them() -> None:
    """The energy statistic's pair sums, against the pairs counted one by one; and a nightly history of 10,000 runs
    (27 years) with one drop is searched (before: a table of every pair, 10,000 x 10,000 floats per segment)."""
    from pytest_roofline.analysis.verdict.regressions import _pair_sums

    x = [0.3, 0.1, 0.3, 0.7, 0.2, 0.1]
    assert _pair_sums(x) == pytest.approx(
        [sum(abs(x[a] - x[b]) for b in range(t) for a in range(b)) for t in range(len(x) + 1)])
    series = [0.5 + 0.01 * ((7 * k) % 11 - 5) / 5 for k in range(10_000)]
    series[6_000:] = [v * 0.9 for v in series[6_000:]]
    assert [cp.index for cp in change_points(series)] == [6_000]
