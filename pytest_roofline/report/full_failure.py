"""A kernel's failure in full (pytest ``-vv``): the hardware and where each ceiling came from, the counts, the
bound, the measured time with its spread, the cache, clocks, idle time, census, the utilization against the
threshold and where it came from, the ops furthest behind their roofline, every hint and note, the trace; each fact
once. Pure."""

from __future__ import annotations

from ..analysis.model import contention
from ..analysis.model.roofline import impossible_text
from ..analysis.program.info import MORE_THAN_SOURCE, more_than_source_text
from ..base.units import format_fraction, format_quantity, format_seconds
from ..records.kernel_record import Artifacts, KernelRecord
from ..result.recorded_result import RecordedResult
from .text import CACHED, top_ops_lines

__all__ = ["full_block", "figure_lines"]


def _ceiling_lines(r: RecordedResult) -> tuple[list[str], set[str]]:
    """One line per ceiling the work met (a ceiling met by two shares of the work, once), and the notes they said."""
    lines: list[str] = []
    said: set[str] = set()
    for use in r.ceilings_used:
        c = use.ceiling
        unit = "B/s" if "bytes" in use.work else "/s" if use.work == "transcendentals" else "FLOP/s"
        name = {"bytes": "memory", "collective bytes": "interconnect",
                "collective bytes within a host": "interconnect", "collective bytes across hosts": "host link",
                "transcendentals": "transcendental"}.get(use.work, f"{use.key} peak")
        note = f" [{use.note}]" if use.note and use.note not in c.source else ""
        line = f"    {name:<15}{format_quantity(c.value, unit):<16}{c.origin}: {c.source} ({c.date}){note}"
        if line not in lines:
            lines.append(line)
        said |= {use.note, c.source} - {""}
    return lines, said


def _memory_lines(record: KernelRecord) -> list[str]:
    memory = record.result.memory
    if memory is None:
        return []
    line = f"  memory        {format_quantity(memory.peak_bytes, 'B')} peak ({memory.breakdown()})"
    limit = record.max_memory
    if limit is not None and limit.limit_bytes is not None:
        line += (f" vs max_memory {format_quantity(limit.limit_bytes, 'B')} ({limit.limit.origin}): "
                 f"{'fits' if limit.ok else 'TOO MUCH'}")
    lines = [line]
    if memory.device_peak is not None:
        lines.append(f"                device peak {format_quantity(memory.device_peak, 'B')} "
                     f"({memory.device_peak_note})")
    return lines


def _time_lines(r: RecordedResult) -> list[str]:
    """The roofline's time and its parts, the first-touch term, the measured runs."""
    lines = []
    comms = f", interconnect {format_seconds(r.comms_time_s)}" if r.comms_time_s else ""
    trans = f", transcendental {format_seconds(r.transcendental_time_s)}" if r.transcendental_time_s else ""
    touch_s = f", + first touch {format_seconds(r.first_touch_time_s)}" if r.first_touch_time_s else ""
    lines.append(f"  roofline      {format_seconds(r.roofline_time_s)} (compute "
                 f"{format_seconds(r.compute_time_s)}, memory {format_seconds(r.memory_time_s)}{trans}{comms}"
                 f"{touch_s})")
    touch = r.first_touch
    if touch is not None and (touch.charged_bytes or touch.expected_faults >= 1):
        lines.append(f"  first touch   {r.first_touch_text}")
    timer = r.timer + (f": {r.timer_fallback_reason}" if r.timer_fallback_reason else "")
    lines.append(f"  measured      {format_seconds(r.device_time_s)} median, min {format_seconds(r.min_s)}, "
                 f"spread {r.spread:.1%} (IQR/median), {r.runs} runs ({timer}); compile "
                 f"{format_seconds(r.compile_time_s)}{CACHED if r.compile_cached else ''}")
    if r.cache is not None:
        lines.append(f"  cache         {r.cache.text()}")
    if r.clocks is not None:
        at = (f"; utilization {r.utilization_at_clocks:.1%} against the roofline at these clocks"
              if r.utilization_at_clocks is not None else "")
        lines.append(f"  clocks        {r.clocks.text()}{at}")
    if r.processes is not None:
        lines.append(f"  processes     {r.processes.text()}")
    return lines


