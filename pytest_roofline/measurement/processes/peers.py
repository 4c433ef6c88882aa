"""The other processes of a multi-controller JAX program (``jax.distributed.initialize``), through the key-value
store of JAX's distributed client: how the processes of one pytest run keep a measurement in lockstep and gather
what each one timed. No side channel of our own: the coordinator JAX already runs carries every message.

Every process measures the same kernels in the same order, so the n-th measurement of each process is the same
one; its keys are ``pytest_roofline/<n>/<step>/<process>``. Each process also posts what it is doing (its last
word); while it compiles and calibrates (:meth:`Peers.busy`, minutes on a slow machine) it repeats that word
every few seconds. A wait for another process polls the store, says after 10 s what that process was last doing,
and gives up once that process has said nothing new for ``PYTEST_ROOFLINE_PEER_TIMEOUT`` seconds (default 300),
or at once when it says its measurement failed. A process that dies is caught by JAX itself: its coordinator
stops the others once the dead one misses heartbeats for ``heartbeat_timeout_seconds`` (an argument of
``jax.distributed.initialize``, 100 s by default); the plugin's abort watch says so on the terminal.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ...base.errors import MeasureError

__all__ = ["PeerError", "Peers", "agree_verdict", "current_peers", "peer_timeout_s", "processes_started",
           "set_notice"]

DEFAULT_TIMEOUT_S = 300.0
NOTICE_AFTER_S = 10.0  # a wait this long is said on the terminal, with what stops it
KEEPALIVE_S = 5.0  # a busy process repeats its word this often
_POLL_S = 0.02
_STATUS_POLL_S = 1.0  # a waiting process reads the other's last word this often
_counter = {"measurements": 0}
# How a long wait is said: the plugin replaces this with a write past pytest's output capture (a process that JAX
# then stops would otherwise take the words with it). ``_watch`` hears every word this process posts (the
# plugin's abort watch, which says the last one if JAX stops this process).
_notice: list[Callable[[str], None]] = [lambda text: print(text, file=sys.stderr, flush=True)]
_watch: list[Callable[[int, int, str], None]] = [lambda index, count, text: None]


def set_notice(say: Callable[[str], None], watch: Callable[[int, int, str], None] | None = None) -> None:
    _notice[0] = say
    if watch is not None:
        _watch[0] = watch


class PeerError(MeasureError):
    """Another process of the program did not answer in time, or answered something that does not fit."""


def peer_timeout_s(env: dict[str, str] | None = None) -> float:
    raw = (env if env is not None else dict(os.environ)).get("PYTEST_ROOFLINE_PEER_TIMEOUT", "")
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        raise PeerError(f"PYTEST_ROOFLINE_PEER_TIMEOUT={raw!r} (environment): expected seconds, a number") from None
    if not value > 0:
        raise PeerError(f"PYTEST_ROOFLINE_PEER_TIMEOUT={raw!r} (environment): must be positive")
    return value


@dataclass
class Peers:
    """This process and the others, for one measurement (``label``), through ``client`` (JAX's
    DistributedRuntimeClient: key_value_set, key_value_try_get)."""

    index: int
    count: int
    client: Any
    label: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    measurement: int = 0
    _: KW_ONLY  # fields from the seventh on are given by keyword
    steps: dict[str, int] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    # Whether the abort watch hears this process's words: not at start-up, outside a test, where the watch would
    # hold the terminal instead of pytest's capture of the test that JAX may stop
    watched: bool = True

    def _key(self, step: str, process: int) -> str:
        return f"pytest_roofline/{self.measurement}/{step}/{process}"

    def status(self, text: str) -> None:
        """Say what this process is doing (shown by another process that waits for it too long)."""
        self.client.key_value_set(f"pytest_roofline/status/{self.index}", f"{text} (measurement {self.measurement} "
                                  f"of this process, kernel {self.label!r})", allow_overwrite=True)
        if self.watched:
            _watch[0](self.index, self.count, text)

    @contextmanager
    def busy(self, what: str) -> Iterator[None]:
        """``what`` (compiling, calibrating) may take minutes: the word is repeated every KEEPALIVE_S so that a
        waiting process knows this one is alive and busy; a failure is said at once (:meth:`failure_said`)."""
        self.status(what)
        stop = threading.Event()
        start = self.clock()

        def repeat() -> None:
            while not stop.wait(KEEPALIVE_S):
                self.status(f"{what} (for {self.clock() - start:.0f} s)")

        thread = threading.Thread(target=repeat, name="roofline-keepalive", daemon=True)
        thread.start()
        try:
            with self.failure_said(what):
                yield
        finally:
            stop.set()
            thread.join()

    @contextmanager
    def failure_said(self, what: str) -> Iterator[None]:
        """An error in this process while ``what`` is posted for this measurement, so that a process waiting for
        this one stops at once with the reason instead of waiting out its timeout."""
        try:
            yield
        except BaseException as exc:
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0]}" if str(exc) else type(exc).__name__
            self.client.key_value_set(self._key("failed", self.index), f"failed while {what} ({why})")
            self.status(f"failed while {what}")
            raise

    def exchange(self, step: str, value: str) -> list[str]:
        """Post ``value`` for ``step`` and return every process's value for it, in process order. A step name
        used again in one measurement gets a new key (``step#2``)."""
        n = self.steps.get(step, 0) + 1
        self.steps[step] = n
        name = step if n == 1 else f"{step}#{n}"
        self.client.key_value_set(self._key(name, self.index), value)
        values = []
        for process in range(self.count):
            values.append(value if process == self.index else self._wait(name, process))
        return values

    def exchange_json(self, step: str, value: Any) -> list[Any]:
        return [json.loads(v) for v in self.exchange(step, json.dumps(value))]

    def _wait(self, step: str, process: int) -> str:
        key, start, told = self._key(step, process), self.clock(), False
        word, heard, checked = self._word(process), start, start
        waiting = f"while waiting for process {process} ({step})"
        while True:
            found = self._try_get(key, waiting)
            if found is not None:
                return found
            now = self.clock()
            if now - checked >= _STATUS_POLL_S:
                checked, latest = now, self._word(process)
                if latest != word:
                    word, heard = latest, now
                if (failed := self._try_get(self._key("failed", process), waiting)) is not None:
                    raise PeerError(f"roofline: kernel {self.label!r}: process {process} of {self.count} "
                                    f"{failed}; see its output")
            if now - start > NOTICE_AFTER_S and not told:
                told = True
                _notice[0](self._waiting_message(step, process, now - start))
            if now - heard > self.timeout_s:
                raise PeerError(self._timeout_message(step, process))
            time.sleep(_POLL_S)

    def _try_get(self, key: str, doing: str) -> str | None:
        try:
            found = self.client.key_value_try_get(key)
        except Exception as exc:  # noqa: BLE001 - JAX raises its runtime error for a missing key
            if "NOT_FOUND" not in str(exc) and "not found" not in str(exc):
                raise PeerError(f"roofline: kernel {self.label!r}: the distributed key-value store failed "
                                f"{doing}: {exc}") from None
            return None
        return None if found is None else str(found)

    def _word(self, process: int) -> str | None:
        """What ``process`` last said it was doing, None before it said anything."""
        try:
            return self._try_get(f"pytest_roofline/status/{process}", f"reading process {process}'s last word")
        except PeerError:  # a store that fails here fails the wait itself next
            return None

    def _last_word(self, process: int) -> str:
        doing = self._word(process)
        return f"its last word: {doing}" if doing else "it has said nothing yet"

    def _waiting_message(self, step: str, process: int, waited: float) -> str:
        return (f"roofline: process {self.index} has waited {waited:.0f} s for process {process} to reach '{step}' "
                f"of kernel {self.label!r} ({self._last_word(process)}). If process {process} died, JAX's "
                f"coordinator stops this process once it has missed heartbeats for heartbeat_timeout_seconds (an "
                f"argument of jax.distributed.initialize, 100 s by default); if it hangs, this process gives up "
                f"once it has said nothing new for {self.timeout_s:.0f} s (PYTEST_ROOFLINE_PEER_TIMEOUT).")

    def _timeout_message(self, step: str, process: int) -> str:
        last = self._last_word(process)
        return (f"roofline: kernel {self.label!r}: process {process} of {self.count} did not reach '{step}' of "
                f"measurement {self.measurement} and said nothing new for {self.timeout_s:.0f} s ({last}). It "
                f"died, hangs, or runs other tests than this process (every process must run the same tests in the "
                f"same order). PYTEST_ROOFLINE_PEER_TIMEOUT sets the wait.")


def processes_started() -> tuple[int, int] | None:
    """(this process's index, the process count) where ``jax.distributed.initialize`` has run with several
    processes, else None; imports nothing (a suite that never imported JAX's distributed module has none)."""
    distributed = sys.modules.get("jax._src.distributed")
    state = getattr(distributed, "global_state", None)
    count = getattr(state, "num_processes", None)
    if getattr(state, "client", None) is None or not isinstance(count, int) or count <= 1:
        return None
    return int(getattr(state, "process_id", 0)), count


def current_peers(label: str) -> Peers | None:
    """The processes of this program when there are several (``jax.distributed.initialize`` was called and
    ``jax.process_count() > 1``), for the next measurement; None for a single process."""
    import jax

    if jax.process_count() <= 1:
        return None
    from jax._src.distributed import global_state  # the client JAX's own multi-host utilities use

    client = global_state.client
    if client is None:
        return None
    _counter["measurements"] += 1
    return Peers(jax.process_index(), jax.process_count(), client, label, peer_timeout_s(), _counter["measurements"])


def agree_verdict(label: str, verdict: str) -> str:
    """Every process's verdict for a kernel: "" when they are the same, else a message listing them (two
    processes that judge one program differently are an error, never a coin toss)."""
    import jax
    from jax._src.distributed import global_state

    if jax.process_count() <= 1 or global_state.client is None:
        return ""
    _counter["verdicts"] = _counter.get("verdicts", 0) + 1
    peers = Peers(jax.process_index(), jax.process_count(), global_state.client, label, peer_timeout_s(),
                  _counter["verdicts"])
    verdicts = peers.exchange("verdict", verdict)
    if len(set(verdicts)) == 1:
        return ""
    listed = ", ".join(f"process {i}: {v}" for i, v in enumerate(verdicts))
    return (f"roofline: kernel {label!r}: the processes reached different verdicts ({listed}); they judge the "
            f"same matched runs, so their hardware figures or settings differ (calibration caches, baselines, "
            f"options): make them the same on every host")
