"""``pytest-roofline analyze``: the roofline of the programs in a profile someone recorded, or the counts of an
HLO dump. Reads files only; the hardware comes from ``--hardware`` or from what the profile says."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..analysis.model.recorded_profile import ProgramSummary, counts_summary, hlo_key, summarize_program
from ..analysis.program.hlo_reader import HloModule, HloParseError, parse_hlo
from ..analysis.runs.trace_events import ProgramKey, TraceError, flatten, platform_of, programs
from ..analysis.runs.xspace import XSpace, XSpaceError, hlo_module_protos, read_xspace
from ..base.files import json_text, read_text
from ..base.units import format_quantity, format_seconds
from ..hardware.spec import HardwareError, HardwareSpec, UnknownDeviceError
from ..hardware.table import find_spec, find_spec_for_profile, load_shipped_table, merge_overrides
from ..report.text import top_ops_lines
from .errors import CliError

__all__ = ["analyze_profile", "analyze_hlo"]


def _profile_file(arg: str) -> Path:
    path = Path(arg)
    if path.is_dir():
        found = sorted(path.rglob("*.xplane.pb"))
        if not found:
            raise CliError(f"{path}: no .xplane.pb file in this directory (jax.profiler.trace writes "
                           f"plugins/profile/<run>/<host>.xplane.pb)")
        if len(found) > 1:
            raise CliError(f"{path}: holds {len(found)} profiles ({', '.join(str(p) for p in found[:4])}"
                           f"{', ...' if len(found) > 4 else ''}): name one")
        return found[0]
    if not path.exists():
        raise CliError(f"{path}: no such file or directory")
    return path


def _read_space(path: Path) -> XSpace:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CliError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        return read_xspace(data, str(path))
    except XSpaceError as exc:
        raise CliError(str(exc)) from None


def _table(hardware_file: str | None) -> dict[str, HardwareSpec]:
    try:
        return merge_overrides(load_shipped_table(), hardware_file)
    except HardwareError as exc:
        raise CliError(str(exc)) from None


def _hardware(space: XSpace, platform: str, name: str | None,
              hardware_file: str | None) -> tuple[HardwareSpec | None, str]:
    table = _table(hardware_file)
    if name:
        try:
            spec = find_spec(table, platform, "", name)
        except UnknownDeviceError as exc:
            raise CliError(str(exc)) from None
        return spec, f"{spec.name} (--hardware)"
    if platform == "cpu":
        return None, ("unknown: a CPU profile names no table entry (CPU ceilings are calibrated where tests run); "
                      "pass --hardware NAME for utilization")
    plane = next((p for p in space.planes if p.name.startswith(f"/device:{platform.upper()}:") and p.stats), None)
    try:
        spec, how = find_spec_for_profile(table, platform, plane.stats if plane else {})
    except UnknownDeviceError as exc:
        return None, f"unknown ({str(exc).splitlines()[0]}): no utilization"
    return spec, f"{spec.name}, datasheet figures (found from {how})"


def _modules(space: XSpace) -> tuple[dict[str, HloModule], dict[str, str]]:
    """The embedded HLO of each program, parsed, and the reason for each one that could not be read."""
    from ..measurement.profiler import HloProtoError, hlo_text

    modules: dict[str, HloModule] = {}
    errors: dict[str, str] = {}
    for name, proto in hlo_module_protos(space).items():
        try:
            modules[name] = parse_hlo(hlo_text(proto, name))
        except (HloProtoError, HloParseError) as exc:
            errors[name] = str(exc).splitlines()[0]
    return modules, errors


def _wanted(keys: list[ProgramKey], program: str, path: Path) -> list[ProgramKey]:
    module, _, pid = program.partition(":")
    if pid and not pid.isdigit():
        raise CliError(f"--program {program!r}: the program id after ':' must be a number")
    hits = [k for k in keys if k.module == module and (not pid or k.program_id == int(pid))]
    if not hits:
        raise CliError(f"{path}: no program {program!r} in this profile (programs: "
                       f"{', '.join(str(k) for k in keys)})")
    if len(hits) > 1:
        raise CliError(f"{path}: {len(hits)} programs are named {module!r} (program ids "
                       f"{', '.join(str(k.program_id) for k in hits)}): name one as {module}:<program_id>")
    return hits


def analyze_profile(arg: str, program: str | None, hardware: str | None, hardware_file: str | None,
                    as_json: bool, top: int = 10) -> str:
    path = _profile_file(arg)
    space = _read_space(path)
    events = flatten(space)
    platform = platform_of(events)
    try:
        keys = programs(events, platform)
    except TraceError as exc:
        raise CliError(f"{path}: {exc}") from None
    if not keys:
        raise CliError(f"{path}: no XLA program events in this profile (was the program run through XLA, "
                       f"and inside the profiled region?)")
    if program:
        keys = _wanted(keys, program, path)
    spec, hardware_line = _hardware(space, platform, hardware, hardware_file)
    modules, errors = _modules(space)
    summaries: list[ProgramSummary | tuple[ProgramKey, str]] = []
    for key in keys:
        try:
            summary = summarize_program(events, platform, key, modules.get(hlo_key(key)), spec)
        except TraceError as exc:
            if program:
                raise CliError(f"{path}: {key}: {exc}") from None
            summaries.append((key, str(exc)))
            continue
        if hlo_key(key) in errors:
            summary = replace(summary, notes=summary.notes + (errors[hlo_key(key)],))
        summaries.append(summary)
    if as_json:
        return json_text({"profile": str(path), "platform": platform, "hardware": hardware_line,
                          "programs": [s.to_dict() if isinstance(s, ProgramSummary)
                                       else {"module": s[0].module, "program_id": s[0].program_id, "error": s[1]}
                                       for s in summaries]}, indent=1)
    head = [f"profile   {path} ({platform}, {len(keys)} program{'s' if len(keys) != 1 else ''})",
            f"hardware  {hardware_line}"]
    if program:
        only = summaries[0]
        assert isinstance(only, ProgramSummary)
        return "\n".join(head + _program_lines(only, top))
    return "\n".join(head + _listing(summaries))


def _cell_util(s: ProgramSummary) -> str:
    return f"{s.utilization:.1%}" if s.utilization is not None else "-"


def _listing(summaries: list[ProgramSummary | tuple[ProgramKey, str]]) -> list[str]:
    rows = [("program", "devices", "runs", "median", "min", "FLOPs", "bytes", "bound", "roofline", "utilization")]
    failed = []
    for s in summaries:
        if not isinstance(s, ProgramSummary):
            failed.append(f"  {s[0]}: cannot be timed: {s[1]}")
            continue
        c = s.counts
        rows.append((s.name, str(s.devices), str(len(s.per_run_s)), format_seconds(s.median_s or 0.0),
                     format_seconds(min(s.per_run_s)), format_quantity(c.flops, "FLOP") if c else "-",
                     format_quantity(c.bytes_accessed, "B") if c else "-", s.bound or "-",
                     format_seconds(s.roofline_time_s) if s.roofline_time_s is not None else "-", _cell_util(s)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    notes = [f"  {s.name}: {n}" for s in summaries if isinstance(s, ProgramSummary) for n in s.notes]
    return lines + (["notes:"] + notes if notes else []) + (["not timed:"] + failed if failed else [])


def _program_lines(s: ProgramSummary, top: int) -> list[str]:
    c = s.counts
    lines = [f"program   {s.name}: {s.devices} device{'s' if s.devices != 1 else ''}, {len(s.per_run_s)} runs, "
             f"median {format_seconds(s.median_s or 0.0)} (min {format_seconds(min(s.per_run_s))}) on the slowest "
             f"device; runs told apart by {s.method}"]
    if c is not None:
        matrix = ", ".join(f"{k} matrix {format_quantity(v, 'FLOP')}" for k, v in sorted(c.matrix_flops.items()))
        lines.append(f"counts    {format_quantity(c.flops, 'FLOP')}{f' ({matrix})' if matrix else ''}, "
                     f"{format_quantity(c.bytes_accessed, 'B')}, "
                     f"{format_quantity(c.transcendentals, 'transcendentals')} (from the embedded HLO)")
    if s.roofline_time_s is not None:
        lines.append(f"roofline  {format_seconds(s.roofline_time_s)} ({s.bound}-bound) -> utilization "
                     f"{_cell_util(s)} of the median run")
        lines += top_ops_lines(s.ops, count=top, indent="    ")
    else:
        lines += _ops_counts_lines(s, top)
    lines += [f"note      {n}" for n in s.notes]
    return lines


def _ops_counts_lines(s: ProgramSummary, top: int) -> list[str]:
    """Without hardware: the ops with the most measured time (or the most bytes), counts only."""
    ops = sorted(s.ops, key=lambda r: (-(r.measured_s or 0.0), -r.bytes))
    if not ops:
        return []
    out = [f"  ops (of {len(ops)} executed), counts and measured time, no ceilings:"]
    for r in ops[:top]:
        measured = format_seconds(r.measured_s) if r.measured_s else "not in the trace"
        out.append(f"    {r.name} ({r.opcode}) {r.shape} [{r.dtype}]: {format_quantity(r.flops, 'FLOP')}, "
                   f"{format_quantity(r.bytes, 'B')}; measured {measured}")
    return out


def analyze_hlo(arg: str, hardware: str | None, hardware_file: str | None, as_json: bool, top: int = 10) -> str:
    path = Path(arg)
    try:
        text = read_text(path)
    except (OSError, ValueError) as exc:
        raise CliError(f"{path}: cannot read it as HLO text: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        module = parse_hlo(text)
    except HloParseError as exc:
        raise CliError(f"{path}: not optimized HLO text: {str(exc).splitlines()[0]}") from None
    spec = None
    if hardware:
        try:
            spec = find_spec(_table(hardware_file), "", "", hardware)
        except UnknownDeviceError as exc:
            raise CliError(str(exc)) from None
    summary = counts_summary(module, spec)
    if as_json:
        return json_text({"hlo": str(path), "hardware": spec.name if spec else None,
                          "programs": [summary.to_dict()]}, indent=1)
    c = summary.counts
    assert c is not None
    matrix = ", ".join(f"{k} matrix {format_quantity(v, 'FLOP')}" for k, v in sorted(c.matrix_flops.items()))
    lines = [f"hlo       {path} (module {module.name})",
             f"counts    {format_quantity(c.flops, 'FLOP')}{f' ({matrix})' if matrix else ''}, "
             f"{format_quantity(c.bytes_accessed, 'B')}, {format_quantity(c.transcendentals, 'transcendentals')}"]
    if summary.roofline_time_s is not None:
        on = spec.name if spec else ""
        lines.append(f"roofline  {format_seconds(summary.roofline_time_s)} ({summary.bound}-bound) on {on}")
    ops = sorted(summary.ops, key=lambda r: -(r.roofline_time_s if spec else r.bytes + r.flops))
    lines.append(f"  ops (of {len(ops)} executed):")
    for r in ops[:top]:
        roof = f"; roofline {format_seconds(r.roofline_time_s)} ({r.bound}-bound)" if spec else ""
        lines.append(f"    {r.name} ({r.opcode}{' x' + str(r.executions) if r.executions > 1 else ''}) {r.shape} "
                     f"[{r.dtype}]: {format_quantity(r.flops, 'FLOP')}, {format_quantity(r.bytes, 'B')}{roof}")
    lines += [f"note      {n}" for n in summary.notes]
    return "\n".join(lines)
