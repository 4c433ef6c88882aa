"""Measured ceilings: the best this machine does on a large matmul per dtype and a donated streaming kernel.

CPUs have no datasheet that fits a VM, so their ceilings are always measured; accelerators can be
measured on request (``ceilings="calibrated"``). A ceiling is the best of several runs (the minimum time),
timed the same way as the kernels under test. Results are cached per machine key (CPU model, core count,
device kind, jax and jaxlib versions) as JSON in the user cache directory
(``$PYTEST_ROOFLINE_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-roofline``, else ``~/.cache/pytest-roofline``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform as _platform
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from .hardware import Ceiling, HardwareSpec

__all__ = [
    "CACHE_DIR_ENV",
    "cache_dir",
    "machine_key",
    "cpu_info",
    "theoretical_cpu_peak",
    "load_cached",
    "store_cached",
    "calibrated_spec",
    "cpu_spec",
]

CACHE_DIR_ENV = "PYTEST_ROOFLINE_CACHE_DIR"
CACHE_VERSION = 2
# Problem sizes per platform: large enough to leave caches and reach the steady state.
_SIZES: dict[str, dict[str, Any]] = {
    "cpu": {"matmul": (1024, 2048), "stream_elements": 64 * 1024 * 1024},  # 256 MiB of f32
    "default": {"matmul": (4096, 8192), "stream_elements": 256 * 1024 * 1024},  # 1 GiB of f32
}


def cache_dir() -> Path:
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-roofline"


def cpu_info(cpuinfo_text: str | None = None) -> dict[str, Any]:
    """Model name, vendor, clock (MHz) and ISA flags from /proc/cpuinfo (empty fields where unknown)."""
    if cpuinfo_text is None:
        try:
            cpuinfo_text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo_text = ""
    fields: dict[str, str] = {}
    for line in cpuinfo_text.splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            fields.setdefault(key.strip(), value.strip())
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        mhz = float(fields.get("cpu MHz", "0"))
    except ValueError:
        mhz = 0.0
    clock = "reported clock (/proc/cpuinfo; a VM often reports the base clock, boost runs faster)"
    try:
        max_khz = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text().strip()
        if cpuinfo_text and max_khz.isdigit():
            mhz, clock = int(max_khz) / 1e3, "maximum clock (cpufreq)"
    except OSError:
        pass
    return {
        "model": fields.get("model name") or _platform.processor() or _platform.machine(),
        "vendor": fields.get("vendor_id", ""),
        "mhz": mhz,
        "clock": clock,
        "flags": fields.get("flags", "").split(),
        "cores": cores,
    }


def theoretical_cpu_peak(info: Mapping[str, Any]) -> tuple[float, str] | None:
    """cores x clock x f32 FLOPs per cycle per core, from the ISA flags; None where it cannot be derived."""
    flags = set(info.get("flags", []))
    mhz = float(info.get("mhz") or 0)
    if not mhz:
        return None
    if "avx512f" in flags:
        # AMD Zen 4 runs AVX-512 as two 256-bit halves: 2 FMA pipes x 8 lanes x 2 = 32; Intel: 64.
        per_cycle = 32 if info.get("vendor") == "AuthenticAMD" else 64
        isa = "AVX-512" + (" (Zen 4: two 256-bit FMA pipes)" if per_cycle == 32 else " (2 FMA units)")
    elif "avx2" in flags and "fma" in flags:
        per_cycle, isa = 32, "AVX2 + FMA (2 FMA units)"
    elif "sse2" in flags:
        per_cycle, isa = 8, "SSE2"
    else:
        return None
    cores = int(info.get("cores") or 1)
    clock = info.get("clock", "reported clock")
    how = (f"{cores} cores x {mhz / 1e3:.2f} GHz {clock} x {per_cycle} f32 FLOP/cycle "
           f"({isa}, assumed from CPU flags)")
    return cores * mhz * 1e6 * per_cycle, how


def machine_key(platform: str, device_kind: str) -> dict[str, Any]:
    import jax
    import jaxlib

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


def _cache_file(key: Mapping[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / f"calibration-{key['platform']}-{digest}.json"


def load_cached(key: Mapping[str, Any]) -> dict[str, Any] | None:
    path = _cache_file(key)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != dict(key):
        return None
    return data


def store_cached(key: Mapping[str, Any], figures: Mapping[str, Any]) -> Path:
    """Write atomically: a reader never sees half a file."""
    path = _cache_file(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"key": dict(key), **figures}, indent=2, sort_keys=True)
    fd, tmp = tempfile.mkstemp(prefix=".calibration-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _measure_ceilings(platform: str) -> dict[str, Any]:
    """Run the calibration kernels; returns {"peaks": {dtype: FLOP/s}, "memory": B/s, "details": {...}}."""
    import jax
    import jax.numpy as jnp

    from .runner import compile_program, time_compiled
    from .timing import TimingSettings

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
            timing = time_compiled(program, settings)
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
    timing = time_compiled(program, settings)
    moved = 2.0 * elements * 4  # read + write
    details["memory"] = (f"donated f32 scale over {elements * 4 / 2**20:.0f} MiB (read + write), "
                         f"best of {timing.runs} runs ({timing.timer})")
    return {"peaks": peaks, "memory": moved / timing.min_s, "details": details}


def _keep_best(old: Mapping[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Per figure, the higher of a cached and a new calibration: a ceiling is the best the machine has shown."""
    merged = dict(new)
    merged["peaks"] = dict(new["peaks"])
    merged["details"] = dict(new["details"])
    for dtype, value in old.get("peaks", {}).items():
        if value > merged["peaks"].get(dtype, 0.0):
            merged["peaks"][dtype] = value
            merged["details"][dtype] = old["details"][dtype] + f" (kept from {old.get('date', '?')})"
    if old.get("memory", 0.0) > merged["memory"]:
        merged["memory"] = old["memory"]
        merged["details"]["memory"] = old["details"]["memory"] + f" (kept from {old.get('date', '?')})"
    return merged


