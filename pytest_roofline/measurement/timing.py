"""The runs of a program and their reading: the loop that makes them (:func:`run_adaptively`), the warm-up, and
the trace turned into device times (:func:`from_trace`); which timer makes them is :mod:`.timers`'s choice.

Where every run is traced, one profiler session covers all timed runs. With a reference kernel (live ceilings) the
runs alternate: reference, kernel, reference, ..., reference. Runs stop adaptively: after ``min_runs`` and
``min_time_s``, as soon as the ``settled`` rule says so (by default: the relative interquartile range of the
wall-clock times is within ``target_spread``), or when ``budget_s`` of running (untimed input copies and references
included) is spent, or at ``max_runs``. Device times then come from the trace
(:mod:`pytest_roofline.analysis.runs.trace_events`); the host wall clock around each call (``block_until_ready``) is
kept beside them and is the fallback when the profiler cannot be used, with the reason recorded. Imports JAX only to
open the profiler and read its trace.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..analysis.model.contention import waiting_share
from ..analysis.runs.program_runs import run_times
from ..analysis.runs.run_stats import Timing, relative_iqr
from ..analysis.runs.time_spent import phase, spend
from ..analysis.runs.trace_events import (
    CONSUMER_PREFIX,
    KERNEL_RUN_MARKER,
    REFERENCE_RUN_MARKER,
    WARM_RUN_MARKER,
    RunTimes,
    TraceError,
    TraceIndex,
    flatten,
)
from ..analysis.runs.trace_plan import EVERY_RUN, READ_S_PER_EVENT, TimerKind, TracePlan
from ..base.progress import PROGRESS_EVERY_S, say
from ..hardware.cpu import Contention, minor_page_faults, thread_times_ns
from .options import TimingSettings

if TYPE_CHECKING:
    from .profiler import Probe

__all__ = ["Timed", "Beside", "CacheRuns", "WARM_RUNS", "Runs", "run_adaptively", "warm_up", "from_trace",
           "by_wall_clock"]


@dataclass(frozen=True)
class Timed:
    """The timing of a program, and what the profiler recorded: the serialized trace and this program's
    events grouped by run (None when the wall clock was used)."""

    timing: Timing
    xspace: bytes = b""
    events: RunTimes | None = None
    reference_s: tuple[float, ...] = ()  # the reference kernel's runs (one more than the kernel's), if any
    reference_timer: str = ""
    reference_faults: tuple[int, ...] = ()  # minor page faults of each reference run (empty: not counted)
    _: KW_ONLY  # fields from the seventh on are given by keyword
    warm_s: tuple[float, ...] = ()  # the warm runs after cold ones that check the eviction (empty: none)
    timer: TimerKind = "wall clock"  # how the runs were timed (the timer chosen, or the wall clock it fell back to)

    @property
    def ops_apart(self) -> bool:
        """The trace is of a warm-up run, for the ops alone: the timed runs ran without it."""
        return self.timer == "one run traced"
    reference_slots: tuple[int, ...] = ()  # per reference run: how many kernel runs came before it

    @property
    def traced_runs(self) -> int:
        """How many of the timed runs the trace holds (all of them, or the first where the rest were too many
        events to read)."""
        return len(self.events.per_run_s) if self.events is not None else 0


@dataclass(frozen=True)
class CacheRuns:
    """The cache state of the timed runs: ``evict`` (None: warm) runs after each run's inputs are prepared and
    before its clock starts; up to ``warm_check`` warm runs follow the timed ones, to tell whether the eviction took
    (see :data:`WARM_CHECK_LEAST`)."""

    evict: Callable[[], None] | None = None
    warm_check: int = 0


WARM_RUNS = CacheRuns()  # no eviction, no check
# A warm-up run this long or longer: the timing that follows is said at once (a 1 s run's had been silent for 15 s).
SLOW_RUN_S = 1.0


@dataclass(frozen=True)
class Beside:
    """A reference kernel to alternate with the timed runs (see :mod:`.machine.reference_kernels`): after a kernel
    run once ``every_s`` has passed since the last reference (0: after every run, as a calibration wants)."""

    module_name: str
    prepare: Callable[[], Any]
    execute: Callable[[Any], Any]
    every_s: float = 0.1


# settled(kernel wall times, reference wall times, each reference's slot) -> whether sampling may stop
Settled = Callable[[Sequence[float], Sequence[float], Sequence[int]], bool]
# agree(this process's vote: "more", "done" or "out" of budget) -> whether every process stops now: the stopping
# decision of a measurement that spans processes, taken together (see .peers)
Agree = Callable[[str], bool]


@dataclass(frozen=True)
class _Run:
    """One run as the host saw it: wall clock, minor page faults and CPU waiting share (None where not counted)."""

    wall: float
    faults: int | None
    waiting: float | None


@dataclass
class Runs:
    """What the loop recorded: the wall clock and page faults of each kernel run and each reference run, and the
    CPU waiting share of each kernel run."""

    walls: list[float]
    refs: list[float]
    faults: list[int]
    waiting: list[float]
    ref_faults: list[int]
    others: float | None = None  # share of all CPUs other processes used meanwhile (None: not readable)
    _: KW_ONLY  # fields from the seventh on are given by keyword
    warm: list[float] = field(default_factory=list)  # wall clock of the warm check runs
    slots: list[int] = field(default_factory=list)  # per reference run: how many kernel runs came before it

    def add(self, reference: bool, run: _Run) -> None:
        if reference:
            self.refs.append(run.wall)
            self.slots.append(len(self.walls))
            if run.faults is not None:
                self.ref_faults.append(run.faults)
            return
        self.walls.append(run.wall)
        if run.faults is not None:
            self.faults.append(run.faults)
        if run.waiting is not None:
            self.waiting.append(run.waiting)

    def kernel_faults(self) -> tuple[int, ...]:
        return tuple(self.faults) if len(self.faults) == len(self.walls) else ()

    def kernel_waiting(self) -> tuple[float, ...]:
        return tuple(self.waiting) if len(self.waiting) == len(self.walls) else ()

    def reference_faults(self) -> tuple[int, ...]:
        return tuple(self.ref_faults) if len(self.ref_faults) == len(self.refs) else ()


def _timed(prepare: Callable[[], Any], execute: Callable[[Any], Any], marker: str = KERNEL_RUN_MARKER,
           run: int = 0, evict: Callable[[], None] | None = None) -> _Run:
    """Wall clock, minor page faults and CPU waiting share of one run; ``evict``: empty the cache after the
    inputs are prepared (fresh donated copies pass through it), before the clock starts."""
    from jax.profiler import TraceAnnotation

    begun = time.perf_counter()
    args = prepare()
    evicting = 0.0
    if evict is not None:
        evicting = time.perf_counter()
        evict()
        evicting = time.perf_counter() - evicting
        spend("cache state", evicting)
    # Our own host event around the run (outside the prepare step), carrying the run number: the trace reader
    # keeps only the device work launched inside these windows, and tells the runs apart by them.
    with TraceAnnotation(marker, run=run):
        threads = thread_times_ns()
        faults = minor_page_faults()
        t0 = time.perf_counter()
        outputs = execute(args)
        wall = time.perf_counter() - t0
        after = minor_page_faults()
        threads_after = thread_times_ns()
    # Freeing a large output (munmap on a CPU) is host work of the harness: keep it out of the clock.
    del outputs, args
    # Each second once: the eviction (above) is not also the loop's own work.
    if marker == KERNEL_RUN_MARKER:
        spend("timed runs", wall)
        spend("between runs", time.perf_counter() - begun - wall - evicting)
    else:
        spend("references" if marker == REFERENCE_RUN_MARKER else "cache state",
              time.perf_counter() - begun - evicting)
    return _Run(wall, after - faults if after is not None and faults is not None else None,
                waiting_share(threads, threads_after))


def _progress(text: str) -> None:
    say(text)


def run_adaptively(prepare: Callable[[], Any], execute: Callable[[Any], Any], settings: TimingSettings,
                    max_runs: int | None = None, beside: Beside | None = None,
                    settled: Settled | None = None, *, cache: CacheRuns = WARM_RUNS, agree: Agree | None = None,
                    label: str = "") -> Runs:
    runs = Runs([], [], [], [], [])
    with Contention() as others:
        _loop(runs, prepare, execute, settings, max_runs, beside, settled=settled, evict=cache.evict, agree=agree,
              label=label)
    runs.others = others.share
    if cache.warm_check:
        with phase("cache state"):
            outputs = execute(prepare())  # the first warm run fills the cache: untimed
            del outputs
        # Processes in lockstep make every warm run: each run of their program waits for all of them.
        while len(runs.warm) < cache.warm_check and (agree is not None or not _checked_enough(runs.warm, settings)):
            runs.warm.append(_timed(prepare, execute, WARM_RUN_MARKER, len(runs.warm)).wall)
    return runs


# The warm runs that check a cold measurement stop after this many once they have taken WARM_CHECK_SHARE of the
# minimum sampling time (a check of a 37 ms kernel took 0.2 s, beside its 0.5 s of cold runs, and a slower CPU's runs
# are longer still); not in a program that spans processes, whose processes must make the same runs.
WARM_CHECK_LEAST = 3
WARM_CHECK_SHARE = 0.1


def _checked_enough(warm: Sequence[float], settings: TimingSettings) -> bool:
    return len(warm) >= WARM_CHECK_LEAST and sum(warm) >= WARM_CHECK_SHARE * settings.min_time_s


def _loop(runs: Runs, prepare: Callable[[], Any], execute: Callable[[Any], Any], settings: TimingSettings,
          max_runs: int | None, beside: Beside | None, *, settled: Settled | None,
          evict: Callable[[], None] | None = None, agree: Agree | None = None, label: str = "") -> None:
    walls, ref_walls = runs.walls, runs.refs
    started = said = referenced = time.perf_counter()
    if beside is not None:
        runs.add(True, _timed(beside.prepare, beside.execute, REFERENCE_RUN_MARKER, 0))
    while len(walls) < (max_runs or settings.max_runs):
        runs.add(False, _timed(prepare, execute, KERNEL_RUN_MARKER, len(walls), evict))
        # A reference once ``every_s`` has passed (after every run where processes decide together)
        if beside is not None and (agree is not None or time.perf_counter() - referenced >= beside.every_s):
            runs.add(True, _timed(beside.prepare, beside.execute, REFERENCE_RUN_MARKER, len(ref_walls)))
            referenced = time.perf_counter()
        # The budget counts everything the loop spends, fresh donated copies and references included.
        spent = time.perf_counter() - started
        if time.perf_counter() - said >= PROGRESS_EVERY_S:  # a slow kernel: say that it is being timed
            said = time.perf_counter()
            _progress(f"still timing {label or 'a kernel'}: {len(walls)} runs in {spent:.0f} s (the last "
                      f"{walls[-1]:.2f} s; at least {settings.min_runs} runs, at most {settings.budget_s:.0f} s)")
        if len(walls) >= settings.min_runs:
            deciding = time.perf_counter()
            if settled is not None:
                done = settled(walls, ref_walls, runs.slots)
            else:
                done = relative_iqr(walls) <= settings.target_spread
            vote = "out" if spent >= settings.budget_s else "done" if spent >= settings.min_time_s and done else "more"
            stop = agree(vote) if agree is not None else vote != "more"
            spend("between runs", time.perf_counter() - deciding)
            if stop:
                break
    if beside is not None and runs.slots[-1] != len(walls):  # the last kernel run is bracketed too
        runs.add(True, _timed(beside.prepare, beside.execute, REFERENCE_RUN_MARKER, len(ref_walls)))


# The reference kernels (their ``execute``) warmed up in this process: each once, not beside every kernel's warm-up
# (a reference run of 7-16 ms per kernel, about 0.2 s of the example suite's 18 kernels on a 2-core Xeon VM).
_WARMED: weakref.WeakSet[Callable[[Any], Any]] = weakref.WeakSet()


def warm_up(prepare: Callable[[], Any], execute: Callable[[Any], Any], settings: TimingSettings,
             beside: Beside | None, *, probe: bool, label: str = "") -> Probe | None:
    """The untimed runs; the last under the profiler where ``probe``, marked as a kernel run (None where not
    probed, or where the profiler cannot start: the timed runs then say why). The reference ``beside`` runs once
    after the kernel's first where it has not yet run in this process."""
    from .profiler import probe_run

    found, wall = None, 0.0
    with phase("warm-up"):
        for k in range(settings.warmup):
            begun = time.perf_counter()
            if probe and k == settings.warmup - 1:
                found = probe_run(prepare, execute, KERNEL_RUN_MARKER)
            else:
                execute(prepare())
            wall = time.perf_counter() - begun
            if beside is not None and beside.execute not in _WARMED:
                beside.execute(beside.prepare())
                _WARMED.add(beside.execute)
    if wall >= SLOW_RUN_S:  # said now, not after the first PROGRESS_EVERY_S of silence
        _progress(f"timing {label or 'a kernel'}: a warm-up run took {wall:.1f} s; at least {settings.min_runs} runs "
                  f"(about {settings.min_runs * wall:.0f} s), at most {settings.budget_s:.0f} s")
    return found


