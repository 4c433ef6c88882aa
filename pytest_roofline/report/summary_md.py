"""The verdicts of ``ab`` and ``compare`` as Markdown, for a CI job's summary page (``--summary-md FILE`` and
``$GITHUB_STEP_SUMMARY``): one line per kernel with its interval, worst first. Pure."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..history.paired import CONFIDENCE, Comparison
from ..records.series_judgement import BaselineCheck, NoBaseline, SeriesKey
from .ab_report import ratio_cell, verdict_cell, worst_first

__all__ = ["ab_markdown", "compare_markdown"]


def _cell(text: str) -> str:
    """Text for a table cell or a line: HTML made inert (a label such as ``<img src=x onerror=...>`` would reach the
    job page as markup: GitHub renders HTML in Markdown), a pipe kept from ending the cell, one line."""
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    """Text for an inline code span (shown as written there: no HTML is read in it), on one line."""
    return text.replace("`", "'").replace("\n", " ")


def _percent(value: float | None) -> str:
    return f"{value:.1%}" if value is not None else "-"


def ab_markdown(c: Comparison) -> str:
    """``ab``'s verdicts: a heading with the outcome, the table, what was not timed in one line."""
    regressed = sum(k.verdict == "regression" for k in c.kernels)
    same = [k for k in c.kernels if k.verdict == "same"]
    shown = sorted((k for k in c.kernels if k.verdict != "same"), key=worst_first)
    outcome = (f"{regressed} kernel{'s' if regressed != 1 else ''} regressed" if regressed else "no kernel regressed")
    if c.undecided:
        outcome += f", {c.undecided} undecided"
    head = f"{c.head_commit[:12]}{' + uncommitted changes' if c.head_dirty else ''}"
    lines = [f"### pytest-roofline ab: {outcome}", "",
             f"base `{_code(c.base_rev)}` ({c.base_commit[:12]}) against head {head} on {_cell(c.hardware or '?')}: "
             f"{c.rounds} rounds, {_cell(c.stopped)}; {c.seconds:.0f} s. Ratio: head / base utilization, median "
             f"[{CONFIDENCE:.0%} interval].", ""]
    if shown:
        lines += ["| kernel | verdict | ratio [interval] | base | head |", "|---|---|---|---:|---:|"]
        lines += [f"| {_cell(k.kernel)} | {_cell(verdict_cell(k))} | {_cell(ratio_cell(k))} | "
                  f"{_percent(k.base_utilization)} | {_percent(k.head_utilization)} |" for k in shown]
    if same:
        lines += ["", f"{len(same)} kernel{'s' if len(same) != 1 else ''} compiled to the same program on both "
                  "sides: not timed."]
    return "\n".join(lines) + "\n"


def compare_markdown(baseline: str, current: str, checks: Sequence[tuple[SeriesKey, BaselineCheck | NoBaseline]],
                     gone: int) -> str:
    """``compare``'s verdicts: each kernel against its baseline, the largest drop first."""
    judged = sorted(((key, c) for key, c in checks if isinstance(c, BaselineCheck)),
                    key=lambda kc: (not kc[1].regressed, -kc[1].drop))
    unjudged = [(key, c) for key, c in checks if isinstance(c, NoBaseline)]
    regressed = sum(c.regressed for _, c in judged)
    outcome = f"{regressed} kernel{'s' if regressed != 1 else ''} regressed" if regressed else "no kernel regressed"
    lines = [f"### pytest-roofline compare: {outcome}", "", f"`{_code(current)}` against `{_code(baseline)}`.", ""]
    if judged:
        lines += ["| kernel | state | baseline | current | change | allowed drop |", "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {_cell(f'{key.nodeid} [{key.label}]')} | {c.state.upper() if c.regressed else c.state} | "
                  f"{_percent(c.baseline)} | {_percent(c.current)} | {-c.drop:+.1%} | {c.gate.allowed_drop:.1%} |"
                  for key, c in judged]
    if unjudged:
        lines += ["", *(f"- {_cell(f'{key.nodeid} [{key.label}]')}: {_cell(c.reason)}" for key, c in unjudged)]
    if gone:
        lines += ["", f"{gone} kernel{'s' if gone != 1 else ''} of the baseline not in this run."]
    return "\n".join(lines) + "\n"
