"""The driver's end of a serving side process (``plugin/ab/server.py``): started with its two pipes, it says hello
with its protocol version, then its hardware (a preparing process), its items, and what each test it is asked to run
measured (:mod:`pytest_roofline.ab.protocol`). A process that speaks another version is stopped and refused in one line
(:class:`ServeUnavailable`: the comparison measures that side in processes that run to their end); one that says
something unexpected is an error that names it."""

from __future__ import annotations

import importlib.util
import os
import queue
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import IO, Literal

from ...ab.protocol import (
    Failed,
    Go,
    Hardware,
    Hello,
    Items,
    Measured,
    Message,
    Prepare,
    Prepared,
    ProtocolError,
    Quit,
    RunTest,
    check_hello,
    decode,
    encode,
)
from ...ab.same_programs import ProgramsPass
from ...base.progress import say
from ...hardware.cpu import process_state
from ...history.paired import RoundReport, Side
from ...records.kernel_record import KernelRecord
from ..errors import CliError
from .sides import EXIT_NAMES, SideProcess, command, log_problem

__all__ = ["Server", "ServeUnavailable", "start_pair", "serve_args", "PairStart"]


# While an answer is awaited: a line each WAIT_SAY_S that says so; a process stopped (SIGSTOP, a debugger) for
# STOPPED_MAX_S is given up on. A running one is waited for: a test may measure for as long as its budget allows.
WAIT_SAY_S = 30.0
STOPPED_MAX_S = 300.0


class ServeUnavailable(Exception):
    """A side cannot run as a serving process (its pytest-roofline speaks another version of the protocol, or
    none, or it stopped)."""


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
    preparing: bool = False  # it says its hardware before its items
    items: list[str] = field(default_factory=list)
    seconds: float = 0.0  # wall time spent answering requests
    last: dict[tuple[str, str], KernelRecord] = field(default_factory=dict)  # each kernel's latest record
    programs: ProgramsPass | None = None  # a first pair's process: what its programs pass found
    found: str = ""  # the hardware a preparing process found ("CPU AMD EPYC x2", "NVIDIA H100 80GB HBM3")
    greeted: bool = False  # its hello read, its version the same as ours
    listening: bool = True  # whether a pytest_roofline_ab hook is implemented there
    hardware_said: bool = False
    lines: queue.Queue[str] | None = field(default=None, repr=False)  # its answers, read by a thread of their own

    @classmethod
    def start(cls, name: Side, label: str, command: Sequence[str], cwd: Path, env: dict[str, str],
              log: Path, *, prepare: bool = False, first: bool = False, wait: bool = False) -> Server:
        """Start it (``prepare``: it compiles every test's kernels before saying its items, nothing timed;
        ``first``: it says what every test compiled with its items, then prepares the tests :meth:`prepare` names;
        ``wait``: it finds its hardware only once :meth:`go` is called)."""
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        flags = "".join(f",{f}" for f, on in (("prepare", prepare), ("first", first), ("wait", wait)) if on)
        serve = f"--serve={request_r},{answer_w}{flags}"
        with open(log, "wb") as out:
            process = subprocess.Popen([*command[:4], serve, *command[4:]], cwd=cwd,
                                       env=env, stdout=out, stderr=subprocess.STDOUT, pass_fds=(request_r, answer_w))
        os.close(request_r)
        os.close(answer_w)
        return cls(name, label, process, os.fdopen(request_w, "w", encoding="utf-8"),
                   os.fdopen(answer_r, "r", encoding="utf-8"), log, preparing=prepare)

    def hardware(self) -> None:
        """Wait until a preparing process has found its hardware (calibrated a CPU, unless cached)."""
        answer = self._answer(Hardware)
        assert isinstance(answer, Hardware)
        self.found, self.hardware_said = answer.name, True

    def go(self) -> None:
        """Tell a process started to wait that it may find its hardware now."""
        self._send(Go())

    def ready(self) -> None:
        """Wait for its collection (and preparation); its test ids (a usage or collection error, or no test: a
        CliError)."""
        if self.preparing and not self.hardware_said:
            self.hardware()
        answer = self._answer(Items)
        assert isinstance(answer, Items)
        self.items, self.programs, self.listening = list(answer.nodeids), answer.programs, answer.listening
        if not self.items:
            self.stop()
            self._cannot_run()

    def prepare(self, nodeids: Sequence[str]) -> None:
        """Ask a first pair's process to prepare these tests (the others it ran once are not timed)."""
        self._send(Prepare(tuple(nodeids)))

    def prepared(self) -> None:
        """Wait until it has prepared them."""
        self._answer(Prepared)

    def _send(self, message: Message) -> None:
        self.requests.write(encode(message))
        self.requests.flush()

    def _cannot_run(self) -> None:
        """Say why pytest could not run this side's tests, where its exit status says so."""
        status = self.process.returncode
        if status in EXIT_NAMES:
            raise CliError(f"pytest cannot run the tests of {self.label}: exit status {status} ({EXIT_NAMES[status]}): "
                           f"{log_problem(self.log)}")

    def _pumped(self) -> queue.Queue[str]:
        """Its answers as a thread reads them ("" at the end), so that waiting for one can say that it waits."""
        if self.lines is None:
            lines: queue.Queue[str] = queue.Queue()

            def pump() -> None:
                try:
                    for line in self.answers:
                        lines.put(line)
                except (OSError, ValueError):  # closed here meanwhile
                    pass
                lines.put("")

            threading.Thread(target=pump, name=f"pytest-roofline ab {self.name}", daemon=True).start()
            self.lines = lines
        return self.lines

    def _waited(self) -> str:
        """The next answer; each WAIT_SAY_S without one, a line that says so, and the process given up on once it
        has been stopped for STOPPED_MAX_S."""
        lines, waited, stopped_for = self._pumped(), 0.0, 0.0
        while True:
            try:
                return lines.get(timeout=WAIT_SAY_S)
            except queue.Empty:
                waited += WAIT_SAY_S
            pid = self.process.pid
            if process_state(pid) != "stopped":
                stopped_for = 0.0
                say(f"ab: still waiting for {self.label} to answer ({waited:.0f} s); its log: {self.log}")
                continue
            stopped_for += WAIT_SAY_S
            if stopped_for >= STOPPED_MAX_S:
                self.process.kill()
                raise CliError(f"{self.label} (process {pid}) was stopped for {stopped_for:.0f} s (a SIGSTOP or a "
                               f"debugger): given up on and killed; its log: {self.log}")
            say(f"ab: {self.label} (process {pid}) is stopped (a SIGSTOP or a debugger): waiting for it to go on "
                f"(kill -CONT {pid}); given up on after {STOPPED_MAX_S:.0f} s stopped")

    def _line(self) -> str:
        line = self._waited()
        if not line:
            self.process.wait()
            self._cannot_run()
            raise ServeUnavailable(f"{self.label} stopped (exit status {self.process.returncode}): "
                                   f"{log_problem(self.log)}")
        return line

    def _answer(self, expected: type[Message]) -> Message:
        """The next answer, of the kind expected (a process that says it failed, or says something else: a
        CliError; one that speaks another version of the protocol: ServeUnavailable, after it is stopped)."""
        if not self.greeted:
            try:
                check_hello(decode(self._line(), (Hello,), self.label), self.label)
            except ProtocolError as exc:
                self.stop()
                raise ServeUnavailable(str(exc)) from None
            self.greeted = True
        try:
            answer = decode(self._line(), (expected, Failed), self.label)
        except ProtocolError as exc:
            raise CliError(str(exc)) from None
        if isinstance(answer, Failed):
            raise CliError(f"{self.label}: {answer.error}")
        return answer

    def run(self, nodeid: str, last: bool = False) -> RoundReport:
        """Run one test; its kernels' observations and the kernels it could not measure. ``last``: this process is
        not asked to run it again (what it kept for the test goes)."""
        start = time.perf_counter()
        self._send(RunTest(nodeid, last))
        answer = self._answer(Measured)
        assert isinstance(answer, Measured)
        self.seconds += time.perf_counter() - start
        self.last.update({(r.nodeid, r.label): r for r in answer.records})
        return RoundReport.of(answer.records, answer.unmeasured)

    def stop(self) -> None:
        self.quit()
        self.reap()

    def quit(self) -> None:
        """Ask it to end, without waiting for it (its session's end and exit can overlap the next pair's start)."""
        if self.requests.closed:
            return  # asked already
        try:
            self._send(Quit())
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


