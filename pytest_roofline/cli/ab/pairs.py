"""The schedule of serving pairs: the rounds in pairs of pytest processes, one per side (``plugin/ab/server.py``), each
collecting the selected tests once and measuring a test on request.

By default (:data:`ROUND_PER_PAIR`) a pair runs every test not yet settled for one round: its two processes prepare
at the same time (every kernel compiled, its call kept, nothing timed) and then measure in turn, and each round is a
new draw of both processes. With ``--long-lived`` (:data:`LONG_LIVED`) a pair runs every test not yet settled for two
rounds (base-head, head-base) and is stopped; the next pair goes on where it left off. The rounds of a test run
seconds apart on the two sides, so a neighbour that slows the machine slows both; and since two processes keep
offsets of their own for as long as they live (bench/process_draw.py measures them; their cause is not pinned down),
each pair's mean ratio, not each round, is one unit of the interval (:func:`...history.paired.judge_pairs`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ...ab.same_programs import deselect_args
from ...history.paired import (
    MIN_ROUNDS,
    PairedKernel,
    RoundReport,
    Side,
    collect,
    judge_kernel,
    judge_pairs,
    schedule,
    settled,
)
from ...history.reports import Run
from ...records.kernel_record import KernelRecord
from ..errors import CliError
from .job import Found, Job, Selection, round_line
from .served import Server, ServeUnavailable, start_pair

__all__ = ["ServedPairs", "ROUND_PER_PAIR", "LONG_LIVED", "PAIR_ROUNDS", "OUT_OF_MEMORY"]

# Rounds per long-lived pair of processes (base then head, head then base): one unit of the interval.
PAIR_ROUNDS = 2
# What a kernel that could not keep its inputs in device memory beside the other process's says (lower case).
OUT_OF_MEMORY = ("resource_exhausted", "out of memory")


@dataclass(frozen=True)
class ServedPairs:
    """Pairs of serving processes, ``pair_rounds`` rounds each; ``prepare``: each process compiles every test before
    its first round (the two sides at once), so that a round only measures. ``name`` and ``unit``: see
    :class:`.job.Schedule`."""

    name: str
    unit: str
    pair_rounds: int
    prepare: bool

    def run(self, job: Job, selection: Selection) -> Found:
        first = selection.pair or start_pair(job.sides, job.root, selection.args, job.env, job.tmp,
                                             "first prepared" if self.prepare else "plain")
        if self.pair_rounds > 1:
            base, head = first
            job.log(f"kernel by kernel in pairs of long-lived processes: {len(head.items)} tests collected at the "
                    f"head, {len(base.items)} at the base")
        walk = _Walk(job, self, selection, first)
        try:
            walk.all_pairs()
        except ServeUnavailable as exc:
            raise CliError(f"a pytest process of a round stopped: {exc}") from None
        return walk.found()


ROUND_PER_PAIR = ServedPairs("a pair per round", "rounds", 1, prepare=True)
LONG_LIVED = ServedPairs("long-lived pairs", "kernels", PAIR_ROUNDS, prepare=False)


@dataclass
class _Test:
    """One test's rounds, pair of processes by pair, and its kernels' latest verdicts."""

    nodeid: str
    pairs: list[list[tuple[RoundReport, RoundReport]]] = field(default_factory=list)
    judged: list[PairedKernel] = field(default_factory=list)

    @property
    def rounds(self) -> int:
        return sum(len(p) for p in self.pairs)

    def finished(self, max_drop: float | None) -> bool:
        """Judge it again; whether more pairs can change nothing (settled, an error, or no kernel)."""
        self.judged = judge_pairs(self.pairs, max_drop)
        if not self.judged or any(k.verdict == "error" for k in self.judged):
            return True
        return len(self.pairs) >= MIN_ROUNDS and settled(self.judged)


class _Walk:
    """The pairs of one selection: each pair runs every test not yet settled for its rounds (ABBA) and is stopped;
    the next pair goes on, up to the rounds asked for, the budget, or every test settled. The first pair is started
    already; it runs the tests one side has once (where no programs pass chose the tests)."""

    def __init__(self, job: Job, chosen: ServedPairs, selection: Selection, first: tuple[Server, Server]) -> None:
        base, head = first
        self.job, self.chosen, self.selection, self.first = job, chosen, selection, first
        timed = selection.timed
        self.tests = {n: _Test(n) for n in head.items if n in set(base.items) and (timed is None or n in timed)}
        self.items = list(dict.fromkeys([*head.items, *base.items]))
        self.kernels: list[PairedKernel] = []
        self.fallback: list[str] = []
        self.last: dict[tuple[str, str], KernelRecord] = {}
        self.seconds = (0.0, 0.0)
        self.pending = list(self.tests)
        self.count = job.options.rounds // chosen.pair_rounds
        self.stopped = (f"{self.count} rounds run" if chosen.pair_rounds == 1 else
                        f"each test in pairs of processes ({chosen.pair_rounds} rounds each) until its verdicts "
                        "settled")

    def all_pairs(self) -> None:
        leaving: tuple[Server, ...] = ()  # the last pair, asked to end: it exits while the next one starts
        last_pair = 0.0
        try:
            for number in range(self.count):
                unit = "pairs" if self.chosen.pair_rounds > 1 else "rounds"
                if number and (why := self.job.over_budget(last_pair, number, unit)):
                    self.stopped = why
                    self._settle(self.pending)
                    break
                pair_start = time.perf_counter()
                pair = self.first if not number else self._next_pair()
                for server in leaving if number else ():  # ended before this pair measures: nothing else runs beside
                    server.reap()
                leaving = pair
                self._pair(pair, number)
                last_pair = time.perf_counter() - pair_start
                if self._after_pair(number, last_pair):
                    break
        finally:
            for server in leaving or self.first:
                server.stop()

    def _next_pair(self) -> tuple[Server, Server]:
        args = (*self.selection.args, *deselect_args([n for n in self.items if n not in self.tests]))
        return start_pair(self.job.sides, self.job.root, args, self.job.env, self.job.tmp,
                          "prepared" if self.chosen.prepare else "plain")

    def _pair(self, pair: tuple[Server, Server], number: int) -> None:
        """One pair's rounds of each test not yet settled; the pair is then asked to end."""
        base, head = pair
        try:
            if number == 0 and self.selection.timed is None:  # the tests one side has: not chosen by a programs pass
                self.kernels.extend(_one_sided(base, head))
            for nodeid in self.pending:
                test = self.tests[nodeid]
                test.pairs.append(_pair_rounds(pair, nodeid, test.rounds, self.job, self.chosen.pair_rounds))
        finally:
            base.quit()
            head.quit()
        self.last.update(head.last)
        self.seconds = (self.seconds[0] + base.seconds, self.seconds[1] + head.seconds)

    def _after_pair(self, number: int, seconds: float) -> bool:
        """Judge the tests run; say the progress; whether no pair is left to run."""
        last = number + 1 == self.count
        done = [n for n in self.pending if self.tests[n].finished(self.job.options.max_drop) or last]
        self.pending = [n for n in self.pending if n not in done]
        judged = [k for t in self.tests.values() for k in t.judged]
        if self.chosen.pair_rounds == 1:
            self.job.log(round_line(number, self.count, seconds, judged))
        else:
            self.job.log(f"pair of processes {number + 1}/{self.count}: {len(self.tests) - len(self.pending)} of "
                         f"{len(self.tests)} tests done")
        self._settle(done)
        if self.pending:
            return False
        if self.chosen.pair_rounds == 1 and settled(judged):
            self.stopped = f"every verdict settled after {number + 1} rounds"
        return True

    def _settle(self, nodeids: Sequence[str]) -> None:
        """Tests that need no more rounds: their kernels' verdicts, or their place among those left to processes
        that run to their end (out of device memory beside the other process)."""
        order = list(self.tests)
        for nodeid in nodeids:
            test, number = self.tests[nodeid], order.index(nodeid) + 1
            if any(any(s in k.error.lower() for s in OUT_OF_MEMORY) for k in test.judged):
                self.fallback.append(nodeid)
                self.job.log(f"[{number}/{len(order)}] {nodeid}: out of device memory beside the other process: "
                             "measured in per-round processes instead")
                continue
            self.kernels.extend(test.judged)
            if test.judged:
                verdicts = ", ".join(f"{k.label} {k.verdict}" + (f" {k.median:.2f}" if k.median is not None else "")
                                     for k in test.judged)
                self.job.log(f"[{number}/{len(order)}] {nodeid}: {test.rounds} rounds in {len(test.pairs)} pairs of "
                             f"processes: {verdicts}")

    def found(self) -> Found:
        most = max((t.rounds for t in self.tests.values() if t.nodeid not in self.fallback and t.judged), default=0)
        last = Run("the head's long-lived process", "", None, False, None, {}, records=tuple(self.last.values()))
        rest = None
        if self.fallback:
            others = [n for n in self.items if n not in self.fallback]
            rest = Selection((*self.selection.args, *deselect_args(others)), frozenset(self.fallback))
        return Found(self.kernels, most, self.stopped, self.seconds, last, self.chosen.unit, rest=rest,
                     listening=self.first[1].listening)


def _pair_rounds(pair: tuple[Server, Server], nodeid: str, done: int, job: Job,
                 pair_rounds: int) -> list[tuple[RoundReport, RoundReport]]:
    """One test's rounds in one pair of processes, in the ABBA order that continues from ``done`` rounds."""
    base, head = pair
    rounds = []
    for index, order in enumerate(schedule(done + pair_rounds)[done:], start=done):
        if job.on_round is not None:
            job.on_round(index)
        last = index == done + pair_rounds - 1
        seen = {side: (base if side == "base" else head).run(nodeid, last) for side in order}
        rounds.append((seen["base"], seen["head"]))
    return rounds


def _one_sided(base: Server, head: Server) -> list[PairedKernel]:
    """The tests only one side has: their kernels, run once, added or removed."""
    only: list[tuple[str, Side]] = [(n, "head") for n in head.items if n not in set(base.items)]
    only += [(n, "base") for n in base.items if n not in set(head.items)]
    kernels: list[PairedKernel] = []
    for nodeid, side in only:
        found, nothing = (base if side == "base" else head).run(nodeid, last=True), RoundReport({}, {})
        kernels.extend(judge_kernel(k) for k in collect([(found, nothing) if side == "base" else (nothing, found)]))
    return kernels
