"""Calibration kernels: a large matmul per dtype, a donated stream over a working set well beyond the
last-level cache, chains of exp and tanh, and the reference kernels of live ceilings
(:mod:`~.references`), all timed the same way as the kernels under test (imports JAX).

A ceiling is a robust high quantile of one well-sized measurement (the rate of the 20th-percentile time, see
:func:`~pytest_roofline.hardware.calibration.robust_rate`), never the best run nor the best of several
calibrations, and its spread is kept beside it. A reference's calibrated rate is its median. CPUs have no
datasheet that fits a VM, so their ceilings are always measured; accelerators on request. The cache is
:mod:`pytest_roofline.hardware.calibration`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from statistics import median
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
    robust_rate,
)
from ..hardware.cpu import Contention, cpu_info, last_level_cache_bytes
from ..hardware.spec import HardwareSpec
from ..quantiles import relative_iqr
from .program import compile_program, time_compiled
from .references import REFERENCE_KEYS, REFERENCES_VERSION, reference
from .settings import TimingSettings
from .timing import Timed, time_program

__all__ = ["machine_key", "measure_ceilings", "cpu_spec", "calibrated_spec"]

_MIB = 2**20
# Matmul sizes per platform: which size runs best differs between machines, so each is measured and the higher
# robust rate kept (a property of the kernel's size, not a maximum over noise: each size's rate is a quantile).
_MATMUL = {"cpu": (1024, 2048), "default": (4096, 8192)}
_RUNS = TimingSettings(warmup=2, min_runs=15, max_runs=15, budget_s=4.0, target_spread=0.0, timer="auto")
_REFERENCE_RUNS = TimingSettings(warmup=2, min_runs=20, max_runs=20, budget_s=2.0, target_spread=0.0)


def machine_key(platform: str, device_kind: str) -> dict[str, Any]:
    """What a calibration is valid for."""
    key: dict[str, Any] = {
        "cache_version": CACHE_VERSION,
        "references_version": REFERENCES_VERSION,
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


def _stream_bytes(platform: str) -> tuple[int, str]:
    """Working set of the calibration stream: twice the last-level cache, at least 256 MiB, at most 1 GiB."""
    if platform != "cpu":
        return 1024 * _MIB, "1 GiB"
    llc = last_level_cache_bytes()
    size = min(max(2 * (llc or 0), 256 * _MIB), 1024 * _MIB)
    told = f"last-level cache {llc // _MIB} MiB as the system reports it" if llc else "last-level cache unknown"
    return size, f"{size // _MIB} MiB; {told}"


def _progress(text: str) -> None:
    print(f"pytest-roofline: {text}", file=sys.__stderr__ or sys.stderr, flush=True)


def measure_ceilings(platform: str, progress: Callable[[str], None] = _progress) -> dict[str, Any]:
    """Run the calibration kernels. Returns {"peaks": {dtype: FLOP/s}, "memory": B/s, "transcendental": 1/s,
    "references": {key: rate}, "details": {figure: how}, "spread": {figure: relative IQR}} and, on a CPU,
    "contention": the share of the CPUs other processes used meanwhile."""
    with Contention() as contention:
        figures = _measure_ceilings(platform, progress)
    if platform == "cpu" and contention.share is not None:
        figures["contention"] = contention.share
    return figures


def _measure_ceilings(platform: str, progress: Callable[[str], None]) -> dict[str, Any]:
    sizes = _MATMUL.get(platform, _MATMUL["default"])
    stream, stream_how = _stream_bytes(platform)
    progress(f"calibrating this machine's ceilings once (f32 and bf16 matmuls of {' and '.join(map(str, sizes))}, "
             f"a {stream // _MIB} MiB "
             f"memory stream, exp/tanh chains, {len(REFERENCE_KEYS)} reference kernels; about 10-20 s); "
             f"later runs read the cache")
    key = jax.random.key(0)
    figures: dict[str, Any] = {"peaks": {}, "details": {}, "spread": {}, "references": {}}

    def record(name: str, spread: float, how: str) -> None:
        figures["details"][name] = how
        figures["spread"][name] = spread

    # Each reference kernel runs beside the calibration kernel of its ceiling, as it will run beside a kernel
    # under test: its calibrated rate is its median in that setting (for the stream: with the caches flushed by
    # the large calibration stream, not warm from its own previous run).
    def reference_rate(ref_key: str, timed: list[Timed]) -> None:
        ref = reference(platform, ref_key)
        times = [t for one in timed for t in one.reference_s]
        figures["references"][ref_key] = ref.work / median(times)
        record(f"reference {ref_key}", relative_iqr(times), f"{ref.name}, median of {len(times)} runs beside "
               f"the calibration kernel")

    for dtype_name, dtype in (("f32", jnp.float32), ("bf16", jnp.bfloat16)):
        ref_timed: list[Timed] = []
        for n in sizes:
            a = jax.random.normal(key, (n, n), dtype)
            b = jax.random.normal(jax.random.fold_in(key, 1), (n, n), dtype)
            program = compile_program(jnp.matmul, (a, b), {}, f"calibration matmul {dtype_name}")
            timed = time_compiled(program, _RUNS, beside=reference(platform, f"matmul-{dtype_name}").beside())
            ref_timed.append(timed)
            timing = timed.timing
            rate, spread = robust_rate(2.0 * n**3, timing.per_run_s)
            if rate > figures["peaks"].get(dtype_name, 0.0):
                figures["peaks"][dtype_name] = rate
                record(dtype_name, spread, f"{n}x{n}x{n} {dtype_name} matmul (the faster of sizes "
                       f"{list(sizes)}), 80th-percentile rate of {timing.runs} runs ({timing.timer}, spread "
                       f"{spread:.1%})")
            del a, b, program
        reference_rate(f"matmul-{dtype_name}", ref_timed)

    x = jnp.ones((stream // 4,), jnp.float32)
    scale = jax.jit(lambda v: v * 1.0001, donate_argnums=0)
    timed = time_compiled(compile_program(scale, (x,), {}, "calibration stream"), _RUNS, beside=reference(platform, "stream").beside())
    reference_rate("stream", [timed])
    timing = timed.timing
    del x
    figures["memory"], spread = robust_rate(2.0 * stream, timing.per_run_s)
    record("memory", spread, f"donated f32 scale over {stream_how} (read + write), "
           f"80th-percentile rate of {timing.runs} runs ({timing.timer}, spread {spread:.1%})")

    # Transcendentals: the faster of exp and tanh chains over a cache-resident array (a lower bound on time).
    elements = (16 if platform != "cpu" else 1) * _MIB // 4
    y = jnp.full((elements,), 0.5, jnp.float32)
    best = (0.0, 0.0, "")
    for fn_name, fn in (("exp", jnp.exp), ("tanh", jnp.tanh)):
        def chain(v: Any, fn: Any = fn) -> Any:
            for _ in range(16):
                v = fn(v * 0.5)
            return v
        timing = time_compiled(compile_program(chain, (y,), {}, f"calibration {fn_name} chain"), _RUNS).timing
        rate, spread = robust_rate(16.0 * elements, timing.per_run_s)
        if rate > best[0]:
            best = (rate, spread, f"16 chained {fn_name} over {elements * 4 // _MIB} MiB of f32 (the faster of "
                                  f"exp and tanh), 80th-percentile rate of {timing.runs} runs")
    figures["transcendental"] = best[0]
    record("transcendental", best[1], best[2])

    # The vector and transcendental references work in cache: their setting matters little; timed on their own.
    for ref_key in ("vector", "transcendental"):
        ref = reference(platform, ref_key)
        alone = time_program(ref.prepare, ref.execute, ref.module_name, platform, _REFERENCE_RUNS)
        figures["references"][ref_key] = ref.work / median(alone.timing.per_run_s)
        record(f"reference {ref_key}", alone.timing.spread,
               f"{ref.name}, median of {alone.timing.runs} runs ({alone.timing.timer})")
    assert set(figures["references"]) == set(REFERENCE_KEYS)
    return figures


def cpu_spec(device_kind: str = "cpu", refresh: Refresh = "cached") -> HardwareSpec:
    """The CPU's ceilings, measured on this machine (cached)."""
    figures, where = calibration_figures(machine_key("cpu", device_kind), refresh, lambda: measure_ceilings("cpu"),
                                         _progress)
    return cpu_spec_from(figures, where, device_kind)


def calibrated_spec(base: HardwareSpec, device_kind: str, refresh: Refresh = "cached") -> HardwareSpec:
    """An accelerator's table entry with its bf16 and f32 peaks and memory bandwidth measured on it."""
    figures, where = calibration_figures(machine_key(base.platform, device_kind), refresh,
                                         lambda: measure_ceilings(base.platform), _progress)
    return calibrated_spec_from(base, figures, where)
