"""Measurement records as text: the summary table (120 columns wide by default, every column under ``-v``), its
footnotes, the header line, the top ops. Pure (the failure's block: :mod:`.failure`).

Everything here reads :class:`~pytest_roofline.records.kernel_record.KernelRecord` (a kernel just measured, one from
an xdist worker and one read from a report are the same type) and the hardware as a
:class:`~pytest_roofline.hardware.spec.HardwareSpec`.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence

from ..analysis.model import contention
from ..analysis.model.first_touch import FAULT_COST_MOVES, FAULTS_CHEAPER
from ..analysis.model.per_op import OpRow
from ..analysis.model.roofline import impossible_text
from ..analysis.program.info import MORE_THAN_SOURCE, more_than_source_text
from ..base.kinds import FAILING_VERDICTS
from ..base.units import format_fraction, format_quantity, format_seconds
from ..hardware.spec import Ceiling, HardwareSpec
from ..records.kernel_record import KernelRecord, LockWaited, Unmeasured
from ..records.series_judgement import BaselineCheck
from ..result.recorded_result import RecordedResult

__all__ = [
    "most_lost",
    "summary_lines",
    "wrap_lines",
    "header_line",
    "top_ops_lines",
    "compile_cell",
    "cache_cell",
    "bound_cells",
]


def most_lost(ops: Sequence[OpRow]) -> list[OpRow]:
    """The ops the trace timed, the one that lost the most time (measured - roofline) first."""
    return sorted((op for op in ops if op.measured_s), key=lambda op: -op.time_lost_s)


def top_ops_lines(ops: Sequence[OpRow], count: int = 5, indent: str = "    ", times_from: str = "") -> list[str]:
    """The ops that lost the most time (measured - roofline), one line each; ``times_from``: where their times
    come from, where not the timed runs."""
    timed = most_lost(ops)
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


BOUND_UNSURE = ("a custom call's work is missing from the counts: the bound shown is the counted work's, and the "
                "call's FLOPs may make it compute-bound; bound= is not judged (give flops= to the test)")
DEAREST_BRANCH = ("which branch of a conditional ran is unknown (the trace did not show): counted at its dearest, "
                  "so the utilization is an upper end (JSON 'conditionals')")
BRANCHES_RAN = ("conditionals counted by the branches the trace showed run (pytest -vv and JSON 'conditionals' say "
                "which ran how often)")


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
        marks.append(("above roofline", "a run took less than the roofline time, or the median or its 95% interval "
                      "reaches above it: a ceiling or a count is off, or a cache served it (the failure and JSON "
                      "'suspect' say which to distrust)"))
    if r.marginal:
        marks.append(("marginal", "the threshold is inside the 95% interval: within the noise"))
    if r.first_touch_beaten:
        marks.append(("faults cheaper", FAULTS_CHEAPER))
    if r.compiled_over_source is not None and r.compiled_over_source > MORE_THAN_SOURCE and r.source_flops:
        marks.append((f"{r.compiled_over_source:.1f}x source FLOPs",
                      more_than_source_text(r.source_flops * r.compiled_over_source, r.source_flops)))
    if r.bound_unsure:
        marks.append(("bound?", BOUND_UNSURE))
    if r.conditional_counted_at_dearest:
        marks.append(("dearest branch", DEAREST_BRANCH))
    elif r.conditionals:
        marks.append(("branches ran", BRANCHES_RAN))
    if r.contended and rec.verdict != "contended" and r.cpu_waiting is not None:
        marks.append(("contended", contention.waited_text(r.cpu_waiting)))
    if isinstance(rec.baseline, BaselineCheck) and rec.baseline.unjudged:
        marks.append((f"baseline {rec.baseline.state}", rec.baseline.message()))
    return marks


CACHED = " (from JAX's in-memory cache: compiled earlier in this process)"


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
    return ("-", "-") if r.no_work else (r.bound + ("?" if r.bound_unsure else ""), f"{r.intensity:.3g}")


def _verdict_cell(rec: KernelRecord, wide: bool) -> str:
    """The verdict and the threshold it was judged against (with ``wide``, the mapping's key), a baseline drop."""
    r = rec.result
    verdict: str = rec.verdict
    if rec.threshold is not None:
        key = f" {rec.threshold_key}" if rec.threshold_key and wide else ""
        verdict += f" (min {format_fraction(rec.threshold)}{key})"
    elif rec.not_judged:
        verdict += f" (not judged on {r.hardware.platform})"
    base = rec.baseline
    if isinstance(base, BaselineCheck) and base.regressed:
        verdict += f" ({-base.drop:+.0%} vs baseline {base.baseline:.0%})"
    return verdict


def _marks_cell(rec: KernelRecord) -> str:
    return " ".join(f"[{mark}]" for mark, _ in verdict_marks(rec))


def _test_cell(text: str, width: int) -> str:
    """A test's id cut in the middle to ``width``: its file's name on the left, its function and kernel on the
    right."""
    if len(text) <= width:
        return text
    left = (width - 3) // 2
    return text[:left] + "..." + text[len(text) - (width - 3 - left):]


def _table(records: Sequence[KernelRecord], wide: bool) -> list[str]:
    """One row per measured kernel, worst first (impossible ones on top), columns aligned, the verdict's marks
    after it. With ``wide`` every column; by default the test, its bound, utilization and verdict within WIDTH
    columns: the folder all tests share left out, a test's id cut in the middle only where it must be, and marks
    that do not fit on their row on the next line, under the verdict."""
    head = ("test [kernel]", "bound", "intensity", "device", "cache", "roofline", "util", "first touch", "memory",
            "compile", "verdict")
    ordered = sorted(records, key=_sort_key)
    rows = [(rec.kernel, *bound_cells(rec.result), format_seconds(rec.result.device_time_s), cache_cell(rec.result),
             format_seconds(rec.result.roofline_time_s), _util_cell(rec.result), _other_util_cell(rec.result),
             _memory_cell(rec), compile_cell(rec.result), _verdict_cell(rec, wide)) for rec in ordered]
    marks = [_marks_cell(rec) for rec in ordered]
    keep = range(len(head)) if wide else (0, 1, 6, 10)
    table = [tuple(row[i] for i in keep) for row in [head, *rows]]
    if not wide:
        folder = os.path.commonpath([os.path.dirname(row[0].split("::")[0]) for row in table[1:]])  # all share
        room = max(WIDTH - sum(max(len(row[i]) for row in table) + 2 for i in range(1, len(keep))), 24)
        table = [table[0], *((_test_cell(row[0][len(folder) + 1 if folder else 0:], room), *row[1:])
                             for row in table[1:])]
    aligned = [i for i, k in enumerate(keep) if k in {0, 1, 4, 10}]
    widths = [max(len(row[i]) for row in table) for i in range(len(keep))]
    lines = ["  ".join(cell.ljust(widths[i]) if i in aligned else cell.rjust(widths[i])
                       for i, cell in enumerate(row)).rstrip() for row in table]
    out = lines[:1]
    verdict_at = sum(widths[:-1]) + 2 * (len(keep) - 1)
    for line, mark in zip(lines[1:], marks, strict=True):
        fits = wide or not mark or len(line) + 1 + len(mark) <= WIDTH
        out += [f"{line} {mark}".rstrip()] if fits else [line, " " * min(verdict_at, WIDTH - len(mark)) + mark]
    return out


def _footnotes(records: Sequence[KernelRecord], wide: bool) -> list[str]:
    """What the table's figures are against: the hardware, live drift, first touch, contention."""
    out = []
    hardware = sorted({rec.result.hardware_context for rec in records})
    out.append(f"hardware: {'; '.join(hardware)}")
    states = [rec.result.cache.state for rec in records if rec.result.cache is not None]
    if states and wide:
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
    if wide and any(other_utilization(rec.result) is not None for rec in records):
        out.append("first touch: util includes the first touch of each kernel's fresh pages (page faults of new "
                   "buffers) unless first_touch='exclude'; the column gives the other figure")
    if any(rec.result.first_touch_beaten for rec in records):
        out.append(f"[faults cheaper]: {FAULTS_CHEAPER}; {FAULT_COST_MOVES}")
    if any(rec.result.bound_unsure for rec in records):
        out.append(f"[bound?]: {BOUND_UNSURE}")
    if any(rec.result.conditionals and not rec.result.conditional_counted_at_dearest for rec in records):
        out.append(f"[branches ran]: {BRANCHES_RAN}")
    if any(rec.result.conditional_counted_at_dearest for rec in records):
        out.append(f"[dearest branch]: {DEAREST_BRANCH}")
    against: list[str] = [rec.baseline.state for rec in records
                          if isinstance(rec.baseline, BaselineCheck) and rec.baseline.unjudged]
    if against:
        out.append(f"baseline: {against.count('too noisy')} kernel(s) too noisy to judge (a gate as wide as the "
                   f"baseline), {against.count('undecided')} undecided (a drop beyond the floor that the noise "
                   f"hides): neither passed nor failed against the baseline; each one's line in the JSON says why")
    checked = [rec.baseline for rec in records if rec.baseline is not None]
    if checked and not any(isinstance(c, BaselineCheck) for c in checked):
        out.append(f"baseline: nothing compared: no kernel of this run is in the baseline ({len(checked)} new or "
                   f"in another series; each one's line in the JSON says why)")
    contended = [
        rec.result.cpu_waiting for rec in records if rec.result.contended and rec.result.cpu_waiting is not None
    ]
    if contended:
        low, high = f"{min(contended):.0%}", f"{max(contended):.0%}"
        waited = low if low == high else f"{low}-{high}"
        out.append(f"contended: {len(contended)} kernel(s) measured while other processes held the CPUs (their threads "
                   f"waited {waited} of their ready time); their figures may be off by tens of percent (or more, where "
                   f"threads spin while they wait for each other), and none below its threshold is failed")
    return out


WIDTH = 120  # the summary's width by default


def wrap_lines(lines: Sequence[str], width: int = WIDTH) -> list[str]:
    """Each of ``lines`` wrapped to ``width`` columns, continued two spaces further in than it starts."""
    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False,
                             break_long_words=False) or [""]
    return out


