"""The programs a test ran, read from the survey's profile of it: each program's runs, its counts as they ran, its
roofline on the hardware at hand (imports JAX to print the HLO the profile embeds).

A profile embeds the HLO of every program the process has compiled; only those with runs in it are read, each
parsed once per process (:class:`Programs` keeps them by the bytes of their HLO). The plugin's own programs
(reference kernels, the cache eviction) are left out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from statistics import median
from typing import NamedTuple

from ...analysis.model.per_op import OpRow
from ...analysis.model.recorded_profile import ProgramSummary, Work, hlo_key, summarize_program
from ...analysis.program.hlo_reader import HloModule, HloParseError, parse_hlo
from ...analysis.program.memory import working_set
from ...analysis.runs.program_runs import run_times
from ...analysis.runs.trace_events import (
    ProgramKey,
    RunTimes,
    TraceError,
    TraceEvent,
    TraceIndex,
    flatten,
    platform_of,
    programs,
)
from ...analysis.runs.xspace import hlo_protos_wanted
from ...analysis.verdict.survey_book import SMALL_S, Sighting
from ...base.units import format_quantity, format_seconds
from ...hardware.spec import HardwareSpec
from ..fingerprint import normalized_hlo
from ..profiler import HloProtoError, hlo_text, parsed

__all__ = ["Programs", "read_sightings", "Read"]

# The plugin's own programs: its reference kernels and its cache eviction, which run beside a measurement.
_OWN = ("roofline_reference", "pytest_roofline")
# The runtime's host bookkeeping around each call, which no reading of runs needs: most of the events of a suite that
# calls jax.numpy op by op (on a CPU, 8 of the 12 host events of a call).
_BOOKKEEPING = ("Wait for ", "ParseArguments", "Handle input", "AllocateOutputBuffers", "PythonRefManager::",
                "CommonPjRtClient::CreateOutputs", "CommonPjRtLoadedExecutable::ExecutePrepare", "DevicePut",
                "ThunkExecutor::Execute (wait")


@dataclass
class Programs:
    """Each program's HLO, parsed once: by the digest of its serialized proto, (fingerprint, module) or the reason
    it could not be read."""

    read: dict[str, tuple[str, HloModule] | str] = field(default_factory=dict)
    by_key: dict[ProgramKey, tuple[str, HloModule]] = field(default_factory=dict)  # a process's programs, once read

    def module(self, proto: bytes, name: str) -> tuple[str, HloModule] | str:
        digest = hashlib.sha1(proto).hexdigest()
        if digest not in self.read:
            try:
                text = hlo_text(proto, name)
                self.read[digest] = (hashlib.sha256(normalized_hlo(text).encode()).hexdigest()[:20],
                                     parse_hlo(text))
            except (HloProtoError, HloParseError) as exc:
                self.read[digest] = str(exc).splitlines()[0]
        return self.read[digest]


def _top_op(ops: tuple[OpRow, ...]) -> str:
    timed = [r for r in ops if r.measured_s is not None]
    if not timed:
        return ""
    worst = max(timed, key=lambda r: r.time_lost_s)
    return f"{worst.name} ({worst.kind}) lost {format_seconds(worst.time_lost_s)} per run"


def _touch(module: HloModule, spec: HardwareSpec | None, s: ProgramSummary) -> tuple[float, tuple[str, ...]]:
    """On a CPU: what the first touch of the result's pages can cost per run, and the note that says so where that is
    a tenth of the run or more (a fresh output buffer faults its pages in; one the allocator reuses does not: the
    survey cannot tell which, so the roofline leaves it out)."""
    if spec is None or spec.platform != "cpu" or spec.first_touch is None or not s.per_run_s:
        return 0.0, ()
    written = module.entry.root.shape.bytes
    touch = written / spec.first_touch.value
    if touch < 0.1 * min(s.per_run_s):
        return touch, ()
    return touch, (f"the first touch of its result's pages ({format_quantity(written, 'B')}, where the allocator "
                   f"gave fresh ones) can take up to {format_seconds(touch)} per run here: not in the roofline",)


def _sighting(s: ProgramSummary, fingerprint: str, nodeid: str, platform: str, notes: tuple[str, ...]) -> Sighting:
    c = s.counts
    return Sighting(fingerprint, s.module, nodeid, s.per_run_s, s.roofline_time_s, platform,
                    flops=c.flops if c else 0.0, bytes_accessed=c.bytes_accessed if c else 0.0,
                    transcendentals=c.transcendentals if c else 0.0, bound=s.bound, top_op=_top_op(s.ops),
                    notes=s.notes + notes)


def _protos(part: bytes, unknown: Sequence[ProgramKey]) -> dict[str, bytes]:
    """The HLO of the programs not read before, and of any other program of their names (see :func:`_program`)."""
    if not unknown:
        return {}
    names, modules = {hlo_key(k) for k in unknown}, {k.module for k in unknown}
    return hlo_protos_wanted(part, lambda name: name in names or name.rsplit("(", 1)[0] in modules)


def _program(key: ProgramKey, protos: Mapping[str, bytes], events: Sequence[TraceEvent],
             known: Programs) -> tuple[str, HloModule] | str:
    """The program's HLO: under its own id, else the one of its name whose instructions hold every op its events
    name (an executable loaded from JAX's persistent compilation cache runs under the id it was compiled with, and
    the profile embeds its HLO under a new one); the reason where none is."""
    exact = protos.get(hlo_key(key))
    if exact is not None:
        return known.module(exact, hlo_key(key))
    named = {name: p for name, p in protos.items() if name.rsplit("(", 1)[0] == key.module}
    ops = {str(e.stats.get("hlo_op") or "") for e in events
           if e.module == key.module and e.program_id == key.program_id}
    ops.discard("")
    fits: dict[str, tuple[str, HloModule]] = {}  # by fingerprint: the same program compiled twice fits once
    for name, proto in named.items():
        read = known.module(proto, name)
        if not isinstance(read, str) and ops <= {i.name for c in read[1].computations.values() for i in c.instructions}:
            fits.setdefault(read[0], read)
    if len(fits) == 1:
        return next(iter(fits.values()))
    return ("the profile embeds no HLO for it" if not named else
            f"{len(fits)} different programs of the {len(named)} the profile embeds under its name fit its ops")


class Read(NamedTuple):
    """What one part of a test's profile showed (:func:`read_sightings`)."""

    found: list[Sighting]
    problems: list[str]
    at_edges: tuple[str, ...] = ()  # programs whose only runs in the part lay at a cut edge (names)


