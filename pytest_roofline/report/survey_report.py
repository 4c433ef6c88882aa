"""The survey's report (``--roofline-survey``), as text and as an HTML section: every program large enough to judge,
worst first by the time it lost over all its runs (the text within 120 columns); the programs too small to judge in
one line; the runs below a threshold; the tests sampled."""

from __future__ import annotations

from collections.abc import Container

from ..analysis.model.contention import CONTENDED_ABOVE
from ..analysis.verdict.survey_book import FULL_PROFILE_S, SMALL_S, SurveyBook, SurveyedProgram
from ..base.units import format_seconds
from .text import WIDTH, wrap_lines

__all__ = ["survey_lines", "SHOWN"]

SHOWN = 20  # rows in the table without -v
_NAME = 38


def _name(p: SurveyedProgram) -> str:
    """The program's name, its middle cut where it is too long (its ends tell programs apart)."""
    keep = _NAME - 3
    return p.module if len(p.module) <= _NAME else p.module[: keep - keep // 2] + "..." + p.module[-(keep // 2):]


def _util(p: SurveyedProgram) -> str:
    u = p.utilization
    if u is None:
        return "-"
    return f"{u:.1%}" + (" [above roofline]" if u > 1 else "")


def _tests(p: SurveyedProgram) -> str:
    first = next(iter(p.tests))
    return first + (f" (+{len(p.tests) - 1} more)" if len(p.tests) > 1 else "")


def _rows(programs: list[SurveyedProgram], sampled: Container[str] = ()) -> list[str]:
    head = (f"{'program':<{_NAME}} {'tests':>5} {'runs':>6} {'median run':>10} {'util':>7}  {'bound':<15}"
            f" {'time lost':>10}")
    out = [head]
    for p in programs:
        vary = (" [counts vary]" if p.counts_vary else "") + (" [contended]" if p.contended_runs else "")
        vary += " [sampled]" if any(t in sampled for t in p.tests) else ""
        out.append(f"{_name(p):<{_NAME}} {len(p.tests):>5} {p.runs:>6} {format_seconds(p.median_s):>10} "
                   f"{_util(p):>7}  {(p.bound or '-'):<15} {format_seconds(p.time_lost_s):>10}{vary}")
        contended = f"{p.contended_runs} of {p.runs} runs contended" if p.contended_runs else ""
        touched = p.utilization_with_touch
        # Above 100%, the runs cannot have faulted their result's pages in (the allocator reused them): not a reason.
        touch = (f"{touched:.0%} with its result's first touch ({format_seconds(p.touch_s)})"
                 if touched is not None and p.touch_s >= 0.1 * p.median_s and touched <= 1 else "")
        detail = "; ".join(x for x in (f"top op {p.top_op}" if p.top_op else "", touch, f"in {_tests(p)}",
                                       contended) if x)
        out.append(f"    {detail}")
    return out


def survey_lines(book: SurveyBook, *, every: bool = False) -> list[str]:
    """The table, the small programs, the runs below a threshold and what could not be read."""
    judged = book.judged()
    shown = judged if every else judged[:SHOWN]
    lines = [f"{len(book.programs)} compiled programs in {book.tests} tests; utilization of the median run against "
             f"{book.hardware or 'no known hardware (counts and times only)'}"]
    if shown:
        lines += _rows(shown, book.sampled)
    if len(judged) > len(shown):
        lines.append(f"... {len(judged) - len(shown)} more (pytest -v lists every one; the JSON report holds them)")
    small = book.small()
    if small:
        runs = sum(p.runs for p in small)
        lines.append(f"{len(small)} programs too small to judge (median run under {format_seconds(SMALL_S)}): {runs} "
                     f"runs, {format_seconds(sum(p.device_s for p in small))} in all")
    if any(p.utilization is not None and p.utilization > 1 for p in shown):
        lines.append("[above roofline]: faster than the roofline of the ceilings in use (a working set the cache "
                     "held, a calibration the machine has outrun): not a verdict; see the program's notes in the "
                     "JSON report")
    if book.contended:
        lines.append(f"[contended]: {len(book.contended)} tests ran while other processes held the CPUs (their threads "
                     f"waited for a CPU over {CONTENDED_ABOVE:.0%} of their ready time): their runs are counted, "
                     f"and no threshold judged them")
    if book.sampled:
        profiled = sum(p for p, _ in book.sampled.values())
        ran = sum(r for _, r in book.sampled.values())
        lines.append(f"[sampled]: {len(book.sampled)} tests ran longer than {format_seconds(FULL_PROFILE_S)}: profiled "
                     f"in full for that long, then in windows ({format_seconds(profiled)} of their "
                     f"{format_seconds(ran)}): their programs' runs and time lost are those seen")
    if book.below:
        lines.append(f"below their threshold ({len(book.below)}):")
        lines += [f"  {b.line()}" for b in sorted(book.below.values(), key=lambda b: b.worst)]
    if book.problems:
        lines.append(f"not read ({len(book.problems)}):")
        lines += [f"  {line}" for line in book.problems[:10]]
        if len(book.problems) > 10:
            lines.append(f"  ... {len(book.problems) - 10} more in the JSON report")
    lines.append(f"survey cost: {format_seconds(book.reading_s)} stopping the profiler and reading the profiles")
    return wrap_lines(lines, WIDTH)


def survey_html(book: SurveyBook) -> str:
    """The survey as an HTML section: every program, worst first, sortable like the summary."""
    import html

    def cell(text: str, num: bool = False) -> str:
        return f"<td{' class=num' if num else ''}>{html.escape(text)}</td>"

    rows = []
    for p in book.judged() + book.small():
        rows.append("<tr>" + cell(p.module) + cell(str(len(p.tests)), True) + cell(str(p.runs), True)
                    + cell(format_seconds(p.median_s), True) + cell(_util(p), True) + cell(p.bound or "-")
                    + cell(format_seconds(p.time_lost_s), True) + cell("too small to judge" if p.small else p.top_op)
                    + cell(", ".join(list(p.tests)[:3]) + (f" (+{len(p.tests) - 3} more)" if len(p.tests) > 3 else ""))
                    + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("program", "tests", "runs", "median run", "util", "bound", "time lost",
                                             "top op", "tests that ran it"))
    below = "".join(f"<li>{html.escape(b.line())}</li>" for b in book.below.values())
    return (f"<h2>Survey: every compiled program the tests ran ({len(book.programs)} in {book.tests} tests)</h2>"
            f"<p class=meta>Utilization of each program's median run against "
            f"{html.escape(book.hardware or 'no known hardware')}; worst first by the time lost over all its runs; "
            f"programs whose median run is under "
            f"{format_seconds(SMALL_S)} are too small to judge.</p>"
            + (f"<p class=bad>Below their threshold:</p><ul>{below}</ul>" if below else "")
            + f"<table class=sortable><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
