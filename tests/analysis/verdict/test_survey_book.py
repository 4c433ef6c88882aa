"""The survey's book: one entry per compiled program however many tests run it, the time lost over every run, the
programs too small to judge apart, thresholds by program name, and the book as JSON (made-up sightings)."""

from __future__ import annotations

import pytest

from pytest_roofline.analysis.verdict.survey_book import (
    SMALL_S,
    Sighting,
    SurveyBook,
    below,
    by_test,
    program_setting,
)


def seen(fp: str, test: str, runs: tuple[float, ...], roof: float | None = 1e-3, module: str = "jit_f",
         flops: float = 1e6) -> Sighting:
    return Sighting(fp, module, test, runs, roof, "cpu", flops=flops, bytes_accessed=1e6, bound="memory",
                    top_op="fusion (fusion:kLoop) lost 1 ms per run")


def test_a_program_run_by_several_tests_is_kept_once_with_every_test_and_run() -> None:
    book = SurveyBook()
    book.add(seen("a", "t.py::one", (2e-3, 2e-3, 4e-3)))
    book.add(seen("a", "t.py::two", (2e-3,)))
    book.add(seen("b", "t.py::two", (1e-3,), module="jit_g"))
    assert len(book.programs) == 2
    a = book.programs["cpu:a"]
    assert a.tests == {"t.py::one": 3, "t.py::two": 1}
    assert a.runs == 4
    assert a.device_s == pytest.approx(10e-3)
    assert a.time_lost_s == pytest.approx(10e-3 - 4 * 1e-3)  # device time minus roofline time, every run
    assert a.utilization == pytest.approx(1e-3 / 2e-3)  # the median run
    assert [p.fingerprint for p in book.judged()] == ["a", "b"]  # worst first by time lost


def test_programs_under_the_floor_are_counted_apart_and_never_judged() -> None:
    book = SurveyBook()
    tiny = seen("t", "t.py::one", (SMALL_S / 4,) * 3, roof=SMALL_S / 100)
    book.add(tiny)
    assert tiny.small and not below(tiny, 0.9)
    assert book.judged() == [] and [p.fingerprint for p in book.small()] == ["t"]


def test_counts_that_differ_between_tests_are_marked() -> None:
    book = SurveyBook()
    book.add(seen("a", "t.py::one", (2e-3,), flops=1e6))
    book.add(seen("a", "t.py::two", (2e-3,), flops=7e6))  # a loop ran 7 times there
    assert book.programs["cpu:a"].counts_vary


def test_parts_of_one_test_merge_into_one_sighting() -> None:
    parts = [seen("a", "t.py::one", (2e-3,), roof=1e-3), seen("a", "t.py::one", (4e-3, 4e-3), roof=2.5e-3)]
    (one,) = by_test(parts)
    assert one.per_run_s == (2e-3, 4e-3, 4e-3)
    assert one.roofline_s == pytest.approx((1e-3 + 2 * 2.5e-3) / 3)


def test_a_threshold_comes_from_the_first_matching_program_pattern_else_the_suite() -> None:
    patterns = [("jit_attention*", 0.4), ("jit_*", 0.2)]
    assert program_setting("jit_attention_fwd", patterns, 0.8) == (0.4, True)
    assert program_setting("jit_dense", patterns, 0.8) == (0.2, True)
    assert program_setting("pmap_step", patterns, 0.8) == (0.8, False)
    assert below(seen("a", "t", (2e-3,), roof=1e-3), 0.6)
    assert not below(seen("a", "t", (2e-3,), roof=1e-3), 0.4)
    assert not below(seen("a", "t", (2e-3,), roof=None), 0.9)  # no roofline: cannot be judged, never failed


def test_the_book_survives_json_and_merges_another_process_book() -> None:
    book, other = SurveyBook(hardware="fake CPU"), SurveyBook()
    book.add(seen("a", "t.py::one", (2e-3,)))
    other.add(seen("a", "t.py::two", (3e-3,)))
    other.add(seen("b", "t.py::two", (3e-3,)))
    other.note_below(seen("b", "t.py::two", (3e-3,)), 0.5, "--roofline-min=0.5", False)
    other.tests = 1
    other.sampled["t.py::two"] = (2.5, 14.0)
    book.merge(SurveyBook.from_dict(other.to_dict()))
    again = SurveyBook.from_dict(book.to_dict())
    assert again.programs["cpu:a"].tests == {"t.py::one": 1, "t.py::two": 1}
    assert again.programs["cpu:a"].device_s == pytest.approx(5e-3)
    assert "cpu:b" in again.below and again.below["cpu:b"].tests == ["t.py::two"]
    assert again.hardware == "fake CPU" and again.tests == 1
    assert again.sampled == {"t.py::two": (2.5, 14.0)}
