"""Reading a profiler trace (an XSpace, as ``jax.profiler.ProfileData`` or :mod:`.xspace`) into per-run
device times of one program.

Pure and duck-typed: it reads ``.planes[].name / .lines[].name / .events[]`` with ``name``, ``start_ns``,
``duration_ns`` and ``stats`` (and ``display_name`` where present), so a constructed trace (tests) goes
through the same code as a real one.

A program is ``(module, program_id)``: the module name (``jit_f``) is shared by every executable compiled from
a function of that name, the program id tells them apart (a stat of GPU/CPU op events; on TPU the number in
the "XLA Modules" event name, ``jit_f(<id>)``, and a stat of the ops).

Where the events of one program are found, and how its runs are told apart (checked on the real profiles in
``tests/data``):

* CPU: plane ``/host:CPU``; XLA's worker threads carry one event per HLO op with stats ``hlo_op``,
  ``hlo_module``, ``program_id`` and ``run_id`` (unique per run in one process). An async op is a producer
  event (stat ``_p``) and an ``end: <op>`` consumer event (stat ``_c``), which belongs to the same run.
* GPU: planes ``/device:GPU:N``, one line per stream, kernel and memcpy events with ``hlo_op``,
  ``hlo_module``, ``program_id`` and ``correlation_id`` stats, no ``run_id``. Each is tied to the host API
  call that launched it (same ``correlation_id`` on a ``/host:`` plane), and the launch to the host window it
  falls in: our own annotation around each timed run (``launch_marker``) where the trace has it, else the
  ``GpuExecutable::ExecuteThunks`` event of the module (one per run and device). With command buffers (CUDA
  graphs) the kernels of a run are launched by one graph launch and may carry no ``hlo_op``: the per-op
  times are then missing, which :attr:`RunTimes.notes` says.
* TPU: planes ``/device:TPU:N`` with an "XLA Modules" line (one event per run and chip; ``run_id`` counts
  per chip, so runs are matched across chips by their order) and "XLA Ops" lines (one event per op, with the
  program id from the event's metadata). A chip's run lasts its module event: the time the caller waits,
  including waiting for the other chips.

A multi-device program is timed on each device separately; a run's time is that of its slowest device (the
rule the per-op times use too). A GPU or CPU run on one device lasts from its first op's start to its last
op's end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TraceEvent", "TraceError", "RunTimes", "ProgramKey", "flatten", "run_times", "programs",
           "device_plane_prefix", "platform_of", "KERNEL_RUN_MARKER", "REFERENCE_RUN_MARKER",
           "COMMAND_BUFFER_REMEDY"]

SKIPPED_PREFIXES = ("ThreadpoolListener::",)
HOST_LAUNCH_MARKERS = ("PjitFunction(", "ExecuteHelperOnSingleDevice", "LoadedExecutable::Execute")
GPU_EXECUTE_WINDOW = "GpuExecutable::ExecuteThunks"
KERNEL_RUN_MARKER = "pytest_roofline kernel run"
REFERENCE_RUN_MARKER = "pytest_roofline reference run"
COMMAND_BUFFER_REMEDY = "XLA_FLAGS=--xla_gpu_enable_command_buffer="
_GRAPH_LAUNCH = re.compile(r"(cu|hip)GraphLaunch")
_HLO_TEXT_NAME = re.compile(r"^%?([\w.\-]+) = ")


class TraceError(Exception):
    """The trace does not hold what is needed to time this program; the message says what is missing."""


@dataclass(frozen=True)
class TraceEvent:
    plane: str
    line: str
    name: str
    start_ns: float
    end_ns: float
    stats: Mapping[str, Any]

    @property
    def module(self) -> str | None:
        value = self.stats.get("hlo_module")
        return str(value) if value is not None else None

    @property
    def program_id(self) -> int | None:
        return _as_int(self.stats.get("program_id"))


@dataclass(frozen=True, order=True)
class ProgramKey:
    module: str
    program_id: int | None = None

    def __str__(self) -> str:
        return self.module if self.program_id is None else f"{self.module}:{self.program_id}"


@dataclass(frozen=True)
class RunTimes:
    per_run_s: tuple[float, ...]  # per run, in time order: its slowest device's time
    method: str  # how the runs were told apart, e.g. "run_id stat on /host:CPU op events"
    op_events: tuple[TraceEvent, ...]  # every op event of this program, consumers included
    run_of_event: Mapping[int, int]  # index in op_events -> run number (0-based, in time order)
    per_device_s: Mapping[str, tuple[float, ...]] = field(default_factory=dict)  # device -> per run
    program_id: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def devices(self) -> int:
        return max(len(self.per_device_s), 1)


def device_plane_prefix(platform: str) -> str:
    return {"cpu": "/host:CPU", "gpu": "/device:GPU:", "tpu": "/device:TPU:"}.get(platform, f"/device:{platform.upper()}:")


def _as_int(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _stats(event: Any) -> dict[str, Any]:
    raw = getattr(event, "stats", ())
    if isinstance(raw, Mapping):
        return dict(raw)
    return {k: v for k, v in raw}


def flatten(profile: Any) -> list[TraceEvent]:
    """All events of a ``ProfileData``-like object as :class:`TraceEvent`.

    A TPU "XLA Ops" event is named by its whole HLO instruction text; its op name (``hlo_op``) is the
    metadata's display name, or the name before `` = `` in that text."""
    out: list[TraceEvent] = []
    for plane in profile.planes:
        for line in plane.lines:
            for ev in line.events:
                if ev.name.startswith(SKIPPED_PREFIXES):
                    continue  # thread-pool bookkeeping: half the events of a CPU trace, never needed
                start = float(ev.start_ns)
                stats = _stats(ev)
                if "hlo_op" not in stats and line.name == "XLA Ops":
                    short = getattr(ev, "display_name", "") or ""
                    if not short:
                        m = _HLO_TEXT_NAME.match(ev.name)
                        short = m.group(1) if m else ""
                    if short:
                        stats["hlo_op"] = short
                out.append(TraceEvent(plane.name, line.name, ev.name, start,
                                      start + float(ev.duration_ns), stats))
    return out