def serve_args(pytest_args: Sequence[str]) -> list[str]:
    """The pytest arguments of a serving process: over an ini file's ``-n``, it runs its tests itself."""
    xdist = importlib.util.find_spec("xdist") is not None and "no:xdist" not in pytest_args
    return [*pytest_args, *(["-n", "0"] if xdist else [])]


PairStart = Literal["programs pass", "first prepared", "prepared", "plain"]
"""How a pair of serving processes starts. "programs pass": the comparison's first pair, each process compiling every
test and saying what it compiled with its items, then preparing the tests asked for (:meth:`Server.prepare`); "first
prepared": each compiles every test before its items, and the second finds its hardware once the first has found
its own, so that a CPU calibrated there ran alone and is cached for every later process (the second starts up and
collects meanwhile); "prepared": each compiles every test before its items; "plain": each says its items at once and
compiles a test when it first runs it."""

# per start: the processes prepare, the second waits for the first's hardware, each is a programs pass first
_STARTS: dict[PairStart, tuple[bool, bool, bool]] = {
    "programs pass": (True, True, True), "first prepared": (True, True, False), "prepared": (True, False, False),
    "plain": (False, False, False)}


def start_pair(sides: Sequence[SideProcess], root: Path, args: Sequence[str], env: dict[str, str], tmp: Path,
               start: PairStart = "plain") -> tuple[Server, Server]:
    """Start both sides as ``start`` says (:data:`PairStart`; collecting, and compiling where they prepare, at the
    same time), then wait for each; a side that cannot serve raises :class:`ServeUnavailable` after both are
    stopped."""
    prepare, waits, first = _STARTS[start]
    servers: list[Server] = []
    try:
        for side in sides:
            servers.append(Server.start(side.name, side.label, command(side, root, serve_args(args)), side.cwd, env,
                                        tmp / f"{side.name}.log", prepare=prepare, first=first,
                                        wait=waits and bool(servers)))
        if waits:
            servers[0].hardware()
            servers[1].go()
        for server in servers:
            server.ready()
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers[0], servers[1]
