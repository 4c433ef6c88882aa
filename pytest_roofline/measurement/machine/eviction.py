"""Evicting the last-level cache between timed runs (imports JAX): the cache's size on this device, and a
compiled program that writes a buffer twice its size, run under its own host annotation so that the trace shows
it outside every timed run.

The cache's size: on a CPU as the system reports it (``/sys``); on an NVIDIA GPU from the CUDA runtime
(``cudaDevAttrL2CacheSize``) where its library loads, else assumed
(:data:`~...analysis.model.cache_state.GPU_CACHE_ASSUMED`).
"""

from __future__ import annotations

import ctypes
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from ...analysis.model.cache_state import GPU_CACHE_ASSUMED
from ...base.units import format_quantity
from ...hardware.cpu import last_level_cache_bytes

__all__ = ["cache_size", "Evictor", "EVICTION_MARKER"]

EVICTION_MARKER = "pytest_roofline cache eviction"
_CUDA_L2_CACHE_SIZE = 38  # cudaDevAttrL2CacheSize in cudaDeviceAttr (CUDA runtime API)


def _cudart() -> Any | None:
    """The CUDA runtime library, from the system or from the nvidia-cuda-runtime wheel JAX's CUDA plugin uses."""
    candidates = ["libcudart.so.12", "libcudart.so.13", "libcudart.so"]
    try:
        runtime = importlib.import_module("nvidia.cuda_runtime")
        for root in runtime.__path__:
            candidates[:0] = [str(p) for p in sorted(Path(root, "lib").glob("libcudart.so*"))]
    except ImportError:
        pass
    for name in candidates:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def gpu_l2_bytes(ordinal: int, load: Callable[[], Any | None] = _cudart) -> int | None:
    """The L2 size of CUDA device ``ordinal`` from the CUDA runtime; None where it cannot be read."""
    lib = load()
    if lib is None:
        return None
    value = ctypes.c_int(0)
    try:
        status = lib.cudaDeviceGetAttribute(ctypes.byref(value), _CUDA_L2_CACHE_SIZE, ordinal)
    except (AttributeError, OSError):
        return None
    return int(value.value) if status == 0 and value.value > 0 else None


def cache_size(device: Any, l2: Callable[[int], int | None] = gpu_l2_bytes) -> tuple[int | None, str]:
    """The last-level cache of ``device`` and where the figure came from."""
    platform = str(device.platform)
    if platform == "cpu":
        size = last_level_cache_bytes()
        return size, "as the system reports it" if size else "not reported by the system"
    if platform == "gpu":
        size = l2(int(getattr(device, "local_hardware_id", None) or device.id))
        if size:
            return size, "L2, from the CUDA runtime"
        return GPU_CACHE_ASSUMED, f"L2 size not readable here: assumed {format_quantity(GPU_CACHE_ASSUMED, 'B')}"
    return None, f"no cache eviction on {platform}"


def pytest_roofline_evict(b: Any) -> Any:  # a module name no kernel shares
    return b + 1


# One jitted function for every measurement: its program is compiled once per buffer size and device.
_STEP = jax.jit(pytest_roofline_evict, donate_argnums=0)


class Evictor:
    """Writes ``nbytes`` on ``device`` each call (a donated buffer, updated in place), blocking until done."""

    @classmethod
    def shared(cls, device: Any, nbytes: int) -> Evictor:
        """The device's evictor, made once per process for every measurement that evicts (again where the size
        differs): making one touches a buffer of twice the cache's pages for the first time, 60-70 ms on a 2-core CPU
        VM for 128 MiB, once per measurement of a cold kernel before. The buffer (twice the cache, or twice the
        last-level cache's share a CPU measurement assumes) stays allocated until the process ends."""
        kept = _SHARED.get(device)
        if kept is None or kept.nbytes != nbytes:
            _SHARED.pop(device, None)  # the old buffer freed before the new one is made
            kept = _SHARED[device] = cls(device, nbytes)
        return kept

    def __init__(self, device: Any, nbytes: int) -> None:
        self.nbytes = nbytes
        n = max(nbytes // 4, 1)
        self._buffer = jax.device_put(jnp.zeros((n,), jnp.uint32), device)
        self._buffer = _STEP(self._buffer).block_until_ready()  # compiled (or cached) now, outside any timing

    def __call__(self) -> None:
        from jax.profiler import TraceAnnotation

        with TraceAnnotation(EVICTION_MARKER):
            self._buffer = _STEP(self._buffer).block_until_ready()


_SHARED: dict[Any, Evictor] = {}  # per device: see Evictor.shared
