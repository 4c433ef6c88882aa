"""Reference kernels: short programs that each meet one ceiling, timed at calibration and run beside a kernel
for live ceilings (imports JAX). Each is compiled once per process.

========================  =====================================================  ============================
key                       program (CPU sizes; accelerators use larger ones)       ceiling it meets
========================  =====================================================  ============================
``matmul-f32``            1024x1024x1024 f32 matmul                               f32 (TF32 on GPUs) matrix peak
``matmul-bf16``           1024x1024x1024 bf16 matmul                              bf16 matrix peak
``vector``                64 chained multiply-adds over 16 MiB of f32             vector peak
``transcendental``        8 chained exp over 4 MiB of f32                         transcendental rate
``stream``                donated f32 scale over 2x the last-level cache,         memory bandwidth
                          64-128 MiB (each run's output is the next run's input)
``stream-fresh``          f32 scale over 48 MiB writing a fresh output            memory bandwidth and first
                                                                                   touch of fresh pages
``stream-cache``          a loop of donated f32 scales over a quarter of the      last-level cache bandwidth
                          last-level cache, at most 8 MiB
========================  =====================================================  ============================

A kernel is paired with the reference that shares its conditions (:func:`reference_key_for`): the stream
that writes fresh pages where the first touch of its own fresh pages is the larger part of its roofline, the
in-cache stream where its working set fits the last-level cache, the donated stream beyond it.

On a CPU they take 5-10 ms each: short enough that a pair (reference, kernel) sees the same moment of the
machine, long enough to span several scheduler time slices (shorter references, 1-3 ms, scattered more
from pair to pair beside a busy neighbour). The stream's working set is capped at 128 MiB to stay that short: on a VM
the system reports the host's last-level cache (480 MiB on a 2-core Intel Xeon VM, shared with other tenants); there a
128 MiB stream slowed under a memory-copy neighbour by the same factor as a 1 GiB one (docs/measurements.md, "Live
ceilings").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...analysis.model.live import Resource, usable_references
from ...analysis.model.roofline import RooflineEstimate
from ...analysis.model.work_shares import CeilingUse
from ...hardware.cpu import last_level_cache_bytes, page_size
from ..compiled import compile_program
from ..timing import Beside

__all__ = ["Reference", "REFERENCE_KEYS", "REFERENCES_VERSION", "reference", "reference_key_for"]

REFERENCE_KEYS = ("matmul-f32", "matmul-bf16", "vector", "transcendental", "stream", "stream-fresh", "stream-cache")
# Part of the calibration cache key: change it whenever a reference kernel changes (its rate is calibrated).
REFERENCES_VERSION = 5  # 5: fresh-stream runs that faulted no fresh pages are left out of its rate
_MIB = 2**20
_HOST_FILL_MAX = 64 * _MIB

_block: Callable[[Any], Any] = jax.block_until_ready


# A kernel's reference runs after a kernel run once this long has passed since the last: after every run of 100 ms
# or more, every tenth of 10 ms. Speed drifts over seconds (a neighbour starts), not within 100 ms; a reference after
# every run of a short kernel had taken as long as its own runs. A calibration keeps one after every run.
REFERENCE_EVERY_S = 0.1


@dataclass(frozen=True)
class Reference:
    key: str
    name: str  # what it runs, for results: "f32 matmul 768x768x768"
    resource: Resource
    work: float  # FLOPs, bytes or transcendentals per run
    module_name: str
    prepare: Callable[[], Any]
    _: KW_ONLY  # fields from the seventh on are given by keyword
    execute: Callable[[Any], Any]  # blocks until done; returns the outputs
    fresh_pages: int = 0  # pages each run must fault in (its fresh output) to meet its ceiling; 0: none

    def usable(self, faults: Sequence[int], runs: int) -> list[bool]:
        """Which of its ``runs`` runs, by their counted page faults, met its conditions (see
        ``usable_references``)."""
        return usable_references(faults, runs, self.fresh_pages)

    def beside(self, every_s: float = REFERENCE_EVERY_S) -> Beside:
        """This reference as the timing loop alternates it with a kernel: after a kernel run once ``every_s`` has
        passed since the last reference (0: after every run)."""
        return Beside(self.module_name, self.prepare, self.execute, every_s)


def _stream_bytes(platform: str) -> int:
    if platform != "cpu":
        return 512 * _MIB
    llc = last_level_cache_bytes() or 32 * _MIB
    return min(max(2 * llc, 64 * _MIB), 128 * _MIB)


def _roofline_reference_matmul(a: Any, b: Any) -> Any:
    return a @ b


def _roofline_reference_vector(x: Any) -> Any:
    for _ in range(64):
        x = x * 0.999 + 0.001
    return x


def _roofline_reference_exp(x: Any) -> Any:
    for _ in range(8):
        x = jnp.exp(x * 0.5 - 1.0)
    return x


def _roofline_reference_stream(x: Any) -> Any:
    return x * 1.0001


def _roofline_reference_fresh(x: Any) -> Any:
    # The same work as the stream, under its own name: the trace tells programs apart by module name.
    return x * 1.0001


def cache_stream_bytes(platform: str) -> tuple[int, int]:
    """Working set of the in-cache stream (a quarter of the last-level cache, 1-8 MiB) and its passes per run
    (about 512 MiB of traffic: 5-10 ms on a CPU)."""
    if platform != "cpu":
        return 8 * _MIB, 64
    llc = last_level_cache_bytes() or 4 * _MIB
    size = min(max(llc // 4, _MIB), 8 * _MIB)
    return size, max(512 * _MIB // (2 * size), 1)


def _cache_loop(passes: int) -> Callable[[Any], Any]:
    def _roofline_reference_cache(x: Any) -> Any:
        return jax.lax.fori_loop(0, passes, lambda i, v: v * 1.0001, x)
    return _roofline_reference_cache


def filled(shape: tuple[int, ...], value: float, dtype: Any, platform: str) -> jax.Array:
    """An array of ``value`` on the default device. On a CPU, up to 64 MiB, filled on the host and copied:
    ``jnp.full`` compiles a program of its own for each shape, 50-70 ms of a reference's first use in a process on a
    2-core Xeon VM, where a 4 MiB copy takes 7 ms and a 48 MiB one 48 ms (128 MiB: 155 ms, filled there 95 ms)."""
    if platform != "cpu" or math.prod(shape) * np.dtype(dtype).itemsize > _HOST_FILL_MAX:
        return jnp.full(shape, value, dtype)
    copied: jax.Array = jax.device_put(np.full(shape, value, np.dtype(dtype)), may_alias=False)
    return copied


@functools.cache
def reference(platform: str, key: str) -> Reference:
    """The reference kernel ``key`` (see :data:`REFERENCE_KEYS`) for the default device, compiled once."""
    big = platform != "cpu"
    if key.startswith("matmul-"):
        dtype_name = key.split("-", 1)[1]
        n = 4096 if big else 1024
        dtype = jnp.float32 if dtype_name == "f32" else jnp.bfloat16
        a = filled((n, n), 0.5, dtype, platform)
        return _plain(
            key, f"{dtype_name} matmul {n}x{n}x{n}", "compute", 2.0 * n**3, _roofline_reference_matmul, (a, a)
        )
    if key == "vector":
        n = (64 if big else 4) * _MIB
        x = filled((n,), 0.5, jnp.float32, platform)
        return _plain(key, f"64 chained multiply-adds over {4 * n // _MIB} MiB of f32", "compute", 128.0 * n,
                      _roofline_reference_vector, (x,))
    if key == "transcendental":
        n = (16 if big else 4) * _MIB // 4
        x = filled((n,), 0.5, jnp.float32, platform)
        return _plain(key, f"8 chained exp over {4 * n // _MIB} MiB of f32", "transcendental", 8.0 * n,
                      _roofline_reference_exp, (x,))
    if key == "stream":
        size = _stream_bytes(platform)
        return _donated(key, f"donated f32 scale over {size // _MIB} MiB", _roofline_reference_stream, size, 2.0 * size,
                        platform)
    if key == "stream-cache":
        size, passes = cache_stream_bytes(platform)
        return _donated(key, f"{passes} passes of a donated f32 scale over {size // _MIB} MiB (in cache)",
                        _cache_loop(passes), size, 2.0 * size * passes, platform)
    if key == "stream-fresh":
        # Above glibc's largest dynamic mmap threshold (32 MiB): every run's output is freshly mapped, never a
        # heap block that an earlier free left behind (a 32 MiB one ran at twice its calibrated rate beside a
        # kernel that way).
        size = (48 if platform == "cpu" else 512) * _MIB
        x = filled((size // 4,), 1.0, jnp.float32, platform)
        fresh = _plain(key, f"f32 scale over {size // _MIB} MiB into a fresh output", "first-touch", 2.0 * size,
                       _roofline_reference_fresh, (x,))
        # Now and then (up to a quarter of the runs beside a kernel on a 2-core AMD EPYC Zen 4 VM) its output lands in
        # pages an earlier buffer left mapped: it then runs 4x faster, faults nothing, and meets no ceiling of
        # the kernel's. Its fault count tells those runs apart.
        return replace(fresh, fresh_pages=size // page_size() if platform == "cpu" else 0)
    raise ValueError(f"unknown reference kernel {key!r}; known: {', '.join(REFERENCE_KEYS)}")


def _donated(key: str, name: str, fn: Callable[[Any], Any], size: int, work: float, platform: str) -> Reference:
    x = filled((size // 4,), 1.0, jnp.float32, platform)
    program = compile_program(jax.jit(fn, donate_argnums=0), (x,), {}, f"reference {key}")
    compiled = program.compiled
    state = {"x": program.leaves[0]}

    def execute(_: Any) -> Any:
        out = _block(compiled(state["x"]))  # donated: the output is the next run's input, no copy
        state["x"] = out
        return out

    return Reference(key, name, "memory", work, program.module_name, lambda: None, execute=execute)


def _plain(key: str, name: str, resource: Resource, work: float, fn: Callable[..., Any],
           args: tuple[Any, ...]) -> Reference:
    program = compile_program(jax.jit(fn), args, {}, f"reference {key}")
    compiled = program.compiled
    leaves = program.leaves

    def execute(_: Any) -> Any:
        return _block(compiled(*leaves))

    return Reference(key, name, resource, work, program.module_name, lambda: None, execute=execute)


def reference_key_for(roof: RooflineEstimate, uses: list[CeilingUse], fresh_touch_s: float = 0.0,
                      in_cache: bool = False) -> str | None:
    """The reference that meets the ceiling bounding this kernel, in the kernel's conditions; None for
    interconnect-bound kernels. ``fresh_touch_s``: the first touch of the kernel's fresh pages the model expects
    (where it is the larger part, the reference writes fresh pages too); ``in_cache``: its working set fits the
    last-level cache."""
    bound = roof.bound
    if fresh_touch_s > roof.core_time_s:
        return "stream-fresh"
    if bound == "memory":
        return "stream-cache" if in_cache else "stream"
    if bound == "transcendental":
        return "transcendental"
    if bound != "compute":
        return None
    compute = [u for u in uses if not u.is_bytes and u.work != "transcendentals" and u.amount > 0]
    if not compute:
        return "vector"
    main = max(compute, key=lambda u: u.amount / u.ceiling.value)
    if main.work.startswith("vector"):
        return "vector"
    return "matmul-f32" if main.key in ("f32", "tf32", "f64") else "matmul-bf16"
