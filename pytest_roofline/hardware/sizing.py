"""The roofline's own numbers for sizing a test: the peak a dtype's matrix work meets, the critical intensity
(FLOP per byte at the ridge point, where compute time equals memory time), and the smallest matmul that is
compute-bound on a device with a margin. Pure; dtypes by name, so no JAX or NumPy is imported.

For ``x[B, D] @ w[D, F]`` in a dtype of ``s`` bytes the kernel does ``2·B·D·F`` FLOPs and, read once and written
once, moves ``s·(B·D + D·F + B·F)`` bytes, so its intensity is

    I(B) = 2·B·D·F / (s·(B·D + D·F + B·F))  ≈  2·B / s   while B << D, F

(about B in bf16, B/2 in f32). It is compute-bound where ``I(B) >= critical intensity``; asking for ``margin``
times the critical intensity and solving for B:

    B >= m·c·s·D·F / (2·D·F - m·c·s·(D + F))

which has a solution only while ``2·D·F / (s·(D + F))``, the intensity as B grows without end, exceeds ``m·c``:
narrow weights are memory-bound at any batch. A square ``n x n @ n x n`` matmul has ``I = 2·n / (3·s)``, so
``n >= 1.5·m·c·s``.
"""

from __future__ import annotations

import math
from typing import Any

from .ceiling import Ceiling, DeviceFigures
from .peaks import peak_for_class

__all__ = ["dtype_key", "dtype_bytes", "peak_for_dtype", "critical_intensity", "compute_bound_batch",
           "compute_bound_size"]

_NAMES = {"bfloat16": "bf16", "float16": "f16", "half": "f16", "float32": "f32", "single": "f32", "float": "f32",
          "float64": "f64", "double": "f64", "int8": "int8", "s8": "int8", "tf32": "tf32"}
_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "tf32": 4, "f64": 8, "int8": 1, "fp8": 1}


def dtype_key(dtype: Any) -> str:
    """The hardware table's key for a dtype: ``jnp.bfloat16``, ``np.dtype("float32")``, ``"bf16"`` and
    ``"float32"`` all work (by name)."""
    name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)
    name = str(getattr(name, "name", name)).lower()
    key = _NAMES.get(name, name)
    if key.startswith("float8"):
        return "fp8"
    if key not in _BYTES:
        raise ValueError(f"dtype {dtype!r}: not one the roofline sizes; known: bfloat16, float16, float32, "
                         f"float64, int8, float8_*")
    return key


def dtype_bytes(dtype: Any) -> int:
    return _BYTES[dtype_key(dtype)]


def peak_for_dtype(spec: DeviceFigures, dtype: Any, precision: str = "default") -> Ceiling:
    """The peak a matmul in ``dtype`` meets on ``spec`` (f32 at default precision runs as TF32 on a GPU and as
    one bf16 pass on a TPU: hardware/peaks.py)."""
    return peak_for_class(spec, dtype_key(dtype), precision)[1]


def critical_intensity(spec: DeviceFigures, dtype: Any, precision: str = "default") -> float:
    """FLOP per byte of main memory at which a matmul in ``dtype`` turns from memory-bound to compute-bound."""
    return peak_for_dtype(spec, dtype, precision).value / spec.memory_bandwidth.value


def _round_up(value: float, multiple: int) -> int:
    if isinstance(multiple, bool) or not isinstance(multiple, int) or multiple < 1:
        raise ValueError(f"multiple must be a positive integer, got {multiple!r}")
    return max(multiple, math.ceil(value / multiple) * multiple)


def _check_margin(margin: float) -> float:
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not margin >= 1:
        raise ValueError(f"margin must be a number >= 1 (1 = exactly at the ridge point), got {margin!r}")
    return float(margin)


def compute_bound_batch(spec: DeviceFigures, d: int, f: int, dtype: Any, margin: float = 2.0,
                        multiple: int = 1) -> int:
    """The smallest batch B, a multiple of ``multiple``, at which ``x[B, d] @ w[d, f]`` in ``dtype`` has
    ``margin`` times the critical intensity of ``spec`` (its compute time is then ``margin`` times its memory
    time). A ValueError says so where no batch gets there (the weights are too narrow)."""
    if d < 1 or f < 1:
        raise ValueError(f"d and f must be positive, got d={d}, f={f}")
    m, s = _check_margin(margin), dtype_bytes(dtype)
    c = critical_intensity(spec, dtype)
    limit = 2 * d * f / (s * (d + f))
    if limit <= m * c:
        raise ValueError(f"x[B, {d}] @ w[{d}, {f}] in {dtype_key(dtype)} is memory-bound at any batch on "
                         f"{spec.name}: its intensity approaches {limit:.4g} FLOP/B as B grows, below {m:g} x the "
                         f"critical {c:.4g} FLOP/B; make d and f larger")
    return _round_up(m * c * s * d * f / (2 * d * f - m * c * s * (d + f)), multiple)


def compute_bound_size(spec: DeviceFigures, dtype: Any, margin: float = 2.0, multiple: int = 1) -> int:
    """The smallest n, a multiple of ``multiple``, at which the square ``n x n @ n x n`` matmul in ``dtype`` has
    ``margin`` times the critical intensity of ``spec`` (intensity 2n / (3s) for s bytes per element)."""
    m = _check_margin(margin)
    return _round_up(1.5 * m * critical_intensity(spec, dtype) * dtype_bytes(dtype), multiple)