def summary_lines(records: Sequence[KernelRecord], unmeasured: Sequence[Unmeasured] = (), *,
                  wide: bool = False, lock_waits: Sequence[LockWaited] = ()) -> list[str]:
    """One table of every measured kernel, worst first, and what its figures are against (with ``wide``, pytest's
    ``-v``, every column); the kernels that could not be measured with their error. A failing kernel's top ops and
    trace are in its failure, not here. No line wider than WIDTH columns by default."""
    out = _table(records, wide) + wrap_lines(_footnotes(records, wide)) if records else []
    if unmeasured:
        out.append(f"could not be measured ({len(unmeasured)}):")
        out += wrap_lines([f"  {u.nodeid} [{u.label}]: {u.error}" for u in unmeasured])
    if lock_waits:
        out += wrap_lines([lock_wait_line(lock_waits)])
    return out


def lock_wait_line(waits: Sequence[LockWaited]) -> str:
    """One line for the measurements that waited for the device lock: that time is in their tests' durations."""
    longest = max(waits, key=lambda w: w.seconds)
    held = f", held by {longest.holder}" if longest.holder else ""
    return (f"device lock: {len(waits)} measurement(s) waited {sum(w.seconds for w in waits):.1f} s in all for it "
            f"(the longest {longest.seconds:.1f} s, {longest.kernel}{held}); that wait is in those tests' durations as "
            f"pytest counts them (--durations), in no kernel's figures")


def header_line(hardware: HardwareSpec, ceilings: str = "") -> str:
    """The hardware and its ceilings; ``ceilings``: the mode in use ("live", "calibrated", "datasheet")."""
    peaks = ", ".join(f"{k} {format_quantity(c.value, 'FLOP/s')}" for k, c in hardware.peaks.items())
    mem = hardware.memory_bandwidth
    rate = (
        f"; transcendentals {format_quantity(hardware.transcendental.value, '/s')}" if hardware.transcendental else ""
    )
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
