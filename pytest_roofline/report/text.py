"""Measurement records as text: the failure message, the summary table, the header line. Pure.

Everything here reads :class:`~pytest_roofline.records.kernel_record.KernelRecord` (a kernel just measured, one from
an xdist worker and one read from a report are the same type) and the hardware as a
:class:`~pytest_roofline.hardware.spec.HardwareSpec`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.model import contention
from ..analysis.model.first_touch import FAULT_COST_MOVES, FAULTS_CHEAPER
from ..analysis.model.per_op import OpRow
from ..analysis.model.roofline import impossible_text
from ..analysis.program.info import MORE_THAN_SOURCE, more_than_source_text
from ..base.kinds import FAILING_VERDICTS
from ..base.units import format_fraction, format_quantity, format_seconds
from ..hardware.spec import Ceiling, HardwareSpec
from ..records.kernel_record import Artifacts, KernelRecord, Unmeasured
from ..records.recorded_result import RecordedResult
from ..records.series_judgement import BaselineCheck

__all__ = ["failure_message", "summary_lines", "header_line", "top_ops_lines", "compile_cell", "cache_cell", "bound_cells"]


def _ceiling_lines(r: RecordedResult) -> list[str]:
    lines = []
    for use in r.ceilings_used:
        c = use.ceiling
        unit = "B/s" if "bytes" in use.work else "/s" if use.work == "transcendentals" else "FLOP/s"
        name = {"bytes": "memory", "collective bytes": "interconnect",
                "collective bytes within a host": "interconnect", "collective bytes across hosts": "host link",
                "transcendentals": "transcendental"}.get(use.work, f"{use.key} peak")
        note = f" [{use.note}]" if use.note else ""
        lines.append(f"    {name:<15}{format_quantity(c.value, unit):<16}{c.origin}: {c.source} ({c.date}){note}")
    return lines


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
                 f"{format_seconds(r.compile_time_s)}{_CACHED if r.compile_cached else ''}")
    if r.cache is not None:
        lines.append(f"  cache         {r.cache.text()}")
    if r.clocks is not None:
        at = (f"; utilization {r.utilization_at_clocks:.1%} against the roofline at these clocks"
              if r.utilization_at_clocks is not None else "")
        lines.append(f"  clocks        {r.clocks.text()}{at}")
    if r.processes is not None:
        lines.append(f"  processes     {r.processes.text()}")
    return lines


def _judgement_lines(record: KernelRecord) -> list[str]:
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


def failure_message(record: KernelRecord, reason: str) -> str:
    """Everything a person needs to act without rerunning: the figures, their sources and the verdict."""
    r = record.result
    hw = r.hardware
    lines = [f"roofline: kernel {record.label!r} of {record.nodeid}: {reason}",
             f"  hardware      {hw.name} ({hw.platform}, {r.ceilings} ceilings, device_kind {r.device_kind!r})"]
    lines += _ceiling_lines(r)
    lower = f" (a lower bound: {r.counts_lower_bound_reason or 'see notes'})" if r.counts_lower_bound else ""
    lines.append(f"  counts        {format_quantity(r.flops, 'FLOP')} ({r.flops_source}), "
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
    lines += _judgement_lines(record)
    lines += _model_lines(record)
    lines += [f"  hint          {hint}" for hint in r.hints]
    lines += [f"  note          {note}" for note in r.notes]
    if record.artifacts is not None:
        lines += _artifact_lines(record.artifacts)
    return "\n".join(lines)


def _artifact_lines(saved: Artifacts) -> list[str]:
    """Where the trace and HLO were saved, and how to open each (only what was written)."""
    untraced = "" if saved.perfetto or saved.xplane else " (no profiler trace: the wall clock was used)"
    views = [f"Perfetto: open {saved.perfetto} at https://ui.perfetto.dev"] if saved.perfetto else []
    if saved.xplane:
        views.append(f"TensorBoard/XProf: tensorboard --logdir {saved.trace_dir}")
    if saved.hlo:
        views.append(f"HLO: {saved.hlo}")
    return [f"  trace         {saved.trace_dir}{untraced}"] + (["                " + " ; ".join(views)] if views else [])


def top_ops_lines(ops: Sequence[OpRow], count: int = 5, indent: str = "    ", times_from: str = "") -> list[str]:
    """The ops that lost the most time (measured - roofline), one line each; ``times_from``: where their times
    come from, where not the timed runs."""
    timed = sorted((op for op in ops if op.measured_s), key=lambda op: -op.time_lost_s)
    if not timed:
        return []
    source = f"; times from {times_from}" if times_from else ""
    out = [f"{indent[:-2]}top ops by time lost (of {len(ops)} executed ops{source}):"]
    for op in timed[:count]:
        runs = f" x{op.executions}" if op.executions > 1 else ""
        operands = ", ".join(op.operand_shapes[:3]) + (", ..." if len(op.operand_shapes) > 3 else "")
        kind = op.kind
        util = f"{op.utilization:.1%}" if op.utilization is not None else "n/a"
        out.append(f"{indent}{op.name} ({kind}{runs}) {op.shape} <- ({operands}) [{op.dtype}]: "
                   f"{format_quantity(op.flops, 'FLOP')}, {format_quantity(op.bytes, 'B')}, {op.bound}-bound; "
                   f"measured {format_seconds(op.measured_s or 0.0)} vs roofline {format_seconds(op.roofline_time_s)} "
                   f"({util}), lost {format_seconds(op.time_lost_s)}")
    return out


def _util_cell(r: RecordedResult) -> str:
    interval = r.utilization_interval
    if interval is None:
        return f"{r.utilization:.1%}"
    return f"{r.utilization:.1%} [{interval[0]:.0%}-{interval[1]:.0%}]"


def other_utilization(r: RecordedResult) -> tuple[float, str] | None:
    """The utilization the threshold does not use and what it is: without the first touch where the roofline
    charges it, with it where not (None where there is no first-touch term)."""
    if r.first_touch is None or not r.first_touch.charged_bytes:
        return None
    value = r.utilization_without_first_touch if r.first_touch_charged else r.utilization_with_first_touch
    return (value, "without" if r.first_touch_charged else "with") if value is not None else None


def _other_util_cell(r: RecordedResult) -> str:
    other = other_utilization(r)
    if other is None:
        return "-"
    value, which = other
    return f"{value:.1%} {'w/o' if which == 'without' else 'with'}"


def _memory_cell(rec: KernelRecord) -> str:
    memory = rec.result.memory
    if memory is None:
        return "n/a"
    text = format_quantity(memory.peak_bytes, "B")
    if rec.max_memory is not None and rec.max_memory.limit_bytes is not None:
        text += f" / {format_quantity(rec.max_memory.limit_bytes, 'B')}"
    return text


def _sort_key(record: KernelRecord) -> tuple[int, float]:
    return (0 if record.result.impossible else 1, record.result.utilization)


def verdict_marks(rec: KernelRecord) -> list[tuple[str, str]]:
    """What qualifies a record's verdict: (mark, what it means), for the summary and the HTML report."""
    r = rec.result
    marks = []
    if rec.warn_only and rec.verdict in FAILING_VERDICTS:
        marks.append(("warn-only", "--roofline-warn-only: reported as a warning, not a failure"))
    if r.impossible and rec.verdict != "impossible":
        marks.append(("impossible", f"utilization {impossible_text()}"))
    if r.clocks is not None and r.clocks.throttled:
        marks.append(("throttled", f"the GPU throttled during the runs ({', '.join(r.clocks.throttled)})"
                      + (", also when measured again" if r.clocks.remeasured else "")))
    if r.suspect and not r.impossible:
        marks.append(("above roofline", "a run took less than the roofline time, or the median is above it: a "
                      "ceiling or a count is off, or a cache served it (the failure and JSON 'suspect' say which to "
                      "distrust)"))
    if r.marginal:
        marks.append(("marginal", "the threshold is inside the 95% interval: within the noise"))
    if r.first_touch_beaten:
        marks.append(("faults cheaper", FAULTS_CHEAPER))
    if r.compiled_over_source is not None and r.compiled_over_source > MORE_THAN_SOURCE and r.source_flops:
        marks.append((f"{r.compiled_over_source:.1f}x source FLOPs",
                      more_than_source_text(r.source_flops * r.compiled_over_source, r.source_flops)))
    if r.contended and rec.verdict != "contended" and r.cpu_waiting is not None:
        marks.append(("contended", contention.waited_text(r.cpu_waiting)))
    if isinstance(rec.baseline, BaselineCheck) and rec.baseline.unjudged:
        marks.append((f"baseline {rec.baseline.state}", rec.baseline.message()))
    return marks


