"""Writing a session's outputs (:func:`write_outputs`): the JSON report, its copy in the history folder, and the HTML
report built from them, each where the settings name it (:class:`Outputs`); what was written and what could not be,
each said in one line that names the setting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base.files import json_text, write_text_atomic
from ..history.baseline import build_series
from ..history.reports import ReportError, add_to_history, load_history, run_of
from ..records.kernel_record import KernelRecord, Unmeasured
from .html import HtmlUnavailable, html_report

__all__ = ["Outputs", "write_outputs"]


@dataclass(frozen=True)
class Outputs:
    """Where a session writes: the JSON report, the history folder, the HTML report (None: not asked for), and
    where each setting came from (``origins``: "--roofline-report on the command line", ...), for the errors."""

    report: str | None = None
    history: str | None = None
    html: str | None = None
    origins: Mapping[str, str] = field(default_factory=dict)


def write_outputs(outputs: Outputs, payload: Mapping[str, Any], records: Sequence[KernelRecord],
                  unmeasured: Sequence[Unmeasured]) -> tuple[list[str], list[str]]:
    """Write each output asked for: ``payload`` is the JSON report of ``records`` and ``unmeasured``, from which the
    HTML report is built; returns (lines saying what was written, errors)."""
    text = json_text(payload) + "\n"
    written: list[str] = []
    errors: list[str] = []
    if outputs.report:
        try:
            write_text_atomic(outputs.report, text)
            written.append(f"roofline report written to {outputs.report}")
        except OSError as exc:
            errors.append(f"{outputs.origins['report']}: {exc.strerror or exc}")
    if outputs.history:
        try:
            path = add_to_history(outputs.history, payload, text)
            written.append(f"roofline history: this run added as {path}")
        except OSError as exc:
            errors.append(f"{outputs.origins['history']}: {exc.strerror or exc}")
    if outputs.html:
        try:
            run = run_of(records, unmeasured, payload, "this run")
            series = build_series(load_history(outputs.history, lambda message: written.append(
                f"roofline history: {message}"))) if outputs.history else []
            write_text_atomic(outputs.html, html_report(run, series))
            written.append(f"roofline HTML report written to {outputs.html}")
        except (OSError, ReportError, HtmlUnavailable) as exc:
            errors.append(f"{outputs.origins['html']}: {getattr(exc, 'strerror', None) or exc}")
    return written, errors
