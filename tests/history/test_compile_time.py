"""A kernel's compile time against its baseline's median (history/compile_time.py): made-up times."""

from __future__ import annotations

from pytest_roofline.history.compile_time import compile_check
from pytest_roofline.records.series_judgement import SeriesKey

KEY = SeriesKey("t.py::test_a", "k", "fake CPU", "calibrated", "program", "0.10")


def test_a_compile_time_is_judged_against_the_median_of_the_baselines() -> None:
    check = compile_check(KEY, 3.0, [1.0, 0.9, 5.0], max_ratio=2.0)
    assert check is not None and check.baseline_s == 1.0 and check.runs == 3 and check.ratio == 3.0
    assert check.regressed
    assert check.message() == ("compile time 3 s is 3.00x the baseline's 1 s (median of 3 runs), beyond "
                               "--max-compile 2x")
    within = compile_check(KEY, 1.5, [1.0], max_ratio=2.0)
    assert within is not None and not within.regressed and "(1 run), within --max-compile 2x" in within.message()


def test_reports_without_compile_times_are_left_out() -> None:
    assert compile_check(KEY, 3.0, [0.0, 0.0], max_ratio=2.0) is None  # reports from before compile times were kept
    assert compile_check(KEY, 0.0, [1.0], max_ratio=2.0) is None
    only = compile_check(KEY, 2.0, [0.0, 1.0], max_ratio=2.0)
    assert only is not None and only.runs == 1 and only.ratio == 2.0 and not only.regressed
