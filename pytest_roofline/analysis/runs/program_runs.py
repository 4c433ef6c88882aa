"""One program's runs in a trace (:mod:`.trace_events`): which events are the program's, and how its runs
are told apart, one small function per way. Pure.

Checked on the real profiles in ``tests/data``:

* CPU: XLA's worker threads carry one event per HLO op with stats ``hlo_op``, ``hlo_module``, ``program_id``
  and ``run_id`` (unique per run in one process): runs by ``run_id``. An async op is a producer event (stat
  ``_p``) and an ``end: <op>`` consumer event (stat ``_c``), which belongs to the same run.
* GPU: kernel and memcpy events with ``correlation_id``, no ``run_id``. Each is tied to the host API call that
  launched it (same ``correlation_id`` on a ``/host:`` plane), and the launch to the host window it falls in:
  our own annotation around each timed run (``launch_marker``) where the trace has it, else the
  ``GpuExecutable::ExecuteThunks`` event of the module (one per run and device, on the host thread that runs
  that device: with several GPUs the windows of different devices overlap, and a kernel belongs to the window
  of the thread that launched it, never to another device's). With command buffers (CUDA
  graphs) the kernels of a run may carry no ``hlo_op``: the per-op times are then missing, which
  :attr:`~.trace_events.RunTimes.notes` says.
* TPU: an "XLA Modules" line (one event per run and chip; ``run_id`` counts per chip, so runs are matched
  across chips by their order) and "XLA Ops" lines. A chip's run lasts its module event: the time the caller
  waits, including waiting for the other chips.
* Otherwise: host launch events (``PjitFunction(`` ...), when one kind occurs once per run.

A multi-device program is timed on each device separately; a run's time is that of its slowest device. A GPU
or CPU run on one device lasts from its first op's start to its last op's end.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .trace_events import (
    RunTimes,
    TraceError,
    TraceEvent,
    TraceIndex,
    device_plane_prefix,
    module_event_id,
    module_name_of,
    programs,
)

__all__ = ["run_times", "COMMAND_BUFFER_REMEDY", "HIDDEN_OPS", "ops_hidden"]

HOST_LAUNCH_MARKERS = ("PjitFunction(", "ExecuteHelperOnSingleDevice", "LoadedExecutable::Execute")
GPU_EXECUTE_WINDOW = "GpuExecutable::ExecuteThunks"
COMMAND_BUFFER_REMEDY = "XLA_FLAGS=--xla_gpu_enable_command_buffer="
_GRAPH_LAUNCH = re.compile(r"(cu|hip)GraphLaunch")
# How a result's note says that the trace holds no per-op times (command buffers).
HIDDEN_OPS = "per-op kernel times are hidden"


def ops_hidden(notes: Iterable[str]) -> str:
    """The note that says a run's per-op times are hidden by command buffers, or ""."""
    return next((n for n in notes if n.startswith(HIDDEN_OPS)), "")

Window = tuple[float, float]
RunKey = tuple[str, Any]  # (device, run key): the run keys of one device sort in time order


@dataclass(frozen=True)
class _Split:
    """Which run of which device each op event belongs to, and how that was told."""

    assignment: dict[int, RunKey]  # index in the op events -> (device, run key)
    method: str
    by_first_start: bool = False  # the run keys (run_id values) sort by their first event, not by value
    module_spans: dict[RunKey, float] | None = None  # TPU: a run lasts its module event


def _windows(index: TraceIndex, marker: str) -> list[Window]:
    """Host windows named ``marker``, nested ones counted once, in time order."""
    spans = sorted((e.start_ns, e.end_ns) for e in index.host_by_name.get(marker, ()))
    out: list[Window] = []
    for start, end in spans:
        if not out or start >= out[-1][1]:
            out.append((start, end))
    return out


def _containing(windows: Sequence[Window], t: float) -> int | None:
    for i, (lo, hi) in enumerate(windows):
        if lo <= t < hi:
            return i
    return None


def _device_of(e: TraceEvent, _named: dict[tuple[str, Any], str] = {}) -> str:  # noqa: B006 - a cache of names
    ordinal = e.stats.get("device_ordinal")
    if ordinal is None or not e.plane.startswith("/host:"):
        return e.plane
    key = (e.plane, ordinal)
    name = _named.get(key)
    if name is None:
        name = _named[key] = f"{e.plane}#{ordinal}"
    return name


Launch = tuple[float, str, str]  # a GPU op's host launch: start time, API call name, host thread


def _launched(e: TraceEvent, launch_of: dict[int, Launch]) -> float:
    """When an op's work was launched: its host launch where the trace ties one to it (GPU), else its start."""
    return launch_of[id(e)][0] if id(e) in launch_of else e.start_ns


