"""What the CPU is: model, vendor, clock, ISA flags and cores (from /proc/cpuinfo and cpufreq), and the
theoretical f32 peak those imply. Reads files; no JAX."""

from __future__ import annotations

import os
import platform as _platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["cpu_info", "theoretical_cpu_peak", "last_level_cache_bytes", "parse_cache_size"]


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




def parse_cache_size(text: str) -> int | None:
    """A sysfs cache size ("491520K", "32M", "2048") in bytes; None when unreadable."""
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "KMG" else text
    return int(digits) * scale if digits.isdigit() else None


def last_level_cache_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """The size of the largest data (or unified) cache of CPU 0 as the system reports it (a VM reports the
    host's cache, which other tenants share); None where the system does not say."""
    best: tuple[int, int] | None = None
    for entry in sorted(Path(root).glob("index*")):
        try:
            kind = (entry / "type").read_text().strip()
            level = int((entry / "level").read_text().strip())
            size = parse_cache_size((entry / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or size is None:
            continue
        if best is None or (level, size) > best:
            best = (level, size)
    return best[1] if best else None
