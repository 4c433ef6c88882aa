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
========================  =====================================================  ============================

On a CPU they take 5-10 ms each: short enough that a pair (reference, kernel) sees the same moment of the
machine, long enough to span several scheduler time slices (shorter references, 1-3 ms, scattered more
from pair to pair beside a busy neighbour). The stream's working set is capped at 128 MiB to stay that short: on a VM the system reports the
host's last-level cache (480 MiB on the development machine, shared with other tenants); there a 128 MiB stream
slowed under a memory-copy neighbour by the same factor as a 1 GiB one (issue 10's note).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from ..analysis.ceilings import CeilingUse
from ..analysis.live import Resource
from ..analysis.roofline import RooflineEstimate
from ..hardware.cpu import last_level_cache_bytes
from .program import compile_program
from .timing import Beside

__all__ = ["Reference", "REFERENCE_KEYS", "REFERENCES_VERSION", "reference", "reference_key_for"]

REFERENCE_KEYS = ("matmul-f32", "matmul-bf16", "vector", "transcendental", "stream")
# Part of the calibration cache key: change it whenever a reference kernel changes (its rate is calibrated).
REFERENCES_VERSION = 2
_MIB = 2**20

_block: Callable[[Any], Any] = jax.block_until_ready


@dataclass(frozen=True)
class Reference:
    key: str
    name: str  # what it runs, for results: "f32 matmul 768x768x768"
    resource: Resource
    work: float  # FLOPs, bytes or transcendentals per run
    module_name: str
    prepare: Callable[[], Any]
    execute: Callable[[Any], Any]  # blocks until done; returns the outputs

    def beside(self) -> Beside:
        """This reference as the timing loop alternates it with a kernel."""
        return Beside(self.module_name, self.prepare, self.execute)


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


@functools.cache
def reference(platform: str, key: str) -> Reference:
    """The reference kernel ``key`` (see :data:`REFERENCE_KEYS`) for the default device, compiled once."""
    big = platform != "cpu"
    if key.startswith("matmul-"):
        dtype_name = key.split("-", 1)[1]
        n = 4096 if big else 1024
        dtype = jnp.float32 if dtype_name == "f32" else jnp.bfloat16
        a = jnp.full((n, n), 0.5, dtype)
        return _plain(key, f"{dtype_name} matmul {n}x{n}x{n}", "compute", 2.0 * n**3, _roofline_reference_matmul, (a, a))
    if key == "vector":
        n = (64 if big else 4) * _MIB
        x = jnp.full((n,), 0.5, jnp.float32)
        return _plain(key, f"64 chained multiply-adds over {4 * n // _MIB} MiB of f32", "compute", 128.0 * n,
                      _roofline_reference_vector, (x,))
    if key == "transcendental":
        n = (16 if big else 4) * _MIB // 4
        x = jnp.full((n,), 0.5, jnp.float32)
        return _plain(key, f"8 chained exp over {4 * n // _MIB} MiB of f32", "transcendental", 8.0 * n,
                      _roofline_reference_exp, (x,))
    if key == "stream":
        size = _stream_bytes(platform)
        x = jnp.ones((size // 4,), jnp.float32)
        program = compile_program(jax.jit(_roofline_reference_stream, donate_argnums=0), (x,), {},
                                  "reference stream")
        compiled = program.compiled
        state = {"x": program.leaves[0]}

        def execute(_: Any) -> Any:
            out = _block(compiled(state["x"]))  # donated: the output is the next run's input, no copy
            state["x"] = out
            return out

        return Reference(key, f"donated f32 scale over {size // _MIB} MiB", "memory", 2.0 * size,
                         program.module_name, lambda: None, execute)
    raise ValueError(f"unknown reference kernel {key!r}; known: {', '.join(REFERENCE_KEYS)}")


def _plain(key: str, name: str, resource: Resource, work: float, fn: Callable[..., Any],
           args: tuple[Any, ...]) -> Reference:
    program = compile_program(jax.jit(fn), args, {}, f"reference {key}")
    compiled = program.compiled
    leaves = program.leaves

    def execute(_: Any) -> Any:
        return _block(compiled(*leaves))

    return Reference(key, name, resource, work, program.module_name, lambda: None, execute)


def reference_key_for(roof: RooflineEstimate, uses: list[CeilingUse]) -> str | None:
    """The reference that meets the ceiling bounding this kernel; None for interconnect-bound kernels."""
    bound = roof.bound
    if bound == "memory":
        return "stream"
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
