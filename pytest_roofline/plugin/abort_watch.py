"""The last word of a process that JAX stops. In a program that spans processes, JAX aborts every process once
its coordinator loses one (missed heartbeats) or a collective fails past its deadline. The abort comes from one of
JAX's threads, inside pytest's output capture: JAX's own reason goes into the capture's file and is lost with the
process, and the terminal shows a bare "Fatal Python error: Aborted".

So from the first test of a program that spans processes, a small watcher process outlives this one: it holds the
terminal and a descriptor of the capture's file, hears every word this process posts to the others (what it is
doing), and reads its standard input until this process closes it. A process that ends normally says "done"
first; one that ends without it died, and the watcher prints one line: which process, what it was doing, and the
reason JAX wrote into the captured output (or that nothing it wrote says why).

Run as ``python -m pytest_roofline.plugin.abort_watch INDEX COUNT CAPTURED_FD`` by :class:`AbortWatch`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import IO, Any

__all__ = ["AbortWatch", "abort_line", "jax_reason", "main", "past_capture", "say_past_capture"]

DONE = "done"
_TAIL_BYTES = 1 << 16
# absl's fatal log line: "F1125 04:00:53.196084    2978 client.h:80] Terminating process because ..."
_FATAL = re.compile(r"^F\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] (.*)$")


def jax_reason(captured: str) -> str:
    """The reason in JAX's last fatal log message (with its status, on one line), "" when there is none."""
    lines = captured.splitlines()
    starts = [i for i, line in enumerate(lines) if _FATAL.match(line)]
    if not starts:
        return ""
    first = starts[-1]
    match = _FATAL.match(lines[first])
    assert match is not None
    body = [match.group(1)]
    for line in lines[first + 1:]:
        if line.startswith(("*** Check failure", "    @ ", "Fatal Python error")):
            break
        body.append(line.strip())
    text = " ".join(part for part in body if part)
    text = re.sub(r"\s*\[type\.googleapis\.com/[^\]]*\]", "", text)
    text = text.replace(" Disable Python buffering, i.e. `python -u`, to be sure to see all the previous output.", "")
    return re.sub(r"\s+", " ", text).strip()


def abort_line(index: int, count: int, doing: str, reason: str) -> str:
    last = f" (its last word: {doing})" if doing else ""
    why = (f"JAX said: {reason}" if reason else
           "nothing it wrote says why (killed by a signal, or out of memory; the other processes' output may)")
    return f"roofline: process {index} of {count} ended abruptly{last}: {why}"


def _captured_tail(fd: int) -> str:
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, _TAIL_BYTES, max(0, size - _TAIL_BYTES)).decode("utf-8", "replace")
    except OSError:  # not a file (no capture: the terminal itself), or gone
        return ""


def past_capture(config: Any) -> AbstractContextManager[object]:
    """A context in which file descriptors 1 and 2 are the terminal's, even inside a test."""
    capman = config.pluginmanager.getplugin("capturemanager")
    return capman.global_and_fixture_disabled() if capman is not None else nullcontext()


def say_past_capture(config: Any) -> Callable[[str], None]:
    """A line on the terminal now, even from inside a test whose output pytest captures."""

    def say(text: str) -> None:
        reporter = config.pluginmanager.getplugin("terminalreporter")
        with past_capture(config):
            if reporter is not None:
                reporter.write_line(text)
            else:
                print(text, file=sys.stderr, flush=True)

    return say


def main(argv: Sequence[str] | None = None) -> int:
    index, count, fd = (int(x) for x in (argv if argv is not None else sys.argv[1:]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the watched process; this one follows it
    doing, done = "", False
    for line in sys.stdin:
        word = line.rstrip("\n")
        done = word == DONE
        if not done:
            doing = word
    if not done:
        print(abort_line(index, count, doing, jax_reason(_captured_tail(fd))), file=sys.stderr, flush=True)
    return 0


class AbortWatch:
    """Starts the watcher at the first word of a process that spans processes, passes it every word, and says
    "done" at the end. Called inside a test (file descriptor 2 is then pytest's capture file); ``terminal``: a
    context in which file descriptors 1 and 2 are the terminal's (pytest's capture suspended)."""

    def __init__(self, terminal: Callable[[], AbstractContextManager[object]]) -> None:
        self.terminal = terminal
        self.child: subprocess.Popen[str] | None = None
        self.lock = threading.Lock()

    def __call__(self, index: int, count: int, doing: str) -> None:
        with self.lock:
            if self.child is None:
                self.child = self._start(index, count)
            self._send(doing.replace("\n", " "))

    def _start(self, index: int, count: int) -> subprocess.Popen[str]:
        captured = os.dup(2)  # pytest's capture file while a test runs (or the terminal, without capture)
        try:
            with self.terminal():
                return subprocess.Popen([sys.executable, "-m", "pytest_roofline.plugin.abort_watch", str(index),
                                         str(count), str(captured)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        pass_fds=(captured,), text=True)
        finally:
            os.close(captured)

    def _send(self, word: str) -> None:
        stdin: IO[str] | None = self.child.stdin if self.child is not None else None
        if stdin is None:
            return
        try:
            stdin.write(word + "\n")
            stdin.flush()
        except OSError:  # the watcher is gone: nothing to tell
            pass

    def close(self) -> None:
        """This process ends normally."""
        with self.lock:
            if self.child is None:
                return
            self._send(DONE)
            if self.child.stdin is not None:
                self.child.stdin.close()
            self.child.wait()
            self.child = None


if __name__ == "__main__":
    sys.exit(main())
