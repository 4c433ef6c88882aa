"""A kernel's failure (or warning) as text: by default a block read in ten seconds (at most 12 lines, none wider
than 120 characters: the verdict, why, the top ops, the first hint, where the rest is); with ``full=True`` (pytest
``-vv``) every figure with its source, each fact once. Pure."""

from __future__ import annotations

import textwrap

from ..base.units import format_fraction, format_seconds
from ..records.kernel_record import Artifacts, KernelRecord
from .full_failure import full_block
from .text import most_lost

__all__ = ["failure_message", "short_block", "WIDTH", "MORE"]

WIDTH = 120  # the widest line of the default block
_LABEL = 12  # "  top ops   ": the width of a line's label
MORE = "pytest -vv: the full block (ceilings and their sources, counts, cache, idle, all ops, hints, notes)"


def failure_message(record: KernelRecord, reason: str, *, full: bool = False, report: str = "") -> str:
    """The failure of ``record`` for ``reason``: the short block, or with ``full`` the whole one; ``report``: where
    the run's JSON or HTML report is written, if anywhere."""
    return full_block(record, reason) if full else "\n".join(short_block(record, reason, report))


def fit(line: str, width: int = WIDTH) -> str:
    """``line`` cut to ``width`` characters, ending in "..." where cut."""
    return line if len(line) <= width else line[: width - 3].rstrip() + "..."


def _joined(lines: list[str]) -> str:
    """Wrapped lines back on one line (the first one's indent kept), cut to WIDTH."""
    return fit(" ".join([lines[0], *(line.strip() for line in lines[1:])]))


def _wrapped(label: str, text: str, lines: int) -> list[str]:
    """``text`` after ``label`` in at most ``lines`` lines of at most WIDTH characters, the rest cut."""
    head = f"  {label:<{_LABEL - 2}}"
    out = textwrap.wrap(text, WIDTH, initial_indent=head, subsequent_indent=" " * _LABEL, break_on_hyphens=False)
    if len(out) > lines:
        out = out[: lines - 1] + [_joined(out[lines - 1:])]
    return out


def _verdict_lines(record: KernelRecord, reason: str) -> list[str]:
    text = f"roofline: kernel {record.label!r}: {reason}"
    out = textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    return out[:2] + ([_joined(out[2:])] if len(out) > 2 else [])


def why_line(record: KernelRecord, reason: str) -> str:
    """The bound, the time per run against the roofline and the time lost; the utilization against the threshold
    where the verdict's line does not already say it."""
    r = record.result
    bound = "bound by nothing (no work)" if r.no_work else f"{r.bound}-bound" + (
        " as counted (an uncounted call may change it)" if r.bound_unsure else "")
    lost = max(r.device_time_s - r.roofline_time_s, 0.0)
    text = (f"{bound}: {format_seconds(r.device_time_s)} per run against a roofline of "
            f"{format_seconds(r.roofline_time_s)}, {format_seconds(lost)} lost per run")
    if "utilization" not in reason:
        interval = r.utilization_interval
        within = f" [{interval[0]:.1%}-{interval[1]:.1%}]" if interval and record.model == "program" else ""
        versus = f" vs threshold {format_fraction(record.threshold)}" if record.threshold is not None else ""
        text += f"; utilization {record.utilization:.1%}{within}{versus}"
    return text


def _op_lines(record: KernelRecord, count: int = 3) -> list[str]:
    out = []
    for i, op in enumerate(most_lost(record.result.ops)[:count]):
        runs = f" x{op.executions}" if op.executions > 1 else ""
        label = "top ops" if i == 0 else ""
        out.append(fit(f"  {label:<{_LABEL - 2}}{op.name} ({op.kind}{runs}): {format_seconds(op.measured_s or 0.0)} "
                       f"vs roofline {format_seconds(op.roofline_time_s)}, lost {format_seconds(op.time_lost_s)}"))
    return out


def _where_lines(saved: Artifacts | None, report: str) -> list[str]:
    more = MORE + (f"; report {report}" if report else "")
    out = _wrapped("more", more, 2)
    if saved is not None:  # a path is never cut
        out.append(f"  {'trace':<{_LABEL - 2}}{saved.trace_dir}")
    return out


def short_block(record: KernelRecord, reason: str, report: str = "") -> list[str]:
    """The default block: the verdict (at most 3 lines), why (1), the top 3 ops, how its conditionals were counted
    (1, where it has any), the first hint (at most 2, 1 beside that), where the full block, the report and the trace
    are (at most 3)."""
    lines = _verdict_lines(record, reason)
    lines += _wrapped("why", why_line(record, reason), 1)
    lines += _op_lines(record)
    branches = record.result.conditionals
    if branches:
        more = f" (and {len(branches) - 1} more)" if len(branches) > 1 else ""
        lines += _wrapped("branches", branches[0] + more, 1)
    if record.result.hints:
        lines += _wrapped("hint", record.result.hints[0], 1 if branches else 2)
    return lines + _where_lines(record.artifacts, report)