def from_trace(xspace: bytes, runs: Runs, module_name: str, platform: str, settings: TimingSettings,
                beside: Beside | None, *, plan: TracePlan = EVERY_RUN, profile: Any = None) -> Timed:
    """The runs' device times read from the trace (their wall clock, with the reason, where it cannot tell them
    and the timer is "auto", or where ``plan`` traced only the first runs); ``profile``: the trace already parsed."""
    from .profiler import ProfilerUnavailable

    walls, refs = runs.walls, runs.refs
    traced = plan.traced or len(walls)
    if plan.events is not None and plan.events * traced * READ_S_PER_EVENT > PROGRESS_EVERY_S:
        _progress(f"reading the trace of {module_name}: about {plan.events * traced:,} events in {traced} "
                  f"run{'s' if traced != 1 else ''}, "
                  f"about {plan.events * traced * READ_S_PER_EVENT:.0f} s")
    try:
        from .profiler import parsed

        # Where only the per-op times are read (one traced run), the consumers' "end:" events are not needed.
        skip = (CONSUMER_PREFIX,) if plan.traced is not None else ()
        index = TraceIndex.of(flatten(profile if profile is not None else parsed(xspace), skip=skip), platform)
        found: RunTimes = run_times(index.events, module_name, platform, traced, KERNEL_RUN_MARKER, index=index)
    except TraceError as exc:
        if settings.timer == "profiler":
            raise ProfilerUnavailable(f"trace unusable: {exc}") from None
        return by_wall_clock(runs, f"trace unusable: {exc}")
    if plan.traced is not None:
        timed = by_wall_clock(runs, plan.reason(found.per_run_s[0], walls))
        return replace(timed, xspace=xspace, events=found, timer="one run traced",
                       timing=replace(timed.timing, method=f"{found.method} (the first run)"))
    timing = Timing(found.per_run_s, tuple(walls), "profiler", "", found.method, runs.kernel_faults(),
                    waiting_per_run=runs.kernel_waiting(), others_cpu_share=runs.others)
    warm = _warm_times(index, module_name, platform, runs.warm)
    if beside is None:
        return Timed(timing, xspace, found, warm_s=warm, timer="every run traced")
    try:
        reference = run_times(index.events, beside.module_name, platform, len(refs), REFERENCE_RUN_MARKER,
                              index=index).per_run_s
        return Timed(timing, xspace, found, reference, "profiler", runs.reference_faults(), warm_s=warm,
                     timer="every run traced",
                     reference_slots=tuple(runs.slots))
    except TraceError:  # the kernel's device times stand; the reference falls back to its wall clock
        return Timed(timing, xspace, found, tuple(refs), "wallclock", runs.reference_faults(), warm_s=warm,
                     timer="every run traced",
                     reference_slots=tuple(runs.slots))


def _warm_times(index: TraceIndex, module_name: str, platform: str, walls: Sequence[float]) -> tuple[float, ...]:
    """The device times of the warm check runs from the trace (their wall clock where it cannot tell them)."""
    if not walls:
        return ()
    try:
        return run_times(index.events, module_name, platform, len(walls), WARM_RUN_MARKER, index=index).per_run_s
    except TraceError:
        return tuple(walls)


def by_wall_clock(runs: Runs, reason: str) -> Timed:
    walls, refs = runs.walls, runs.refs
    return Timed(Timing(tuple(walls), tuple(walls), "wallclock", reason, faults_per_run=runs.kernel_faults(),
                        waiting_per_run=runs.kernel_waiting(), others_cpu_share=runs.others),
                 reference_s=tuple(refs), reference_timer="wallclock" if refs else "",
                 reference_faults=runs.reference_faults(), warm_s=tuple(runs.warm), reference_slots=tuple(runs.slots))
