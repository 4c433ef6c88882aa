"""Text for reports over time (pure): one report shown, two compared, a history's series judged, and the
github-action-benchmark export."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..analysis.verdict.census import census_change
from ..analysis.verdict.op_diff import diff_ops
from ..analysis.verdict.regressions import Finding
from ..base.units import format_seconds
from ..history.baseline import Series
from ..history.compile_time import CompileCheck
from ..history.reports import Run
from ..records.series_judgement import BaselineCheck, NoBaseline, SeriesKey
from ..result.recorded_result import RecordedResult, ops_note
from .text import summary_lines

__all__ = ["run_line", "show_lines", "compare_lines", "history_lines", "sparkline", "github_benchmark",
           "op_diff_lines", "compare_op_lines"]

BARS = "▁▂▃▄▅▆▇█"


def run_line(run: Run) -> str:
    """When and where a report was made and how its pytest run ended."""
    commit = f", commit {run.commit[:12]}{' (dirty)' if run.dirty else ''}" if run.commit else ""
    session = run.session
    if session is None:
        ended = "pytest exit status not recorded (a report from before 0.2)"
    else:
        ended = (f"pytest exit status {session.exit_status} ({session.exit_name}), "
                 f"{session.tests_run} of {session.tests_collected} tests ran")
        if not session.complete:
            ended += f"; INCOMPLETE: {session.why_incomplete}"
    return f"{run.path}: created {run.created}{commit}; {ended}"


def show_lines(run: Run) -> list[str]:
    lines = [run_line(run), "versions: " + ", ".join(f"{k} {v}" for k, v in run.versions.items())]
    if not run.records:
        return [*lines, "no kernel was measured in this run"]
    return [*lines, *summary_lines(run.records)]


def _table(rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(widths[i]) if i < left or i == len(row) - 1 else c.rjust(widths[i])
                      for i, c in enumerate(row)).rstrip() for row in rows]


def op_diff_lines(before: RecordedResult, after: RecordedResult, indent: str = "    ") -> list[str]:
    """What the later result's program does differently, op by op, where both have measured per-op times."""
    if not any(r.measured_s for r in before.ops) or not any(r.measured_s for r in after.ops):
        hidden = next((n for n in (ops_note(after), ops_note(before)) if n.startswith("not shown")), "")
        return [f"{indent}op by op: {hidden}"] if hidden else []
    diff = diff_ops(before.ops, after.ops, before.device_time_s, after.device_time_s)
    source = ops_note(after) or ops_note(before)
    return [
        f"{indent}op by op{f' ({source})' if source else ''}:",
        *(f"{indent}  {line}".replace("the head's program", "the current program") for line in diff.lines()),
    ]


def compare_op_lines(key: SeriesKey, before: RecordedResult, after: RecordedResult, regressed: bool) -> list[str]:
    """Under a regression, the op-by-op difference; otherwise a line where the kernel census changed."""
    if regressed:
        return op_diff_lines(before, after)
    if before.census is None or after.census is None:
        return []
    change = census_change(before.census, after.census)
    return [f"  {key.kernel}: census: {change}"] if change else []


def _compile_cell(check: CompileCheck | None) -> str:
    return f"{format_seconds(check.current_s)} ({check.ratio:.2f}x)" if check is not None else ""