def _figures(platform: str, device_kind: str, refresh: bool | str) -> tuple[dict[str, Any], str]:
    """``refresh``: False uses the cache; True re-measures and replaces it; "best" re-measures and keeps,
    per figure, the higher of the cached and the new value."""
    key = machine_key(platform, device_kind)
    cached = load_cached(key)
    if cached is not None and not refresh:
        return cached, f"cached in {_cache_file(key)}"
    figures = _measure_ceilings(platform)
    figures["date"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if refresh == "best" and cached is not None:
        figures = _keep_best(cached, figures)
    path = store_cached(key, figures)
    return figures, f"measured now, cached in {path}"


def cpu_spec(device_kind: str = "cpu", refresh: bool | str = False) -> HardwareSpec:
    """The CPU's ceilings, measured on this machine (cached)."""
    figures, where = _figures("cpu", device_kind, refresh)
    info = cpu_info()
    date = figures["date"]
    details = figures["details"]
    peaks = {k: Ceiling(float(v), "calibration", f"{details[k]} on this machine; {where}", date)
             for k, v in figures["peaks"].items()}
    memory = Ceiling(float(figures["memory"]), "calibration", f"{details['memory']} on this machine; {where}", date)
    theoretical: dict[str, Ceiling] = {}
    notes = ["CPU ceilings are measured on this machine, not read from a datasheet"]
    derived = theoretical_cpu_peak(info)
    if derived is not None:
        theoretical["f32"] = Ceiling(derived[0], "theoretical", derived[1], date[:10])
        if "f32" in peaks and peaks["f32"].value > derived[0]:
            notes.append(f"the measured f32 ceiling ({peaks['f32'].value / 1e9:.0f} GFLOP/s) is above the "
                         f"theoretical peak at the {info.get('clock', 'reported clock')} "
                         f"({derived[0] / 1e9:.0f} GFLOP/s): the CPU runs faster than that clock")
    name = f"CPU {info['model']} x{info['cores']}"
    return HardwareSpec(name, "cpu", peaks, memory, None, (device_kind,), theoretical, tuple(notes))


def calibrated_spec(base: HardwareSpec, device_kind: str, refresh: bool | str = False) -> HardwareSpec:
    """An accelerator's table entry with its bf16 and f32 peaks and memory bandwidth replaced by measurements.

    The f32 matmul runs at JAX's default precision, so on a GPU it is stored as the TF32 ceiling.
    Peaks the calibration does not measure keep their datasheet figure.
    """
    figures, where = _figures(base.platform, device_kind, refresh)
    date = figures["date"]
    details = figures["details"]
    peaks = dict(base.peaks)
    for dtype, value in figures["peaks"].items():
        slot = "tf32" if (dtype == "f32" and base.platform == "gpu") else dtype
        if base.platform == "tpu" and dtype == "f32":
            continue  # default-precision f32 on TPU is one bf16 pass: the bf16 figure covers it
        peaks[slot] = Ceiling(float(value), "calibration", f"{details[dtype]}; {where}", date)
    memory = Ceiling(float(figures["memory"]), "calibration", f"{details['memory']}; {where}", date)
    theoretical = {k: v for k, v in base.peaks.items()}
    theoretical["memory"] = base.memory_bandwidth
    return replace(base, peaks=peaks, memory_bandwidth=memory, theoretical=theoretical,
                   notes=base.notes + ("calibrated ceilings; datasheet figures kept under 'theoretical'",))