_CACHED = " (from JAX's in-memory cache: compiled earlier in this process)"


def cache_cell(r: RecordedResult) -> str:
    """The cache state of the runs: "cold", "warm", "cold?" where cold runs were not slower than warm ones."""
    if r.cache is None:
        return "-"
    return r.cache.state + ("?" if r.cache.took is False else "")


def compile_cell(r: RecordedResult) -> str:
    """The compile time as a table shows it: "cached" where XLA did not compile, "-" where not recorded."""
    if r.compile_cached:
        return "cached"
    return format_seconds(r.compile_time_s) if r.compile_time_s > 0 else "-"


def bound_cells(r: RecordedResult) -> tuple[str, str]:
    """The bound and the intensity as a table shows them: "-" for a program that computes nothing."""
    return ("-", "-") if r.no_work else (r.bound, f"{r.intensity:.3g}")


def _table(records: Sequence[KernelRecord]) -> list[str]:
    """One row per measured kernel, worst first (impossible ones on top), columns aligned."""
    rows = [("test [kernel]", "bound", "intensity", "device", "cache", "roofline", "util", "first touch", "memory",
             "compile", "verdict")]
    for rec in sorted(records, key=_sort_key):
        r = rec.result
        verdict: str = rec.verdict
        if rec.threshold is not None:
            verdict += f" (min {format_fraction(rec.threshold)}{' ' + rec.threshold_key if rec.threshold_key else ''})"
        elif rec.not_judged:
            verdict += f" (not judged on {r.hardware.platform})"
        base = rec.baseline
        if isinstance(base, BaselineCheck) and base.regressed:
            verdict += f" ({-base.drop:+.0%} vs baseline {base.baseline:.0%})"
        verdict += "".join(f" [{mark}]" for mark, _ in verdict_marks(rec))
        rows.append((rec.kernel, *bound_cells(r), format_seconds(r.device_time_s), cache_cell(r),
                     format_seconds(r.roofline_time_s), _util_cell(r), _other_util_cell(r), _memory_cell(rec),
                     compile_cell(r), verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(widths[i]) if i in (0, 1, 4, 10) else cell.rjust(widths[i]) for i, cell in enumerate(row))
            for row in rows]