def _per_plane(module_events: Iterable[TraceEvent]) -> dict[str, list[Window]]:
    out: dict[str, list[Window]] = {}
    for w in sorted(module_events, key=lambda w: w.start_ns):
        out.setdefault(w.plane, []).append((w.start_ns, w.end_ns))
    return out


def _program_events(index: TraceIndex, module_name: str, platform: str,
                    program_id: int | None) -> tuple[list[TraceEvent], list[TraceEvent]]:
    """The op events and the "XLA Modules" events of the program (of one executable with ``program_id``)."""
    events, on_device = index.events, index.on_device
    module_events = [e for e in index.module_lines if module_name_of(e.name) == module_name]
    ops = list(index.ops_by_module.get(module_name, ()))
    module_ids = {module_event_id(e) for e in module_events}
    if not ops and module_events:
        # TPU: "XLA Ops" events carry no module stat; their program id (from metadata) or window tells.
        windows = _per_plane(module_events)
        ops = [e for e in on_device if e.line == "XLA Ops" and (
            e.program_id in module_ids if e.program_id is not None
            else _containing(windows.get(e.plane, []), e.start_ns) is not None)]
    prefix = device_plane_prefix(platform)
    if not ops and not module_events:
        seen = sorted({str(k) for k in programs(events, platform)})
        raise TraceError(f"no events of program {module_name!r} on {prefix}* "
                         f"(programs seen: {', '.join(seen) or 'none'})")
    if program_id is None:
        return ops, module_events
    all_ids = sorted({i for i in ({e.program_id for e in ops} | module_ids) if i is not None})
    module_events = [e for e in module_events if module_event_id(e) == program_id]
    kept = _per_plane(module_events)
    ops = [e for e in ops if e.program_id == program_id or (
        e.program_id is None and _containing(kept.get(e.plane, []), e.start_ns) is not None)]
    if not ops and not module_events:
        raise TraceError(f"no events of program {module_name}:{program_id} on {prefix}* "
                         f"(program ids of {module_name}: {', '.join(map(str, all_ids)) or 'none'})")
    return ops, module_events


def _by_module_events(ops: list[TraceEvent], module_events: list[TraceEvent]) -> _Split:
    """TPU: the k-th "XLA Modules" event of each device is run k; an op belongs to the one it falls in."""
    per_plane = _per_plane(module_events)
    spans = {(plane, k): hi - lo for plane, ws in per_plane.items() for k, (lo, hi) in enumerate(ws)}
    assignment: dict[int, RunKey] = {}
    for i, e in enumerate(ops):
        slot = _containing(per_plane.get(e.plane, []), e.start_ns)
        if slot is not None:
            assignment[i] = (e.plane, slot)
    return _Split(assignment, "XLA Modules events per device (the k-th run of each device is run k)",
                  module_spans=spans)


def _by_run_id(ops: list[TraceEvent], prefix: str) -> _Split:
    """CPU: each op event's ``run_id`` stat."""
    return _Split({i: (_device_of(e), e.stats["run_id"]) for i, e in enumerate(ops)},
                  f"run_id stat on {prefix}* op events", by_first_start=True)


def _by_windows(ops: list[TraceEvent], windows: Sequence[Window], time_of: Callable[[TraceEvent], float],
                method: str) -> _Split:
    """Host windows, one per run: an op belongs to the window its time (its launch, where known) falls in."""
    assignment: dict[int, RunKey] = {}
    for i, e in enumerate(ops):
        slot = _containing(windows, time_of(e))
        if slot is not None:
            assignment[i] = (_device_of(e), slot)
    return _Split(assignment, method)


def _split_runs(events: list[TraceEvent], ops: list[TraceEvent], module_events: list[TraceEvent],
                module_name: str, platform: str, expected_runs: int | None, *, marker: tuple[str | None, list[Window]],
                launch_of: dict[int, Launch]) -> _Split:
    """The first way of telling runs apart that the trace allows, in order of trust."""
    def launched(e: TraceEvent) -> float:
        return _launched(e, launch_of)

    launch_marker, marker_windows = marker
    if module_events:
        return _by_module_events(ops, module_events)
    if ops and all("run_id" in e.stats for e in ops):
        return _by_run_id(ops, device_plane_prefix(platform))
    if marker_windows:
        kernels = " and kernel launches (correlation_id)" if launch_of else ""
        return _by_windows(ops, marker_windows, launched, f"host annotation {launch_marker!r}{kernels}")
    thunks = _thread_windows(events, module_name) if launch_of else {}
    if thunks:
        return _by_thread_windows(ops, thunks, launch_of)
    launches = _host_launches(events, expected_runs)
    if launches is None:
        raise TraceError(f"program {module_name!r} has op events but nothing tells its runs apart "
                         f"(no run_id stat, no 'XLA Modules' line, no kernel launches, no host launch events)")
    name, starts = launches
    windows = [(s, starts[n + 1] if n + 1 < len(starts) else float("inf")) for n, s in enumerate(starts)]
    # A device runs behind its host: a kernel belongs to the run that launched it (its launch call, joined by
    # correlation_id), not to the run whose launch came before the kernel started.
    kernels = " and kernel launches (correlation_id)" if launch_of else ""
    return _by_windows(ops, windows, launched, f"host launch events {name!r}{kernels}")