def compare_lines(baseline_path: str, current: Run, checks: Sequence[tuple[SeriesKey, BaselineCheck | NoBaseline]],
                  gone: Sequence[SeriesKey], compiles: Mapping[SeriesKey, CompileCheck] | None = None,
                  clock_notes: Mapping[SeriesKey, str] | None = None,
                  *, op_notes: Mapping[SeriesKey, list[str]] | None = None) -> list[str]:
    """Each kernel of the current run against the baseline; regressions say "REGRESSION". ``compiles``: the
    compile-time checks (``--max-compile``), shown in their own column; ``op_notes``: per kernel, lines on what its
    program does differently from the baseline's (:func:`compare_op_lines`)."""
    compiles = compiles or {}
    lines = [f"baseline: {baseline_path}", f"current:  {run_line(current)}"]
    rows = [("kernel", "baseline", "current", "change", "gate", *(("compile",) if compiles else ()), "status")]
    details = []
    for key, check in checks:
        compiled = compiles.get(key)
        extra = (_compile_cell(compiled),) if compiles else ()
        slow = compiled is not None and compiled.regressed
        if compiled is not None and compiled.regressed:
            details.append(f"  {key.kernel}: compile-time regression: {compiled.message()}")
        if isinstance(check, NoBaseline):
            rows.append((key.kernel, "-", "", "", "", *extra, "new" if check.new_kernel else "no comparable baseline"))
            details.append(f"  {key.kernel}: {check.reason}")
            continue
        status: str = "REGRESSION" if check.regressed else check.state
        if slow:
            status = "COMPILE REGRESSION" if status != "REGRESSION" else "REGRESSION, COMPILE REGRESSION"
        rows.append((key.kernel, f"{check.baseline:.1%}", f"{check.current:.1%}", f"{-check.drop:+.1%}",
                     f"{check.gate.allowed_drop:.1%}", *extra, status))
        if check.regressed:
            drop = (clock_notes or {}).get(key)
            details.append(f"  {key.kernel}: regression: {check.message()}" + (f"; {drop}" if drop else ""))
        elif check.unjudged:
            details.append(f"  {key.kernel}: {check.message()}")
        details += (op_notes or {}).get(key, [])
    for key in gone:
        rows.append((key.kernel, "", "-", "", "", *(("",) if compiles else ()), "not in the current run"))
    judged = [check for _, check in checks if isinstance(check, BaselineCheck)]
    return [*lines, *_table(rows), *details, counts_line([c.state for c in judged])]


def counts_line(states: Sequence[str]) -> str:
    """How many kernels regressed, and how many could not be judged (too noisy, undecided): the closing line of
    ``compare`` and ``history``."""
    words = {"too noisy": "too noisy to judge", "undecided": "undecided", "contended": "contended (cannot judge)"}
    parts = [f"{states.count('regression')} regressed"]
    parts += [f"{states.count(s)} {said}" for s, said in words.items() if states.count(s)]
    unjudged = sum(states.count(s) for s in words)
    return ", ".join(parts) + (" (neither passed nor failed; --strict fails them)" if unjudged else "")


def _series_op_lines(series: Series, finding: Finding) -> list[str]:
    """The latest run against the last run before the latest change point (else the run before it), op by op."""
    if len(series.runs) < 2:
        return []
    points = [cp.index for cp in finding.change_points if 0 < cp.index < len(series.runs)]
    before_run = series.runs[(points[-1] if points else len(series.runs) - 1) - 1]
    before = next(r.result for r in before_run.records if r.key == series.key)
    after = next(r.result for r in series.runs[-1].records if r.key == series.key)
    lines = op_diff_lines(before, after)
    return [f"    against {before_run.short}:", *lines[1:]] if lines else []


def sparkline(values: Sequence[float], marks: Sequence[int] = ()) -> str:
    """The values as block characters (lowest to highest), a ``|`` before each change point index."""
    if not values:
        return ""
    low, high = min(values), max(values)
    span = high - low or 1.0
    out = []
    for i, v in enumerate(values):
        if i in marks:
            out.append("|")
        out.append(BARS[min(len(BARS) - 1, int((v - low) / span * len(BARS)))])
    return "".join(out)


