"""Reading a profiler trace (an XSpace, as ``jax.profiler.ProfileData`` or :mod:`.xspace`) into per-run
device times of one program.

Pure and duck-typed: it reads ``.planes[].name / .lines[].name / .events[]`` with ``name``, ``start_ns``,
``duration_ns`` and ``stats`` (and ``display_name`` where present), so a constructed trace (tests) goes
through the same code as a real one.

A program is ``(module, program_id)``: the module name (``jit_f``) is shared by every executable compiled from
a function of that name, the program id tells them apart (a stat of GPU/CPU op events; on TPU the number in
the "XLA Modules" event name, ``jit_f(<id>)``, and a stat of the ops).

Where each platform puts a program's events: CPU on plane ``/host:CPU`` (XLA's worker threads, one event per
HLO op with stats ``hlo_op``, ``hlo_module``, ``program_id``, ``run_id``); GPU on planes ``/device:GPU:N``,
one line per stream (kernel and memcpy events with ``hlo_op``, ``hlo_module``, ``program_id``,
``correlation_id``); TPU on planes ``/device:TPU:N`` with an "XLA Modules" line (one event per run and chip)
and "XLA Ops" lines. How one program's runs are told apart is :mod:`.program_runs`.
"""

from __future__ import annotations

import gc
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

__all__ = ["TraceEvent", "TraceError", "TraceIndex", "RunTimes", "ProgramKey", "flatten", "programs", "device_events",
           "device_plane_prefix", "platform_of", "module_name_of", "module_event_id", "KERNEL_RUN_MARKER",
           "REFERENCE_RUN_MARKER", "WARM_RUN_MARKER", "CONSUMER_PREFIX", "profile_types_quiet"]

SKIPPED_PREFIXES = ("ThreadpoolListener::",)
CONSUMER_PREFIX = "end: "  # an async op's consumer event (stat ``_c``): where its work completed
KERNEL_RUN_MARKER = "pytest_roofline kernel run"
REFERENCE_RUN_MARKER = "pytest_roofline reference run"
WARM_RUN_MARKER = "pytest_roofline warm run"  # the warm runs that check a cold measurement's eviction
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
    _: KW_ONLY  # fields from the seventh on are given by keyword
    notes: tuple[str, ...] = ()
    launched_ns: Mapping[int, float] = field(default_factory=dict)  # GPU: index in op_events -> its host launch

    @property
    def devices(self) -> int:
        return max(len(self.per_device_s), 1)

    def without(self, first: bool, last: bool) -> RunTimes:
        """Without the first run (``first``) and the last (``last``): the runs of a profile started or stopped while
        the program ran (a sampled window of a long test), where those may be cut short."""
        lo, hi = int(first), len(self.per_run_s) - int(last)
        kept = {i: r - lo for i, r in self.run_of_event.items() if lo <= r < hi}
        return replace(self, per_run_s=self.per_run_s[lo:hi], run_of_event=kept,
                       per_device_s={d: t[lo:hi] for d, t in self.per_device_s.items()},
                       launched_ns={i: t for i, t in self.launched_ns.items() if i in kept})


def device_of(event: TraceEvent) -> Any:
    """The device an op event ran on: its ``device_ordinal`` stat where it has one (a CPU's forced host devices
    share one plane), else its plane."""
    return event.stats.get("device_ordinal", event.plane)


def device_plane_prefix(platform: str) -> str:
    return {"cpu": "/host:CPU", "gpu": "/device:GPU:", "tpu": "/device:TPU:"}.get(
        platform, f"/device:{platform.upper()}:"
    )


