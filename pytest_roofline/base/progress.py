"""Lines that say what a long step is doing: a kernel timed, compiled or its trace read, a calibration. Each goes
to one sink: standard error, or, in pytest, the terminal past the test's captured output (the plugin sets it).
No JAX, no pytest."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["PROGRESS_EVERY_S", "say", "set_sink", "said_if_slow"]

# A step that runs longer than this says so, and again each time as long again has passed.
PROGRESS_EVERY_S = 10.0


def _stderr(text: str) -> None:
    print(text, file=sys.__stderr__ or sys.stderr, flush=True)


_sink: list[Callable[[str], None]] = [_stderr]


def set_sink(sink: Callable[[str], None]) -> None:
    """Where the lines go from now on (the plugin: its terminal, past pytest's capture)."""
    _sink[0] = sink


def say(text: str) -> None:
    _sink[0](f"pytest-roofline: {text}")


@contextmanager
def said_if_slow(what: str, every_s: float = PROGRESS_EVERY_S) -> Iterator[None]:
    """Say ``<what> (N s so far)`` each ``every_s`` seconds while the block runs (from a thread: the block may be
    one call that holds the interpreter's main thread, as a compile does); nothing for a block quicker than that."""
    done = threading.Event()
    begun = time.perf_counter()

    def watch() -> None:
        while not done.wait(every_s):
            say(f"{what} ({time.perf_counter() - begun:.0f} s so far)")

    thread = threading.Thread(target=watch, name="pytest-roofline progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
