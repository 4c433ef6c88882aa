"""The HTML report's charts, as plotly figures (plotly is imported by the caller, :mod:`.html`, and handed in
as ``go``): the program-level roofline of every kernel, the op-level roofline of a failing kernel, and a
history sparkline with its change points. Arithmetic intensity against achieved FLOP/s on log-log axes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..analysis.verdict.regressions import Finding
from ..base.units import format_quantity, format_seconds
from ..hardware.spec import HardwareSpec
from ..history.baseline import Series
from ..records.kernel_record import KernelRecord

__all__ = ["VERDICT_COLOURS", "roofline_figure", "ops_figure", "sparkline_figure"]

VERDICT_COLOURS = {
    "pass": "#2ca02c",
    "measured": "#1f77b4",
    "fail": "#d62728",
    "regression": "#e377c2",
    "wrong-bound": "#ff7f0e",
    "impossible": "#9467bd",
    "over-memory": "#8c564b",
    "over-ops": "#bcbd22",
    "exposed": "#17becf",
    "contended": "#bcbd22",
    "lower-bound": "#bcbd22",
    "unjudged": "#bcbd22",
}
CONFIG = {"displaylogo": False, "responsive": True}


def _roofs(go: Any, fig: Any, hardware: HardwareSpec, x_range: tuple[float, float], interconnect: bool) -> None:
    """One flat roof per compute dtype, the memory slope up to the highest roof, the interconnect slope."""
    low, high = x_range
    bandwidth = hardware.memory_bandwidth.value
    peaks = {k: c.value for k, c in hardware.peaks.items()}
    top = max(peaks.values())
    ridge = top / bandwidth
    fig.add_trace(go.Scatter(x=[low, ridge], y=[bandwidth * low, top], mode="lines", name=f"memory "
                             f"{format_quantity(bandwidth, 'B/s')}", line={"color": "#444", "width": 2},
                             hoverinfo="name"))
    for dtype, peak in sorted(peaks.items(), key=lambda kv: -kv[1]):
        fig.add_trace(go.Scatter(x=[peak / bandwidth, high], y=[peak, peak], mode="lines",
                                 name=f"{dtype} peak {format_quantity(peak, 'FLOP/s')}", hoverinfo="name",
                                 line={"dash": "solid" if peak == top else "dot", "width": 2}))
    link = hardware.interconnect_bandwidth
    if interconnect and link:
        rate = link.value
        fig.add_trace(go.Scatter(x=[low, top / rate], y=[rate * low, top], mode="lines", hoverinfo="name",
                                 name=f"interconnect {format_quantity(rate, 'B/s')} (x: FLOPs per byte sent)",
                                 line={"color": "#8c564b", "dash": "dash"}))


def _span(values: Sequence[float], hardware: HardwareSpec) -> tuple[float, float]:
    ridge = max(c.value for c in hardware.peaks.values()) / hardware.memory_bandwidth.value
    points = [v for v in values if v > 0] + [ridge]
    return min(points) / 10, max(points) * 10


def _layout(fig: Any, title: str, height: int = 520) -> None:
    fig.update_layout(title=title, height=height, margin={"l": 60, "r": 20, "t": 50, "b": 50},
                      xaxis={"type": "log", "title": "arithmetic intensity (FLOP/byte)", "exponentformat": "SI"},
                      yaxis={"type": "log", "title": "achieved FLOP/s", "exponentformat": "SI"},
                      legend={"font": {"size": 11}},
                      template="plotly_white")


def roofline_figure(go: Any, hardware: HardwareSpec, records: Sequence[KernelRecord]) -> Any:
    """Every kernel measured on ``hardware`` as a point, coloured by verdict, on its roofline."""
    fig = go.Figure()
    plotted = [r for r in records if r.result.flops > 0 and r.result.device_time_s > 0]
    interconnect = any(r.result.collective_bytes for r in records)
    _roofs(go, fig, hardware, _span([r.result.intensity for r in plotted], hardware), interconnect)
    for verdict in sorted({r.verdict for r in plotted}):
        group = [r for r in plotted if r.verdict == verdict]
        fig.add_trace(
            go.Scatter(
                x=[r.result.intensity for r in group],
                y=[r.result.flops / r.result.device_time_s for r in group],
                mode="markers",
                name=f"kernels: {verdict}",
                marker={
                    "size": 12,
                    "color": VERDICT_COLOURS.get(verdict, "#7f7f7f"),
                    "line": {"width": 1, "color": "#222"},
                },
                text=[_hover(r) for r in group],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    _layout(fig, f"{hardware.name}: kernels on the roofline")
    return fig


def _hover(record: KernelRecord) -> str:
    r = record.result
    return (f"{record.kernel}<br>utilization {r.utilization:.1%} ({record.verdict})<br>"
            f"{r.bound}-bound, intensity {r.intensity:.3g} FLOP/B<br>measured {format_seconds(r.device_time_s)}"
            f", roofline {format_seconds(r.roofline_time_s)}")


def ops_figure(go: Any, hardware: HardwareSpec, record: KernelRecord) -> Any | None:
    """The ops of one kernel that do FLOPs, as points sized by the time each lost; None when none do."""
    ops = [(op, op.measured_s) for op in record.result.ops if op.flops and op.bytes and op.measured_s]
    if not ops:
        return None
    fig = go.Figure()
    _roofs(go, fig, hardware, _span([op.flops / op.bytes for op, _ in ops], hardware), False)
    lost = [op.time_lost_s for op, _ in ops]
    biggest = max(lost) or 1.0
    fig.add_trace(go.Scatter(
        x=[op.flops / op.bytes for op, _ in ops], y=[op.flops / measured for op, measured in ops],
        mode="markers", name="ops (size: time lost)",
        marker={"size": [8 + 40 * math.sqrt(v / biggest) for v in lost], "color": "#d62728", "opacity": 0.6,
                "line": {"width": 1, "color": "#222"}},
        text=[f"{op.name} ({op.kind})<br>"
              f"{op.bound}-bound, measured {format_seconds(measured)} vs roofline "
              f"{format_seconds(op.roofline_time_s)}<br>lost {format_seconds(v)}"
              for (op, measured), v in zip(ops, lost, strict=True)],
        hovertemplate="%{text}<extra></extra>"))
    _layout(fig, f"{record.kernel}: its ops", height=440)
    return fig


def sparkline_figure(go: Any, series: Series, finding: Finding) -> Any:
    """A series' utilization per run, change points as vertical lines, the gate as a dotted line."""
    x = list(range(1, len(series.values) + 1))
    labels = [run.short for run in series.runs]
    fig = go.Figure(go.Scatter(x=x, y=list(series.values), mode="lines+markers", text=labels,
                               hovertemplate="run %{x} (%{text}): %{y:.1%}<extra></extra>", name="utilization",
                               line={"color": "#d62728" if finding.regression else "#1f77b4"}))
    for cp in finding.change_points:
        fig.add_vline(x=cp.index + 0.5, line={"color": "#ff7f0e", "dash": "dash"},
                      annotation_text=f"{cp.change:+.0%}", annotation_position="top")
    if finding.gate is not None:
        fig.add_hline(y=finding.gate.baseline * (1 - finding.gate.allowed_drop), line={"color": "#999", "dash": "dot"})
    fig.update_layout(height=150, margin={"l": 50, "r": 10, "t": 10, "b": 25}, showlegend=False,
                      yaxis={"tickformat": ".0%"}, template="plotly_white")
    return fig
