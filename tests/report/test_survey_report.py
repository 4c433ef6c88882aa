"""The survey's table: within 120 columns, worst first, the small programs in one line, the programs below a
threshold named (made-up sightings)."""

from __future__ import annotations

from pytest_roofline.analysis.verdict.survey_book import SMALL_S, Sighting, SurveyBook
from pytest_roofline.report.survey_report import SHOWN, survey_lines


def _book(n: int) -> SurveyBook:
    book = SurveyBook(hardware="fake CPU (calibrated ceilings)", tests=n)
    for i in range(n):
        s = Sighting(f"f{i}", f"jit_a_rather_long_function_name_of_a_library_{i}", f"tests/test_m.py::test_{i}",
                     (1e-3 * (i + 1),), 5e-4, "cpu", bound="memory", top_op="fusion.3 (fusion:kLoop) lost 1 ms")
        book.add(s)
        if i == 0:
            book.note_below(s, 0.8, "--roofline-min=0.8 on the command line", False)
    book.add(Sighting("tiny", "jit_ones", "tests/test_m.py::test_0", (SMALL_S / 2,), 1e-7, "cpu"))
    return book


def test_the_table_fits_120_columns_worst_first_with_the_rest_counted() -> None:
    lines = survey_lines(_book(SHOWN + 3))
    assert all(len(line) <= 120 for line in lines)
    rows = [line for line in lines if line.startswith("jit_a_")]
    assert len(rows) == SHOWN
    assert rows[0].startswith("jit_a_rather_long_...e_of_a_library_22 ")  # its middle cut, its ends kept
    assert "time lost" in lines[1]
    assert any(line.startswith("... 3 more") for line in lines)
    assert any(line.startswith("1 programs too small to judge") for line in lines)
    assert "below 80% (--roofline-min=0.8 on the command line)" in " ".join(" ".join(lines).split())


def test_a_sampled_test_marks_its_programs_and_says_how_much_was_profiled() -> None:
    book = _book(2)
    book.sampled["tests/test_m.py::test_1"] = (2.5, 14.0)
    lines = survey_lines(book)
    text = " ".join(" ".join(lines).split())
    (row,) = [line for line in lines if line.startswith("jit_a_") and line.endswith("[sampled]")]
    assert row.startswith("jit_a_rather_long_...me_of_a_library_1 ")
    assert "[sampled]: 1 tests ran longer than 2 s: profiled in full for that long, then in windows (2.5 s of their " \
           "14 s)" in text


def test_verbose_lists_every_program() -> None:
    lines = survey_lines(_book(SHOWN + 3), every=True)
    assert len([line for line in lines if line.startswith("jit_a_")]) == SHOWN + 3


def test_the_html_section_holds_every_program_and_the_ones_below_their_threshold() -> None:
    from pytest_roofline.report.survey_report import survey_html

    page = survey_html(_book(SHOWN + 3))
    assert page.count("<tr>") == 1 + SHOWN + 3 + 1  # the header, every judged program, the small one
    assert "too small to judge" in page and "Below their threshold" in page and "jit_ones" in page


def test_the_first_touch_is_shown_where_it_could_explain_a_shortfall_never_above_the_roofline() -> None:
    """A result's first touch (an upper end: the allocator may reuse its pages) beside the utilization, where it is a
    tenth of a run or more; where it would take the utilization past 100% the runs cannot have paid it: not shown."""
    book = SurveyBook(hardware="fake CPU", tests=2)
    book.add(Sighting("a", "jit_fresh", "t.py::test_a", (1e-3,), 5e-4, "cpu", bound="memory", touch_s=3e-4))
    book.add(Sighting("b", "jit_reused", "t.py::test_b", (1e-3,), 5e-4, "cpu", bound="memory", touch_s=2e-3))
    text = " ".join(" ".join(survey_lines(book)).split())
    assert "80% with its result's first touch (300 us)" in text
    assert "250%" not in text and text.count("with its result's first touch") == 1
