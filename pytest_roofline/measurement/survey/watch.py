"""The survey's profiler session around one test (imports JAX).

One profiler session runs per process at a time, so the survey's steps aside while another runs: a ``roofline``
fixture's or ``measure()``'s measurement (whose own traces it takes: the kernel's runs), a test's own
``jax.profiler.trace`` (whose trace is the test's). The test's profile is then read in parts. A test is profiled in
full for its first stretch (:class:`Sampling`); one that runs longer (a training loop of thousands of steps) is then
profiled in windows, a thread stopping and restarting the session, so that what the survey reads is bounded.
What a session costs: starting it is free; stopping it serializes the trace and the HLO of every program the process
has compiled (2-3 ms for a small process on a 2-core CPU, more as the programs pile up); bench/survey_cost.py prints
the factor on whole suites.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ...analysis.verdict.survey_book import FULL_PROFILE_S
from ..profiler import ProfilerSession, ProfilerUnavailable, set_outer

__all__ = ["Watch", "watching", "Part", "Sampling", "SAMPLING"]


@dataclass(frozen=True)
class Sampling:
    """How long a test is profiled: its first ``full_s`` seconds in full; a test that runs longer is then sampled, a
    window of ``window_s`` every ``period_s`` (a training loop of thousands of steps records millions of op events,
    and reading each costs microseconds: the survey's cost is bounded by what it profiles)."""

    full_s: float = FULL_PROFILE_S
    window_s: float = 0.1
    period_s: float = 2.0


SAMPLING = Sampling()


@dataclass(frozen=True)
class Part:
    """One stretch of a test's profile: whether it was started, and whether it was stopped, while the test ran (by the
    sampling), where a program's run at that edge may be cut short."""

    xspace: bytes
    cut: tuple[bool, bool] = (False, False)


class Watch:
    """Profiles until :meth:`finish`; the parts it recorded are in :attr:`parts`, and why it could not in
    :attr:`problem`; :attr:`profiled_s` and :attr:`sampled`: how long it profiled, and whether it sampled."""

    def __init__(self, sampling: Sampling = SAMPLING) -> None:
        self.parts: list[Part] = []
        self.problem = ""
        self.sampling = sampling
        self.profiled_s = 0.0
        self.sampled = False
        self._session: ProfilerSession | None = None
        self._began = (0.0, False)  # when the running session started, and whether the sampling started it
        self._done = False
        self._aside = False  # another session runs (a measurement's, the test's own trace)
        self._resting = False  # between two sampled windows
        self._lock = threading.RLock()
        self._ended = threading.Event()
        self._sampler: threading.Thread | None = None

    def pause(self) -> None:
        """Step aside for another session."""
        with self._lock:
            self._aside = True
            self._stop(by_sampling=False)

    def resume(self) -> None:
        with self._lock:
            self._aside = False
            if not self._resting:
                self._start(by_sampling=False)

    def _start(self, by_sampling: bool) -> None:
        if self._done or self._session is not None:
            return
        try:
            self._session = ProfilerSession(outer=True)
            self._began = (time.perf_counter(), by_sampling)
        except ProfilerUnavailable as exc:
            self.problem = self.problem or str(exc)
        if self._sampler is None:
            self._sampler = threading.Thread(target=self._sample, name="pytest-roofline survey", daemon=True)
            self._sampler.start()

    def _stop(self, by_sampling: bool) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        self.profiled_s += time.perf_counter() - self._began[0]
        try:
            self.parts.append(Part(session.stop(), (self._began[1], by_sampling)))
        except ProfilerUnavailable as exc:
            self.problem = str(exc)

    def _sample(self) -> None:
        """The sampling thread: once the test has run ``full_s``, a window every ``period_s``."""
        timing = self.sampling
        if self._ended.wait(timing.full_s):
            return
        while True:
            with self._lock:
                if self._done:
                    return
                self._resting, self.sampled = True, True
                self._stop(by_sampling=True)
            if self._ended.wait(timing.period_s - timing.window_s):
                return
            with self._lock:
                if self._done:
                    return
                self._resting = False
                if not self._aside:
                    self._start(by_sampling=True)
            if self._ended.wait(timing.window_s):
                return

    def take(self, xspace: bytes) -> None:
        """Another session's trace (a measurement's timed runs): part of this test's profile."""
        with self._lock:
            if not self._done:
                self.parts.append(Part(xspace))

    def finish(self) -> list[Part]:
        """Stop, once the device work the test left running has ended: JAX dispatches asynchronously, and a run still
        going when the profile stops is cut from it. A tiny program run on each device after the test's waits for
        what was queued before it (its own run is left out of the survey by its name)."""
        import jax

        try:
            for device in jax.local_devices():
                _barrier()(jax.device_put(0, device)).block_until_ready()
        except Exception:  # noqa: BLE001 - a device the test left failing: the test has seen that already
            pass
        with self._lock:
            self._done = True
            self._ended.set()
            self._stop(by_sampling=False)
        if self._sampler is not None:
            self._sampler.join()
        return self.parts


def pytest_roofline_barrier(x: Any) -> Any:
    return x + 1


@functools.cache
def _barrier() -> Any:
    import jax

    return jax.jit(pytest_roofline_barrier)


def _step_aside(watch: Watch) -> Callable[[], None]:
    """``jax.profiler.start_trace``/``stop_trace`` (and ``jax.profiler.trace``, which calls them) pause the survey for
    a test's own trace; returns the undoing."""
    import jax.profiler as public
    from jax._src import profiler as private

    start, stop = private.start_trace, private.stop_trace

    def start_trace(*args: Any, **kwargs: Any) -> Any:
        watch.pause()
        return start(*args, **kwargs)

    def stop_trace(*args: Any, **kwargs: Any) -> Any:
        try:
            return stop(*args, **kwargs)  # type: ignore[no-untyped-call]
        finally:
            watch.resume()

    for module in (public, private):
        setattr(module, "start_trace", start_trace)  # noqa: B010 - jax.profiler's names, replaced for the test
        setattr(module, "stop_trace", stop_trace)  # noqa: B010

    def undo() -> None:
        for module in (public, private):
            setattr(module, "start_trace", start)  # noqa: B010
            setattr(module, "stop_trace", stop)  # noqa: B010

    return undo


@contextmanager
def watching(sampling: Sampling = SAMPLING) -> Iterator[Watch]:
    """A profile of what runs inside; the watch's parts are complete once the block ends."""
    watch = Watch(sampling)
    set_outer(watch)
    undo = _step_aside(watch)
    watch.resume()
    try:
        yield watch
    finally:
        undo()
        set_outer(None)
        watch.finish()
