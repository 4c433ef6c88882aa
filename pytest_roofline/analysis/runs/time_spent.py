"""Where the wall time of measuring a kernel goes, phase by phase: compile, warm-up, the timed runs, the references
run beside them, the profiler, reading its trace, the cache-state check, a second measurement of a shortfall, the
saved artifacts. A :class:`Stopwatch` is opened around a measurement; the steps inside add to whichever one is open
(a context variable), so no step passes it along and a measurement with none open pays nothing. Pure: no JAX."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PHASES", "TimeSpent", "Stopwatch", "spend", "phase"]

# The phases, in the order a measurement goes through them (and a table shows them).
PHASES = (
    "compile",  # tracing, lowering and compiling the kernel
    "inputs",  # waiting for the kernel's inputs (JAX computes a test's arrays asynchronously) and placing them
    "hardware",  # detecting the device and reading (or measuring) its ceilings
    "warm-up",  # the untimed runs before the timed ones
    "timed runs",  # the runs that count: the wall clock of each
    "between runs",  # the loop's own work around each timed run (fresh donated inputs, the stopping rule)
    "references",  # the reference kernel run beside each timed run (live ceilings)
    "profiler",  # starting and stopping the profiler
    "trace reading",  # turning the trace into per-run and per-op device times
    "second pass",  # the ops timed again with command buffers off, where the timed runs' trace hid them (a GPU)
    "cache state",  # evicting the cache before cold runs, and the warm runs that check the eviction
    "model",  # counting the program and the roofline model, before and after the runs
    "second measurement",  # a shortfall measured again before a test fails
    "artifacts",  # the trace and HLO saved for a failure
    "everything else",  # the rest of the roofline(...) call (settings, verdict, record)
)


@dataclass(frozen=True)
class TimeSpent:
    """Seconds per phase (only phases that took time are listed)."""

    seconds: Mapping[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def get(self, name: str) -> float:
        return self.seconds.get(name, 0.0)

    def to_dict(self) -> dict[str, float]:
        ordered = sorted(self.seconds, key=lambda p: PHASES.index(p) if p in PHASES else len(PHASES))
        return {p: round(self.seconds[p], 6) for p in ordered}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TimeSpent:
        return cls({str(k): float(v) for k, v in data.items()})


_open: ContextVar[Stopwatch | None] = ContextVar("pytest_roofline_stopwatch", default=None)


class Stopwatch:
    """Adds up the phases of what runs while it is open (``with Stopwatch() as watch: ...``); stopwatches nest,
    the innermost one open collects. Phases nest too: a phase keeps only the time that no phase inside it took."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}
        self._started = 0.0
        self._elapsed = 0.0
        self._token: Token[Stopwatch | None] | None = None
        self._inner: list[float] = []  # per open phase: the seconds the phases inside it took

    def add(self, name: str, seconds: float) -> None:
        if name not in PHASES:
            raise ValueError(f"unknown phase {name!r}; phases: {', '.join(PHASES)}")
        seconds = max(seconds, 0.0)
        self._seconds[name] = self._seconds.get(name, 0.0) + seconds
        if self._inner:
            self._inner[-1] += seconds

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as phase ``name``, less the phases inside it."""
        start = time.perf_counter()
        self._inner.append(0.0)
        try:
            yield
        finally:
            inner = self._inner.pop()
            self.add(name, time.perf_counter() - start - inner)
            if self._inner:  # the whole block, this phase and those inside it, is inside the enclosing one
                self._inner[-1] += inner

    @property
    def elapsed(self) -> float:
        """Wall time between opening and closing it (so far, while open)."""
        return self._elapsed if self._token is None else time.perf_counter() - self._started

    def spent(self, rest: str | None = None) -> TimeSpent:
        """The phases so far; ``rest``: the phase that gets the elapsed time no phase accounts for."""
        seconds = dict(self._seconds)
        if rest is not None:
            seconds[rest] = seconds.get(rest, 0.0) + max(self.elapsed - sum(self._seconds.values()), 0.0)
        return TimeSpent(seconds)

    def __enter__(self) -> Stopwatch:
        self._started = time.perf_counter()
        self._token = _open.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        _open.reset(self._token)
        self._token = None
        self._elapsed = time.perf_counter() - self._started


def spend(name: str, seconds: float) -> None:
    """Add ``seconds`` to phase ``name`` of the open stopwatch (nothing when none is open)."""
    _known(name)
    watch = _open.get()
    if watch is not None:
        watch.add(name, seconds)


def _known(name: str) -> None:
    """A phase name is checked whether or not a stopwatch is open: a name only a GPU's path uses must fail the
    CPU's tests too."""
    if name not in PHASES:
        raise ValueError(f"unknown phase {name!r}; phases: {', '.join(PHASES)}")


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as phase ``name`` of the open stopwatch, less the phases inside it (nothing when none is
    open)."""
    _known(name)
    watch = _open.get()
    if watch is None:
        yield
        return
    with watch.phase(name):
        yield
