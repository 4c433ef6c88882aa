"""What every step of one ``pytest-roofline ab`` comparison shares: its options, its sides and folders
(:class:`Job`); the tests a schedule times (:class:`Selection`); what a schedule found (:class:`Found`); and the
interface every schedule implements (:class:`Schedule`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Protocol

from ...history.paired import PairedKernel, schedule
from ...history.reports import Run
from .served import Server
from .sides import SideProcess, side_env

__all__ = ["AbOptions", "Job", "Selection", "Found", "Schedule", "round_line", "NOTHING_MEASURED", "uses_xdist",
           "EMPTY_RUN"]

NOTHING_MEASURED = ("the selected tests measured no kernel on either side (no roofline(...) call ran, or the "
                    "pytest-roofline plugin is not active there)")
EMPTY_RUN = Run("", "", None, False, None, {}, records=())


@dataclass(frozen=True)
class AbOptions:
    base: str
    rounds: int
    max_drop: float | None = None
    pytest_args: tuple[str, ...] = ()
    long_lived: bool = False  # one long-lived process per side, each test in its own rounds
    strict: bool = False  # exit 1 for an undecided kernel too
    _: KW_ONLY  # fields from the seventh on are given by keyword
    time_all: bool = False  # time every kernel, also those that compile to the same program on both sides
    budget_s: float | None = None  # no round starts that would end past this many seconds from the start


@dataclass(frozen=True)
class Job:
    """One comparison: its options, the repository's root, the two sides, its scratch folder, where progress lines
    go (``log``) and who is told of each round before it starts (``on_round``: the false-alarm study starts and
    stops a neighbour there)."""

    options: AbOptions
    root: Path
    sides: tuple[SideProcess, SideProcess]
    tmp: Path
    log: Callable[[str], None]
    on_round: Callable[[int], None] | None = None
    _: KW_ONLY
    start: float = field(default_factory=time.perf_counter)

    @property
    def env(self) -> dict[str, str]:
        return side_env(self.tmp / "jax-cache")

    def side(self, name: str) -> SideProcess:
        return self.sides[name == "head"]

    def over_budget(self, last: float, done: int, unit: str = "rounds") -> str:
        """Why no round (or pair of processes) starts now ("" where one may): the next, as long as the last
        (``last`` seconds), would end past the budget."""
        budget = self.options.budget_s
        if budget is None:
            return ""
        elapsed = time.perf_counter() - self.start
        if elapsed + last <= budget:
            return ""
        return (f"the budget of {budget:.0f} s ran out after {done} {unit} ({elapsed:.0f} s spent, the last took "
                f"{last:.0f} s)")


@dataclass(frozen=True)
class Selection:
    """The tests a schedule times: its pytest arguments (the tests left out deselected), the tests chosen (None:
    every test both sides collect), and the first pair of processes where the programs pass started and prepared
    it."""

    args: tuple[str, ...]
    timed: frozenset[str] | None = None
    pair: tuple[Server, Server] | None = None
    _: KW_ONLY
    serves: bool = True  # False where a side could not start serving: only processes that run to their end


@dataclass
class Found:
    """What a schedule found: the kernels' verdicts, the most rounds run, why the rounds stopped, the seconds spent
    per side, the head's last records (for the HTML report) and the schedule's name; ``rest``: the tests it left to
    processes that run to their end (their inputs did not fit in device memory beside the other process)."""

    kernels: list[PairedKernel]
    rounds: int
    stopped: str
    spent: tuple[float, float]
    last_head: Run
    schedule: str = "rounds"
    _: KW_ONLY
    rest: Selection | None = None
    device: str = ""
    listening: bool = True  # False where the head's serving process said no pytest_roofline_ab hook wants the verdicts

    def merged(self, other: Found) -> Found:
        """This with the rounds of its ``rest`` (``other``)."""
        count = len(self.rest.timed or ()) if self.rest is not None else 0
        return Found([*self.kernels, *other.kernels], max(self.rounds, other.rounds),
                     f"{self.stopped}; {count} in per-round processes: {other.stopped}",
                     (self.spent[0] + other.spent[0], self.spent[1] + other.spent[1]), self.last_head, self.schedule,
                     device=self.device, listening=self.listening)


class Schedule(Protocol):
    """How the rounds of a selection are run: in pairs of serving processes, or in processes that run to their end.
    ``name``: which schedule, each its own ("fresh processes", "a pair per round", "long-lived pairs"); ``unit``: what
    the comparison reports as its schedule, the unit its verdicts come in ("rounds": every test not yet settled each
    round; "kernels": each test in its own rounds). ``run`` raises :class:`.served.ServeUnavailable` only before
    anything was measured (the comparison then runs another)."""

    @property
    def name(self) -> str: ...

    @property
    def unit(self) -> str: ...

    def run(self, job: Job, selection: Selection) -> Found: ...


def round_line(index: int, count: int, seconds: float, judged: Sequence[PairedKernel]) -> str:
    """The progress line after round ``index`` (from 0) of ``count``, however its processes ran."""
    order = " then ".join(schedule(index + 1)[index])
    return (f"round {index + 1}/{count} ({order}, {seconds:.0f} s): "
            f"{sum(k.verdict == 'regression' for k in judged)} regressed so far, "
            f"{sum(not k.settled for k in judged)} kernel(s) still open")


def uses_xdist(pytest_args: Sequence[str]) -> bool:
    """Whether the pytest arguments ask for xdist's workers (``-n``, ``--numprocesses``, ``--dist``)."""
    return any(a.startswith(("-n", "--numprocesses", "--dist")) for a in pytest_args)
