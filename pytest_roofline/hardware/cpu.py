"""What the CPU is: model, vendor, clock, ISA flags and cores (from /proc/cpuinfo and cpufreq), and the
theoretical f32 peak those imply. Reads files; no JAX."""

from __future__ import annotations

import os
import platform as _platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["cpu_info", "theoretical_cpu_peak"]


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


