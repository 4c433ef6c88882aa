"""Saved artifacts: the Perfetto copy of a saved trace (the exported trace's text with its top-level "metadata"
member cut out, which Perfetto rejects, without parsing the events), and one folder per kernel."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_roofline.measurement.artifacts import save_artifacts, without_metadata

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


def test_labels_that_reduce_to_one_folder_name_keep_their_own_folders(tmp_path: Path) -> None:
    """Fake results (no profile): two kernels of one test labelled α and β each keep their own HLO, and the same
    kernel saved again replaces its own folder."""
    from fakes import fake_result

    paths = {}
    for label in ("α", "β", "α"):
        result = replace(fake_result(0.5), hlo_text=f"HloModule {label}")
        paths[label] = save_artifacts(result, tmp_path, "tests/test_k.py::test_two", label)
    assert paths["α"]["trace_dir"] != paths["β"]["trace_dir"]
    assert Path(paths["α"]["hlo"]).read_text(encoding="utf-8") == "HloModule α"
    assert Path(paths["β"]["hlo"]).read_text(encoding="utf-8") == "HloModule β"
    assert len(list(tmp_path.iterdir())) == 2  # no leftovers
    plain = save_artifacts(fake_result(0.5), tmp_path, "tests/test_k.py::test_one[4-8]", "matmul")
    assert Path(plain["trace_dir"]).name == "tests_test_k.py_test_one_4-8___matmul"  # readable where nothing is lost
