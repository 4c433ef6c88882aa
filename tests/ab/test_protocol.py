"""The messages between ab's driver and a side's serving process (ab/protocol.py): each kind goes through
its line and back; an older process (no version), another version, an unexpected kind and a malformed message are
each refused in one line that names them. Made-up records (tests/support/fakes.py)."""

from __future__ import annotations

import json

import pytest
from fakes import fake_result, record_of

from pytest_roofline.ab.protocol import (
    ANSWERS,
    REQUESTS,
    VERSION,
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
from pytest_roofline.ab.same_programs import ProgramsOfTest, ProgramsPass
from pytest_roofline.records.kernel_record import Unmeasured


def test_every_message_reads_back_as_it_was_sent() -> None:
    record = record_of("t.py::test_a", "k", fake_result(0.5), "measured")
    programs = ProgramsPass({"t.py::test_a": ProgramsOfTest("t.py::test_a", {"k": "f1"})}, "cpu")
    answers: list[Message] = [Hello(VERSION), Hardware("CPU Z x2"), Items(("t.py::test_a",), programs),
                              Items(("t.py::test_b",), listening=False), Prepared(),
                              Measured((record,), (Unmeasured("t.py::test_a", "j", "boom"),), 0.25), Failed("why")]
    for message in answers:
        line = encode(message)
        assert line.endswith("\n") and line.count("\n") == 1
        assert decode(line, ANSWERS, "the head") == message
    for message in (Go(), Prepare(("t.py::test_a",)), RunTest("t.py::test_a"), RunTest("t.py::test_a", last=True),
                    Quit()):
        assert decode(encode(message), REQUESTS, "the comparison") == message


def test_an_older_process_with_no_version_is_refused_in_one_line() -> None:
    """What a pytest-roofline from before the protocol had a version said first (its hardware, or its items)."""
    for old in ('{"hardware": "CPU Z x2"}', '{"items": ["t.py::test_a"]}'):
        with pytest.raises(ProtocolError) as info:
            decode(old, (Hello,), "the base (1a2b3c4d5e6f)")
        assert str(info.value).startswith("the base (1a2b3c4d5e6f) sent a message with no kind (")
        assert "it speaks no ab protocol version" in str(info.value) and "\n" not in str(info.value)


def test_another_version_is_refused_in_one_line() -> None:
    check_hello(decode(encode(Hello(VERSION)), (Hello,), "the base"), "the base")
    with pytest.raises(ProtocolError, match=rf"^the base speaks version {VERSION + 1} of the ab protocol, this "
                                            rf"pytest-roofline version {VERSION}$"):
        check_hello(Hello(VERSION + 1), "the base")


def test_a_message_of_an_unexpected_kind_is_an_error_that_names_it() -> None:
    with pytest.raises(ProtocolError, match=r"the head sent a message of an unexpected kind 'frobnicate' \(expected "
                                            r"measured, failed\)"):
        decode('{"kind": "frobnicate"}', (Measured, Failed), "the head")
    with pytest.raises(ProtocolError, match=r"the head sent a message of an unexpected kind 'items'"):
        decode(encode(Items(("t",))), (Measured, Failed), "the head")  # a known kind, out of its turn
    with pytest.raises(ProtocolError, match=r"the comparison sent a message of an unexpected kind 'hello'"):
        decode(encode(Hello(VERSION)), REQUESTS, "the comparison")


def test_a_malformed_message_or_line_names_what_is_wrong() -> None:
    with pytest.raises(ProtocolError, match=r"the head sent a malformed 'measured' message: 'records'"):
        decode(json.dumps({"kind": "measured", "seconds": 1}), ANSWERS, "the head")
    with pytest.raises(ProtocolError, match=r"the head sent a line that is not a message: 'Traceback"):
        decode("Traceback (most recent call last):\n", ANSWERS, "the head")
