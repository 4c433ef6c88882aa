"""What a session writes at its end: the JSON report, its copy in the history directory, the HTML report.
No pytest: returns what was written and what failed, for the terminal summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base.files import json_text, write_text_atomic
from ..history.baseline import build_series
from ..history.reports import ReportError, add_to_history, load_history, run_of
from ..records.kernel_record import KernelRecord, Unmeasured
from ..report.html import HtmlUnavailable, html_report
from .settings import Settings

__all__ = ["write_outputs"]


def write_outputs(settings: Settings, payload: Mapping[str, Any], records: Sequence[KernelRecord],
                  unmeasured: Sequence[Unmeasured]) -> tuple[list[str], list[str]]:
    """Write each output the settings ask for: ``payload`` is the JSON report of ``records`` and ``unmeasured``,
    from which the HTML report is built; returns (lines saying what was written, errors)."""
    text = json_text(payload) + "\n"
    written: list[str] = []
    errors: list[str] = []
    if settings.report:
        try:
            write_text_atomic(settings.report, text)
            written.append(f"roofline report written to {settings.report}")
        except OSError as exc:
            errors.append(f"{settings.origins['report']}: {exc.strerror or exc}")
    if settings.history:
        try:
            path = add_to_history(settings.history, payload, text)
            written.append(f"roofline history: this run added as {path}")
        except OSError as exc:
            errors.append(f"{settings.origins['history']}: {exc.strerror or exc}")
    if settings.html:
        try:
            run = run_of(records, unmeasured, payload, "this run")
            series = build_series(load_history(settings.history, lambda message: written.append(
                f"roofline history: {message}"))) if settings.history else []
            write_text_atomic(settings.html, html_report(run, series))
            written.append(f"roofline HTML report written to {settings.html}")
        except (OSError, ReportError, HtmlUnavailable) as exc:
            errors.append(f"{settings.origins['html']}: {getattr(exc, 'strerror', None) or exc}")
    return written, errors