def history_lines(directory: str, runs: Sequence[Run], judged: Sequence[tuple[Series, Finding]],
                  last: int = 30, compiles: Mapping[SeriesKey, CompileCheck] | None = None,
                  clock_notes: Mapping[SeriesKey, str] | None = None, *,
                  contended: Mapping[SeriesKey, str] | None = None) -> list[str]:
    """Per series: runs, a sparkline of the last ``last`` values, the latest value, the baseline level, the
    minimum detectable drop, the latest compile time and the status; then the change points and why each
    regression is one. ``compiles``: the latest compile time against the runs before it (``--max-compile``);
    ``contended``: per series, why its latest run cannot judge a drop."""
    compiles, contended = compiles or {}, contended or {}
    complete = [r for r in runs if r.complete]
    lines = [f"history {directory}: {len(runs)} runs, {len(complete)} complete"]
    for run in runs:
        if not run.complete:
            lines.append(f"  left out (incomplete): {run.path}: {run.why_incomplete}")
    rows = [("kernel", "runs", f"last {last}", "latest", "baseline", "detectable", "compile", "status")]
    details = []
    for series, finding in judged:
        shown = series.values[-last:]
        offset = len(series.values) - len(shown)
        marks = [cp.index - offset for cp in finding.change_points if cp.index >= offset]
        gate = finding.gate
        status = history_state(finding, contended.get(series.key, ""))
        compiled = compiles.get(series.key)
        if compiled is not None and compiled.regressed:
            status = "compile regression" if status != "regression" else "regression, compile regression"
        latest_compile = series.compile_s[-1] if series.compile_s and series.compile_s[-1] > 0 else None
        compile_cell = format_seconds(latest_compile) if latest_compile is not None else "-"
        if compiled is not None:
            compile_cell += f" ({compiled.ratio:.2f}x)"
        rows.append((series.key.kernel, str(len(series.values)), sparkline(shown, marks), f"{finding.latest:.1%}",
                     f"{gate.baseline:.1%}" if gate else "-",
                     f"{gate.allowed_drop:.1%}" if gate else "-", compile_cell, status))
        where = f"  {series.key.kernel} ({series.key.context})"
        if compiled is not None and compiled.regressed:
            details.append(f"{where}: COMPILE-TIME REGRESSION: {compiled.message()}")
        for cp in finding.change_points:
            run = series.runs[cp.index]
            details.append(f"{where}: change point at run {cp.index + 1} ({run.short}): {cp.before:.1%} -> "
                           f"{cp.after:.1%} ({cp.change:+.1%}, p={cp.p:.1g})")
        drop = (clock_notes or {}).get(series.key)
        if status == "contended":
            details.append(f"{where}: cannot judge: {contended[series.key]}: latest {finding.latest:.1%}")
        for reason in finding.reasons if status != "contended" else ():
            details.append(f"{where}: REGRESSION: {reason}" + (f"; {drop}" if drop else ""))
        if finding.regression and status != "contended":
            details += _series_op_lines(series, finding)
        elif gate is not None and gate.state(finding.latest) in ("too noisy", "undecided"):
            details.append(f"{where}: latest run {finding.latest:.1%} against the median {gate.baseline:.1%} of the "
                           f"{gate.runs} runs before it: {gate.state_text(finding.latest)}")
    lines += _table(rows)
    if details:
        lines.append("")
        lines += details
    lines.append("detectable: the minimum detectable drop, max(5%, 4 x the noise the history shows); "
                 "| in the sparkline: a change point; compile: the latest run's compile time"
                 + (" (x: against the median of the runs before it)" if compiles else ""))
    lines.append(counts_line([history_state(f, contended.get(s.key, "")) for s, f in judged]))
    return lines


def history_state(finding: Finding, contended: str = "") -> str:
    """A series' latest run: regression (the gate or a lasting change point), too few runs, or its gate state;
    "contended" where the latest run was measured while contended (``contended`` says so) and is not ok."""
    state = "regression" if finding.regression else \
        "too few runs" if finding.gate is None else finding.gate.state(finding.latest)
    return "contended" if contended and state in ("regression", "too noisy", "undecided") else state


def github_benchmark(run: Run) -> list[dict[str, Any]]:
    """github-action-benchmark's ``customBiggerIsBetter`` input: utilization in percent per kernel."""
    out = []
    for record in run.records:
        result = record.result
        interval = result.utilization_interval
        entry: dict[str, Any] = {"name": record.kernel, "unit": "% of roofline",
                                 "value": round(100 * record.utilization, 3)}
        if interval and record.model != "ops":
            entry["range"] = f"{100 * interval[0]:.1f}-{100 * interval[1]:.1f}"
        entry["extra"] = (f"{result.bound}-bound; {result.hardware_context}; verdict {record.verdict}; "
                          f"device {result.device_time_s:.6g} s, roofline {result.roofline_time_s:.6g} s")
        out.append(entry)
    return out
