"""An exclusive file lock per device, so that processes (xdist workers) never time two kernels at once."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["device_lock", "lock_path"]


def lock_path() -> str:
    """One lock file per device a process would use: same visible accelerators, same lock."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("TPU_VISIBLE_CHIPS") or "all"
    platforms = os.environ.get("JAX_PLATFORMS") or "default"
    safe = "".join(ch if ch.isalnum() else "_" for ch in f"{platforms}-{visible}")
    return os.path.join(tempfile.gettempdir(), f"pytest-roofline-{os.getuid() if hasattr(os, 'getuid') else 0}-{safe}.lock")


@contextmanager
def device_lock() -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # Windows: no cross-process lock; run measurements without xdist there
        yield
        return
    with open(lock_path(), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
