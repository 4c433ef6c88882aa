"""``pytest-roofline ab``'s rounds in pairs of pytest processes that serve requests, one per revision
(``plugin/ab_server.py``), each collecting the selected tests once and measuring a test on request. By default a
pair runs every test not yet settled for one round: its two processes prepare at the same time (every kernel
compiled, its call kept, nothing timed) and then measure in turn, and each round is a new draw of both processes.
With ``--long-lived`` a pair runs every test not yet settled for two rounds (base-head, head-base) and is stopped;
the next pair goes on where it left off. The rounds of a test run seconds apart on the two sides, so a
neighbour that slows the machine slows both; and since two processes keep offsets of their own for as long as
they live (bench/process_draw.py measures them; their cause is not pinned down), each pair's mean ratio, not each
round, is one unit of the interval (:func:`..history.paired.judge_pairs`).

JAX's persistent compilation cache is shared by the two processes (a temporary directory, unless the user set
one), for the first run of each test. Its key holds the program, the compiler options and the jaxlib version, so
the base and the head never share a program that differs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import IO, Any

from ..history.paired import (
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
from ..records.kernel_record import KernelRecord, Unmeasured
from .analyze import CliError

__all__ = [
    "Server",
    "served_kernels",
    "round_line",
    "OUT_OF_MEMORY",
    "ServedOutcome",
    "EXIT_NAMES",
    "problem_line",
    "PAIR_ROUNDS",
]

EXIT_NAMES = {2: "interrupted or errors during collection", 3: "internal error", 4: "usage error",
              5: "no tests collected"}

# What a kernel that could not keep its inputs in device memory beside the other process's says (lower case).
OUT_OF_MEMORY = ("resource_exhausted", "out of memory")


class ServeUnavailable(Exception):
    """A side cannot run as a long-lived process (its pytest-roofline has no serve mode, or it stopped)."""


@dataclass
class Server:
    """One side's long-lived pytest process and its two pipes."""

    name: Side
    label: str
    process: subprocess.Popen[bytes]
    requests: IO[str]
    answers: IO[str]
    log: Path
    _: KW_ONLY  # fields from the seventh on are given by keyword
    items: list[str] = field(default_factory=list)
    seconds: float = 0.0  # wall time spent answering requests
    last: dict[tuple[str, str], KernelRecord] = field(default_factory=dict)  # each kernel's latest record
    programs: dict[str, Any] | None = None  # a preparing process's programs pass (ProgramsPass.to_dict())
    found: str = ""  # the hardware a preparing process found ("CPU AMD EPYC x2", "NVIDIA H100 80GB HBM3")

    @classmethod
    def start(cls, name: Side, label: str, command: Sequence[str], cwd: Path, env: dict[str, str],
              log: Path, *, prepare: bool = False, first: bool = False) -> Server:
        """Start it (``prepare``: it compiles every test's kernels before saying its items, nothing timed;
        ``first``: it says what every test compiled with its items, then prepares the tests :meth:`prepare` names)."""
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        serve = [f"--serve={request_r},{answer_w}", *(["--prepare"] if prepare else []),
                 *(["--first"] if first else [])]
        with open(log, "wb") as out:
            process = subprocess.Popen([*command[:4], *serve, *command[4:]], cwd=cwd,
                                       env=env, stdout=out, stderr=subprocess.STDOUT, pass_fds=(request_r, answer_w))
        os.close(request_r)
        os.close(answer_w)
        return cls(name, label, process, os.fdopen(request_w, "w", encoding="utf-8"),
                   os.fdopen(answer_r, "r", encoding="utf-8"), log)

    def hardware(self) -> None:
        """Wait until a preparing process has found its hardware (calibrated a CPU, unless cached)."""
        self.found = str(self._answer().get("hardware") or "")

    def ready(self) -> None:
        """Wait for its collection (and preparation); its test ids (a usage or collection error, or no test: a
        CliError)."""
        answer = self._answer()
        if "hardware" in answer:  # a preparing process not waited for until now
            self.found = str(answer.get("hardware") or "")
            answer = self._answer()
        self.items = [str(i) for i in answer.get("items") or []]
        self.programs = answer.get("programs")  # a preparing process: what its programs pass found
        if not self.items:
            self.stop()
            self._cannot_run()

    def prepare(self, nodeids: Sequence[str]) -> None:
        """Ask a first pair's process to prepare these tests (the others it ran once are not timed)."""
        self.requests.write(json.dumps({"prepare": list(nodeids)}) + "\n")
        self.requests.flush()

    def prepared(self) -> None:
        """Wait until it has prepared them."""
        self._answer()

    def _cannot_run(self) -> None:
        """Say why pytest could not run this side's tests, where its exit status says so."""
        status = self.process.returncode
        if status in EXIT_NAMES:
            raise CliError(f"pytest cannot run the tests of {self.label}: exit status {status} ({EXIT_NAMES[status]}): "
                           f"{_log_problem(self.log)}")

    def _answer(self) -> dict[str, Any]:
        line = self.answers.readline()
        if not line:
            self.process.wait()
            self._cannot_run()
            raise ServeUnavailable(f"{self.label} stopped (exit status {self.process.returncode}): "
                                   f"{_log_problem(self.log)}")
        answer: dict[str, Any] = json.loads(line)
        if answer.get("error"):
            raise CliError(f"{self.label}: {answer['error']}")
        return answer

    def run(self, nodeid: str) -> RoundReport:
        """Run one test; its kernels' observations and the kernels it could not measure."""
        start = time.perf_counter()
        self.requests.write(json.dumps({"run": nodeid}) + "\n")
        self.requests.flush()
        answer = self._answer()
        self.seconds += time.perf_counter() - start
        records = [KernelRecord.from_dict(r) for r in answer.get("records") or ()]
        self.last.update({(r.nodeid, r.label): r for r in records})
        return RoundReport.of(records, [Unmeasured.from_dict(u) for u in answer.get("unmeasured") or ()])

    def stop(self) -> None:
        self.quit()
        self.reap()

    def quit(self) -> None:
        """Ask it to end, without waiting for it (its session's end and exit can overlap the next pair's start)."""
        if self.requests.closed:
            return  # asked already
        try:
            self.requests.write(json.dumps({"quit": True}) + "\n")
            self.requests.flush()
            self.requests.close()
        except OSError:
            pass

    def reap(self) -> None:
        """Wait until it has ended (killed after a minute)."""
        if self.answers.closed:
            return  # ended already
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.answers.close()


