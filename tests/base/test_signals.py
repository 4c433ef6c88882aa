"""SIGTERM and SIGHUP as Ctrl-C, where they still have their default action: a handler the user installed, or a
signal the runner ignores (a job started under ``nohup`` inherits SIGHUP ignored), is left as it was."""

from __future__ import annotations

import signal
import sys

import pytest

from pytest_roofline.base.signals import cancel_as_interrupt

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def test_a_default_signal_becomes_an_interrupt_and_an_ignored_one_stays_ignored() -> None:
    term, hup = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        restore = cancel_as_interrupt()
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        restore()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, term)
        signal.signal(signal.SIGHUP, hup)
