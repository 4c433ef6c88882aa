"""Measurement records as text: the failure message, the summary table, the header line. Pure.

A record is the JSON-able dict the plugin keeps for each measured kernel (:mod:`~.records`); the same dicts
travel from xdist workers to the controller, so everything here reads dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..analysis.roofline import IMPOSSIBLE_ABOVE
from ..history.reports import record_utilization
from ..kinds import FAILING_VERDICTS
from ..units import format_fraction, format_quantity, format_seconds
from .records import Unmeasured

__all__ = ["failure_message", "summary_lines", "header_line", "top_ops_lines"]


def _ceiling_lines(r: Mapping[str, Any]) -> list[str]:
    lines = []
    for use in r["ceilings_used"]:
        c = use["ceiling"]
        unit = "B/s" if "bytes" in use["work"] else "/s" if use["work"] == "transcendentals" else "FLOP/s"
        name = {"bytes": "memory", "collective bytes": "interconnect",
                "transcendentals": "transcendental"}.get(use["work"], f"{use['key']} peak")
        note = f" [{use['note']}]" if use.get("note") else ""
        lines.append(f"    {name:<15}{format_quantity(c['value'], unit):<16}{c['origin']}: {c['source']} "
                     f"({c['date']}){note}")
    return lines


def _memory_lines(record: Mapping[str, Any]) -> list[str]:
    memory = record["result"].get("memory")
    if not memory:
        return []
    line = f"  memory        {format_quantity(memory['peak_bytes'], 'B')} peak ({memory['breakdown']})"
    limit = record.get("max_memory")
    if limit and limit.get("limit_bytes") is not None:
        line += (f" vs max_memory {format_quantity(limit['limit_bytes'], 'B')} ({limit['origin']}): "
                 f"{'fits' if limit['ok'] else 'TOO MUCH'}")
    lines = [line]
    if memory.get("device_peak_bytes") is not None:
        lines.append(f"                device peak {format_quantity(memory['device_peak_bytes'], 'B')} "
                     f"({memory['device_peak_note']})")
    return lines


def _time_lines(r: Mapping[str, Any]) -> list[str]:
    """The roofline's time and its parts, the first-touch term, the measured runs."""
    lines = []
    comms = f", interconnect {format_seconds(r['comms_time_s'])}" if r.get("comms_time_s") else ""
    trans = (f", transcendental {format_seconds(r['transcendental_time_s'])}"
             if r.get("transcendental_time_s") else "")
    touch_s = f", + first touch {format_seconds(r['first_touch_time_s'])}" if r.get("first_touch_time_s") else ""
    lines.append(f"  roofline      {format_seconds(r['roofline_time_s'])} (compute "
                 f"{format_seconds(r['compute_time_s'])}, memory {format_seconds(r['memory_time_s'])}{trans}{comms}"
                 f"{touch_s})")
    touch = r.get("first_touch")
    if touch and (touch["charged_bytes"] or touch["expected_faults"] >= 1):
        lines.append(f"  first touch   {touch['text']}")
    timer = r["timer"] + (f": {r['timer_fallback_reason']}" if r["timer_fallback_reason"] else "")
    lines.append(f"  measured      {format_seconds(r['device_time_s'])} median, min {format_seconds(r['min_s'])}, "
                 f"spread {r['spread']:.1%} (IQR/median), {r['runs']} runs ({timer}); compile "
                 f"{format_seconds(r['compile_time_s'])}")
    return lines