def _judgement_lines(record: KernelRecord, reason: str) -> list[str]:
    """The utilization against the threshold, and what qualifies it: live drift, contention, the baseline, the
    second measurement, the bound, an impossible figure."""
    r = record.result
    threshold = record.threshold
    versus = (f" vs threshold {format_fraction(threshold)} ({record.threshold_origin})" if threshold is not None
              else " (not judged: see below)" if record.not_judged else " (no threshold)")
    program = record.model == "program"
    util = record.utilization
    interval = r.utilization_interval
    within = f", 95% interval {interval[0]:.1%}-{interval[1]:.1%}" if interval and program else ""
    marginal = " MARGINAL: the threshold is inside the interval" if r.marginal and program else ""
    if (
        f"{util:.1%}" in reason and threshold is not None
    ):  # the verdict's line gave the figures: where the threshold came from
        lines = [f"  threshold     {format_fraction(threshold)} ({record.threshold_origin}){marginal}"]
    else:
        lines = [f"  utilization   {util:.1%}{'' if program else ' (per-op model)'}{within}{versus}{marginal}"]
    if r.live is not None:
        calibrated = f"{r.utilization_calibrated:.1%}" if r.utilization_calibrated is not None else "n/a"
        lines.append(f"  live          the machine ran at {r.live.drift:.0%} of its calibrated speed during this "
                     f"measurement ({r.live.reference} beside each run); against the calibration alone {calibrated}")
    if r.contended and r.cpu_waiting is not None:
        on_cpu, others = r.utilization_on_cpu, r.others_cpu_share
        lines.append(f"  contended     {contention.waited_text(r.cpu_waiting)}"
                     + (f" (other processes used {others:.0%} of the CPUs)" if others is not None else "")
                     + (f"; without that waiting {on_cpu:.1%} against the calibrated ceilings" if on_cpu else "")
                     + (f"; {contention.ABOVE_ROOFLINE}" if r.on_cpu_rejected else ""))
    if record.baseline is not None:
        lines.append(f"  baseline      {record.baseline.message()}")
    if record.first_utilization is not None:
        lines.append(f"  re-measured   first run {record.first_utilization:.1%}, second {util:.1%}")
    if record.expected_bound:
        key = f" (key {record.bound_key!r})" if record.bound_key else ""
        lines.append(f"  bound         expected {record.expected_bound}-bound{key}, measured {r.bound}-bound")
    if record.not_judged:
        lines.append(f"  not judged    {record.not_judged}")
    if r.impossible:
        lines.append(f"  IMPOSSIBLE    utilization {impossible_text(r.suspect)}")
    elif r.suspect:
        lines.append(f"  SUSPECT       {r.suspect}")
    return lines


def _model_lines(record: KernelRecord) -> list[str]:
    """The per-op model (its utilization and top ops) and its check against the compiler."""
    r = record.result
    lines = []
    if r.ops:
        lines.append(f"  ops model     sum of per-op roofline times {format_seconds(r.ops_roofline_time_s)}: "
                     f"utilization {r.ops_utilization:.1%} (threshold checked against the {record.model} model)")
        lines += top_ops_lines(r.ops, count=5, times_from=r.ops_times_from)
    if r.ops_check is not None and not r.ops_check.ok:
        lines.append(f"  counts check  per-op sums differ from the compiler's: {'; '.join(r.ops_check.mismatches)}")
    return lines


def full_block(record: KernelRecord, reason: str) -> str:
    """Everything a person needs to act without rerunning: the verdict, then every figure with its source."""
    return "\n".join([f"roofline: kernel {record.label!r} of {record.nodeid}: {reason}", *figure_lines(record, reason)])


