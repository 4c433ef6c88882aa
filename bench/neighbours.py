"""Bounded neighbour processes for the noise benchmarks: a busy loop and a memory-copy loop, each in its own
process, each stopping by itself after ``seconds`` (and killed on exit of the ``with`` block).

    with neighbour("busy", seconds=60):
        ...   # measure while one core is kept busy
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

_BUSY = """
import time
end = time.monotonic() + {seconds}
x = 0
while time.monotonic() < end:
    for i in range(100000):
        x += i * i
"""

_COPY = """
import time
import numpy as np
end = time.monotonic() + {seconds}
a = np.ones(64 * 1024 * 1024, np.float32)  # 256 MiB: beyond any cache, so every copy streams DRAM
b = np.empty_like(a)
while time.monotonic() < end:
    np.copyto(b, a)
    np.copyto(a, b)
"""

KINDS = {"busy": _BUSY, "memcopy": _COPY}


@contextlib.contextmanager
def neighbour(kind: str, seconds: float = 120.0) -> Iterator[subprocess.Popen[bytes]]:
    """Run one neighbour process of ``kind`` ("busy" or "memcopy") for at most ``seconds``."""
    proc = subprocess.Popen([sys.executable, "-c", KINDS[kind].format(seconds=seconds)])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()