def platform_of(events: Iterable[TraceEvent]) -> str:
    """The accelerator a trace was recorded on: "tpu", "gpu" (device planes with events) or "cpu"."""
    planes = {e.plane for e in events}
    for platform in ("tpu", "gpu"):
        if any(p.startswith(device_plane_prefix(platform)) for p in planes):
            return platform
    return "cpu"


def _module_name_of(event_name: str) -> str:
    # "XLA Modules" events are named like "jit_f(1234)".
    return event_name.split("(", 1)[0].strip()


def _module_event_id(event: TraceEvent) -> int | None:
    if event.program_id is not None:
        return event.program_id
    m = re.search(r"\((\d+)\)\s*$", event.name)
    return int(m.group(1)) if m else None


def _device_events(events: list[TraceEvent], platform: str) -> list[TraceEvent]:
    prefix = device_plane_prefix(platform)
    planes = {e.plane for e in events if e.plane.startswith(prefix)}
    if not planes:
        seen = sorted({e.plane for e in events})
        raise TraceError(f"no {prefix}* plane in the trace (planes: {', '.join(seen) or 'none'})")
    return [e for e in events if e.plane in planes]


def programs(events: Iterable[TraceEvent], platform: str | None = None) -> list[ProgramKey]:
    """Every program with device events in the trace, as ``(module, program_id)``, in order of first run."""
    events = list(events)
    platform = platform or platform_of(events)
    first: dict[ProgramKey, float] = {}
    for e in _device_events(events, platform):
        if e.line == "XLA Modules":
            key = ProgramKey(_module_name_of(e.name), _module_event_id(e))
        elif e.module is not None and (platform != "cpu" or "run_id" in e.stats or "hlo_op" in e.stats):
            key = ProgramKey(e.module, e.program_id)
        else:
            continue
        first[key] = min(first.get(key, e.start_ns), e.start_ns)
    return sorted(first, key=lambda k: (first[k], k.module, k.program_id or 0))


