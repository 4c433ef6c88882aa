"""``pytest-roofline show / compare / history / export``: reports over time, from files only."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..analysis.verdict.regressions import judge_series
from ..base.files import check_writable, json_text, write_text_atomic
from ..hardware.nvml import clock_drop
from ..history.baseline import Baseline, Series, build_series
from ..history.compile_time import CompileCheck, compile_check
from ..history.reports import ReportError, load_history, load_run
from ..records.series_judgement import BaselineCheck, SeriesKey, contention_text
from ..report.history_text import (
    compare_lines,
    compare_op_lines,
    github_benchmark,
    history_lines,
    history_state,
    show_lines,
)
from ..report.summary_md import compare_markdown
from .errors import CliError

__all__ = ["show", "compare", "history", "export", "suggest", "check_summary", "publish_summary"]

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"  # GitHub Actions' file a step appends Markdown to, shown on the run's page


def check_summary(path: str | None) -> None:
    """A --summary-md FILE that cannot be written stops the command before it runs."""
    if path is not None and (why := check_writable(path)) is not None:
        raise CliError(f"--summary-md {path}: cannot write it: {why}")


def publish_summary(markdown: str, path: str | None) -> list[str]:
    """Write the Markdown to ``path`` and append it to ``$GITHUB_STEP_SUMMARY`` where that is set; the lines to
    print (what was written, or why not: the verdict's exit status stands either way)."""
    lines = []
    if path is not None:
        try:
            write_text_atomic(path, markdown)
            lines.append(f"wrote {path}")
        except OSError as exc:
            lines.append(f"pytest-roofline: error: --summary-md {path}: cannot write it: {exc.strerror or exc}")
    step = os.environ.get(STEP_SUMMARY)
    if step:
        try:
            with open(step, "a", encoding="utf-8") as summary:
                summary.write(markdown + "\n")
        except OSError as exc:
            lines.append(f"pytest-roofline: error: ${STEP_SUMMARY} {step}: cannot append to it: "
                         f"{exc.strerror or exc}")
    return lines

T = TypeVar("T")


def warn(message: str) -> None:
    """A file the history leaves out, said on stderr (the output stays what the command prints)."""
    print(f"pytest-roofline: warning: {message}", file=sys.stderr)


def _read(load: Callable[[], T]) -> T:
    try:
        return load()
    except ReportError as exc:
        raise CliError(str(exc)) from None


def show(path: str, every: bool = False) -> tuple[str, int]:
    """The report's run and summary; and its survey's table where it holds one (``every``: every program)."""
    run = _read(lambda: load_run(path))
    lines = show_lines(run)
    if run.survey is not None:
        from ..report.survey_report import survey_lines

        lines += ["", "roofline survey (worst first by time lost)", *survey_lines(run.survey, every=every)]
    return "\n".join(lines), 0


def compare(baseline_path: str, current_path: str, max_drop: float | None,
            max_compile: float | None = None, strict: bool = False, summary_md: str | None = None) -> tuple[str, int]:
    """Exit status 1 when a kernel regressed (utilization, or compile time with ``max_compile``), or with
    ``strict`` could not be judged (too noisy, undecided); else 2 where the Markdown asked for (``summary_md``) or
    ``$GITHUB_STEP_SUMMARY`` could not be written; else 0."""
    check_summary(summary_md)
    baseline = _read(lambda: Baseline.load(baseline_path, warn))
    current = _read(lambda: load_run(current_path))
    checks = []
    compiles: dict[Any, CompileCheck] = {}
    for record in current.records:
        checks.append((record.key, baseline.judge_record(record, max_drop, "--max-drop")))
        if max_compile is not None:
            found = compile_check(record.key, record.result.compile_measured_s, baseline.compile_s.get(record.key, ()),
                                  max_compile)
            if found is not None:
                compiles[record.key] = found
    present = {key for key, _ in checks}
    gone = sorted(k for k in baseline.values if k not in present)
    regressed = any(c.regressed for _, c in checks) or any(c.regressed for c in compiles.values())
    regressed = regressed or (strict and any(isinstance(c, BaselineCheck) and c.unjudged for _, c in checks))
    nothing = _nothing_compared(current_path, current.records, checks)
    regressed = regressed or (strict and bool(nothing))
    drops = {r.key: clock_drop(r.result.clocks, baseline.records[r.key].result.clocks)
             for r in current.records if r.key in baseline.records}
    judged = dict(checks)
    ops = {r.key: compare_op_lines(r.key, baseline.records[r.key].result, r.result, judged[r.key].regressed)
           for r in current.records if r.key in baseline.records}
    lines = compare_lines(baseline_path, current, checks, gone, compiles, drops, op_notes=ops)
    lines += [nothing] if nothing else []
    published = publish_summary(compare_markdown(baseline_path, current_path, checks, len(gone)), summary_md)
    lines += published
    unwritten = any("error:" in line for line in published)  # as ab: an output asked for and not written is status 2
    return "\n".join(lines), 1 if regressed else 2 if unwritten else 0


def _nothing_compared(current_path: str, records: Sequence[Any], checks: Sequence[tuple[SeriesKey, Any]]) -> str:
    """What a comparison that compared nothing says (--strict fails it); "" where a kernel was compared."""
    if any(isinstance(c, BaselineCheck) for _, c in checks):
        return ""
    if not records:
        return f"nothing compared: {current_path} holds no measured kernel (--strict fails this)"
    return f"nothing compared: no kernel of {current_path} is in the baseline (--strict fails this)"


def _compile_of_latest(series: Series, max_compile: float) -> CompileCheck | None:
    """A series' latest compile time against the runs before it."""
    if len(series.compile_s) < 2:
        return None
    return compile_check(series.key, series.compile_s[-1], series.compile_s[:-1], max_compile)


def history(directory: str, last: int, max_compile: float | None = None, strict: bool = False) -> tuple[str, int]:
    """Exit status 1 when the latest run of a series is a regression (utilization, or compile time with
    ``max_compile``), or with ``strict`` could not be judged (too noisy, undecided), else 0."""
    runs = _read(lambda: load_history(directory, warn))
    if not runs:
        raise CliError(f"{directory}: no reports in this directory (--roofline-history=DIR writes roofline-*.json)")
    series = build_series(runs)
    judged = [(s, judge_series(s.values)) for s in series]
    contended = {s.key: why for s in series if (why := _latest_contended(s))}
    compiles = {}
    if max_compile is not None:
        compiles = {s.key: c for s in series if (c := _compile_of_latest(s, max_compile)) is not None}
    states = [history_state(f, contended.get(s.key, "")) for s, f in judged]
    regressed = "regression" in states or any(c.regressed for c in compiles.values())
    regressed = regressed or (strict and any(state in ("too noisy", "undecided", "contended") for state in states))
    return "\n".join(history_lines(directory, runs, judged, last, compiles, _clock_drops(series),
                                   contended=contended)), 1 if regressed else 0


def _latest_contended(series: Series) -> str:
    """Why the latest run of a series cannot judge a drop (measured while contended), or ""."""
    latest = next(r for r in series.runs[-1].records if r.key == series.key)
    return contention_text(latest.result.contended, latest.result.cpu_waiting, "latest")


def _clock_drops(series: list[Series]) -> dict[SeriesKey, str]:
    """Per series, whether its latest run met lower GPU clocks than the run before it."""
    out = {}
    for s in series:
        if len(s.runs) >= 2:
            latest, earlier = (next(r for r in run.records if r.key == s.key) for run in (s.runs[-1], s.runs[-2]))
            out[s.key] = clock_drop(latest.result.clocks, earlier.result.clocks)
    return out


def export(path: str, fmt: str) -> tuple[str, int]:
    run = _read(lambda: load_run(path))
    if fmt != "github-action-benchmark":
        raise CliError(f"--format {fmt}: unknown; known: github-action-benchmark")
    return json_text(github_benchmark(run)), 0


def suggest(reports: Sequence[str], top: int | None, names: Sequence[str], share: float,
            output: str | None) -> tuple[str, int]:
    """Thresholds for the programs a survey found, as the config's ``programs:`` section: printed, or written into
    ``output`` (a config there keeps everything but its ``programs:`` section)."""
    from ..analysis.verdict.survey_book import SurveyBook
    from ..base.files import read_text
    from ..history.reports import load_report
    from ..history.suggested import DEFAULT_TOP, SuggestError, config_text, with_programs
    from ..history.suggested import suggest as suggested

    books = []
    for path in reports:
        try:
            data = load_report(path)
        except ReportError as exc:
            raise CliError(str(exc)) from None
        if not isinstance(data.get("survey"), dict):
            raise CliError(f"{path}: holds no survey: run pytest with --roofline-survey --roofline-report={path}")
        books.append(SurveyBook.from_dict(data["survey"]))
    try:
        found = suggested(books, top=top if top is not None or names else DEFAULT_TOP, names=names, share=share)
        section = config_text(found, share, " ".join(reports))
        if output is None:
            return section.rstrip("\n"), 0
        existing = read_text(output) if os.path.exists(output) else ""
        text = with_programs(existing, section, output)
    except SuggestError as exc:
        raise CliError(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise CliError(f"{output}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        write_text_atomic(output, text)
    except OSError as exc:
        raise CliError(f"{output}: cannot write it: {exc.strerror or exc}") from None
    kept = ", ".join(sorted({s.name for s in found}))
    return f"wrote {len(found)} threshold(s) for {kept} into {output} (programs:)", 0
