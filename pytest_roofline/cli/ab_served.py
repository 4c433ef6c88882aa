"""``pytest-roofline ab --long-lived``: one long-lived pytest process per revision (``plugin/ab_serve.py``), each
collecting the selected tests once; the tests that measure kernels are measured again on request in alternating
order (ABBA per test: base-head, head-base, ...), each test stopping as soon as the paired verdicts of its kernels
are settled. The rounds of one test run seconds apart on the two sides, so a neighbour that slows the machine
slows both; but each side keeps one process's draw (memory placement, thread layout) for all of a test's rounds,
which is why this is not the default schedule.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..history.paired import MIN_ROUNDS, PairedKernel, RoundReport, Side, collect, judge_kernel, schedule, settled
from ..history.records import KernelRecord, Unmeasured
from .analyze import CliError

__all__ = ["Server", "served_kernels", "OUT_OF_MEMORY", "ServedOutcome", "EXIT_NAMES", "problem_line"]

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
    items: list[str] = field(default_factory=list)
    seconds: float = 0.0  # wall time spent answering requests
    last: dict[tuple[str, str], KernelRecord] = field(default_factory=dict)  # each kernel's latest record

    @classmethod
    def start(cls, name: Side, label: str, command: Sequence[str], cwd: Path, env: dict[str, str],
              log: Path) -> Server:
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        with open(log, "wb") as out:
            process = subprocess.Popen([*command[:4], f"--serve={request_r},{answer_w}", *command[4:]], cwd=cwd,
                                       env=env, stdout=out, stderr=subprocess.STDOUT, pass_fds=(request_r, answer_w))
        os.close(request_r)
        os.close(answer_w)
        return cls(name, label, process, os.fdopen(request_w, "w", encoding="utf-8"),
                   os.fdopen(answer_r, "r", encoding="utf-8"), log)

    def ready(self) -> None:
        """Wait for its collection; its test ids (a usage or collection error, or no test: a CliError)."""
        self.items = [str(i) for i in self._answer().get("items") or []]
        if not self.items:
            self.stop()
            self._cannot_run()

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
        try:
            self.requests.write(json.dumps({"quit": True}) + "\n")
            self.requests.flush()
            self.requests.close()
        except OSError:
            pass
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


@dataclass
class ServedOutcome:
    """What the kernel-by-kernel comparison found: each kernel's verdict, the most rounds any test ran, the
    tests left to per-round processes (their inputs did not fit beside the other process), and what was said."""

    kernels: list[PairedKernel]
    rounds: int
    fallback: list[str]
    stopped: str


def served_kernels(base: Server, head: Server, max_rounds: int, max_drop: float | None,
                   log: Callable[[str], None], on_round: Callable[[int], None] | None = None) -> ServedOutcome:
    """Each test both sides collected, in ABBA rounds until its kernels' verdicts settle (or ``max_rounds``)."""
    both = [n for n in head.items if n in set(base.items)]
    kernels: list[PairedKernel] = []
    fallback: list[str] = []
    most = 0
    for number, nodeid in enumerate(both, 1):
        judged, rounds = _one_test(base, head, nodeid, max_rounds, max_drop, on_round)
        if any(any(s in k.error.lower() for s in OUT_OF_MEMORY) for k in judged):
            fallback.append(nodeid)
            log(f"[{number}/{len(both)}] {nodeid}: out of device memory beside the other process: measured in "
                f"per-round processes instead")
            continue
        kernels.extend(judged)
        most = max(most, rounds)
        if judged:
            verdicts = ", ".join(f"{k.label} {k.verdict}" + (f" {k.median:.2f}" if k.median is not None else "")
                                 for k in judged)
            log(f"[{number}/{len(both)}] {nodeid}: {rounds} rounds: {verdicts}")
    only: list[tuple[str, Side]] = [(n, "head") for n in head.items if n not in set(base.items)]
    only += [(n, "base") for n in base.items if n not in set(head.items)]
    for nodeid, side in only:
        kernels.extend(_one_side(base if side == "base" else head, nodeid, side))
    return ServedOutcome(kernels, most, fallback, "each test's rounds stopped when its verdicts settled")


def _one_test(base: Server, head: Server, nodeid: str, max_rounds: int, max_drop: float | None,
              on_round: Callable[[int], None] | None) -> tuple[list[PairedKernel], int]:
    """One test's kernels, round by round; none when the test measures no kernel on either side."""
    rounds: list[tuple[RoundReport, RoundReport]] = []
    judged: list[PairedKernel] = []
    for index, order in enumerate(schedule(max_rounds)):
        if on_round is not None:
            on_round(index)
        seen = {side: (base if side == "base" else head).run(nodeid) for side in order}
        rounds.append((seen["base"], seen["head"]))
        judged = [judge_kernel(k, max_drop) for k in collect(rounds)]
        if not judged or any(k.verdict == "error" for k in judged):
            return judged, index + 1  # a plain test, or a kernel that cannot be measured: more rounds change nothing
        if index + 1 >= MIN_ROUNDS and settled(judged):
            return judged, index + 1
    return judged, len(rounds)


def _one_side(server: Server, nodeid: str, side: Side) -> list[PairedKernel]:
    """A test that only one side has: its kernels, run once, are added or removed."""
    found, nothing = server.run(nodeid), RoundReport({}, {})
    return [judge_kernel(k) for k in collect([(found, nothing) if side == "base" else (nothing, found)])]


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
                  extra: Sequence[str], env: dict[str, str], tmp: Path, child: Path) -> tuple[Server, Server]:
    """Start both sides (collecting at the same time), then wait for each; a side that cannot serve raises
    :class:`ServeUnavailable` after both are stopped."""
    servers = [Server.start(name, label, [sys.executable, str(child), str(root), base_root, *args, *extra], cwd, env,
                            tmp / f"{name}.log") for name, label, cwd, base_root in sides]
    try:
        for server in servers:
            server.ready()
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers[0], servers[1]