def _log_problem(log: Path) -> str:
    try:
        return problem_line(log.read_text(errors="replace"))
    except OSError:
        return "no output"


def problem_line(output: str) -> str:
    """The line of a pytest run's output that says what went wrong."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(("ERROR", "E ", "INTERNALERROR>")) or "Error" in line.split(":")[0]:
            return line
    return lines[-1] if lines else "no output"


# Rounds per pair of processes (base then head, head then base): a pair's two rounds are one unit of the interval.
PAIR_ROUNDS = 2


@dataclass
class ServedOutcome:
    """What the kernel-by-kernel comparison found: each kernel's verdict, the most rounds any test ran, the
    tests left to per-round processes (their inputs did not fit beside the other process), what was said, the
    head's latest record of each kernel and the seconds each side spent answering."""

    kernels: list[PairedKernel]
    rounds: int
    fallback: list[str]
    stopped: str
    last_head: list[KernelRecord] = field(default_factory=list)
    seconds: tuple[float, float] = (0.0, 0.0)


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


def served_kernels(first: tuple[Server, Server], start_pair: Callable[[], tuple[Server, Server]], max_rounds: int,
                   max_drop: float | None, log: Callable[[str], None],
                   on_round: Callable[[int], None] | None = None,
                   *, over_budget: Callable[[float, int], str] | None = None,
                   pair_rounds: int = PAIR_ROUNDS, timed: Collection[str] | None = None) -> ServedOutcome:
    """Each test both sides collected, in pairs of processes: each pair runs every test not yet settled for
    ``pair_rounds`` rounds (ABBA) and is stopped; the next pair (``start_pair``) goes on, up to ``max_rounds``
    rounds. ``first``: the first pair, started; every pair is stopped here. ``over_budget(seconds of the last
    pair, pairs run)``: why no more pair starts ("" where one may). With one round per pair each round is a
    fresh pair of processes, the default schedule of ``ab``. ``timed``: the tests to time, where the first pair's
    programs pass chose them (the tests one side has are then its verdicts, not timed here)."""
    base, head = first
    tests = {n: _Test(n) for n in head.items if n in set(base.items) and (timed is None or n in timed)}
    kernels: list[PairedKernel] = []
    fallback: list[str] = []
    last: dict[tuple[str, str], KernelRecord] = {}
    seconds = [0.0, 0.0]
    pending, count = list(tests), max_rounds // pair_rounds
    stopped = (f"{count} rounds run" if pair_rounds == 1 else
               f"each test in pairs of processes ({pair_rounds} rounds each) until its verdicts settled")
    last_pair = 0.0
    leaving: tuple[Server, ...] = ()  # the last pair, asked to end: it exits while the next one starts
    try:
        for number in range(count):
            if number and over_budget is not None and (why := over_budget(last_pair, number)):
                stopped = why
                for nodeid in pending:
                    _settle(tests[nodeid], list(tests).index(nodeid) + 1, len(tests), kernels, fallback, log)
                break
            pair_start = time.perf_counter()
            if number:
                base, head = start_pair()
                for server in leaving:  # ended before this pair measures: nothing else runs beside a round
                    server.reap()
            leaving = (base, head)
            one_sided = kernels if number == 0 and timed is None else None
            _pair(leaving, [tests[n] for n in pending], one_sided, on_round, pair_rounds)
            last.update(head.last)
            seconds = [seconds[0] + base.seconds, seconds[1] + head.seconds]
            last_pair = time.perf_counter() - pair_start
            done = [n for n in pending if tests[n].finished(max_drop) or number + 1 == count]
            pending = [n for n in pending if n not in done]
            log(_progress(number, count, last_pair, pair_rounds, [k for n in tests for k in tests[n].judged],
                          done=len(tests) - len(pending), total=len(tests)))
            for nodeid in done:
                _settle(tests[nodeid], list(tests).index(nodeid) + 1, len(tests), kernels, fallback, log)
            if not pending:
                if pair_rounds == 1 and settled([k for t in tests.values() for k in t.judged]):
                    stopped = f"every verdict settled after {number + 1} rounds"
                break
    finally:
        for server in leaving:
            server.reap()
    most = max((t.rounds for t in tests.values() if t.nodeid not in fallback and t.judged), default=0)
    return ServedOutcome(kernels, most, fallback, stopped, list(last.values()), (seconds[0], seconds[1]))


