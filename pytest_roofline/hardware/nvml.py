"""GPU clocks, throttling, temperature and power around the timed runs, read through NVML (the optional extra
``pip install 'pytest-roofline[nvml]'``, which installs ``nvidia-ml-py``); where nothing can be read (a CPU, a
TPU, no NVML) the record says why in one line. The reader takes the NVML module as an argument, so a fake can
stand in for it in tests. No JAX."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any

__all__ = ["ClockReading", "Clocks", "read_clocks", "nvml_clocks", "clock_drop", "THROTTLING"]

# NVML's clocks-event (throttle) reason bits (nvml.h, nvmlClocksEventReason*): those that lower the clocks
# below what the application asked for. GPU idle, application clock settings and sync boost are not throttling.
THROTTLING = {0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal", 0x40: "hw_thermal",
              0x80: "hw_power_brake"}
_CLOCK_SM, _CLOCK_MEM, _TEMPERATURE_GPU = 1, 2, 0  # NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU


@dataclass(frozen=True)
class ClockReading:
    """One NVML reading of a GPU: SM and memory clocks and their maxima (MHz), throttle reasons, temperature
    (C) and power (W)."""

    sm_mhz: float
    mem_mhz: float
    max_sm_mhz: float
    max_mem_mhz: float
    throttle: tuple[str, ...] = ()
    temperature_c: float | None = None
    _: KW_ONLY  # fields from the seventh on are given by keyword
    power_w: float | None = None

    def text(self) -> str:
        parts = [
            f"SM {self.sm_mhz:.0f}/{self.max_sm_mhz:.0f} MHz",
            f"memory {self.mem_mhz:.0f}/{self.max_mem_mhz:.0f} MHz",
        ]
        if self.temperature_c is not None:
            parts.append(f"{self.temperature_c:.0f} C")
        if self.power_w is not None:
            parts.append(f"{self.power_w:.0f} W")
        parts.append("throttled: " + ", ".join(self.throttle) if self.throttle else "not throttled")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"sm_mhz": self.sm_mhz, "mem_mhz": self.mem_mhz, "max_sm_mhz": self.max_sm_mhz,
                "max_mem_mhz": self.max_mem_mhz, "throttle": list(self.throttle),
                "temperature_c": self.temperature_c, "power_w": self.power_w}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClockReading:
        def maybe(key: str) -> float | None:
            return float(d[key]) if d.get(key) is not None else None

        return cls(float(d["sm_mhz"]), float(d["mem_mhz"]), float(d["max_sm_mhz"]), float(d["max_mem_mhz"]),
                   tuple(str(t) for t in d.get("throttle") or ()), maybe("temperature_c"), power_w=maybe("power_w"))


@dataclass(frozen=True)
class Clocks:
    """The readings before and after the timed runs, or why there are none (``unavailable``)."""

    before: ClockReading | None = None
    after: ClockReading | None = None
    unavailable: str = ""
    remeasured: bool = False  # the first runs throttled and were measured again

    @property
    def throttled(self) -> tuple[str, ...]:
        """The throttle reasons seen after the runs (the state the runs ended in)."""
        return self.after.throttle if self.after is not None else ()

    def clock_ratios(self) -> tuple[float, float] | None:
        """(SM, memory) clock over its maximum, the lower of the two readings; None without readings."""
        readings = [r for r in (self.before, self.after) if r is not None]
        if not readings:
            return None
        sm = min(r.sm_mhz / r.max_sm_mhz for r in readings if r.max_sm_mhz > 0)
        mem = min(r.mem_mhz / r.max_mem_mhz for r in readings if r.max_mem_mhz > 0)
        return sm, mem

    def roofline_at_clocks(self, compute_s: float, memory_s: float, other_s: float = 0.0) -> float | None:
        """The roofline time with compute scaled to the SM clock and memory to the memory clock the runs met;
        None without readings or where they ran at their maxima."""
        ratios = self.clock_ratios()
        if ratios is None or min(ratios) >= 1.0 or min(ratios) <= 0:
            return None
        sm, mem = ratios
        return max(compute_s / min(sm, 1.0), memory_s / min(mem, 1.0), other_s)

    def text(self) -> str:
        if self.after is None:
            return f"no reading: {self.unavailable}"
        before = f"before the runs {self.before.text()}; " if self.before is not None else ""
        again = "; the first runs throttled: measured again" if self.remeasured else ""
        return f"{before}after {self.after.text()}{again}"

    def to_dict(self) -> dict[str, Any]:
        return {"before": self.before.to_dict() if self.before else None,
                "after": self.after.to_dict() if self.after else None, "unavailable": self.unavailable,
                "remeasured": self.remeasured, "throttled": list(self.throttled), "text": self.text()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Clocks:
        before, after = d.get("before"), d.get("after")
        return cls(ClockReading.from_dict(before) if before else None, ClockReading.from_dict(after) if after else None,
                   str(d.get("unavailable") or ""), bool(d.get("remeasured", False)))


def read_clocks(nvml: Any, handle: Any) -> ClockReading:
    """One reading through the NVML module ``nvml`` (pynvml, or a fake)."""
    reasons_of = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    bits = int(reasons_of(handle))
    throttle = tuple(name for bit, name in THROTTLING.items() if bits & bit)
    try:
        temperature: float | None = float(nvml.nvmlDeviceGetTemperature(handle, _TEMPERATURE_GPU))
    except Exception:  # noqa: BLE001 - a reading NVML refuses on this device (NotSupported)
        temperature = None
    try:
        power: float | None = float(nvml.nvmlDeviceGetPowerUsage(handle)) / 1000.0  # milliwatts
    except Exception:  # noqa: BLE001
        power = None
    return ClockReading(float(nvml.nvmlDeviceGetClockInfo(handle, _CLOCK_SM)),
                        float(nvml.nvmlDeviceGetClockInfo(handle, _CLOCK_MEM)),
                        float(nvml.nvmlDeviceGetMaxClockInfo(handle, _CLOCK_SM)),
                        float(nvml.nvmlDeviceGetMaxClockInfo(handle, _CLOCK_MEM)), throttle, temperature, power_w=power)


def nvml_clocks(platform: str, vendor_hint: str, index: int, pci_bus_id: str | None = None,
                module: Any | None = None) -> tuple[Any, Any] | str:
    """(the NVML module, a handle to the device) for an NVIDIA GPU, or why no reading is possible. ``index``:
    the device's NVML index where its PCI bus id is unknown; ``module``: NVML itself, or a fake."""
    if platform != "gpu":
        return f"clocks are read on NVIDIA GPUs only (this is a {platform.upper()})"
    if "nvidia" not in vendor_hint.lower() and module is None:
        return f"clocks are read on NVIDIA GPUs only (this is {vendor_hint!r})"
    if module is None:
        try:
            module = importlib.import_module("pynvml")
        except ImportError:
            return "NVML is not installed (pip install 'pytest-roofline[nvml]' installs nvidia-ml-py)"
    try:
        module.nvmlInit()
        handle = (module.nvmlDeviceGetHandleByPciBusId(pci_bus_id) if pci_bus_id
                  else module.nvmlDeviceGetHandleByIndex(index))
    except Exception as exc:  # noqa: BLE001 - NVMLError: no driver, no permission
        return f"NVML could not be used: {exc}"
    return module, handle


def clock_drop(current: Clocks | None, earlier: Clocks | None, at_least: float = 0.05) -> str:
    """"with a clock drop: SM 1965 -> 1580 MHz" where the current runs ended at an SM or memory clock more than
    ``at_least`` below the earlier ones'; "" otherwise (or without readings)."""
    if current is None or earlier is None or current.after is None or earlier.after is None:
        return ""
    now, then = current.after, earlier.after
    drops = [f"{name} {a:.0f} -> {b:.0f} MHz" for name, a, b in (("SM", then.sm_mhz, now.sm_mhz),
                                                                  ("memory", then.mem_mhz, now.mem_mhz))
             if a > 0 and b < a * (1 - at_least)]
    return f"with a clock drop: {', '.join(drops)}" if drops else ""
