"""``pytest-roofline html``: the HTML report of a JSON report, with a history's sparklines."""

from __future__ import annotations

from ..base.files import write_text_atomic
from ..history.baseline import build_series
from ..history.reports import ReportError, load_history, load_run
from ..report.html import HtmlUnavailable, html_report
from .errors import CliError
from .report_commands import warn

__all__ = ["html_command"]


def html_command(report: str, history: str | None, output: str) -> tuple[str, int]:
    try:
        run = load_run(report)
        series = build_series(load_history(history, warn)) if history else []
    except ReportError as exc:
        raise CliError(str(exc)) from None
    try:
        text = html_report(run, series)
    except HtmlUnavailable as exc:
        raise CliError(str(exc)) from None
    try:
        write_text_atomic(output, text)
    except OSError as exc:
        raise CliError(f"{output}: cannot write it: {exc.strerror or exc}") from None
    return f"wrote {output} ({len(text) / 1e6:.1f} MB, self-contained: opens with no network)", 0
