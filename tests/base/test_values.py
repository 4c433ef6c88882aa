"""The one module of value checks (pytest_roofline.base.values), as the plugin, the command line and measure() use
it: the same value gets the same words wherever it is given, with where it came from in front."""

from __future__ import annotations

import argparse

import pytest

from pytest_roofline.base import values
from pytest_roofline.cli.main import _fraction, _positive
from pytest_roofline.measurement.options import MeasureOptions
from pytest_roofline.plugin.thresholds import ConfigError, parse_max_drop


def test_a_max_drop_reads_the_same_in_the_plugin_and_on_the_command_line() -> None:
    with pytest.raises(ConfigError) as plugin:
        parse_max_drop("1.5", "--roofline-max-drop=1.5 on the command line")
    with pytest.raises(argparse.ArgumentTypeError) as cli:
        _fraction("1.5")
    words = "must be in (0, 1) (0.1 = fail a drop of more than 10%)"
    assert str(plugin.value) == f"--roofline-max-drop=1.5 on the command line: {words}" and str(cli.value) == words
    assert parse_max_drop("0.1", "x") == _fraction("0.1") == 0.1


@pytest.mark.parametrize("check,raw,words", [
    (values.threshold, "fast", "must be a number in (0, 1], got 'fast'"),
    (values.threshold, 0, "must be in (0, 1]"),
    (values.boolean, "maybe", "must be true or false, got 'maybe'"),
    (values.count, -1, "must be a non-negative number, got -1"),
    (values.positive_int, True, "must be a positive integer, got True"),
    (values.one_of(("a", "b")), "c", "must be one of 'a', 'b', got 'c'"),
    (values.non_empty("a path"), "  ", "must be a path, got an empty value"),
    (values.whole_number, "0", "must be a whole number of 1 or more, got '0'"),
    (values.ratio_above_one, "inf", "must be a ratio above 1, e.g. 1.5, got 'inf'"),
])
def test_each_check_says_what_the_value_must_be(check, raw, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError) as info:
        check(raw)
    assert str(info.value) == words
    with pytest.raises(ConfigError, match=r"^here: must be"):
        values.at("here", check, raw, ConfigError)


def test_measure_options_are_checked_by_the_same_module() -> None:
    with pytest.raises(ValueError, match=r"^min_runs= must be a positive integer, got 0$"):
        MeasureOptions.from_keywords({"min_runs": 0})
    assert _positive("3") == 3
    options = MeasureOptions.from_keywords({"min_runs": 3, "ceilings": "Live", "name": "k"})
    assert (options.timing.min_runs, options.hardware.ceilings, options.name) == (3, "live", "k")