def read_sightings(part: bytes, nodeid: str, spec: HardwareSpec | None, known: Programs,
                   stated: Callable[[str, str], Work | None] = lambda _m, _p: None, *,
                   cut: tuple[bool, bool] = (False, False)) -> Read:
    """The programs with runs in one part of a test's profile, what could not be read (one line each), and the programs
    whose only runs in it lay at a cut edge.
    ``stated(name, platform)``: the work the config states for a program, which it is judged on. ``cut``: whether the
    part was started, and whether it was stopped, while the test ran (a sampled window): a run going on at that edge
    may be cut short, and is left out (:func:`_at_edges`)."""
    try:
        events = flatten(parsed(part), skip=_BOOKKEEPING)  # JAX's own reader: far faster than one in Python
    except Exception as exc:  # noqa: BLE001 - JAX's reader raises its own runtime error types
        return Read([], [f"the survey's profile of {nodeid} cannot be read: {exc}"])
    if not events:  # a part in which nothing ran
        return Read([], [])
    platform = platform_of(events)
    try:
        keys = [k for k in programs(events, platform) if not any(own in k.module for own in _OWN)]
    except TraceError as exc:
        return Read([], [f"{nodeid}: {exc}"])
    protos = _protos(part, [k for k in keys if k not in known.by_key])
    index = TraceIndex.of(events, platform)
    edges = _edges(index, cut) if any(cut) else None
    found: list[Sighting] = []
    problems: list[str] = []
    at_edges: list[str] = []
    for key in keys:
        read = known.by_key.get(key) or _program(key, protos, events, known)
        if not isinstance(read, str):
            known.by_key[key] = read
        if isinstance(read, str):
            problems.append(f"{nodeid}: {key}: not counted: {read}")
            continue
        try:
            seen = _seen(key, read, index, platform, spec, stated(key.module, platform), edges=edges)
        except TraceError as exc:
            problems.append(f"{nodeid}: {key}: its runs cannot be told apart: {exc}")
            continue
        if seen is None and any(cut):
            at_edges.append(key.module)
        if seen is not None:
            found.append(replace(seen, nodeid=nodeid))
    return Read(found, problems, tuple(at_edges))


@dataclass(frozen=True)
class _Edges:
    """A cut part's edges, as its op events show them: the first end where the part was started while the test ran,
    the last start where it was stopped so (None: not cut there)."""

    first_end: float | None
    last_start: float | None


def _edges(index: TraceIndex, cut: tuple[bool, bool]) -> _Edges:
    ends = [e.end_ns for evs in index.ops_by_module.values() for e in evs] if cut[0] else []
    starts = [e.start_ns for evs in index.ops_by_module.values() for e in evs] if cut[1] else []
    return _Edges(min(ends, default=None), max(starts, default=None))


def _at_edges(runs: RunTimes, edges: _Edges) -> tuple[bool, bool]:
    """Whether the first run, and the last, may be cut short by the part's edges. A run going on when the profile
    started holds the part's first op to end (nothing else ran before it finished); one going on when it stopped, the
    last op to start (nothing ran after it). A complete run can hold them too (the first program's first run): left
    out all the same, which costs a run."""
    last = len(runs.per_run_s) - 1

    def holds(run: int, edge: Callable[[TraceEvent], bool]) -> bool:
        return any(edge(e) for i, e in enumerate(runs.op_events) if runs.run_of_event.get(i) == run)

    first_end, last_start = edges.first_end, edges.last_start
    return (first_end is not None and holds(0, lambda e: e.end_ns <= first_end),
            last_start is not None and holds(last, lambda e: e.start_ns >= last_start))


def _seen(key: ProgramKey, read: tuple[str, HloModule], index: TraceIndex, platform: str,
          spec: HardwareSpec | None, stated: Work | None, *, edges: _Edges | None = None) -> Sighting | None:
    """One program's runs in one part: a program too small to judge by its run times alone (nothing modelled: a
    suite that calls jax.numpy op by op runs thousands of them), the others counted as they ran and modelled
    (``edges``: without the runs cut short by a sampled window's edges, see :func:`read_sightings`)."""
    fingerprint, module = read
    runs = run_times(index.events, key.module, platform, program_id=key.program_id, index=index)
    if edges is not None:
        runs = runs.without(*_at_edges(runs, edges))
    if not runs.per_run_s:
        return None
    if median(runs.per_run_s) < SMALL_S:
        return Sighting(fingerprint, key.module, "", runs.per_run_s, None, platform)
    summary = summarize_program(index.events, platform, key, module, spec, working_set=working_set(module, None),
                                index=index, stated=stated, told=runs)
    said = (f"judged on the work the config states: {format_quantity(stated[0], 'FLOP')}, "
            f"{format_quantity(stated[1], 'B')} per run",) if stated is not None else ()
    touch, note = _touch(module, spec, summary)
    return replace(_sighting(summary, fingerprint, "", platform, note + said), touch_s=touch)