def _footnotes(records: Sequence[KernelRecord]) -> list[str]:
    """What the table's figures are against: the hardware, live drift, first touch, contention."""
    out = []
    hardware = sorted({rec.result.hardware_context for rec in records})
    out.append(f"hardware: {'; '.join(hardware)}")
    states = [rec.result.cache.state for rec in records if rec.result.cache is not None]
    if states:
        out.append(f"cache: {states.count('cold')} kernel(s) measured cold (the last-level cache evicted before every "
                   f"run, outside the timing), {states.count('warm')} warm (back to back)"
                   + ("; cold? : cold runs were not slower than warm ones (the eviction did not take, or the kernel "
                      "does not depend on the cache)" if any(rec.result.cache is not None and rec.result.cache.took
                                                             is False for rec in records) else ""))
    unjudged = [rec for rec in records if rec.not_judged]
    if unjudged:
        out.append(f"not judged: {len(unjudged)} kernel(s) whose min= mapping names neither this hardware, "
                   f"its platform nor a 'default' (measured and reported only), e.g. {unjudged[0].not_judged}")
    drifts = [rec.result.drift for rec in records if rec.result.drift is not None]
    if drifts:
        out.append(f"live ceilings: the machine ran at {min(drifts):.0%}-{max(drifts):.0%} of its calibrated speed "
                   f"during these measurements; util is against that speed, [low-high] its 95% interval")
    if any(other_utilization(rec.result) is not None for rec in records):
        out.append("first touch: util includes the first touch of each kernel's fresh pages (page faults of new "
                   "buffers) unless first_touch='exclude'; the column gives the other figure")
    if any(rec.result.first_touch_beaten for rec in records):
        out.append(f"[faults cheaper]: {FAULTS_CHEAPER}; {FAULT_COST_MOVES}")
    against: list[str] = [rec.baseline.state for rec in records
                          if isinstance(rec.baseline, BaselineCheck) and rec.baseline.unjudged]
    if against:
        out.append(f"baseline: {against.count('too noisy')} kernel(s) too noisy to judge (a gate as wide as the "
                   f"baseline), {against.count('undecided')} undecided (a drop beyond the floor that the noise "
                   f"hides): neither passed nor failed against the baseline; each one's line in the JSON says why")
    contended = [rec.result.cpu_waiting for rec in records if rec.result.contended and rec.result.cpu_waiting is not None]
    if contended:
        low, high = f"{min(contended):.0%}", f"{max(contended):.0%}"
        out.append(f"contended: {len(contended)} kernel(s) measured while other processes held the CPUs (their threads "
                   f"waited {low if low == high else f'{low}-{high}'} of their ready time); their figures may be off "
                   f"by tens of percent, and a kernel below its threshold only with that waiting is not failed")
    return out