def figure_lines(record: KernelRecord, reason: str = "") -> list[str]:
    """Every figure of ``record`` with its source, each once (the HTML report's per-kernel block, the failure's
    body under -vv); ``reason``: the verdict's, whose figures are not repeated."""
    r = record.result
    hw = r.hardware
    lines = [f"  hardware      {hw.name} ({hw.platform}, {r.ceilings} ceilings, device_kind {r.device_kind!r})"]
    ceilings, said = _ceiling_lines(r)
    lines += ceilings
    lower = f" (a lower bound: {r.counts_lower_bound_reason or 'see notes'})" if r.counts_lower_bound else ""
    integer = f" + {format_quantity(r.int_ops, '').replace(' ', '')} integer ops" if r.int_ops else ""
    lines.append(f"  counts        {format_quantity(r.flops, 'FLOP')} ({r.flops_source}){integer}, "
                 f"{format_quantity(r.bytes_accessed, 'B')} ({r.bytes_source}), "
                 f"{format_quantity(r.transcendentals, 'transcendentals')}{lower}")
    if r.compiled_over_source is not None and r.source_flops:
        compiled = r.source_flops * r.compiled_over_source
        judged = "judged on the source's (counts='source')" if r.flops_source == "source" else \
            "judged on the compiled program's; counts='source' judges on the source's"
        lines.append(f"  source        {format_quantity(r.source_flops, 'FLOP')} asked for by the program as written"
                     + (f": {more_than_source_text(compiled, r.source_flops)}, {judged}"
                        if r.compiled_over_source > MORE_THAN_SOURCE else ""))
    lines += _memory_lines(record)
    if r.no_work:
        lines.append("  intensity     none: the program computes nothing, so it is bound by neither")
    else:
        lines.append(f"  intensity     {r.intensity:.3g} FLOP/B vs critical {r.critical_intensity:.3g} FLOP/B "
                     f"-> {r.bound}-bound")
    lines += _time_lines(r)
    if r.idle is not None:
        lines.append(f"  idle          {r.idle.text()} ({r.idle.basis})")
    if r.census is not None:
        over = record.max_ops
        limit = f"; max_ops {', '.join(f'{k} {v:.0f}' for k, v in over.limit.limits)} ({over.limit.origin}): " \
            f"{'within' if over.ok else 'OVER'}" if over is not None else ""
        lines.append(f"  census        {r.census.text()}{limit}")
    if r.exposure is not None:
        check = record.max_exposed
        limit = (f" vs max_exposed {check.limit:.0%} ({check.origin}): {'within' if check.ok else 'OVER'}"
                 if check is not None else "")
        lines.append(f"  exposed       collectives {r.exposure.exposed_fraction:.0%} of the run{limit}:")
        lines += [f"                {line}" for line in r.exposure.lines()]
    lines += _judgement_lines(record, reason)
    lines += _model_lines(record)
    lines += [f"  hint          {hint}" for hint in r.hints]
    said.add(r.counts_lower_bound_reason if r.counts_lower_bound else "")
    lines += [f"  note          {note}" for note in r.notes if note not in said]
    if record.artifacts is not None:
        lines += _artifact_lines(record.artifacts)
    return lines


def _artifact_lines(saved: Artifacts) -> list[str]:
    """Where the trace and HLO were saved, and how to open each (only what was written)."""
    untraced = "" if saved.perfetto or saved.xplane else " (no profiler trace: the wall clock was used)"
    views = [f"Perfetto: open {saved.perfetto} at https://ui.perfetto.dev"] if saved.perfetto else []
    if saved.xplane:
        views.append(f"TensorBoard/XProf: tensorboard --logdir {saved.trace_dir}")
    if saved.hlo:
        views.append(f"HLO: {saved.hlo}")
    return [f"  trace         {saved.trace_dir}{untraced}"] + (
        ["                " + " ; ".join(views)] if views else []
    )
