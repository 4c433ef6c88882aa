"""``pytest-roofline show / compare / history / export``: reports over time, from files only."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TypeVar

from ..history.baseline import Baseline, build_series
from ..history.detect import judge_series
from ..history.reports import ReportError, load_history, load_run
from ..report.history_text import compare_lines, github_benchmark, history_lines, show_lines
from .analyze import CliError

__all__ = ["show", "compare", "history", "export"]

T = TypeVar("T")


def warn(message: str) -> None:
    """A file the history leaves out, said on stderr (the output stays what the command prints)."""
    print(f"pytest-roofline: warning: {message}", file=sys.stderr)


def _read(load: Callable[[], T]) -> T:
    try:
        return load()
    except ReportError as exc:
        raise CliError(str(exc)) from None


def show(path: str) -> tuple[str, int]:
    run = _read(lambda: load_run(path))
    return "\n".join(show_lines(run)), 0


def compare(baseline_path: str, current_path: str, max_drop: float | None) -> tuple[str, int]:
    """Exit status 1 when a kernel regressed, else 0."""
    baseline = _read(lambda: Baseline.load(baseline_path, warn))
    current = _read(lambda: load_run(current_path))
    checks = []
    for record in current.records:
        checks.append((record.key, baseline.judge_record(record, max_drop, "--max-drop")))
    present = {key for key, _ in checks}
    gone = sorted(k for k in baseline.values if k not in present)
    regressed = any(c.regressed for _, c in checks)
    return "\n".join(compare_lines(baseline_path, current, checks, gone)), 1 if regressed else 0


def history(directory: str, last: int) -> tuple[str, int]:
    """Exit status 1 when the latest run of a series is a regression, else 0."""
    runs = _read(lambda: load_history(directory, warn))
    if not runs:
        raise CliError(f"{directory}: no reports in this directory (--roofline-history=DIR writes roofline-*.json)")
    judged = [(s, judge_series(s.values)) for s in build_series(runs)]
    regressed = any(f.regression for _, f in judged)
    return "\n".join(history_lines(directory, runs, judged, last)), 1 if regressed else 0


def export(path: str, fmt: str) -> tuple[str, int]:
    run = _read(lambda: load_run(path))
    if fmt != "github-action-benchmark":
        raise CliError(f"--format {fmt}: unknown; known: github-action-benchmark")
    return json.dumps(github_benchmark(run), indent=2), 0
