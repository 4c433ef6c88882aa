"""SIGTERM and SIGHUP handled as Ctrl-C: CI cancels a job, and ``timeout`` stops a command, with SIGTERM (a closed
terminal sends SIGHUP). pytest then ends the session as an interrupted one: the summary is printed, the report is
written and marked incomplete (the history leaves it out), temporary files are removed. A second signal stops the
process at once. No pytest here: the plugin installs it at configure time."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["cancel_as_interrupt", "cancelled_by"]

_RECEIVED: list[str] = []


def cancelled_by() -> str:
    """The signal that cancelled this run ("SIGTERM"), or ""."""
    return _RECEIVED[-1] if _RECEIVED else ""


def cancel_as_interrupt() -> Callable[[], None]:
    """Install the handlers where the signals still have their default action (a user's own handler is kept, and
    only the main thread can install one); returns what restores the previous handlers."""
    names = [n for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous: dict[int, Any] = {}
    for name in names:
        number = getattr(signal, name)
        if signal.getsignal(number) == signal.SIG_DFL:
            previous[number] = signal.signal(number, _interrupt)

    def restore() -> None:
        for number, handler in previous.items():
            if signal.getsignal(number) in (_interrupt, signal.SIG_DFL):
                signal.signal(number, handler)

    return restore


def _interrupt(number: int, frame: FrameType | None) -> None:
    name = signal.Signals(number).name
    _RECEIVED.append(name)
    signal.signal(number, signal.SIG_DFL)  # a second one stops the process at once
    raise KeyboardInterrupt(f"cancelled by {name}")