def _thread(e: TraceEvent) -> str:
    return f"{e.plane}#{e.line}"


def _thread_windows(events: list[TraceEvent], module_name: str) -> dict[str, list[Window]]:
    """The module's ``GpuExecutable::ExecuteThunks`` windows per host thread (one per run of each device that
    thread runs), in time order."""
    out: dict[str, list[Window]] = {}
    for e in sorted(events, key=lambda e: e.start_ns):
        if e.plane.startswith("/host:") and e.name == GPU_EXECUTE_WINDOW and \
                str(e.stats.get("module_name", "")) == module_name:
            out.setdefault(_thread(e), []).append((e.start_ns, e.end_ns))
    return out


def _by_thread_windows(ops: list[TraceEvent], windows: dict[str, list[Window]], launch_of: dict[int, Launch]) -> _Split:
    """GPU: an op belongs to the execute window, on the host thread that launched it, that its launch falls in;
    the windows of other threads (other devices' runs, open at the same time) never claim it. Where the launch
    is recorded on a thread of its own (ROCm's and CUPTI's "Host Threads/<tid>" lines), the window is the only
    one open at the launch, or else the one on the thread whose unambiguous launches went to the op's device."""
    assignment: dict[int, RunKey] = {}
    ambiguous: list[tuple[int, list[tuple[str, int]]]] = []
    votes: dict[str, dict[str, int]] = {}  # device -> thread -> unambiguous launches
    for i, e in enumerate(ops):
        launch = launch_of.get(id(e))
        if launch is None:
            continue
        t, thread = launch[0], launch[2]
        own = _containing(windows.get(thread, []), t)
        open_ = [(th, s) for th, ws in windows.items() if (s := _containing(ws, t)) is not None]
        if own is not None:
            open_ = [(thread, own)]
        if len(open_) == 1:
            assignment[i] = (_device_of(e), open_[0])
            counts = votes.setdefault(_device_of(e), {})
            counts[open_[0][0]] = counts.get(open_[0][0], 0) + 1
        elif open_:
            ambiguous.append((i, open_))
    for i, open_ in ambiguous:
        device = _device_of(ops[i])
        mine = max(votes.get(device, {}).items(), key=lambda kv: kv[1], default=(None, 0))[0]
        chosen = [c for c in open_ if c[0] == mine]
        if chosen:
            assignment[i] = (device, chosen[0])
    return _Split(assignment, f"kernel launches (correlation_id) in host {GPU_EXECUTE_WINDOW!r} windows, each kernel "
                              f"in the window of the host thread that launched it")


def _launch_times(events: list[TraceEvent], ops: list[TraceEvent]) -> dict[int, Launch]:
    """GPU: each op event's host launch (start time, API call name, host thread), joined by ``correlation_id``."""
    wanted = {e.stats["correlation_id"] for e in ops if "correlation_id" in e.stats}
    if not wanted:
        return {}
    host: dict[Any, Launch] = {}
    for e in events:
        if e.plane.startswith("/host:") and "correlation_id" in e.stats and e.stats["correlation_id"] in wanted:
            host.setdefault(e.stats["correlation_id"], (e.start_ns, e.name, _thread(e)))
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


