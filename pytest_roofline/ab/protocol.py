"""The messages between ``pytest-roofline ab``'s driver and a side's serving pytest process, defined once for both
ends (``cli/ab/served.py`` sends the requests, ``plugin/ab/server.py`` the answers). Pure.

One JSON object a line, each with its ``kind``; the driver writes requests on one pipe and reads answers on another::

    -> hello {version}                       first, before collection: which protocol the process speaks
    <- go {}                                 a process started to wait: find your hardware now (the other side of
                                             the first pair has found its own, a CPU's calibration cached)
    -> hardware {name}                       a preparing process, once it has found its hardware alone
    -> items {nodeids, programs, listening}  after collection (and preparation); programs: the first pair's pass;
                                             listening: whether a pytest_roofline_ab hook wants the verdicts
    <- prepare {nodeids}                     the first pair only: prepare these tests
    -> prepared {}
    <- run {nodeid, last}                    run that test again; last: not again here (what it kept goes)
    -> measured {records, unmeasured, seconds}
    -> failed {error}                        in answer to a request the process cannot serve
    <- quit {}                               or the pipe closed: the session ends as pytest's would

A process that speaks another :data:`VERSION` (or none: a plugin from before the protocol had one) is refused by
:func:`check_hello` in one line, and the comparison measures that side in processes that run to their end; a
message of a kind the receiver does not expect is a :class:`ProtocolError` that names it. A process that serves no
requests (a round's side run to its end, a programs pass, the head's hooks given the verdicts) is told its task in
one environment variable of the same version (:mod:`.side_task`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..records.kernel_record import KernelRecord, Unmeasured
from .same_programs import ProgramsPass

__all__ = ["VERSION", "ProtocolError", "Hello", "Hardware", "Items", "Prepare", "Prepared",
           "RunTest", "Measured", "Failed", "Quit", "Go", "Message", "encode", "decode", "check_hello", "REQUESTS",
           "ANSWERS"]

# 1: the untyped messages of before, with no version and no hello; 2: no go; 3: run has no last; 4: a process
# that serves no requests is told its task in one variable a task, untyped (now one typed variable: side_task.py)
VERSION = 5


class ProtocolError(Exception):
    """The two ends disagree: another version, or a message of a kind not expected here."""


@dataclass(frozen=True)
class Hello:
    kind: ClassVar[str] = "hello"
    version: int


@dataclass(frozen=True)
class Hardware:
    kind: ClassVar[str] = "hardware"
    name: str  # "" where it could not be found (the first measurement then says why)


@dataclass(frozen=True)
class Items:
    kind: ClassVar[str] = "items"
    nodeids: tuple[str, ...]
    programs: ProgramsPass | None = None  # a first pair's process: what its programs pass found
    listening: bool = True  # whether a pytest_roofline_ab hook is implemented there (the verdicts are handed to it)


@dataclass(frozen=True)
class Prepare:
    kind: ClassVar[str] = "prepare"
    nodeids: tuple[str, ...]


@dataclass(frozen=True)
class Prepared:
    kind: ClassVar[str] = "prepared"


@dataclass(frozen=True)
class RunTest:
    kind: ClassVar[str] = "run"
    nodeid: str
    last: bool = False  # this process is not asked to run the test again: what it kept for it goes


@dataclass(frozen=True)
class Measured:
    kind: ClassVar[str] = "measured"
    records: tuple[KernelRecord, ...]
    unmeasured: tuple[Unmeasured, ...]
    seconds: float


@dataclass(frozen=True)
class Failed:
    kind: ClassVar[str] = "failed"
    error: str


@dataclass(frozen=True)
class Quit:
    kind: ClassVar[str] = "quit"


@dataclass(frozen=True)
class Go:
    kind: ClassVar[str] = "go"


Message = Hello | Hardware | Items | Prepare | Prepared | RunTest | Measured | Failed | Quit | Go
REQUESTS: tuple[type[Message], ...] = (Go, Prepare, RunTest, Quit)  # what the driver sends
ANSWERS: tuple[type[Message], ...] = (Hello, Hardware, Items, Prepared, Measured, Failed)  # what a process sends


def encode(message: Message) -> str:
    """One line of JSON, with its newline."""
    body: dict[str, Any] = {"kind": message.kind}
    if isinstance(message, Hello):
        body["version"] = message.version
    elif isinstance(message, Hardware):
        body["name"] = message.name
    elif isinstance(message, Items):
        body.update(nodeids=list(message.nodeids), listening=message.listening,
                    programs=message.programs.to_dict() if message.programs is not None else None)
    elif isinstance(message, Prepare):
        body["nodeids"] = list(message.nodeids)
    elif isinstance(message, RunTest):
        body.update(nodeid=message.nodeid, last=message.last)
    elif isinstance(message, Measured):
        body.update(records=[r.to_dict() for r in message.records],
                    unmeasured=[u.to_dict() for u in message.unmeasured], seconds=message.seconds)
    elif isinstance(message, Failed):
        body["error"] = message.error
    return json.dumps(body, default=str) + "\n"


def decode(line: str, expected: tuple[type[Message], ...], sender: str) -> Message:
    """The message on ``line`` from ``sender`` (e.g. "the base (1a2b3c4d5e6f)"), one of the ``expected`` kinds; a
    ProtocolError naming what came otherwise."""
    try:
        body = json.loads(line)
    except ValueError:
        raise ProtocolError(f"{sender} sent a line that is not a message: {line.strip()[:80]!r}") from None
    if not isinstance(body, Mapping) or "kind" not in body:
        keys = ", ".join(sorted(body)) if isinstance(body, Mapping) else type(body).__name__
        raise ProtocolError(f"{sender} sent a message with no kind ({keys}): it speaks no ab protocol version "
                            f"(a pytest-roofline from before version {VERSION})")
    kind = str(body["kind"])
    chosen = next((m for m in expected if m.kind == kind), None)
    if chosen is None:
        wanted = ", ".join(m.kind for m in expected)
        raise ProtocolError(f"{sender} sent a message of an unexpected kind {kind!r} (expected {wanted})")
    try:
        return _build(chosen, body)
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"{sender} sent a malformed {kind!r} message: {exc}") from None


def _build(chosen: type[Message], body: Mapping[str, Any]) -> Message:
    if chosen is Hello:
        return Hello(int(body["version"]))
    if chosen is Hardware:
        return Hardware(str(body["name"]))
    if chosen is Items:
        programs = body.get("programs")
        return Items(tuple(str(n) for n in body["nodeids"]),
                     ProgramsPass.from_dict(programs) if programs is not None else None, bool(body["listening"]))
    if chosen is Prepare:
        return Prepare(tuple(str(n) for n in body["nodeids"]))
    if chosen is RunTest:
        return RunTest(str(body["nodeid"]), bool(body["last"]))
    if chosen is Measured:
        return Measured(tuple(KernelRecord.from_dict(r) for r in body["records"]),
                        tuple(Unmeasured.from_dict(u) for u in body["unmeasured"]), float(body["seconds"]))
    if chosen is Failed:
        return Failed(str(body["error"]))
    if chosen is Go:
        return Go()
    return Prepared() if chosen is Prepared else Quit()  # nothing but their kind


def check_hello(message: Message, sender: str) -> None:
    """Refuse, in one line, a process that speaks another version of the protocol."""
    assert isinstance(message, Hello)
    if message.version != VERSION:
        raise ProtocolError(f"{sender} speaks version {message.version} of the ab protocol, this pytest-roofline "
                            f"version {VERSION}")