def _windows(events: list[TraceEvent], marker: str) -> list[tuple[float, float]]:
    """Host windows named ``marker``, nested ones counted once, in time order."""
    spans = sorted((e.start_ns, e.end_ns) for e in events if e.plane.startswith("/host:") and e.name == marker)
    out: list[tuple[float, float]] = []
    for start, end in spans:
        if not out or start >= out[-1][1]:
            out.append((start, end))
    return out


def _containing(windows: Sequence[tuple[float, float]], t: float) -> int | None:
    for i, (lo, hi) in enumerate(windows):
        if lo <= t < hi:
            return i
    return None


def _device_of(e: TraceEvent) -> str:
    if e.plane.startswith("/host:") and "device_ordinal" in e.stats:
        return f"{e.plane}#{e.stats['device_ordinal']}"
    return e.plane


def run_times(events: Iterable[TraceEvent], module_name: str, platform: str,
              expected_runs: int | None = None, launch_marker: str | None = None,
              program_id: int | None = None) -> RunTimes:
    """Per-run device time of the program ``module_name`` (the HloModule name, e.g. ``jit_f``), and of one
    executable of that name when ``program_id`` is given. ``launch_marker``: the name of the host event the
    caller put around each run: only the device work launched inside those windows is this program's."""
    events = list(events)
    on_device = _device_events(events, platform)
    prefix = device_plane_prefix(platform)

    module_events = [e for e in on_device if e.line == "XLA Modules" and _module_name_of(e.name) == module_name]
    ops = [e for e in on_device if e.module == module_name and e.line != "XLA Modules"]
    module_ids = {_module_event_id(e) for e in module_events}
    if not ops and module_events:
        # TPU: "XLA Ops" events carry no module stat; their program id (from metadata) or window tells.
        windows_by_plane: dict[str, list[tuple[float, float]]] = {}
        for w in module_events:
            windows_by_plane.setdefault(w.plane, []).append((w.start_ns, w.end_ns))
        ops = [e for e in on_device if e.line == "XLA Ops" and (
            e.program_id in module_ids if e.program_id is not None
            else _containing(windows_by_plane.get(e.plane, []), e.start_ns) is not None)]
    if not ops and not module_events:
        seen = sorted({str(k) for k in programs(events, platform)})
        raise TraceError(f"no events of program {module_name!r} on {prefix}* "
                         f"(programs seen: {', '.join(seen) or 'none'})")
    if program_id is not None:
        all_ids = sorted({i for i in ({e.program_id for e in ops} | module_ids) if i is not None})
        module_events = [e for e in module_events if _module_event_id(e) == program_id]
        kept: dict[str, list[tuple[float, float]]] = {}
        for w in module_events:
            kept.setdefault(w.plane, []).append((w.start_ns, w.end_ns))
        ops = [e for e in ops if e.program_id == program_id or (
            e.program_id is None and _containing(kept.get(e.plane, []), e.start_ns) is not None)]
        if not ops and not module_events:
            ids = all_ids
            raise TraceError(f"no events of program {module_name}:{program_id} on {prefix}* "
                             f"(program ids of {module_name}: {', '.join(map(str, ids)) or 'none'})")

    launch_of = _launch_times(events, ops) if platform == "gpu" else {}
    graph_launched = any(_GRAPH_LAUNCH.search(name) for _, name in launch_of.values())

    def launched(e: TraceEvent) -> float:
        return launch_of[id(e)][0] if id(e) in launch_of else e.start_ns

    marker_windows = _windows(events, launch_marker) if launch_marker else []
    if marker_windows:
        module_events = [e for e in module_events if _containing(marker_windows, e.start_ns) is not None]
        ops = [e for e in ops if _containing(marker_windows, launched(e)) is not None]
    ids = sorted({i for i in [e.program_id for e in ops] + [_module_event_id(e) for e in module_events]
                  if i is not None})
    if program_id is None and len(ids) > 1:
        raise TraceError(f"{len(ids)} different programs named {module_name!r} ran "
                         f"(program ids {', '.join(map(str, ids))}): name one as {module_name}:<program_id>")
    pid = program_id if program_id is not None else (ids[0] if ids else None)

    # Async consumers ("end: op") belong to the run of their producer.
    producers = {e.stats["_p"] for e in ops if "_p" in e.stats}
    consumers = [e for e in on_device if "_c" in e.stats and e.stats["_c"] in producers and e.name.startswith("end: ")]
    producer_index = {e.stats["_p"]: i for i, e in enumerate(ops) if "_p" in e.stats}
    ops_all = ops + consumers

    # (device, run key) of every op; the run keys of each device are put in time order below.
    assignment: dict[int, tuple[str, Any]] = {}
    by_first_start = False  # run keys are ordered by time already, except run_id values
    module_spans: dict[tuple[str, Any], float] | None = None
    # GPU: one host window per run and device in which XLA launches the program's kernels.
    thunks = sorted((e.start_ns, e.end_ns) for e in events if e.plane.startswith("/host:")
                    and e.name == GPU_EXECUTE_WINDOW and str(e.stats.get("module_name", "")) == module_name
                    ) if launch_of else []
    if module_events:
        per_plane: dict[str, list[TraceEvent]] = {}
        for w in sorted(module_events, key=lambda w: w.start_ns):
            per_plane.setdefault(w.plane, []).append(w)
        module_spans = {}
        for plane, ws in per_plane.items():
            for k, w in enumerate(ws):
                module_spans[(plane, k)] = w.end_ns - w.start_ns
        for i, e in enumerate(ops):
            ws = per_plane.get(e.plane, [])
            slot = _containing([(w.start_ns, w.end_ns) for w in ws], e.start_ns)
            if slot is not None:
                assignment[i] = (e.plane, slot)
        method = "XLA Modules events per device (the k-th run of each device is run k)"
    elif ops and all("run_id" in e.stats for e in ops):
        for i, e in enumerate(ops):
            assignment[i] = (_device_of(e), e.stats["run_id"])
        by_first_start = True
        method = f"run_id stat on {prefix}* op events"
    elif marker_windows:
        for i, e in enumerate(ops):
            assignment[i] = (_device_of(e), _containing(marker_windows, launched(e)))
        method = f"host annotation {launch_marker!r}" + (" and kernel launches (correlation_id)"
                                                         if launch_of else "")
    elif thunks:
        for i, e in enumerate(ops):
            slot = _containing(thunks, launched(e))
            if slot is not None:
                assignment[i] = (_device_of(e), slot)
        method = f"kernel launches (correlation_id) in host {GPU_EXECUTE_WINDOW!r} windows"
    else:
        launches = _host_launches(events, expected_runs)
        if launches is None:
            raise TraceError(f"program {module_name!r} has op events but nothing tells its runs apart "
                             f"(no run_id stat, no 'XLA Modules' line, no kernel launches, no host launch events)")
        marker, starts = launches
        windows = [(s, starts[n + 1] if n + 1 < len(starts) else float("inf")) for n, s in enumerate(starts)]
        for i, e in enumerate(ops):
            slot = _containing(windows, e.start_ns)
            if slot is not None:
                assignment[i] = (_device_of(e), slot)
        method = f"host launch events {marker!r}"
    for j, ev in enumerate(consumers, start=len(ops)):
        owner = producer_index.get(ev.stats["_c"])
        if owner is not None and owner in assignment:
            assignment[j] = assignment[owner]
    if marker_windows and not method.startswith("host annotation"):
        method += f", inside host annotations {launch_marker!r}"

    # Per device: its runs in time order, each run's span (or its module event).
    spans: dict[str, dict[Any, list[float]]] = {}
    for i, (device, key) in assignment.items():
        ev = ops_all[i]
        lo_hi = spans.setdefault(device, {}).setdefault(key, [ev.start_ns, ev.end_ns])
        lo_hi[0] = min(lo_hi[0], ev.start_ns)
        lo_hi[1] = max(lo_hi[1], ev.end_ns)
    if module_spans is not None:
        for device, key in module_spans:  # a chip with no op events still has its module event
            spans.setdefault(device, {}).setdefault(key, [0.0, 0.0])
    per_device: dict[str, tuple[float, ...]] = {}
    order_of: dict[str, dict[Any, int]] = {}
    for device, runs in sorted(spans.items()):
        keys = sorted(runs, key=lambda k: runs[k][0]) if by_first_start else sorted(runs)
        order_of[device] = {k: n for n, k in enumerate(keys)}
        per_device[device] = tuple(
            (module_spans[(device, k)] if module_spans is not None and (device, k) in module_spans
             else runs[k][1] - runs[k][0]) / 1e9
            for k in keys)
    if not per_device:
        raise TraceError(f"no run of {module_name!r} found in the trace ({method})")
    counts = {d: len(t) for d, t in per_device.items()}
    if len(set(counts.values())) > 1:
        raise TraceError(f"the devices of {module_name!r} ran different numbers of runs "
                         f"({', '.join(f'{d}: {n}' for d, n in sorted(counts.items()))}; {method})")
    n_runs = next(iter(counts.values()))
    per_run = tuple(max(t[k] for t in per_device.values()) for k in range(n_runs))
    run_of_event = {i: order_of[device][key] for i, (device, key) in assignment.items()}
    notes: list[str] = []
    if platform == "gpu" and ops and (graph_launched or not any("hlo_op" in e.stats for e in ops)):
        notes.append(f"per-op kernel times are hidden: XLA ran this program's kernels as command buffers "
                     f"(CUDA graphs); the program's time is kept. To see each op, run with {COMMAND_BUFFER_REMEDY}")
    if len(per_device) > 1:
        method += f"; {len(per_device)} devices timed separately, the slowest per run"
    result = RunTimes(per_run, method, tuple(ops_all), run_of_event, per_device, pid, tuple(notes))
    return _checked(result, expected_runs, module_name)