def _as_int(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@contextmanager
def profile_types_quiet() -> Iterator[None]:
    """Reading ``jax.profiler.ProfileData``'s stats without the DeprecationWarning that Python 3.12+ raises for
    each of its iterator types created without a module ("builtin type event_stats has no __module__
    attribute"): jaxlib's, not the user's, and said for every kernel otherwise."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"builtin type \w+ has no __module__ attribute", DeprecationWarning)
        yield


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a trace's events are built: hundreds of thousands of new
    objects, none of them in a cycle, would otherwise set off collections that scan every object alive (a third
    of the time it takes to read a 250k-event trace)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def flatten(profile: Any, *, skip: tuple[str, ...] = ()) -> list[TraceEvent]:
    """All events of a ``ProfileData``-like object as :class:`TraceEvent`; ``skip``: more name prefixes to leave
    out (:data:`CONSUMER_PREFIX`: the async ops' "end:" events, half of a CPU trace, where only the per-op times
    are read).

    A TPU "XLA Ops" event is named by its whole HLO instruction text; its op name (``hlo_op``) is the
    metadata's display name, or the name before `` = `` in that text."""
    with profile_types_quiet(), _collector_paused():
        return _flatten(profile, SKIPPED_PREFIXES + skip)


def _flatten(profile: Any, skipped: tuple[str, ...]) -> list[TraceEvent]:
    # One pass over every event of the trace (hundreds of thousands for a program of many small ops): the loop
    # reads each attribute once and builds nothing it does not keep.
    out: list[TraceEvent] = []
    keep = out.append
    for plane in profile.planes:
        plane_name = plane.name
        for line in plane.lines:
            line_name = line.name
            xla_ops = line_name == "XLA Ops"
            for ev in line.events:
                name = ev.name
                if name.startswith(skipped):
                    continue  # thread-pool bookkeeping: half the events of a CPU trace, never needed
                start = float(ev.start_ns)
                stats = dict(getattr(ev, "stats", ()))
                if xla_ops and "hlo_op" not in stats:
                    short = _short_op_name(ev)
                    if short:
                        stats["hlo_op"] = short
                keep(TraceEvent(plane_name, line_name, name, start, start + float(ev.duration_ns), stats))
    return out


def _short_op_name(ev: Any) -> str:
    """A TPU "XLA Ops" event's op name: its display name, or the name before `` = `` in its HLO text."""
    short = getattr(ev, "display_name", "") or ""
    if not short:
        m = _HLO_TEXT_NAME.match(ev.name)
        short = m.group(1) if m else ""
    return str(short)


def platform_of(events: Iterable[TraceEvent]) -> str:
    """The accelerator a trace was recorded on: "tpu", "gpu" (device planes with events) or "cpu"."""
    planes = {e.plane for e in events}
    for platform in ("tpu", "gpu"):
        if any(p.startswith(device_plane_prefix(platform)) for p in planes):
            return platform
    return "cpu"


def module_name_of(event_name: str) -> str:
    # "XLA Modules" events are named like "jit_f(1234)".
    return event_name.split("(", 1)[0].strip()


def module_event_id(event: TraceEvent) -> int | None:
    if event.program_id is not None:
        return event.program_id
    m = re.search(r"\((\d+)\)\s*$", event.name)
    return int(m.group(1)) if m else None


def device_events(events: list[TraceEvent], platform: str) -> list[TraceEvent]:
    prefix = device_plane_prefix(platform)
    planes = {e.plane for e in events if e.plane.startswith(prefix)}
    if not planes:
        seen = sorted({e.plane for e in events})
        raise TraceError(f"no {prefix}* plane in the trace (planes: {', '.join(seen) or 'none'})")
    return [e for e in events if e.plane in planes]


@dataclass(frozen=True)
class TraceIndex:
    """One trace's events grouped once for every program read from it (a measurement reads its kernel's runs, its
    reference's and its warm check's from one trace): the events on the platform's device planes, their op events
    by module, the "XLA Modules" events, the async consumers ("end: ..." events with a ``_c`` stat) by the producer
    they name, each with its position among the device events, and the host events by name, each list in trace
    order. A trace of a loop holds hundreds of thousands of events; each pass
    over them in Python costs a tenth of a second or more."""

    events: list[TraceEvent]
    on_device: list[TraceEvent]
    ops_by_module: Mapping[str, list[TraceEvent]]
    module_lines: list[TraceEvent]
    consumers_of: Mapping[object, list[tuple[int, TraceEvent]]]
    host_by_name: Mapping[str, list[TraceEvent]]

    @classmethod
    def of(cls, events: Iterable[TraceEvent], platform: str) -> TraceIndex:
        """The index of ``events`` (a :class:`TraceError` where the trace has no plane of ``platform``)."""
        events = events if isinstance(events, list) else list(events)
        on_device = device_events(events, platform)
        by_module: dict[str, list[TraceEvent]] = {}
        module_lines: list[TraceEvent] = []
        consumers: dict[object, list[tuple[int, TraceEvent]]] = {}
        for position, e in enumerate(on_device):
            if e.line == "XLA Modules":
                module_lines.append(e)
                continue
            stats = e.stats
            module = stats.get("hlo_module")
            if module is not None:
                by_module.setdefault(str(module), []).append(e)
            if "_c" in stats and e.name.startswith(CONSUMER_PREFIX):
                consumers.setdefault(stats["_c"], []).append((position, e))
        host: dict[str, list[TraceEvent]] = {}
        for e in events:
            if e.plane.startswith("/host:"):
                host.setdefault(e.name, []).append(e)
        return cls(events, on_device, by_module, module_lines, consumers, host)


def programs(events: Iterable[TraceEvent], platform: str | None = None) -> list[ProgramKey]:
    """Every program with device events in the trace, as ``(module, program_id)``, in order of first run."""
    events = list(events)
    platform = platform or platform_of(events)
    first: dict[ProgramKey, float] = {}
    for e in device_events(events, platform):
        if e.line == "XLA Modules":
            key = ProgramKey(module_name_of(e.name), module_event_id(e))
        elif e.module is not None and (platform != "cpu" or "run_id" in e.stats or "hlo_op" in e.stats):
            key = ProgramKey(e.module, e.program_id)
        else:
            continue
        first[key] = min(first.get(key, e.start_ns), e.start_ns)
    return sorted(first, key=lambda k: (first[k], k.module, k.program_id or 0))
