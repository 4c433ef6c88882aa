"""An exclusive file lock per device, so that processes (xdist workers, runs side by side) never time two kernels
at once; a wait for it says who holds it, and a holder that is stopped is reported instead of waited on."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from ..base.errors import MeasureError
from ..hardware.cpu import proc_stat as _proc_stat
from ..hardware.cpu import process_state as holder_state

__all__ = ["DeviceLockError", "LockWait", "device_lock", "lock_path", "holder_state", "share_the_host", "around_a_test"]

# How long a holder may stay stopped (SIGSTOP, Ctrl-Z) before the wait gives up, and how often a long wait says so.
STOPPED_FOR_S = 5.0
REMIND_EVERY_S = 60.0


class DeviceLockError(MeasureError):
    """The device lock cannot be had: its holder, or another xdist worker of the run, is stopped. Its message says
    which process and how to resume it; a kernel that meets it cannot be measured (no bug to report)."""


# Processes found stopped while this one waited for them, with the error said: while one stays stopped, a later
# wait for it fails at once (a session waits on a stopped process once, not once per test).
_STOPPED: dict[int, str] = {}


def _say(text: str) -> None:
    print(f"roofline: {text}", file=sys.__stderr__ or sys.stderr, flush=True)


def lock_path(platform: str | None = None) -> str:
    """One lock file per device: every process on a CPU shares one (they share its cores), whatever
    ``JAX_PLATFORMS`` says; on an accelerator, one per set of visible devices. ``platform``: the device's (JAX's
    default backend when None, once JAX is in use; else what the environment names)."""
    platform = platform or _platform()
    if platform == "cpu":
        key = "cpu"
    else:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("TPU_VISIBLE_CHIPS") or "all"
        key = f"{platform}-{visible}"
    safe = "".join(ch if ch.isalnum() else "_" for ch in key)
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), f"pytest-roofline-{uid}-{safe}.lock")


def _platform() -> str:
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            return str(jax.default_backend())
        except Exception:  # noqa: BLE001 - no backend: the environment's name is the best there is
            pass
    named = (os.environ.get("JAX_PLATFORMS") or os.environ.get("JAX_PLATFORM_NAME") or "").split(",")[0].strip()
    if not named:  # JAX's own default: the CPU on a host without accelerators
        from .xdist.workers import list_accelerators

        return "cpu" if list_accelerators() is None else "default"
    return {"cuda": "gpu", "rocm": "gpu"}.get(named.lower(), named.lower())


# This process's handle on the host's activity lock, where xdist workers share a CPU one test at a time around a
# measurement (:func:`share_the_host`); None otherwise.
_ACTIVITY: IO[str] | None = None
_IN_TEST = [False]  # whether a test of this process holds the activity lock shared now
# Set while a worker's test holds its share: the pid of that worker, for the processes the test starts.
SHARED_BY_VARIABLE = "PYTEST_ROOFLINE_HOST_SHARED_BY"


def activity_path() -> str:
    """The lock every test of a CPU's xdist workers holds shared, and a measurement holds alone."""
    return lock_path("cpu").replace(".lock", "-activity.lock")


def share_the_host() -> None:
    """Make this xdist worker measure alone on the CPU: while it times a kernel no other worker's test runs, and
    no test starts while a measurement waits or runs (:func:`around_a_test`, :func:`device_lock`)."""
    global _ACTIVITY
    if _ACTIVITY is None and _fcntl() is not None:
        _ACTIVITY = open(activity_path(), "a+", encoding="utf-8")  # noqa: SIM115 - held for the process's life


def _fcntl() -> Any:
    try:
        import fcntl
    except ImportError:  # Windows: no cross-process lock; run measurements without xdist there
        return None
    return fcntl


@contextmanager
def around_a_test() -> Iterator[None]:
    """Around each test of a worker that shares the host: the activity lock held shared. It is taken only while
    no measurement holds or waits for the device lock (that lock is the turnstile), so measurements are not
    starved by a stream of tests."""
    fcntl = _fcntl()
    if _ACTIVITY is None or fcntl is None:
        yield
        return
    with open(lock_path("cpu"), "a+", encoding="utf-8") as turnstile:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(_ACTIVITY, fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
    _IN_TEST[0] = True
    os.environ[SHARED_BY_VARIABLE] = str(os.getpid())  # for the processes this test starts (below)
    try:
        yield
    finally:
        _IN_TEST[0] = False
        os.environ.pop(SHARED_BY_VARIABLE, None)
        fcntl.flock(_ACTIVITY, fcntl.LOCK_UN)


def _under_a_share(path: str) -> str:
    """The lock a process started by a worker's test takes instead of the CPU's device lock: the test's share of
    the host already keeps every worker's measurement out until it ends, and a measurement waiting for that share
    holds the device lock, so waiting for it there would never end. Processes of different workers' tests still
    take turns on this one. ``path`` itself elsewhere."""
    if _ACTIVITY is None and os.environ.get(SHARED_BY_VARIABLE) and path == lock_path("cpu"):
        return path.replace(".lock", "-under-a-share.lock")
    return path


_HELD: set[str] = set()  # the device locks this process holds now


@dataclass
class LockWait:
    """How long taking the device lock waited (for another process's measurement, then for the other xdist workers'
    tests to end), and who held it."""

    seconds: float = 0.0
    holder: str = ""


@contextmanager
def device_lock(platform: str | None = None, say: Callable[[str], None] = _say) -> Iterator[LockWait]:
    """Hold the device's lock (and, for a worker that shares the host, the host alone) while the block runs; the
    block gets how long that took to take."""
    wait = LockWait()
    fcntl = _fcntl()
    if fcntl is None:
        yield wait
        return
    path = _under_a_share(lock_path(platform))
    if path in _HELD:  # a second flock of one file in one process waits for the first: for ever
        raise DeviceLockError(
            "a measurement was started inside another one, which holds the device lock (roofline(...) or "
            "roofline.measure() called from inside a kernel being traced or timed, or from a hook it runs): measure "
            "each kernel from the test itself")
    alone = _ACTIVITY is not None and path == lock_path("cpu")
    in_test = alone and _IN_TEST[0]
    if in_test:  # let go of this test's share first: a measurement waiting for it would wait for this one
        fcntl.flock(_ACTIVITY, fcntl.LOCK_UN)
    with open(path, "a+", encoding="utf-8") as handle:
        wait.seconds, wait.holder = _acquire(handle, path, say)
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()} {time.time():.0f} {' '.join(sys.argv)[:200]}\n")
        handle.flush()
        _HELD.add(path)
        try:
            if alone and (waited := _alone(fcntl, say)) > 0:
                wait.seconds += waited
                wait.holder = wait.holder or "the other xdist workers' tests"
            yield wait
        finally:
            if in_test:  # this test goes on, sharing the host again, before the next measurement may start
                fcntl.flock(_ACTIVITY, fcntl.LOCK_SH)
            elif alone:  # outside a test (the header's calibration): hold nothing afterwards
                fcntl.flock(_ACTIVITY, fcntl.LOCK_UN)
            _HELD.discard(path)
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)