def _pair(pair: tuple[Server, Server], tests: Sequence[_Test], one_sided: list[PairedKernel] | None,
          on_round: Callable[[int], None] | None, pair_rounds: int) -> None:
    """One pair's rounds of each test in ``tests`` (``one_sided``: where the tests one side has go, for the first
    pair); the pair is then asked to end."""
    base, head = pair
    try:
        if one_sided is not None:
            one_sided.extend(_one_sided(base, head))
        for test in tests:
            test.pairs.append(_pair_rounds(base, head, test.nodeid, test.rounds, on_round, pair_rounds))
    finally:
        base.quit()
        head.quit()


def _settle(test: _Test, number: int, total: int, kernels: list[PairedKernel], fallback: list[str],
            log: Callable[[str], None]) -> None:
    """A test that needs no more rounds: its kernels' verdicts, or its place among those left to fresh
    processes (out of device memory beside the other process)."""
    if any(any(s in k.error.lower() for s in OUT_OF_MEMORY) for k in test.judged):
        fallback.append(test.nodeid)
        log(f"[{number}/{total}] {test.nodeid}: out of device memory beside the other process: measured in "
            f"per-round processes instead")
        return
    kernels.extend(test.judged)
    if test.judged:
        verdicts = ", ".join(f"{k.label} {k.verdict}" + (f" {k.median:.2f}" if k.median is not None else "")
                             for k in test.judged)
        log(f"[{number}/{total}] {test.nodeid}: {test.rounds} rounds in {len(test.pairs)} pairs of processes: "
            f"{verdicts}")