def _launch_times(events: list[TraceEvent], ops: list[TraceEvent]) -> dict[int, tuple[float, str]]:
    """GPU: each op event's host launch (start time, API call name), joined by ``correlation_id``."""
    wanted = {e.stats["correlation_id"] for e in ops if "correlation_id" in e.stats}
    if not wanted:
        return {}
    host: dict[Any, tuple[float, str]] = {}
    for e in events:
        if e.plane.startswith("/host:") and "correlation_id" in e.stats and e.stats["correlation_id"] in wanted:
            host.setdefault(e.stats["correlation_id"], (e.start_ns, e.name))
    return {id(e): host[e.stats["correlation_id"]] for e in ops
            if "correlation_id" in e.stats and e.stats["correlation_id"] in host}


def _checked(result: RunTimes, expected_runs: int | None, module_name: str) -> RunTimes:
    if expected_runs is not None and len(result.per_run_s) != expected_runs:
        raise TraceError(f"found {len(result.per_run_s)} runs of {module_name!r} in the trace "
                         f"({result.method}), expected {expected_runs}")
    if any(t <= 0 for t in result.per_run_s):
        raise TraceError(f"a run of {module_name!r} has no duration in the trace")
    return result


def _host_launches(events: list[TraceEvent], expected_runs: int | None) -> tuple[str, list[float]] | None:
    """Start times of the host-side launch events, when one kind of them occurs once per run."""
    for marker in HOST_LAUNCH_MARKERS:
        spans = sorted((e.start_ns, e.end_ns) for e in events if e.plane.startswith("/host:") and marker in e.name)
        # Nested launch events of one kind (PjitFunction inside PjitFunction) are counted once.
        distinct: list[float] = []
        last_end = float("-inf")
        for start, end in spans:
            if start >= last_end:
                distinct.append(start)
                last_end = end
        if distinct and (expected_runs is None or len(distinct) == expected_runs):
            return marker, distinct
    return None