def summary_lines(records: Sequence[KernelRecord], unmeasured: Sequence[Unmeasured] = ()) -> list[str]:
    """One table of every measured kernel, worst first, what its figures are against, the ops of failing
    kernels, and the kernels that could not be measured with their error."""
    out = _table(records) + _footnotes(records) if records else []
    failing = [rec for rec in sorted(records, key=_sort_key) if rec.verdict in FAILING_VERDICTS and rec.result.ops]
    for rec in failing:
        out.append(f"{rec.kernel} ({rec.verdict}):")
        out += top_ops_lines(rec.result.ops, count=3, times_from=rec.result.ops_times_from)
        if rec.artifacts is not None:
            out.append(f"    trace: {rec.artifacts.trace_dir}")
    if unmeasured:
        out.append(f"could not be measured ({len(unmeasured)}):")
        out += [f"  {u.nodeid} [{u.label}]: {u.error}" for u in unmeasured]
    return out


def header_line(hardware: HardwareSpec, ceilings: str = "") -> str:
    """The hardware and its ceilings; ``ceilings``: the mode in use ("live", "calibrated", "datasheet")."""
    peaks = ", ".join(f"{k} {format_quantity(c.value, 'FLOP/s')}" for k, c in hardware.peaks.items())
    mem = hardware.memory_bandwidth
    rate = f"; transcendentals {format_quantity(hardware.transcendental.value, '/s')}" if hardware.transcendental else ""
    capacity = hardware.memory_capacity
    holds = f"; holds {format_quantity(capacity.value, 'B')}" if capacity else ""
    origins = sorted({c.origin for c in hardware.peaks.values()} | {mem.origin})
    mode = f"; ceilings: {ceilings}" if ceilings else ""
    if ceilings == "live":
        mode += " (calibrated, scaled by a reference kernel beside each run)"
    cache: Ceiling | None = hardware.cache_bandwidth
    in_cache = (f" ({format_quantity(cache.value, 'B/s')} in the {format_quantity(hardware.cache_bytes, 'B')} "
                f"last-level cache)" if cache and hardware.cache_bytes else "")
    first = f"; first touch {format_quantity(hardware.first_touch.value, 'B/s')}" if hardware.first_touch else ""
    return (f"roofline: {hardware.name} ({hardware.platform}): {peaks}; memory "
            f"{format_quantity(mem.value, 'B/s')}{in_cache}{rate}{first} [{', '.join(origins)}]{holds}{mode}")