def _progress(number: int, count: int, seconds: float, pair_rounds: int, judged: Sequence[PairedKernel], *,
              done: int, total: int) -> str:
    """The line said after each pair of processes (each round, where a pair runs one)."""
    if pair_rounds == 1:
        return round_line(number, count, seconds, judged)
    return f"pair of processes {number + 1}/{count}: {done} of {total} tests done"


def round_line(index: int, count: int, seconds: float, judged: Sequence[PairedKernel]) -> str:
    """The progress line after round ``index`` (from 0) of ``count``, however its processes ran."""
    order = " then ".join(schedule(index + 1)[index])
    return (f"round {index + 1}/{count} ({order}, {seconds:.0f} s): "
            f"{sum(k.verdict == 'regression' for k in judged)} regressed so far, "
            f"{sum(not k.settled for k in judged)} kernel(s) still open")


def _pair_rounds(base: Server, head: Server, nodeid: str, done: int,
                 on_round: Callable[[int], None] | None,
                 pair_rounds: int = PAIR_ROUNDS) -> list[tuple[RoundReport, RoundReport]]:
    """One test's rounds in one pair of processes, in the ABBA order that continues from ``done`` rounds."""
    rounds = []
    for index, order in enumerate(schedule(done + pair_rounds)[done:], start=done):
        if on_round is not None:
            on_round(index)
        seen = {side: (base if side == "base" else head).run(nodeid) for side in order}
        rounds.append((seen["base"], seen["head"]))
    return rounds


def _one_sided(base: Server, head: Server) -> list[PairedKernel]:
    """The tests only one side has: their kernels, run once, added or removed."""
    only: list[tuple[str, Side]] = [(n, "head") for n in head.items if n not in set(base.items)]
    only += [(n, "base") for n in base.items if n not in set(head.items)]
    kernels: list[PairedKernel] = []
    for nodeid, side in only:
        found, nothing = (base if side == "base" else head).run(nodeid), RoundReport({}, {})
        kernels.extend(judge_kernel(k) for k in collect([(found, nothing) if side == "base" else (nothing, found)]))
    return kernels


def child_env(base_env: dict[str, str], cache_dir: Path) -> dict[str, str]:
    """The long-lived processes' environment: JAX's persistent compilation cache shared (unless the user set one)
    and every compile cached, and device memory taken as needed rather than preallocated (two processes share
    one accelerator)."""
    env = dict(base_env)
    if not env.get("JAX_COMPILATION_CACHE_DIR"):
        env["JAX_COMPILATION_CACHE_DIR"] = str(cache_dir)
        env.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    return env


def start_servers(sides: Sequence[tuple[Side, str, Path, str]], root: Path, args: Sequence[str],
                  extra: Sequence[str], env: dict[str, str], tmp: Path, *, child: Path, prepare: bool = False,
                  hardware_alone: bool = False, first: bool = False) -> tuple[Server, Server]:
    """Start both sides (collecting, and with ``prepare`` compiling, at the same time), then wait for each; a side
    that cannot serve raises :class:`ServeUnavailable` after both are stopped. ``hardware_alone``: the second
    starts once the first has found its hardware, so that a CPU calibrated there ran alone and is cached for
    every later process. ``first``: each is a comparison's programs pass first (:meth:`Server.start`)."""
    servers: list[Server] = []
    try:
        for name, label, cwd, base_root in sides:
            if servers and prepare and hardware_alone:
                servers[0].hardware()
            command = [sys.executable, str(child), str(root), base_root, *args, *extra]
            servers.append(Server.start(name, label, command, cwd, env, tmp / f"{name}.log", prepare=prepare,
                                        first=first))
        for server in servers:
            server.ready()
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers[0], servers[1]
