"""Reading a profiler trace (an XSpace, as ``jax.profiler.ProfileData``) into per-run device times.

Pure and duck-typed: it reads ``.planes[].name / .lines[].name / .events[]`` with ``name``, ``start_ns``,
``duration_ns`` and ``stats``, so a constructed trace (tests) goes through the same code as a real one.

Where the events of one program are found, by platform:

* CPU: plane ``/host:CPU``; XLA's worker threads carry one event per HLO op with stats ``hlo_op``,
  ``hlo_module``, ``program_id`` and ``run_id``. An async op is a producer event (stat ``_p``) and an
  ``end: <op>`` consumer event (stat ``_c`` with the same value), which belongs to the same run.
* GPU: planes ``/device:GPU:N``, one line per stream, CUPTI kernel and memcpy events with ``hlo_op`` /
  ``hlo_module`` / ``program_id`` stats (read from XLA's annotations, not verified on hardware here).
* TPU: planes ``/device:TPU:N`` with an "XLA Modules" line (one event per program run) and an "XLA Ops"
  line (one event per op), written by libtpu (read, not verified on hardware here).

Runs are told apart, in order of preference, by the ``run_id`` stat, by "XLA Modules" events, or by the
host-side launch events of the program (one per run, as the runs are launched one after another): the
plugin's own annotation around each timed run (``launch_marker``: ``pytest_roofline kernel run``, or
``pytest_roofline reference run`` for the reference kernel of live ceilings) where the trace has it, so that
other programs launched in between (donated-input copies, reference kernels) are never counted as runs.
A run's device time is from its first op's start to its last op's end.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TraceEvent", "TraceError", "RunTimes", "flatten", "run_times", "device_plane_prefix",
           "KERNEL_RUN_MARKER", "REFERENCE_RUN_MARKER"]

SKIPPED_PREFIXES = ("ThreadpoolListener::",)
HOST_LAUNCH_MARKERS = ("PjitFunction(", "ExecuteHelperOnSingleDevice", "LoadedExecutable::Execute")
KERNEL_RUN_MARKER = "pytest_roofline kernel run"
REFERENCE_RUN_MARKER = "pytest_roofline reference run"


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


@dataclass(frozen=True)
class RunTimes:
    per_run_s: tuple[float, ...]
    method: str  # how the runs were told apart, e.g. "run_id stat on /host:CPU op events"
    op_events: tuple[TraceEvent, ...]  # every event of this program, consumers included
    run_of_event: Mapping[int, int]  # index in op_events -> run number (0-based, in time order)


def device_plane_prefix(platform: str) -> str:
    return {"cpu": "/host:CPU", "gpu": "/device:GPU:", "tpu": "/device:TPU:"}.get(platform, f"/device:{platform.upper()}:")


def _stats(event: Any) -> dict[str, Any]:
    raw = getattr(event, "stats", ())
    if isinstance(raw, Mapping):
        return dict(raw)
    return {k: v for k, v in raw}


def flatten(profile: Any) -> list[TraceEvent]:
    """All events of a ``ProfileData``-like object as :class:`TraceEvent`."""
    out: list[TraceEvent] = []
    for plane in profile.planes:
        for line in plane.lines:
            for ev in line.events:
                if ev.name.startswith(SKIPPED_PREFIXES):
                    continue  # thread-pool bookkeeping: half the events of a CPU trace, never needed
                start = float(ev.start_ns)
                out.append(TraceEvent(plane.name, line.name, ev.name, start,
                                      start + float(ev.duration_ns), _stats(ev)))
    return out


def _module_name_of(event_name: str) -> str:
    # "XLA Modules" events are named like "jit_f(1234)".
    return event_name.split("(", 1)[0].strip()


def _group_by_windows(ops: list[TraceEvent], windows: list[tuple[float, float]]) -> dict[int, int]:
    assignment: dict[int, int] = {}
    for i, ev in enumerate(ops):
        for run, (lo, hi) in enumerate(windows):
            if lo <= ev.start_ns < hi:
                assignment[i] = run
                break
    return assignment


def run_times(events: Iterable[TraceEvent], module_name: str, platform: str,
              expected_runs: int, launch_marker: str | None = None) -> RunTimes:
    """Per-run device time of the program ``module_name`` (the HloModule name, e.g. ``jit_f``).
    ``launch_marker``: the name of the host event the caller put around each run (tried first)."""
    events = list(events)
    prefix = device_plane_prefix(platform)
    planes = {e.plane for e in events if e.plane.startswith(prefix)}
    if not planes:
        seen = sorted({e.plane for e in events})
        raise TraceError(f"no {prefix}* plane in the trace (planes: {', '.join(seen) or 'none'})")
    on_device = [e for e in events if e.plane in planes]

    module_windows = sorted(
        (e for e in on_device
         if e.line == "XLA Modules" and (_module_name_of(e.name) == module_name or e.module == module_name)),
        key=lambda e: e.start_ns,
    )
    ops = [e for e in on_device if e.module == module_name and e.line != "XLA Modules"]
    if not ops and module_windows:
        # TPU: "XLA Ops" events may carry no module stat; they belong to us when inside our module's runs.
        ops = [e for e in on_device if e.line == "XLA Ops"
               and any(w.start_ns <= e.start_ns < w.end_ns for w in module_windows)]
    if not ops and not module_windows:
        modules = sorted({m for m in (e.module for e in on_device) if m})
        raise TraceError(f"no events of program {module_name!r} on {prefix}* "
                         f"(programs seen: {', '.join(modules) or 'none'})")

    # Async consumers ("end: op") belong to the run of their producer.
    producers = {e.stats["_p"] for e in ops if "_p" in e.stats}
    consumers = [e for e in on_device if "_c" in e.stats and e.stats["_c"] in producers and e.name.startswith("end: ")]
    producer_index = {e.stats["_p"]: i for i, e in enumerate(ops) if "_p" in e.stats}
    ops_all = ops + consumers

    assignment: dict[int, int]
    if ops and all("run_id" in e.stats for e in ops):
        first_start: dict[Any, float] = {}
        for e in ops:
            run_id = e.stats["run_id"]
            first_start[run_id] = min(first_start.get(run_id, e.start_ns), e.start_ns)
        order = {r: n for n, r in enumerate(sorted(first_start, key=first_start.__getitem__))}
        assignment = {i: order[e.stats["run_id"]] for i, e in enumerate(ops)}
        method = f"run_id stat on {prefix}* op events"
    elif module_windows:
        windows = [(w.start_ns, w.end_ns) for w in module_windows]
        if not ops:
            per_run = tuple((hi - lo) / 1e9 for lo, hi in windows)
            return _checked(RunTimes(per_run, "XLA Modules events (no op events)", tuple(module_windows), {}),
                            expected_runs, module_name)
        assignment = _group_by_windows(ops, windows)
        method = "XLA Modules events"
    else:
        launches = _host_launches(events, expected_runs, launch_marker)
        if launches is None:
            raise TraceError(f"program {module_name!r} has op events but nothing tells its runs apart "
                             f"(no run_id stat, no 'XLA Modules' line, no host launch events)")
        marker, starts = launches
        windows = [(s, starts[n + 1] if n + 1 < len(starts) else float("inf")) for n, s in enumerate(starts)]
        assignment = _group_by_windows(ops, windows)
        method = f"host launch events {marker!r}"
    for j, ev in enumerate(consumers, start=len(ops)):
        owner = producer_index.get(ev.stats["_c"])
        if owner is not None and owner in assignment:
            assignment[j] = assignment[owner]

    runs: dict[int, list[TraceEvent]] = {}
    for i, run in assignment.items():
        runs.setdefault(run, []).append(ops_all[i])
    per_run = tuple(
        (max(e.end_ns for e in evs) - min(e.start_ns for e in evs)) / 1e9
        for _, evs in sorted(runs.items())
    )
    return _checked(RunTimes(per_run, method, tuple(ops_all), assignment), expected_runs, module_name)


def _checked(result: RunTimes, expected_runs: int, module_name: str) -> RunTimes:
    if len(result.per_run_s) != expected_runs:
        raise TraceError(f"found {len(result.per_run_s)} runs of {module_name!r} in the trace "
                         f"({result.method}), expected {expected_runs}")
    if any(t <= 0 for t in result.per_run_s):
        raise TraceError(f"a run of {module_name!r} has no duration in the trace")
    return result


def _host_launches(events: list[TraceEvent], expected_runs: int,
                   own: str | None = None) -> tuple[str, list[float]] | None:
    """Start times of the host-side launch events, when one kind of them occurs once per run."""
    for marker in ((own,) if own else ()) + HOST_LAUNCH_MARKERS:
        spans = sorted((e.start_ns, e.end_ns) for e in events if e.plane.startswith("/host:") and marker in e.name)
        # Nested launch events of one kind (PjitFunction inside PjitFunction) are counted once.
        distinct: list[float] = []
        last_end = float("-inf")
        for start, end in spans:
            if start >= last_end:
                distinct.append(start)
                last_end = end
        if len(distinct) == expected_runs:
            return marker, distinct
    return None