def _judgement_lines(record: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    """The utilization against the threshold, and what qualifies it: live drift, contention, the baseline, the
    second measurement, the bound, an impossible figure."""
    lines = []
    threshold = record["threshold"]
    versus = (f" vs threshold {format_fraction(threshold)} ({record['threshold_origin']})" if threshold is not None
              else " (no threshold)")
    model = record.get("model", "program")
    util = record_utilization(record)
    interval = r.get("utilization_interval")
    within = (f", 95% interval {interval[0]:.1%}-{interval[1]:.1%}" if interval and model == "program" else "")
    marginal = " MARGINAL: the threshold is inside the interval" if r.get("marginal") and model == "program" else ""
    lines.append(f"  utilization   {util:.1%}{' (per-op model)' if model == 'ops' else ''}{within}{versus}{marginal}")
    live = r.get("live")
    if live:
        lines.append(f"  live          the machine ran at {live['drift']:.0%} of its calibrated speed during this "
                     f"measurement ({live['reference']} beside each run); against the calibration alone "
                     f"{r['utilization_calibrated']:.1%}")
    if r.get("contended"):
        on_cpu, others = r.get("utilization_on_cpu"), r.get("others_cpu_share")
        lines.append(f"  contended     the kernel's threads waited for a CPU held by another process during "
                     f"{r['cpu_waiting']:.0%} of their ready time"
                     + (f" (other processes used {others:.0%} of the CPUs)" if others is not None else "")
                     + (f"; without that waiting {on_cpu:.1%} against the calibrated ceilings" if on_cpu else ""))
    base = record.get("baseline")
    if base:
        lines.append(f"  baseline      {base.get('message') or base.get('missing')}")
    if record.get("first_utilization") is not None:
        lines.append(f"  re-measured   first run {record['first_utilization']:.1%}, second {util:.1%}")
    if record.get("expected_bound"):
        lines.append(f"  bound         expected {record['expected_bound']}-bound, measured {r['bound']}-bound")
    if r["impossible"]:
        lines.append(f"  IMPOSSIBLE    utilization above {format_fraction(IMPOSSIBLE_ABOVE)}: suspect {r['suspect']}")
    return lines


def failure_message(record: Mapping[str, Any], reason: str) -> str:
    """Everything a person needs to act without rerunning: the figures, their sources and the verdict."""
    r = record["result"]
    hw = r["hardware"]
    lines = [f"roofline: kernel {record['label']!r} of {record['nodeid']}: {reason}",
             f"  hardware      {hw['name']} ({hw['platform']}, {r['ceilings']} ceilings, device_kind "
             f"{r['device_kind']!r})"]
    lines += _ceiling_lines(r)
    lower = f" (a lower bound: {r.get('counts_lower_bound_reason') or 'see notes'})" if r["counts_lower_bound"] else ""
    lines.append(f"  counts        {format_quantity(r['flops'], 'FLOP')} ({r['flops_source']}), "
                 f"{format_quantity(r['bytes_accessed'], 'B')} ({r['bytes_source']}), "
                 f"{format_quantity(r['transcendentals'], 'transcendentals')}{lower}")
    lines += _memory_lines(record)
    lines.append(f"  intensity     {r['intensity']:.3g} FLOP/B vs critical {r['critical_intensity']:.3g} FLOP/B "
                 f"-> {r['bound']}-bound")
    lines += _time_lines(r)
    lines += _judgement_lines(record, r)
    if r.get("ops"):
        lines.append(f"  ops model     sum of per-op roofline times {format_seconds(r['ops_roofline_time_s'])}: "
                     f"utilization {r['ops_utilization']:.1%} (threshold checked against the "
                     f"{record.get('model', 'program')} model)")
        lines += top_ops_lines(r, count=5)
    check = r.get("ops_check")
    if check and not check["ok"]:
        lines.append(f"  counts check  per-op sums differ from the compiler's: {'; '.join(check['mismatches'])}")
    for hint in r.get("hints", []):
        lines.append(f"  hint          {hint}")
    for note in r["notes"]:
        lines.append(f"  note          {note}")
    if record.get("trace_dir"):
        lines.append(f"  trace         {record['trace_dir']}")
        lines.append(f"                Perfetto: open {record['perfetto']} at https://ui.perfetto.dev ; "
                     f"TensorBoard/XProf: tensorboard --logdir {record['trace_dir']} ; HLO: {record['hlo']}")
    return "\n".join(lines)


def top_ops_lines(r: Mapping[str, Any], count: int = 5, indent: str = "    ") -> list[str]:
    """The ops that lost the most time (measured - roofline), one line each."""
    timed = [op for op in r.get("ops", []) if op.get("measured_s")]
    timed.sort(key=lambda op: -op["time_lost_s"])
    if not timed:
        return []
    out = [f"{indent[:-2]}top ops by time lost (of {len(r['ops'])} executed ops):"]
    for op in timed[:count]:
        runs = f" x{op['executions']}" if op["executions"] > 1 else ""
        operands = ", ".join(op["operand_shapes"][:3]) + (", ..." if len(op["operand_shapes"]) > 3 else "")
        kind = op["opcode"] + (f":{op['fusion_kind']}" if op.get("fusion_kind") else "")
        util = f"{op['utilization']:.1%}" if op.get("utilization") is not None else "n/a"
        out.append(f"{indent}{op['name']} ({kind}{runs}) {op['shape']} <- ({operands}) [{op['dtype']}]: "
                   f"{format_quantity(op['flops'], 'FLOP')}, {format_quantity(op['bytes'], 'B')}, {op['bound']}-bound; "
                   f"measured {format_seconds(op['measured_s'])} vs roofline {format_seconds(op['roofline_time_s'])} "
                   f"({util}), lost {format_seconds(op['time_lost_s'])}")
    return out


def _util_cell(r: Mapping[str, Any]) -> str:
    interval = r.get("utilization_interval")
    if not interval:
        return f"{r['utilization']:.1%}"
    return f"{r['utilization']:.1%} [{interval[0]:.0%}-{interval[1]:.0%}]"


def _other_util_cell(r: Mapping[str, Any]) -> str:
    """The utilization the threshold does not use: without first touch where it is charged, with it where not."""
    touch = r.get("first_touch")
    if not touch or not touch.get("charged_bytes"):
        return "-"
    if r.get("first_touch_charged"):
        return f"{r['utilization_without_first_touch']:.1%} w/o"
    return f"{r['utilization_with_first_touch']:.1%} with"


def _memory_cell(rec: Mapping[str, Any]) -> str:
    memory = rec["result"].get("memory")
    if not memory:
        return "n/a"
    limit = rec.get("max_memory")
    text = format_quantity(memory["peak_bytes"], "B")
    if limit and limit.get("limit_bytes") is not None:
        text += f" / {format_quantity(limit['limit_bytes'], 'B')}"
    return text


def _sort_key(record: Mapping[str, Any]) -> tuple[int, float]:
    r = record["result"]
    return (0 if r["impossible"] else 1, r["utilization"])


def verdict_marks(rec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What qualifies a record's verdict: (mark, what it means), for the summary and the HTML report."""
    r = rec["result"]
    marks = []
    if rec.get("warn_only") and rec["verdict"] in FAILING_VERDICTS:
        marks.append(("warn-only", "--roofline-warn-only: reported as a warning, not a failure"))
    if r.get("impossible") and rec["verdict"] != "impossible":
        marks.append(("impossible", f"utilization above {format_fraction(IMPOSSIBLE_ABOVE)}: a peak or a count is "
                      f"wrong"))
    if r.get("marginal"):
        marks.append(("marginal", "the threshold is inside the 95% interval: within the noise"))
    if r.get("first_touch_beaten"):
        marks.append(("faults cheaper", "above 105% only with the first-touch term: the page faults cost less "
                      "than calibrated"))
    if r.get("contended") and rec["verdict"] != "contended":
        marks.append(("contended", f"the kernel's threads waited for a CPU held by another process during "
                      f"{r['cpu_waiting']:.0%} of their ready time"))
    return marks


def _table(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """One row per measured kernel, worst first (impossible ones on top), columns aligned."""
    rows = [("test [kernel]", "bound", "intensity", "device", "roofline", "util", "first touch", "memory", "verdict")]
    for rec in sorted(records, key=_sort_key):
        r = rec["result"]
        verdict = rec["verdict"]
        if rec["threshold"] is not None:
            verdict += f" (min {format_fraction(rec['threshold'])})"
        base = rec.get("baseline") or {}
        if base.get("regressed"):
            verdict += f" ({-base['drop']:+.0%} vs baseline {base['baseline']:.0%})"
        verdict += "".join(f" [{mark}]" for mark, _ in verdict_marks(rec))
        rows.append((f"{rec['nodeid']} [{rec['label']}]", r["bound"], f"{r['intensity']:.3g}",
                     format_seconds(r["device_time_s"]), format_seconds(r["roofline_time_s"]),
                     _util_cell(r), _other_util_cell(r), _memory_cell(rec), verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(widths[i]) if i in (0, 1, 8) else cell.rjust(widths[i]) for i, cell in enumerate(row))
            for row in rows]


def _footnotes(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the table's figures are against: the hardware, live drift, first touch, contention."""
    out = []
    hardware = sorted({f"{rec['result']['hardware']['name']} [{rec['result']['ceilings']}]" for rec in records})
    out.append(f"hardware: {'; '.join(hardware)}")
    drifts = [rec["result"]["drift"] for rec in records if rec["result"].get("drift") is not None]
    if drifts:
        out.append(f"live ceilings: the machine ran at {min(drifts):.0%}-{max(drifts):.0%} of its calibrated speed "
                   f"during these measurements; util is against that speed, [low-high] its 95% interval")
    if any(_other_util_cell(rec["result"]) != "-" for rec in records):
        out.append("first touch: util includes the first touch of each kernel's fresh pages (page faults of new "
                   "buffers) unless first_touch='exclude'; the column gives the other figure")
    if any(rec["result"].get("first_touch_beaten") for rec in records):
        out.append("[faults cheaper]: above 105% only with the first-touch term; the page faults cost less than "
                   "calibrated (their cost moves with the host; --roofline-calibrate re-measures it)")
    contended = [rec["result"]["cpu_waiting"] for rec in records if rec["result"].get("contended")]
    if contended:
        low, high = f"{min(contended):.0%}", f"{max(contended):.0%}"
        out.append(f"contended: {len(contended)} kernel(s) measured while other processes held the CPUs (their threads "
                   f"waited {low if low == high else f'{low}-{high}'} of their ready time); their figures may be off "
                   f"by tens of percent, and a kernel below its threshold only with that waiting is not failed")
    return out


def summary_lines(records: Sequence[Mapping[str, Any]], unmeasured: Sequence[Unmeasured] = ()) -> list[str]:
    """One table of every measured kernel, worst first, what its figures are against, the ops of failing
    kernels, and the kernels that could not be measured with their error."""
    out = _table(records) + _footnotes(records) if records else []
    failing = [rec for rec in sorted(records, key=_sort_key)
               if rec["verdict"] in FAILING_VERDICTS and rec["result"].get("ops")]
    for rec in failing:
        out.append(f"{rec['nodeid']} [{rec['label']}] ({rec['verdict']}):")
        out += top_ops_lines(rec["result"], count=3)
        if rec.get("trace_dir"):
            out.append(f"    trace: {rec['trace_dir']}")
    if unmeasured:
        out.append(f"could not be measured ({len(unmeasured)}):")
        out += [f"  {u.nodeid} [{u.label}]: {u.error}" for u in unmeasured]
    return out


def header_line(hardware: Mapping[str, Any], ceilings: str = "") -> str:
    """The hardware and its ceilings; ``ceilings``: the mode in use ("live", "calibrated", "datasheet")."""
    peaks = ", ".join(f"{k} {format_quantity(v['value'], 'FLOP/s')}" for k, v in hardware["peaks_flops_per_s"].items())
    mem = hardware["memory_bandwidth_bytes_per_s"]
    trans = hardware.get("transcendentals_per_s")
    rate = f"; transcendentals {format_quantity(trans['value'], '/s')}" if trans else ""
    capacity = hardware.get("memory_capacity_bytes")
    holds = f"; holds {format_quantity(capacity['value'], 'B')}" if capacity else ""
    origins = sorted({v["origin"] for v in hardware["peaks_flops_per_s"].values()} | {mem["origin"]})
    mode = f"; ceilings: {ceilings}" if ceilings else ""
    if ceilings == "live":
        mode += " (calibrated, scaled by a reference kernel beside each run)"
    cache = hardware.get("cache_bandwidth_bytes_per_s")
    in_cache = (f" ({format_quantity(cache['value'], 'B/s')} in the {format_quantity(hardware['cache_bytes'], 'B')} "
                f"last-level cache)" if cache and hardware.get("cache_bytes") else "")
    touch = hardware.get("first_touch_bytes_per_s")
    first = f"; first touch {format_quantity(touch['value'], 'B/s')}" if touch else ""
    return (f"roofline: {hardware['name']} ({hardware['platform']}): {peaks}; memory "
            f"{format_quantity(mem['value'], 'B/s')}{in_cache}{rate}{first} [{', '.join(origins)}]{holds}{mode}")
