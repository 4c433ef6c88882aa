"""The survey's profiler session around one test (imports JAX).

One profiler session runs per process at a time, so the survey's steps aside while another runs: a ``roofline``
fixture's or ``measure()``'s measurement (whose own traces it takes: the kernel's runs), a test's own
``jax.profiler.trace`` (whose trace is the test's). The test's profile is then read in parts.
What a session costs: starting it is free; stopping it serializes the trace and the HLO of every program the process
has compiled (2-3 ms for a small process on a 2-core CPU, more as the programs pile up); bench/survey_cost.py prints
the factor on whole suites.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..profiler import ProfilerSession, ProfilerUnavailable, set_outer

__all__ = ["Watch", "watching"]


class Watch:
    """Profiles until :meth:`finish`; the parts it recorded are in :attr:`parts`, and why it could not in
    :attr:`problem`."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.problem = ""
        self._session: ProfilerSession | None = None
        self._done = False

    def pause(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            try:
                self.parts.append(session.stop())
            except ProfilerUnavailable as exc:
                self.problem = str(exc)

    def resume(self) -> None:
        if self._done or self._session is not None:
            return
        try:
            self._session = ProfilerSession(outer=True)
        except ProfilerUnavailable as exc:
            self.problem = self.problem or str(exc)

    def take(self, xspace: bytes) -> None:
        """Another session's trace (a measurement's timed runs): part of this test's profile."""
        if not self._done:
            self.parts.append(xspace)

    def finish(self) -> list[bytes]:
        """Stop, once the device work the test left running has ended: JAX dispatches asynchronously, and a run still
        going when the profile stops is cut from it. A tiny program run on each device after the test's waits for
        what was queued before it (its own run is left out of the survey by its name)."""
        import jax

        try:
            for device in jax.local_devices():
                _barrier()(jax.device_put(0, device)).block_until_ready()
        except Exception:  # noqa: BLE001 - a device the test left failing: the test has seen that already
            pass
        self._done = True
        self.pause()
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
def watching() -> Iterator[Watch]:
    """A profile of what runs inside; the watch's parts are complete once the block ends."""
    watch = Watch()
    set_outer(watch)
    undo = _step_aside(watch)
    watch.resume()
    try:
        yield watch
    finally:
        undo()
        set_outer(None)
        watch.finish()
