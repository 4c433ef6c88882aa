"""A JAX profiler session held in memory, and exporting a serialized trace for TensorBoard/XProf (imports JAX).

``jax.profiler.trace`` writes to disk; this keeps the XSpace in memory so that the trace can be read at once
and saved only when wanted. Only one profiler session can run in a process at a time. A profile embeds the
HloModuleProto of each program: :func:`hlo_text` prints one as HLO text (no Python schema for HLO protos ships with
jax or jaxlib; XLA's own ``XlaComputation`` reads the bytes, without '%' and with signature-free headers, which
:mod:`~..analysis.program.hlo_reader` reads).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from jax._src.lib import _profiler  # private, present since jax 0.4; jax.profiler uses the same class

from ..analysis.runs.time_spent import phase

__all__ = ["ProfilerUnavailable", "ProfilerSession", "Outer", "set_outer", "held", "export_xspace", "events_recorded",
           "parsed", "Probe", "probe_run", "HloProtoError", "hlo_text"]


class ProfilerUnavailable(RuntimeError):
    """The profiler could not be used; the message is the reason."""


class Outer(Protocol):
    """A session that runs around the tests (the survey's). A process holds one profiler session at a time: the outer
    one steps aside while a measurement runs (:func:`held`) and while another session runs, and takes the traces
    those sessions record (their kernels' runs are runs the test made)."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def take(self, xspace: bytes) -> None: ...


_OUTER: list[Outer] = []
_HELD = [0]  # how many holds are open (nested measurements, sessions)


def set_outer(outer: Outer | None) -> None:
    """The session every other one pauses (None: none)."""
    _OUTER[:] = [outer] if outer is not None else []
    _HELD[0] = 0


def _hold() -> None:
    if _OUTER:
        _HELD[0] += 1
        if _HELD[0] == 1:
            _OUTER[0].pause()


def _release() -> None:
    if _OUTER and _HELD[0] > 0:
        _HELD[0] -= 1
        if _HELD[0] == 0:
            _OUTER[0].resume()


@contextmanager
def held() -> Iterator[None]:
    """The outer session paused for the block (a measurement: its own programs, calibration and buffers, are not the
    test's; its sessions' traces are handed to the outer one)."""
    _hold()
    try:
        yield
    finally:
        _release()


class ProfilerSession:
    """A JAX profiler session kept in memory; always stopped, also when the program raises. Where an outer session
    runs (:func:`set_outer`), it pauses until this one stops, and takes its trace."""

    def __init__(self, *, graph_nodes: bool = False, outer: bool = False) -> None:
        """``graph_nodes``: CUPTI's CUDA-graph activity trace, each kernel of a command buffer an event of its own
        (on an H200 with JAX 0.11.2 it crashed the process for every program run as command buffers: not used by the
        measurements; bench/record_corpus.py tries it). ``outer``: this is the outer session itself."""
        self._inner = not outer
        if self._inner:
            _hold()
        options = _profiler.ProfileOptions()
        options.python_tracer_level = 0  # the Python tracer costs time per call and adds nothing here
        options.host_tracer_level = 2
        options.raise_error_on_start_failure = True
        if graph_nodes:
            options.advanced_configuration = {"gpu_enable_cupti_activity_graph_trace": True}
        try:
            self._session = _profiler.ProfilerSession(options)
        except Exception as exc:  # noqa: BLE001 - the profiler raises its own runtime error types
            self._release()
            raise ProfilerUnavailable(f"the profiler could not start: {exc}") from None
        self._stopped = False

    def _release(self) -> None:
        inner, self._inner = self._inner, False
        if inner:
            _release()

    def stop(self) -> bytes:
        self._stopped = True
        try:
            xspace = bytes(self._session.stop())
        except Exception as exc:  # noqa: BLE001
            self._release()
            raise ProfilerUnavailable(f"the profiler could not stop: {exc}") from None
        if self._inner and _OUTER:
            _OUTER[0].take(xspace)
        self._release()
        return xspace

    def discard(self) -> None:
        if not self._stopped:
            self._stopped = True
            try:
                self._session.stop()
            except Exception:  # noqa: BLE001 - already failing; the first error is the one to report
                pass
            finally:
                self._release()

    def export(self, xspace: bytes, directory: str) -> None:
        """Convert a serialized trace (any session's) into TensorBoard/XProf files under ``directory``."""
        self._session.export(xspace, directory)


def export_xspace(xspace: bytes, directory: str) -> None:
    """Write ``plugins/profile/<timestamp>/<host>.xplane.pb`` and ``.trace.json.gz`` under ``directory``.

    The conversion is a method of a profiler session: a short one is opened for it and closed again.
    Raises :class:`ProfilerUnavailable` when no session can be opened (another one is active).
    """
    session = ProfilerSession()
    try:
        session.export(xspace, directory)
    finally:
        session.discard()


def parsed(xspace: bytes) -> Any:
    """A serialized trace as ``jax.profiler.ProfileData``."""
    from jax.profiler import ProfileData

    return ProfileData.from_serialized_xspace(xspace)


def events_recorded(profile: Any) -> int:
    """How many events a parsed trace holds (the cost of reading it grows with this number)."""
    from ..analysis.runs.trace_events import profile_types_quiet

    with profile_types_quiet():
        return sum(1 for plane in profile.planes for line in plane.lines for _ in line.events)


@dataclass(frozen=True)
class Probe:
    """One run under the profiler: its trace (serialized, and parsed once), how many events it holds, its wall
    clock."""

    xspace: bytes
    profile: Any
    events: int
    wall: float


def probe_run(prepare: Callable[[], Any], execute: Callable[[Any], Any], marker: str) -> Probe | None:
    """Run ``execute(prepare())`` once under the profiler, inside a host annotation ``marker`` (run 0); None (the
    run made without it) where the profiler cannot be used."""
    from jax.profiler import TraceAnnotation

    try:
        session = ProfilerSession()
    except ProfilerUnavailable:
        execute(prepare())
        return None
    try:
        args = prepare()
        with TraceAnnotation(marker, run=0):
            begun = time.perf_counter()
            execute(args)
            wall = time.perf_counter() - begun
    except BaseException:
        session.discard()
        raise
    try:
        with phase("profiler"):
            xspace = session.stop()
        profile = parsed(xspace)
        return Probe(xspace, profile, events_recorded(profile), wall)
    except ProfilerUnavailable:
        return None


class HloProtoError(ValueError):
    """The bytes could not be read as an HloModuleProto."""


def hlo_text(module_proto: bytes, what: str = "the HLO module") -> str:
    from jax._src.lib import xla_client  # type: ignore[attr-defined]  # private, present since jax 0.4; XlaComputation reads HloModuleProto

    try:
        return str(xla_client.XlaComputation(module_proto).as_hlo_text())
    except Exception as exc:  # noqa: BLE001 - XLA raises its own runtime error types
        raise HloProtoError(f"{what}: XLA could not read the embedded HloModuleProto: {exc}") from None