def run_times(events: Iterable[TraceEvent], module_name: str, platform: str,
              expected_runs: int | None = None, launch_marker: str | None = None,
              program_id: int | None = None, *, index: TraceIndex | None = None) -> RunTimes:
    """Per-run device time of the program ``module_name`` (the HloModule name, e.g. ``jit_f``), and of one
    executable of that name when ``program_id`` is given. ``launch_marker``: the name of the host event the
    caller put around each run: only the device work launched inside those windows is this program's.
    ``index``: the trace's events grouped once, where several programs are read from one trace."""
    index = index if index is not None else TraceIndex.of(events, platform)
    events = index.events
    ops, module_events = _program_events(index, module_name, platform, program_id)
    launch_of = _launch_times(events, ops) if platform == "gpu" else {}
    marker_windows = _windows(index, launch_marker) if launch_marker else []
    if marker_windows:
        module_events = [e for e in module_events if _containing(marker_windows, e.start_ns) is not None]
        ops = [e for e in ops if _containing(marker_windows, _launched(e, launch_of)) is not None]
    pid = _one_program(ops, module_events, module_name, program_id)
    split = _split_runs(events, ops, module_events, module_name, platform, expected_runs,
                        marker=(launch_marker, marker_windows), launch_of=launch_of)
    method = split.method
    if marker_windows and not method.startswith("host annotation"):
        method += f", inside host annotations {launch_marker!r}"
    # On a CPU a run's ops execute inside the host window around it; an op's "end:" event stamped after the
    # window closed (its thread descheduled after the result was handed over) is not the run's time.
    same_window = ((lambda a, b: _containing(marker_windows, a.start_ns) == _containing(marker_windows, b.start_ns))
                   if marker_windows and platform == "cpu" else None)
    ops_all, assignment = _with_consumers(index.consumers_of, ops, split.assignment, same_window)
    per_device, run_of_event = _device_runs(ops_all, assignment, split, module_name, method)
    n_runs = len(next(iter(per_device.values())))  # the same on every device (_device_runs checks)
    per_run = tuple(max(t[k] for t in per_device.values()) for k in range(n_runs))
    notes: list[str] = []
    graph_launched = any(_GRAPH_LAUNCH.search(name) for _, name, _ in launch_of.values())
    if platform == "gpu" and ops and (graph_launched or not any("hlo_op" in e.stats for e in ops)):
        notes.append(f"{HIDDEN_OPS}: XLA ran this program's kernels as command buffers "
                     f"(CUDA graphs); the program's time is kept. To see each op, run with {COMMAND_BUFFER_REMEDY}")
    if len(per_device) > 1:
        method += f"; {len(per_device)} devices timed separately, the slowest per run"
    launched = {i: launch_of[id(e)][0] for i, e in enumerate(ops_all) if id(e) in launch_of}
    result = RunTimes(per_run, method, tuple(ops_all), run_of_event, per_device, pid, notes=tuple(notes),
                      launched_ns=launched)
    return _checked(result, expected_runs, module_name)


def _one_program(ops: list[TraceEvent], module_events: list[TraceEvent], module_name: str,
                 program_id: int | None) -> int | None:
    """The program id of the events; several programs of one name need ``program_id`` to pick one."""
    ids = sorted({i for i in [e.program_id for e in ops] + [module_event_id(e) for e in module_events]
                  if i is not None})
    if program_id is None and len(ids) > 1:
        raise TraceError(f"{len(ids)} different programs named {module_name!r} ran "
                         f"(program ids {', '.join(map(str, ids))}): name one as {module_name}:<program_id>")
    return program_id if program_id is not None else (ids[0] if ids else None)


def _with_consumers(consumers_of: Mapping[object, list[tuple[int, TraceEvent]]], ops: list[TraceEvent],
                    assignment: dict[int, RunKey], same_run: Callable[[TraceEvent, TraceEvent], bool] | None = None,
                    ) -> tuple[list[TraceEvent], dict[int, RunKey]]:
    """The op events with their async consumers ("end: op" events with a ``_c`` stat, looked up by the producer
    they name, in trace order), each in the run of its producer; ``same_run``: whether a consumer (second) lies in
    its producer's (first) run, where the caller can tell. Looked up per producer: a trace of hundreds of programs
    holds tens of thousands of consumers, and scanning them all once per program is quadratic."""
    producer_index = {e.stats["_p"]: i for i, e in enumerate(ops) if "_p" in e.stats}
    found = sorted((c for p in producer_index for c in consumers_of.get(p, ())), key=lambda c: c[0])
    consumers = [e for _, e in found
                 if same_run is None or same_run(ops[producer_index[e.stats["_c"]]], e)]
    out = dict(assignment)
    for j, ev in enumerate(consumers, start=len(ops)):
        owner = producer_index[ev.stats["_c"]]
        if owner in out:
            out[j] = out[owner]
    return ops + consumers, out


def _device_runs(ops: list[TraceEvent], assignment: dict[int, RunKey], split: _Split, module_name: str,
                 method: str) -> tuple[dict[str, tuple[float, ...]], dict[int, int]]:
    """Per device, its runs' times in time order (a run's span, or its module event); each op's run number."""
    spans: dict[str, dict[Any, list[float]]] = {}
    for i, (device, key) in assignment.items():
        ev = ops[i]
        lo_hi = spans.setdefault(device, {}).setdefault(key, [ev.start_ns, ev.end_ns])
        lo_hi[0] = min(lo_hi[0], ev.start_ns)
        lo_hi[1] = max(lo_hi[1], ev.end_ns)
    module_spans = split.module_spans
    for device, key in module_spans or {}:  # a chip with no op events still has its module event
        spans.setdefault(device, {}).setdefault(key, [0.0, 0.0])
    per_device: dict[str, tuple[float, ...]] = {}
    order_of: dict[str, dict[Any, int]] = {}
    for device, runs in sorted(spans.items()):
        keys = sorted(runs, key=lambda k: runs[k][0]) if split.by_first_start else sorted(runs)
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
    return per_device, {i: order_of[device][key] for i, (device, key) in assignment.items()}
