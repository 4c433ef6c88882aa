"""The Perfetto copy of a saved trace: the exported trace's text with its top-level "metadata" member cut out
(Perfetto rejects it), without parsing the events. Pure text; no JAX."""

from __future__ import annotations

import json

import pytest

from pytest_roofline.measurement.artifacts import without_metadata

TRACES = [
    {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True, "x": [1, {"y": "}"}]},
     "traceEvents": [{"name": "metadata", "args": {"metadata": "kept"}}]},
    {"metadata": {"only": 1}},
    {"traceEvents": [], "metadata": {}},
    {"traceEvents": [{"args": {"metadata": "inside an event: kept"}}]},
    {},
]


@pytest.mark.parametrize("trace", TRACES)
@pytest.mark.parametrize("layout", [{}, {"indent": 1}, {"separators": (",", ":")}])
def test_only_the_top_level_metadata_member_goes(trace: dict[str, object], layout: dict[str, object]) -> None:
    expected = {k: v for k, v in trace.items() if k != "metadata"}
    assert json.loads(without_metadata(json.dumps(trace, **layout))) == expected  # type: ignore[arg-type]


def test_text_that_is_not_an_object_is_left_alone() -> None:
    assert without_metadata("[1, 2]") == "[1, 2]"
    assert without_metadata("") == ""
