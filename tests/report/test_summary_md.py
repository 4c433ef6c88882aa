"""The Markdown summaries of ``compare`` and ``ab`` (pytest_roofline.report.summary_md) as a job page renders them:
made-up verdicts whose test ids and labels carry HTML and Markdown's own characters."""

from __future__ import annotations

from fakes import comparison, obs

from pytest_roofline.analysis.verdict.regressions import gate
from pytest_roofline.history.paired import KernelRounds
from pytest_roofline.records.series_judgement import BaselineCheck, NoBaseline, SeriesKey
from pytest_roofline.report.summary_md import ab_markdown, compare_markdown

HOSTILE = "<img src=x onerror=alert(1)>|k"


def _key(label: str) -> SeriesKey:
    return SeriesKey("t.py::test_a[<b>]", label, "fake CPU", "calibrated", "program", "0.10.2")


def test_labels_reach_the_compare_summary_as_text_not_markup() -> None:
    """Before, a label's HTML reached the job page as markup (GitHub renders HTML in Markdown)."""
    dropped = BaselineCheck(_key(HOSTILE), 0.3, gate([0.6, 0.61, 0.59, 0.6]), "base.json", "")
    checks: list[tuple[SeriesKey, BaselineCheck | NoBaseline]] = [
        (_key(HOSTILE), dropped), (_key("new<br>"), NoBaseline("no baseline for this kernel <i>yet</i>"))]
    text = compare_markdown("base `a`.json", "<cur>.json", checks, 0)
    assert "<img" not in text and "<b>" not in text and "<br>" not in text and "<i>" not in text
    row = next(line for line in text.splitlines() if line.startswith("| t.py"))
    assert row.startswith("| t.py::test_a[&lt;b&gt;] [&lt;img src=x onerror=alert(1)&gt;\\|k] | REGRESSION | 60.0% |")
    assert "- t.py::test_a[&lt;b&gt;] [new&lt;br&gt;]: no baseline for this kernel &lt;i&gt;yet&lt;/i&gt;" in text
    assert "`<cur>.json` against `base 'a'.json`." in text  # a code span shows its text as written


def test_kernel_names_reach_the_ab_summary_as_text_not_markup() -> None:
    kernel = KernelRounds("t.py::test_a", HOSTILE, tuple(obs(0.6) for _ in range(6)), tuple(obs(0.3) for _ in range(6)))
    text = ab_markdown(comparison([kernel]))
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;\\|k]" in text
