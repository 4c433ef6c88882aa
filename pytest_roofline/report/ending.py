"""What a pytest run prints at its end (:func:`summary_text`): the kernels worst first, the tests whose marker
judged nothing, a run whose threshold judged nothing, the reports written and those that could not be. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass

from ..records.kernel_record import KernelRecord, LockWaited, Unmeasured
from .text import summary_lines, wrap_lines

__all__ = ["Ending", "SummaryLine", "summary_text"]

TITLE = "roofline summary (worst first)"


@dataclass(frozen=True)
class SummaryLine:
    """One line of the summary: a section's title (``title``, drawn across the terminal), an error (``red``), or
    a plain line."""

    text: str
    title: bool = False
    red: bool = False


@dataclass(frozen=True)
class Ending:
    """What the run's end has to say: the kernels (records, those not measured, waits for the device lock), the
    line of a process that leaves the summary to process 0 of its program (``follower``), the line of a threshold
    that judged nothing (``nothing_judged``), the tests whose marker judged nothing, and what the reports' writing
    said."""

    records: Sequence[KernelRecord]
    unmeasured: Sequence[Unmeasured] = ()
    lock_waits: Sequence[LockWaited] = ()
    _: KW_ONLY  # fields from the fourth on are given by keyword
    follower: str = ""
    nothing_judged: str = ""
    marked_measured_nothing: Sequence[str] = ()
    errors: Sequence[str] = ()
    written: Sequence[str] = ()


def summary_text(end: Ending, *, wide: bool = False) -> list[SummaryLine]:
    """The lines, in the order printed; a follower's one line alone."""
    if end.follower:  # one of several processes of a program, not the first: process 0 reports
        return [SummaryLine(end.follower)]
    lines: list[SummaryLine] = []
    if end.records or end.unmeasured:
        lines.append(SummaryLine(TITLE, title=True))
        lines += [SummaryLine(line) for line in summary_lines(end.records, end.unmeasured, wide=wide,
                                                               lock_waits=end.lock_waits)]
    if end.nothing_judged:
        lines.append(SummaryLine(end.nothing_judged))
    if end.marked_measured_nothing:
        lines.append(SummaryLine(f"roofline: marked, measured nothing ({len(end.marked_measured_nothing)}):"))
        lines += [SummaryLine(line) for line in wrap_lines(list(end.marked_measured_nothing))]
    lines += [SummaryLine(error, red=True) for error in end.errors]  # a report hook that raised, a report not written
    lines += [SummaryLine(line) for line in end.written]
    return lines
