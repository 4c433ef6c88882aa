"""Calibration kernels: the best this machine does on a large matmul per dtype and a donated streaming kernel,
timed the same way as the kernels under test (imports JAX). A ceiling is the best of several runs (the
minimum time). CPUs have no datasheet that fits a VM, so their ceilings are always measured; accelerators
can be measured on request (``ceilings="calibrated"``). The cache is :mod:`pytest_roofline.hardware.calibration`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import jaxlib

from ..hardware.calibration import (
    CACHE_VERSION,
    Refresh,
    calibrated_spec_from,
    calibration_figures,
    cpu_spec_from,
)
from ..hardware.cpu import cpu_info
from ..hardware.spec import HardwareSpec
from .program import compile_program, time_compiled
from .settings import TimingSettings

__all__ = ["machine_key", "measure_ceilings", "cpu_spec", "calibrated_spec"]

# Problem sizes per platform: large enough to leave caches and reach the steady state.
_SIZES: dict[str, dict[str, Any]] = {
    "cpu": {"matmul": (1024, 2048), "stream_elements": 64 * 1024 * 1024},  # 256 MiB of f32
    "default": {"matmul": (4096, 8192), "stream_elements": 256 * 1024 * 1024},  # 1 GiB of f32
}


def machine_key(platform: str, device_kind: str) -> dict[str, Any]:
    """What a calibration is valid for."""
    key: dict[str, Any] = {
        "cache_version": CACHE_VERSION,
        "platform": platform,
        "device_kind": device_kind,
        "jax": jax.__version__,
        "jaxlib": getattr(jaxlib, "__version__", "unknown"),
    }
    if platform == "cpu":
        info = cpu_info()
        key["cpu_model"] = info["model"]
        key["cores"] = info["cores"]
    return key


def measure_ceilings(platform: str) -> dict[str, Any]:
    """Run the calibration kernels; returns {"peaks": {dtype: FLOP/s}, "memory": B/s, "details": {...}}."""
    sizes = _SIZES.get(platform, _SIZES["default"])
    settings = TimingSettings(warmup=1, min_runs=5, max_runs=8, budget_s=3.0, target_spread=0.0, timer="auto")
    key = jax.random.key(0)
    peaks: dict[str, float] = {}
    details: dict[str, str] = {}
    for dtype_name, dtype in (("f32", jnp.float32), ("bf16", jnp.bfloat16)):
        # The best over sizes and runs: which size runs best differs between machines.
        for n in sizes["matmul"]:
            a = jax.random.normal(key, (n, n), dtype)
            b = jax.random.normal(jax.random.fold_in(key, 1), (n, n), dtype)
            program = compile_program(jnp.matmul, (a, b), {}, f"calibration matmul {dtype_name}")
            timing = time_compiled(program, settings).timing
            rate = 2.0 * n**3 / timing.min_s
            if rate > peaks.get(dtype_name, 0.0):
                peaks[dtype_name] = rate
                details[dtype_name] = (f"{n}x{n}x{n} {dtype_name} matmul, best of {timing.runs} runs "
                                       f"({timing.timer}) over sizes {list(sizes['matmul'])}")
            del a, b, program
    elements = sizes["stream_elements"]
    x = jnp.ones((elements,), jnp.float32)
    scale = jax.jit(lambda v: v * 1.0001, donate_argnums=0)
    program = compile_program(scale, (x,), {}, "calibration stream")
    timing = time_compiled(program, settings).timing
    moved = 2.0 * elements * 4  # read + write
    details["memory"] = (f"donated f32 scale over {elements * 4 / 2**20:.0f} MiB (read + write), "
                         f"best of {timing.runs} runs ({timing.timer})")
    return {"peaks": peaks, "memory": moved / timing.min_s, "details": details}


def cpu_spec(device_kind: str = "cpu", refresh: Refresh = "cached") -> HardwareSpec:
    """The CPU's ceilings, measured on this machine (cached)."""
    figures, where = calibration_figures(machine_key("cpu", device_kind), refresh, lambda: measure_ceilings("cpu"))
    return cpu_spec_from(figures, where, device_kind)


def calibrated_spec(base: HardwareSpec, device_kind: str, refresh: Refresh = "cached") -> HardwareSpec:
    """An accelerator's table entry with its bf16 and f32 peaks and memory bandwidth measured on it."""
    figures, where = calibration_figures(machine_key(base.platform, device_kind), refresh,
                                         lambda: measure_ceilings(base.platform))
    return calibrated_spec_from(base, figures, where)
