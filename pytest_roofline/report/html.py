"""The HTML report: one self-contained file (plotly's script embedded, no request leaves the page) with the
sortable summary, the roofline chart of each hardware entry, the op-level chart of each failing kernel, a
sparkline per kernel from a history, the hardware with the source of every ceiling, and links to traces.

plotly is an optional dependency (``pip install 'pytest-roofline[html]'``), imported only here and only when
a report is made."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..analysis.model.roofline import impossible_text
from ..analysis.verdict.regressions import judge_series
from ..base.kinds import FAILING_VERDICTS
from ..base.units import format_fraction, format_quantity, format_seconds
from ..hardware.spec import Ceiling, HardwareSpec
from ..history.baseline import Series
from ..history.paired import Comparison
from ..history.reports import Run
from ..records.kernel_record import KernelRecord
from ..records.series_judgement import BaselineCheck
from ..result.recorded_result import RecordedResult
from .ab_report import ab_html
from .charts import CONFIG, VERDICT_COLOURS, ops_figure, roofline_figure, sparkline_figure
from .full_failure import figure_lines
from .history_text import run_line
from .survey_report import survey_html
from .text import bound_cells, cache_cell, compile_cell, other_utilization, verdict_marks

__all__ = ["HtmlUnavailable", "html_report", "plotly_missing"]

NEEDS = "the HTML report needs plotly: pip install 'pytest-roofline[html]'"

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { padding: 3px 6px; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
th.sortable { cursor: pointer; background: #f4f4f4; } th.sortable:hover { background: #e8e8e8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.wide { overflow-x: auto; } td.name { min-width: 18em; max-width: 30em; overflow-wrap: anywhere; }
td.num.bad { font-weight: 600; }
.verdict { font-weight: 600; } .meta { color: #555; font-size: 0.9em; } .bad { color: #d62728; }
.spark { display: flex; align-items: center; gap: 1em; } .spark .name { width: 32em; font-size: 0.85em; }
"""

SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th.sortable").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var up = th.dataset.order !== "asc"; th.dataset.order = up ? "asc" : "desc";
      rows.sort(function (a, b) {
        var x = a.cells[column].dataset.value, y = b.cells[column].dataset.value;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
        return up ? c : -c;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


class HtmlUnavailable(RuntimeError):
    """plotly is not installed."""


def plotly_missing() -> str | None:
    """Why the HTML report cannot be made here (None when it can)."""
    try:
        import plotly  # noqa: F401
    except ImportError:
        return NEEDS
    return None


def _e(value: Any) -> str:
    return html.escape(str(value))


def _cell(text: str, value: Any = None, num: bool = False, attrs: str = "") -> str:
    sort = _e(value if value is not None else text)
    return f'<td data-value="{sort}"{" class=num" if num else ""}{attrs}>{text}</td>'


def _link(path: str | None, text: str) -> str:
    if not path:
        return ""
    uri = Path(path).resolve().as_uri() if path else ""
    return f'<a href="{_e(uri)}">{_e(text)}</a>'


def _memory_cell(rec: KernelRecord) -> str:
    memory = rec.result.memory
    if memory is None:
        return _cell("", -1)
    text = format_quantity(memory.peak_bytes, "B")
    if rec.max_memory is not None and rec.max_memory.limit_bytes:
        text += f" / max {format_quantity(rec.max_memory.limit_bytes, 'B')}"
    return _cell(_e(text), memory.peak_bytes, True, f' title="{_e(memory.breakdown())}"')


def _baseline_cell(rec: KernelRecord) -> str:
    base = rec.baseline
    if isinstance(base, BaselineCheck):
        return _cell(f"{-base.drop:+.1%} (gate {base.gate.allowed_drop:.1%})", base.drop)
    return _cell("new" if base is not None else "", "")


def _trace_cell(rec: KernelRecord) -> str:
    saved = rec.artifacts
    if saved is None:
        return _cell("", "")
    return _cell("<br>".join(filter(None, [_link(saved.perfetto, "perfetto"), _link(saved.hlo, "hlo"),
                                           _link(saved.trace_dir, "dir")])), "")


def _row(rec: KernelRecord, several: bool) -> str:
    r = rec.result
    util = rec.utilization
    interval = r.utilization_interval
    colour = VERDICT_COLOURS.get(rec.verdict, "#444")
    within = f"<br><span class=meta>[{interval[0]:.1%} - {interval[1]:.1%}]</span>" if interval else ""
    flagged = f' class="num bad" title="{_e(impossible_text())}"' if r.impossible else ""
    bound, intensity = bound_cells(r)
    return "<tr>" + "".join([
        _cell(f"{_e(rec.nodeid)} <b>[{_e(rec.label)}]</b>", rec.kernel, attrs=' class="name"'), _cell(_e(bound)),
        _cell(intensity, r.intensity, True),
        _cell(format_seconds(r.device_time_s), r.device_time_s, True,
              f' title="clocks: {_e(r.clocks.text())}"' if r.clocks else ""),
        _cell(cache_cell(r), cache_cell(r), attrs=f' title="{_e(r.cache.text())}"' if r.cache else ""),
        _cell(format_seconds(r.roofline_time_s), r.roofline_time_s, True),
        _cell(f"{util:.1%}{' IMPOSSIBLE' if r.impossible else ''}{within}", util, not flagged, flagged),
        _first_touch_cell(r),
        _cell(format_fraction(rec.threshold) + (f" ({_e(rec.threshold_key)})" if rec.threshold_key else "")
              if rec.threshold is not None else "not judged" if rec.not_judged else "",
              rec.threshold if rec.threshold is not None else -1, True,
              f' title="{_e(rec.threshold_origin or rec.not_judged)}"' if rec.threshold_origin or rec.not_judged
              else ""),
        _memory_cell(rec),
        _cell(compile_cell(r), r.compile_measured_s, True),
        _cell(f'<span class="verdict" style="color:{colour}">{_e(rec.verdict)}</span>{_marks(rec)}', rec.verdict),
        _baseline_cell(rec),
        *([_cell(_e(r.hardware_context))] if several else []), _trace_cell(rec),
    ]) + "</tr>"


def _summary(records: Sequence[KernelRecord]) -> str:
    several = len({r.result.hardware_context for r in records}) > 1
    head = [
        "test [kernel]",
        "bound",
        "intensity (FLOP/B)",
        "device time",
        "cache",
        "roofline time",
        "utilization [95% interval]",
        "first touch",
        "threshold",
        "peak memory",
        "compile time",
        "verdict",
        "vs baseline",
        *(["hardware"] if several else []),
        "trace",
    ]
    rows = [_row(rec, several) for rec in sorted(records, key=lambda rec: rec.utilization)]
    header = "".join(f'<th class="sortable" title="click to sort">{_e(h)}</th>' for h in head)
    return (f'<div class=wide><table class="sortable"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}'
            '</tbody></table></div>')


def _marks(rec: KernelRecord) -> str:
    """The summary's [marks] after a verdict, with their meaning on hover."""
    return "".join(f' <span class="meta" title="{_e(why)}">[{_e(mark)}]</span>' for mark, why in verdict_marks(rec))


def _first_touch_cell(r: RecordedResult) -> str:
    """The other utilization (with or without first touch) and the term's details on hover."""
    other = other_utilization(r)
    if other is None or r.first_touch is None:
        return _cell("", "")
    value, label = other
    return _cell(f"{value:.1%} {label}<br><span class=meta>({format_seconds(r.first_touch.time_s)})</span>", value,
                 True, f' title="{_e(r.first_touch_text)}"')


def _hardware(hardware: HardwareSpec, mode: str) -> str:
    rows: list[tuple[str, str, Ceiling]] = []
    for dtype, c in hardware.peaks.items():
        rows.append((f"{dtype} peak", format_quantity(c.value, "FLOP/s"), c))
    for ceiling, name, unit in ((hardware.memory_bandwidth, "memory bandwidth", "B/s"),
                                (hardware.interconnect_bandwidth, "interconnect", "B/s"),
                                (hardware.cache_bandwidth, "last-level cache bandwidth", "B/s"),
                                (hardware.transcendental, "transcendentals", "/s"),
                                (hardware.first_touch, "first touch of fresh pages", "B/s"),
                                (hardware.memory_capacity, "memory capacity", "B")):
        if ceiling is not None:
            rows.append((name, format_quantity(ceiling.value, unit), ceiling))
    body = "".join(f"<tr><td>{_e(n)}</td><td class=num>{_e(v)}</td><td>{_e(c.origin)}</td><td>{_e(c.source)}"
                   f"</td><td>{_e(c.date)}</td></tr>" for n, v, c in rows)
    notes = "".join(f"<li>{_e(n)}</li>" for n in hardware.notes)
    return (f"<h3>{_e(hardware.name)} ({_e(hardware.platform)}, {_e(mode)} ceilings)</h3><table><thead><tr>"
            f"<th>ceiling</th><th>value</th><th>origin</th><th>source</th><th>date</th></tr></thead><tbody>{body}"
            f"</tbody></table>" + (f"<ul class=meta>{notes}</ul>" if notes else ""))


def html_report(run: Run, series: Sequence[Series] = (), ab: Comparison | None = None) -> str:
    """The page for one report (and, with ``series`` from a history, a sparkline per kernel; with ``ab``, the
    comparison of two revisions first)."""
    try:
        import plotly.graph_objects as go
        from plotly.offline import get_plotlyjs
    except ImportError:
        raise HtmlUnavailable(NEEDS) from None

    def figure(fig: Any) -> str:
        return str(fig.to_html(full_html=False, include_plotlyjs=False, config=CONFIG))

    records = run.records
    groups: dict[str, tuple[HardwareSpec, str, list[KernelRecord]]] = {}
    for rec in records:
        groups.setdefault(rec.result.hardware_context, (rec.result.hardware, rec.result.ceilings, []))[2].append(rec)
    parts = [f"<h1>pytest-roofline report</h1><p class=meta>{_e(run_line(run))}</p>"]
    if ab is not None:
        parts.append(ab_html(ab))
    if not run.complete:
        parts.append(f"<p class=bad>This run was incomplete: {_e(run.why_incomplete)}. Its figures are not part "
                     "of the history's series.</p>")
    parts.append(f"<h2>Summary ({len(records)} kernels; click a column to sort)</h2>{_summary(records)}")
    parts.append(_unmeasured(run))
    if run.survey is not None:
        parts.append(survey_html(run.survey))
    parts.append("<h2>Roofline</h2><p class=meta>Each kernel at its arithmetic intensity and achieved FLOP/s "
                 "(FLOPs / measured device time), against the roofs of the hardware it was measured on: one flat "
                 "roof per compute dtype, the memory slope (and the interconnect where collectives run). With live "
                 "ceilings utilization is against the machine's speed during the run, so a point's distance to "
                 "the calibrated roof is not exactly its utilization. Kernels without FLOPs (copies) are in the "
                 "table only.</p>")
    for hw, _, recs in groups.values():
        parts.append(figure(roofline_figure(go, hw, recs)))
    failing = [r for r in records if r.verdict in FAILING_VERDICTS]
    if failing:
        parts.append("<h2>Ops of failing kernels</h2><p class=meta>Ops that do FLOPs, sized by the time each "
                     "lost against its own roofline; the top ops by time lost are listed below each chart.</p>")
        for rec in failing:
            fig = ops_figure(go, rec.result.hardware, rec)
            parts.append(figure(fig) if fig is not None else f"<p>{_e(rec.kernel)}: no op with FLOPs to plot.</p>")
            parts.append(_top_ops(rec))
    parts.append(_figures(records))
    if series:
        parts.append("<h2>History</h2><p class=meta>Utilization per complete run; dashed lines: change points "
                     "(E-divisive, Welch's t-test p &lt; 0.001); dotted: the gate below which the next run is a "
                     "regression.</p>")
        for s in series:
            finding = judge_series(s.values)
            status = "regression" if finding.regression else "ok"
            mdd = finding.minimum_detectable_drop
            detectable = f"minimum detectable drop {mdd:.1%}" if mdd is not None else "too few runs to judge"
            parts.append(f'<div class=spark><div class=name><b>{_e(s.key.kernel)}</b><br><span class=meta>'
                         f'{_e(s.key.context)}; {len(s.values)} runs; {detectable}; <span class='
                         f'{"bad" if finding.regression else "meta"}>{status}</span></span></div>'
                         f'<div style="flex:1">{figure(sparkline_figure(go, s, finding))}</div></div>')
    parts.append("<h2>Hardware</h2>" + "".join(_hardware(hw, mode) for hw, mode, _ in groups.values()))
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>pytest-roofline report</title>"
            f"<style>{STYLE}</style><script>{get_plotlyjs()}</script></head><body>{''.join(parts)}"
            f"<script>{SORT_SCRIPT}</script></body></html>\n")


def _figures(records: Sequence[KernelRecord]) -> str:
    """Every kernel's figures, each in a block that opens on a click: what a failure shows under pytest -vv."""
    blocks = "".join(f"<details><summary>{_e(rec.kernel)}: {_e(rec.verdict)}</summary><pre>"
                     f"{_e(chr(10).join(figure_lines(rec)))}</pre></details>" for rec in records)
    return ("<h2>Every kernel's figures</h2><p class=meta>What a failure shows under pytest -vv: the ceilings and "
            "their sources, the counts, the time, the cache, clocks, idle time, census, every op, hint and note.</p>"
            + blocks)


def _unmeasured(run: Run) -> str:
    """The kernels that could not be measured, with their error ("" when every kernel was measured)."""
    unmeasured = run.unmeasured
    if not unmeasured:
        return ""
    rows = "".join(f"<tr><td class=name>{_e(u.nodeid)} <b>[{_e(u.label)}]</b></td><td>{_e(u.error)}</td></tr>"
                   for u in unmeasured)
    return (f"<h2 class=bad>Could not be measured ({len(unmeasured)})</h2><table><thead><tr><th>test [kernel]</th>"
            f"<th>error</th></tr></thead><tbody>{rows}</tbody></table>")


def _top_ops(record: KernelRecord, count: int = 5) -> str:
    ops = sorted(record.result.ops, key=lambda op: -op.time_lost_s)[:count]
    if not ops:
        return ""
    rows = "".join(f"<tr><td>{_e(op.name)}</td><td>{_e(op.opcode)}</td><td>{_e(op.bound)}</td>"
                   f"<td class=num>{format_seconds(op.measured_s or 0.0)}</td><td class=num>"
                   f"{format_seconds(op.roofline_time_s)}</td><td class=num>"
                   f"{format_seconds(op.time_lost_s)}</td></tr>" for op in ops)
    return ("<table><thead><tr><th>op</th><th>opcode</th><th>bound</th><th>measured</th><th>roofline</th>"
            f"<th>lost</th></tr></thead><tbody>{rows}</tbody></table>")
