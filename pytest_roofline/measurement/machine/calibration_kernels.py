"""Calibration kernels: a large matmul per dtype, a donated stream over a working set well beyond the
last-level cache, chains of exp and tanh, and the reference kernels of live ceilings
(:mod:`~.reference_kernels`), all timed the same way as the kernels under test (imports JAX).

A ceiling is a robust high quantile of one well-sized measurement (the rate of the 20th-percentile time, see
:func:`~pytest_roofline.hardware.calibration_cache.robust_rate`), never the one best run, and its spread is kept beside
it. A noisy measurement is taken again; the matmul shapes run in two rounds and the faster round counts (a
shared host's speed drifts by several percent over a minute, and noise only slows a kernel down). A reference's
calibrated rate is its median. CPUs have no datasheet that fits a VM, so their ceilings are always measured;
accelerators on request. The cache is :mod:`pytest_roofline.hardware.calibration_cache`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import jaxlib

from ...base.progress import say
from ...base.quantiles import quantile
from ...base.units import format_quantity
from ...hardware.calibration_cache import (
    CACHE_VERSION,
    CEILING_QUANTILE,
    CONTENDED_ABOVE,
    Refresh,
    calibrated_spec_from,
    calibration_figures,
    cpu_spec_from,
    robust_rate,
)
from ...hardware.calibration_figures import CalibrationFigures
from ...hardware.cpu import Contention, cpu_info, last_level_cache_bytes
from ...hardware.spec import HardwareSpec
from ..compiled import CompiledProgram, compile_program, time_compiled
from ..options import TimingSettings
from ..timing import Timed
from .calibration_record import FiguresInProgress
from .reference_kernels import REFERENCE_KEYS, REFERENCES_VERSION, reference

__all__ = ["machine_key", "measure_ceilings", "cpu_spec", "calibrated_spec"]

_MIB = 2**20
# Matmul shapes (m, k, n) per platform: which shape runs best differs between machines and dtypes (on a 2-core
# Zen 4 VM a 1024x4096x1024 f32 matmul beat the 1024^3 one by 4%, a 512^3 bf16 one the 2048^3 one by 15%), so
# each is measured and the highest robust rate kept: a property of the kernel's shape, not a maximum over
# noise (each shape's rate is a quantile). Cache-resident sizes are included: a ceiling that a plain matmul of
# another size beats is not the machine's ceiling.
_MATMUL: dict[str, tuple[tuple[int, int, int], ...]] = {
    "cpu": ((256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (1024, 4096, 1024)),
    "default": ((4096, 4096, 4096), (8192, 8192, 8192)),
}
_RUNS = TimingSettings(warmup=2, min_runs=15, max_runs=15, budget_s=4.0, target_spread=0.0, timer="auto")
# A figure whose runs spread more than this is measured again (at most _ATTEMPTS times in all) and the steadiest
# attempt kept. Noise only slows a kernel down, so a noisy measurement under-states a ceiling, and a cached
# ceiling stays: on a 2-core Zen 4 VM one calibration taken while the host was busy (f32 spread 33%, no other
# process in /proc/stat) set the f32 ceiling at 175 GFLOP/s, and plain matmuls then read 105-118% of it; taken
# quietly (spread 4%) it was 209 GFLOP/s and none read above 100%.
_STEADY_SPREAD = 0.10
_ATTEMPTS = 3
# The matmul shapes run this many rounds, one after the other, and each dtype keeps its fastest robust rate: on the
# same Zen 4 VM a 1024x4096x1024 f32 matmul ran 6% faster a minute after a steady (spread 3.6%) calibration of it.
_MATMUL_ROUNDS = 2


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
        key["cpu_generation"] = info["generation"]  # family/model/stepping: one model name, several CPUs
        key["cpu_flags"] = hashlib.sha256(" ".join(sorted(info["flags"])).encode()).hexdigest()[:12]
    return key


def _stream_bytes(platform: str) -> tuple[int, str]:
    """Working set of the calibration stream: twice the last-level cache, at least 256 MiB, at most 1 GiB."""
    if platform != "cpu":
        return 1024 * _MIB, "1 GiB"
    llc = last_level_cache_bytes()
    size = min(max(2 * (llc or 0), 256 * _MIB), 1024 * _MIB)
    told = f"last-level cache {llc // _MIB} MiB as the system reports it" if llc else "last-level cache unknown"
    return size, f"{size // _MIB} MiB; {told}"


def measure_ceilings(platform: str, progress: Callable[[str], None] = say) -> CalibrationFigures:
    """Run the calibration kernels: their figures, and on a CPU the share of the CPUs other processes used
    meanwhile (undated: the cache dates what it takes in)."""
    with Contention() as contention:
        figures = _measure_ceilings(platform, progress)
    busy = contention.share if platform == "cpu" else None
    return figures.taken(busy)


def _measure_ceilings(platform: str, progress: Callable[[str], None]) -> FiguresInProgress:
    shapes = _MATMUL.get(platform, _MATMUL["default"])
    stream, stream_how = _stream_bytes(platform)
    matmuls = (("f32", jnp.float32), ("bf16", jnp.bfloat16)) + ((("int8", jnp.int8),) if platform == "cpu" else ())
    progress(f"calibrating this machine's ceilings once ({', '.join(k for k, _ in matmuls)} matmuls of "
             f"{len(shapes)} shapes, "
             f"a {stream // _MIB} MiB memory stream donated and into fresh pages, an in-cache stream, exp/tanh, "
             f"u32 xor-shift, "
             f"{len(REFERENCE_KEYS)} reference kernels; about 30-60 s); later runs read the cache")
    figures = FiguresInProgress(platform)
    step = _Steps(progress, len(matmuls) + 2)
    for dtype_name, dtype in matmuls:
        _matmul_peak(figures, dtype_name, dtype, shapes)
        step.done(f"{dtype_name} matmul {format_quantity(figures.peaks.get(dtype_name, 0), 'FLOP/s')}")
    _converted_bf16(figures)
    donated_s = _memory(figures, stream, stream_how)
    _first_touch(figures, stream, donated_s)
    _cache(figures)
    step.done(f"memory {format_quantity(figures.rates['memory'], 'B/s')}")
    figures.rates["transcendental"], spread, how = _transcendental_rate(platform)
    figures.record("transcendental", spread, how)
    for ref_key in ("vector", "transcendental"):
        figures.reference_alone(ref_key)
    figures.rates["integer"], spread, how = _integer_rate()
    figures.record("integer", spread, how)
    step.done(f"transcendentals {format_quantity(figures.rates['transcendental'], '/s')}, integer ops "
              f"{format_quantity(figures.rates['integer'], '/s')}")
    assert set(figures.references) | set(figures.unmeasured) == set(REFERENCE_KEYS)
    return figures


class _Steps:
    """Progress through a calibration, one line per step with the time since it started: a calibration beside
    other work can take minutes."""

    def __init__(self, progress: Callable[[str], None], steps: int) -> None:
        self.progress = progress
        self.steps = steps
        self.start = time.perf_counter()
        self.count = 0

    def done(self, what: str) -> None:
        self.count += 1
        took = time.perf_counter() - self.start
        self.progress(f"calibration step {self.count} of {self.steps}: {what} ({took:.0f} s)")



def _time_beside(program: CompiledProgram, platform: str, ref_key: str) -> Timed:
    """One calibration measurement, the reference of ``ref_key`` timed beside it."""
    return time_compiled(program, _RUNS, beside=reference(platform, ref_key).beside(every_s=0.0))


def _beside_others(timed: Timed) -> bool:
    """Whether other processes held the CPUs during an attempt: its spread is theirs, and another attempt beside
    them would measure them again (the calibration is then provisional, whatever its spread)."""
    share = timed.timing.others_cpu_share
    return share is not None and share > CONTENDED_ABOVE


def _steadiest(attempt: Callable[[], Timed]) -> tuple[Timed, str]:
    """Run ``attempt`` until its spread is at most :data:`_STEADY_SPREAD` (at most :data:`_ATTEMPTS` times, and
    once where other processes held the CPUs during it); the attempt with the smallest spread, and a note of how
    many were made when more than one."""
    tries = [attempt()]
    while tries[-1].timing.spread > _STEADY_SPREAD and len(tries) < _ATTEMPTS and not _beside_others(tries[-1]):
        tries.append(attempt())
    best = min(tries, key=lambda timed: timed.timing.spread)
    return best, (f", the steadiest of {len(tries)} attempts" if len(tries) > 1 else "")


def _matmul_operands(m: int, k: int, n: int, dtype: Any) -> tuple[Any, Any, Any]:
    """The function and operands of one calibration matmul: an integer one (int8) accumulates in int32, as a
    quantized matmul does (``preferred_element_type``), on integers of both signs."""
    key = jax.random.key(0)
    if jnp.issubdtype(dtype, jnp.integer):
        ints = partial(jax.random.randint, minval=-100, maxval=100, dtype=dtype)
        return (partial(jnp.matmul, preferred_element_type=jnp.int32), ints(key, (m, k)),
                ints(jax.random.fold_in(key, 1), (k, n)))
    normal = partial(jax.random.normal, dtype=dtype)
    return jnp.matmul, normal(key, (m, k)), normal(jax.random.fold_in(key, 1), (k, n))


def _matmul_peak(figures: FiguresInProgress, dtype_name: str, dtype: Any,
                 shapes: tuple[tuple[int, int, int], ...]) -> None:
    """The fastest rate of the matmul shapes in this dtype; beside its reference kernel where there is one (int8
    has none: a kernel of int8 matrix work is paired with the bf16 one)."""
    peaks = figures.peaks
    ref_key = f"matmul-{dtype_name}"
    paired = ref_key in REFERENCE_KEYS
    ref_timed: list[Timed] = []
    for m, k, n in shapes * _MATMUL_ROUNDS:
        fn, a, b = _matmul_operands(m, k, n, dtype)
        program = compile_program(fn, (a, b), {}, f"calibration matmul {dtype_name}")
        timed, tries = _steadiest(partial(_time_beside, program, figures.platform, ref_key) if paired else
                                  partial(time_compiled, program, _RUNS))
        ref_timed.append(timed)
        timing = timed.timing
        rate, spread = robust_rate(2.0 * m * k * n, timing.per_run_s)
        if rate > peaks.get(dtype_name, 0.0):
            peaks[dtype_name] = rate
            figures.record(dtype_name, spread, f"{m}x{k}x{n} {dtype_name} matmul{_converts(program.hlo_text)} (the "
                           f"fastest of {len(shapes)} shapes, {shapes[0][0]} to {max(max(s) for s in shapes)} on a "
                           f"side, the faster of {_MATMUL_ROUNDS} rounds), 80th-percentile rate of {timing.runs} runs "
                           f"({timing.timer}, spread {spread:.1%}{tries})")
        del a, b, program
    if paired:
        figures.reference_rate(ref_key, ref_timed)


def _converted_bf16(figures: FiguresInProgress) -> None:
    """Where XLA converts bf16 to f32 around the dot (XLA:CPU), bf16 matrix FLOPs run on the f32 dot: a large
    bf16 matmul whose converts are a small part of its time reaches the f32 rate (a 256x4096x8192 one read
    105-121% of a bf16 ceiling measured through the converts), so the bf16 ceiling is the faster of the two."""
    peaks, details = figures.peaks, figures.details
    if "converted to f32" in details.get("bf16", "") and peaks.get("f32", 0.0) > peaks.get("bf16", 0.0):
        peaks["bf16"] = peaks["f32"]
        details["bf16"] = (f"the f32 ceiling: XLA converts bf16 to f32 around the dot here, so bf16 matrix FLOPs "
                           f"run on the f32 dot (bf16 matmuls measured through their converts: {details['bf16']})")


def _memory(figures: FiguresInProgress, stream: int, stream_how: str) -> float:
    """The DRAM bandwidth (a donated stream); returns its robust time per run."""
    x = jnp.ones((stream // 4,), jnp.float32)
    scale = jax.jit(lambda v: v * 1.0001, donate_argnums=0)
    program = compile_program(scale, (x,), {}, "calibration stream")
    timed, tries = _steadiest(partial(_time_beside, program, figures.platform, "stream"))
    figures.reference_rate("stream", [timed])
    timing = timed.timing
    del x
    figures.rates["memory"], spread = robust_rate(2.0 * stream, timing.per_run_s)
    figures.record("memory", spread, f"donated f32 scale over {stream_how} (read + write), "
                   f"80th-percentile rate of {timing.runs} runs ({timing.timer}, spread {spread:.1%}{tries})")
    return quantile(timing.per_run_s, CEILING_QUANTILE)


def _first_touch(figures: FiguresInProgress, stream: int, donated_s: float) -> None:
    """The first-touch rate: the same stream writing a fresh output, against the donated one; and the bytes one
    page fault maps (from the operating system's count). None where no cost shows (huge pages everywhere)."""
    x = jnp.ones((stream // 4,), jnp.float32)
    program = compile_program(jax.jit(lambda v: v * 1.0001), (x,), {}, "calibration fresh stream")
    fresh = reference(figures.platform, "stream-fresh")
    tries: list[Timed] = []
    while len(tries) < _ATTEMPTS:  # now and then every output of the reference lands in pages left mapped: again
        timed = time_compiled(program, _RUNS, beside=fresh.beside(every_s=0.0))
        tries.append(timed)
        if any(fresh.usable(timed.reference_faults, len(timed.reference_s))):
            break
    del x, program
    figures.reference_rate("stream-fresh", tries)  # every attempt's usable runs; the others counted as left out
    if figures.platform != "cpu":
        return  # accelerators map no pages on first touch: the reference's rate is all that is needed
    timing = timed.timing
    fresh_s = quantile(timing.per_run_s, CEILING_QUANTILE)
    faults = timing.median_faults
    if not faults or fresh_s - donated_s <= 0.02 * fresh_s:
        figures.record("first_touch", timing.spread, f"no first-touch cost measured: a fresh {stream // _MIB} MiB "
                       f"output took {fresh_s * 1e3:.1f} ms, donated {donated_s * 1e3:.1f} ms, "
                       f"{faults or 0:.0f} page faults per run")
        return
    figures.rates["first_touch"] = stream / (fresh_s - donated_s)
    figures.bytes_per_fault = stream / faults
    figures.record("first_touch", timing.spread, f"f32 scale over {stream // _MIB} MiB into a fresh output "
                   f"({faults:,.0f} page faults per run, {stream / faults:,.0f} bytes each): "
                   f"{fresh_s * 1e3:.1f} ms against {donated_s * 1e3:.1f} ms donated (80th-percentile times of "
                   f"{timing.runs} runs each)")


def _cache(figures: FiguresInProgress) -> None:
    """The last-level cache's bandwidth: the in-cache stream reference's robust rate."""
    alone = figures.reference_alone("stream-cache")
    llc = last_level_cache_bytes() if figures.platform == "cpu" else None  # the host CPU's, not a device's
    if not llc:
        return
    ref = reference(figures.platform, "stream-cache")
    figures.rates["cache_memory"], spread = robust_rate(ref.work, alone.timing.per_run_s)
    figures.cache_bytes = llc
    figures.record("cache_memory", spread, f"{ref.name}, read + write, 80th-percentile rate of "
                   f"{alone.timing.runs} runs; last-level cache {llc // _MIB} MiB as the system reports it")


def _converts(hlo_text: str) -> str:
    """How XLA ran a low-precision matmul: converted to f32 around an f32 dot, or kept."""
    return " (converted to f32 around the dot)" if " convert(" in hlo_text or "convert_" in hlo_text else ""


def _transcendental_rate(platform: str) -> tuple[float, float, str]:
    """The fastest of four transcendental kernels: 16 chained exp or tanh over a cache-resident array, and one
    exp or tanh over a larger donated array (on XLA:CPU one exp per element runs ~4x faster than a chain of 16,
    so a chain alone gave a ceiling that a plain exp beat)."""
    chained = (16 if platform != "cpu" else 1) * _MIB // 4
    single = (64 if platform != "cpu" else 16) * _MIB // 4
    best = (0.0, 0.0, "")
    for fn_name, fn in (("exp", jnp.exp), ("tanh", jnp.tanh)):
        def chain(v: Any, fn: Any = fn) -> Any:
            for _ in range(16):
                v = fn(v * 0.5)
            return v

        def one(v: Any, fn: Any = fn) -> Any:
            return fn(v * 0.5)

        variants = ((f"16 chained {fn_name} over {chained * 4 // _MIB} MiB of f32", chain, chained, 16.0),
                    (f"one {fn_name} over {single * 4 // _MIB} MiB of f32, donated", one, single, 1.0))
        for what, kernel, elements, per_element in variants:
            y = jnp.full((elements,), 0.5, jnp.float32)
            jitted = jax.jit(kernel, donate_argnums=0) if per_element == 1.0 else kernel
            timing = time_compiled(compile_program(jitted, (y,), {}, f"calibration {fn_name}"), _RUNS).timing
            rate, spread = robust_rate(per_element * elements, timing.per_run_s)
            if rate > best[0]:
                best = (rate, spread, f"{what} (the fastest of exp and tanh, chained and single), "
                                      f"80th-percentile rate of {timing.runs} runs")
            del y
    return best


def _integer_rate() -> tuple[float, float, str]:
    """Elementwise integer ops per second: 8 rounds of xor-shift (shift, xor, three times) over a cache-resident
    array of u32, the bit mixing of a counter-based RNG (48 integer ops per element)."""
    elements = _MIB // 4

    def mix(v: Any) -> Any:
        for _ in range(8):
            v = v ^ (v << 13)
            v = v ^ (v >> 17)
            v = v ^ (v << 5)
        return v

    y = jnp.arange(elements, dtype=jnp.uint32)
    timing = time_compiled(compile_program(mix, (y,), {}, "calibration integer"), _RUNS).timing
    rate, spread = robust_rate(48.0 * elements, timing.per_run_s)
    return rate, spread, (f"8 rounds of u32 xor-shift over {elements * 4 // _MIB} MiB (48 integer ops an element), "
                          f"80th-percentile rate of {timing.runs} runs")


def cpu_spec(device_kind: str = "cpu", refresh: Refresh = "cached") -> HardwareSpec:
    """The CPU's ceilings, measured on this machine (cached)."""
    figures, where = calibration_figures(machine_key("cpu", device_kind), refresh, lambda: measure_ceilings("cpu"),
                                         say)
    return cpu_spec_from(figures, where, device_kind)


def calibrated_spec(base: HardwareSpec, device_kind: str, refresh: Refresh = "cached") -> HardwareSpec:
    """An accelerator's table entry with its bf16 and f32 peaks and memory bandwidth measured on it."""
    figures, where = calibration_figures(machine_key(base.platform, device_kind), refresh,
                                         lambda: measure_ceilings(base.platform), say)
    return calibrated_spec_from(base, figures, where)
