"""``pytest-roofline suggest``: thresholds at a share of each kept program's median utilization, per platform, with
the reason beside each; the programs too small to judge, contended or without a roofline never kept; a config's
other settings kept where the section is written into it (made-up surveys)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_roofline.analysis.verdict.survey_book import Sighting, SurveyBook
from pytest_roofline.cli.main import main
from pytest_roofline.history.suggested import SuggestError, config_text, suggest, with_programs


def _book(platform: str = "cpu", hardware: str = "fake CPU") -> SurveyBook:
    book = SurveyBook(hardware=hardware)
    rows = [("a", "jit_dense", 4e-3, 2.5e-3), ("b", "jit_dense", 2e-3, 1.5e-3),  # two shapes: 62.5% and 75%
            ("c", "jit_attention", 10e-3, 1e-3), ("d", "jit_norm", 1e-3, 0.9e-3)]
    for fp, name, run, roof in rows:
        book.add(Sighting(fp, name, "t.py::test_x", (run, run), roof, platform))
    book.add(Sighting("e", "jit_tiny", "t.py::test_x", (1e-6,), 1e-7, platform))  # too small to judge
    book.add(Sighting("f", "jit_busy", "t.py::test_y", (9e-3,), 1e-3, platform, contended=True))  # beside a neighbour
    return book


def test_the_top_programs_by_time_lost_get_a_share_of_their_lowest_median() -> None:
    found = {s.name: s for s in suggest([_book()], top=2)}
    assert set(found) == {"jit_attention", "jit_dense"}  # 18 ms and 4 ms lost; jit_busy ran contended
    assert found["jit_attention"].threshold == 0.05  # half of 10%
    assert found["jit_dense"].threshold == 0.31 and found["jit_dense"].programs == 2  # half of the lower 62.5%


def test_named_programs_are_kept_and_a_name_that_matches_nothing_is_an_error() -> None:
    assert [s.name for s in suggest([_book()], top=None, names=["jit_n*"])] == ["jit_norm"]
    with pytest.raises(SuggestError, match="'jit_tiny' matches no program large enough to judge"):
        suggest([_book()], top=None, names=["jit_tiny"])
    with pytest.raises(SuggestError, match="no program in the survey"):
        suggest([SurveyBook()], top=3)


def test_the_section_is_the_config_the_plugin_reads_one_threshold_per_platform_with_its_reason() -> None:
    found = suggest([_book(), _book("gpu", "fake GPU")], top=1, share=0.6)
    text = config_text(found, 0.6, "cpu.json gpu.json")
    work = {"flops": 0, "bytes": 0, "transcendentals": 0}  # the made-up sightings' counts
    assert yaml.safe_load(text) == {"programs": {"jit_attention": {"min": {"cpu": 0.06, "gpu": 0.06},
                                                                   "work": {"cpu": work, "gpu": work}}}}
    assert "      cpu: 0.06  # 60% of the median 10.0%; 2 runs in 1 tests on fake CPU, 18 ms lost" in text


def test_written_into_a_config_its_other_settings_stay_and_its_old_programs_go() -> None:
    old = "# ours\nmin: {cpu: 0.3}\nprograms:\n  jit_old: 0.9\nthresholds:\n  'test_a*': 0.5\n"
    text = with_programs(old, "programs:\n  jit_new: {cpu: 0.4}\n", "roofline.yaml")
    assert yaml.safe_load(text) == {"min": {"cpu": 0.3}, "thresholds": {"test_a*": 0.5},
                                    "programs": {"jit_new": {"cpu": 0.4}}}
    assert text.startswith("# ours\n")
    with pytest.raises(SuggestError, match="roofline.yaml: not YAML"):
        with_programs("min: [", "programs:\n", "roofline.yaml")


def test_the_command_reads_a_report_and_writes_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"schema_version": 1, "results": [], "survey": _book().to_dict()}))
    assert main(["suggest", str(report), "--top", "1"]) == 0
    assert "jit_attention:\n    min:\n      cpu: 0.05  # 50% of the median 10.0%" in capsys.readouterr().out
    config = tmp_path / "roofline.yaml"
    assert main(["suggest", str(report), "--program", "jit_dense", "-o", str(config)]) == 0
    assert yaml.safe_load(config.read_text()) == {"programs": {"jit_dense": {"min": {"cpu": 0.31}}}}  # two shapes
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"schema_version": 1, "results": []}))
    assert main(["suggest", str(plain)]) == 2
    assert "holds no survey: run pytest with --roofline-survey" in capsys.readouterr().err