def _alone(fcntl: Any, say: Callable[[str], None]) -> float:
    """Wait until no other worker's test runs (the activity lock held alone), and say how long that took; give up on
    a worker that stays stopped (SIGSTOP, Ctrl-Z) while its test holds its share, naming it."""
    if _try(_ACTIVITY, fcntl, fcntl.LOCK_EX):
        return 0.0
    started = stopped_at = time.monotonic()
    delay = 0.01
    while not _try(_ACTIVITY, fcntl, fcntl.LOCK_EX):
        time.sleep(delay)
        delay = min(delay * 2, 0.1)  # a test that ends lets this measurement start within 0.1 s
        stopped, now = stopped_siblings(), time.monotonic()
        for pid in stopped:
            _still_stopped(pid)
        if not stopped:
            stopped_at = now
        elif now - stopped_at >= STOPPED_FOR_S:
            pid = stopped[0]
            _STOPPED[pid] = (f"another xdist worker of this run, process {pid}, is stopped (SIGSTOP or Ctrl-Z) "
                             f"while its test runs, so no kernel can be measured alone: resume it (kill -CONT {pid}) "
                             f"or end it; not waiting on a stopped process")
            raise DeviceLockError(_STOPPED[pid])
    waited = time.monotonic() - started
    if waited >= 1.0:
        say(f"waited {waited:.1f} s for the other workers' tests to finish before measuring alone")
    return waited


def stopped_siblings() -> list[int]:
    """The stopped processes that share this one's parent (the other xdist workers of a run), from /proc; none
    where /proc does not say."""
    parent, mine, found = os.getppid(), os.getpid(), []
    try:
        names = [n for n in os.listdir("/proc") if n.isdigit() and int(n) != mine]
    except OSError:
        return []
    for name in names:
        try:
            fields = _proc_stat(name)
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == str(parent) and fields[0] in ("T", "t"):
            found.append(int(name))
    return found


def _still_stopped(pid: int) -> None:
    """Fail at once on a process this one already found stopped, while it stays so."""
    if pid in _STOPPED:
        if holder_state(pid) == "stopped":
            raise DeviceLockError(_STOPPED[pid])
        del _STOPPED[pid]


def _acquire(handle: IO[str], path: str, say: Callable[[str], None]) -> tuple[float, str]:
    """Take the lock; while another process holds it, say who and since when, and give up on a stopped one. How long
    it waited, and who held it."""
    fcntl = _fcntl()
    if _try(handle, fcntl):
        return 0.0, ""
    pid, since, what = _holder(path)
    _still_stopped(pid)
    who = f"process {pid} ({what})" if pid else "another process"
    say(f"waiting for the device lock {path}, held by {who}" + (f" since {_clock(since)}" if since else ""))
    started = stopped_at = time.monotonic()
    reminded = started
    delay = 0.01
    while not _try(handle, fcntl):
        time.sleep(delay)
        delay = min(delay * 2, 0.5)
        now = time.monotonic()
        state = holder_state(pid) if pid else "running"
        if state != "stopped":
            stopped_at = now
        elif now - stopped_at >= STOPPED_FOR_S:
            _STOPPED[pid] = (f"the device lock {path} is held by {who}, which is stopped (SIGSTOP or Ctrl-Z)"
                             + (f"; it took the lock at {_clock(since)}" if since else "")
                             + f": resume it (kill -CONT {pid}) or end it; not waiting on a stopped process")
            raise DeviceLockError(_STOPPED[pid])
        if now - reminded >= REMIND_EVERY_S:
            reminded = now
            gone = " (that process is gone: a process it started holds the lock)" if state == "gone" else ""
            say(f"still waiting for the device lock after {now - started:.0f} s, held by {who}{gone}")
    waited = time.monotonic() - started
    say(f"got the device lock after {waited:.1f} s")
    return waited, who


def _try(handle: IO[str] | None, fcntl: Any, mode: int | None = None) -> bool:
    try:
        fcntl.flock(handle, (fcntl.LOCK_EX if mode is None else mode) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(path: str) -> tuple[int, float, str]:
    """What the holder wrote into the lock file: its process id, when it took the lock, its command line."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            pid, since, what = (fh.readline().strip().split(" ", 2) + ["", "", ""])[:3]
        return int(pid), float(since), what
    except (OSError, ValueError):
        return 0, 0.0, ""


def _clock(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))
