"""A measurement's figures are declared once, as the fields of result/recorded_result.py's ``RecordedResult``: the
live result's JSON form (``Result.to_dict``) is written from them and a report is read back by them. These tests fail
where a declared figure has no source on the live result, where the JSON and the declaration differ, where a figure
does not read back as it was written, and where a part of the live result reaches no figure. Made-up results
(tests/support/fakes.py), one with every optional part."""

from __future__ import annotations

import dataclasses
import json

import pytest
from fakes import FAKE_FOOTPRINT, fake_result

from pytest_roofline.analysis.program.info import SourceWork
from pytest_roofline.analysis.verdict.census import Census
from pytest_roofline.base.part_of import Part
from pytest_roofline.result.figures import Measured
from pytest_roofline.result.recorded_result import RecordedResult, figure_fields

RESULT = fake_result(0.5)
FIGURES = {f.name for f in figure_fields()}
NESTED = {f.name: f.metadata["json"] for f in figure_fields() if "json" in f.metadata}
# What of the live result no report holds, each for a reason: the program's text and trace are saved as files; the
# threshold's origin and the first-touch mode are the kernel record's and the settings'.
NOT_RECORDED = {"hlo_text", "xspace", "picked", "first_touch_mode"}


def test_the_json_of_a_result_holds_every_declared_figure_and_nothing_else() -> None:
    data = RESULT.to_dict()
    assert set(data) == FIGURES - set(NESTED)
    for name, (holder, key) in NESTED.items():
        assert data[holder] is None or key in data[holder], name


def test_every_figure_reads_back_as_it_was_written() -> None:
    with_parts = dataclasses.replace(fake_result(0.7, waiting=0.2), source=SourceWork(1e6), memory=FAKE_FOOTPRINT)
    for result in (RESULT, with_parts):
        kept = RecordedResult.of(result)
        again = RecordedResult.from_dict(json.loads(json.dumps(result.to_dict())))
        assert dataclasses.replace(kept, hardware=again.hardware) == again
        assert again.to_dict() == json.loads(json.dumps(result.to_dict()))
        assert isinstance(again.census, Census) and again.source_work == result.source


def test_every_part_of_the_live_result_reaches_a_figure() -> None:
    reached = set()
    for f in figure_fields():
        first = f.metadata.get("of", f.name).split(".")[0]
        alias = vars(Measured).get(first)  # a figure read from one part under the figure's name
        reached.add(alias.path.split(".")[0] if isinstance(alias, Part) else first)
    measured = {f.name for f in dataclasses.fields(Measured)}
    assert measured - reached - NOT_RECORDED == set(), "a field of the live result that no recorded figure reads"
    assert NOT_RECORDED <= measured and not NOT_RECORDED & FIGURES


def test_a_figure_missing_from_an_older_report_is_its_default_and_a_required_one_is_an_error() -> None:
    data = RESULT.to_dict()
    del data["trace_method"], data["per_run_s"]
    old = RecordedResult.from_dict(data)
    assert old.trace_method == "" and old.per_run_s == ()
    del data["device_time_s"]
    with pytest.raises(KeyError, match="device_time_s"):
        RecordedResult.from_dict(data)


@pytest.mark.parametrize(("key", "value", "said"), [
    ("matrix_flops", "many", "matrix_flops 'many' is not an object"),
    ("per_run_s", 0.001, "per_run_s 0.001 is not a list"),
    ("counts_lower_bound", "no", "counts_lower_bound 'no' is not true or false"),
    ("bound", "sideways", "bound 'sideways'"),
    ("runs", None, "runs is null"),
])
def test_a_malformed_figure_is_an_error_that_names_it(key: str, value: object, said: str) -> None:
    data = {**RESULT.to_dict(), key: value}
    with pytest.raises((TypeError, ValueError), match=said):
        RecordedResult.from_dict(data)
