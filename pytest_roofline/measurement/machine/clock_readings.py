"""Reading a JAX device's clocks around its timed runs (:mod:`...hardware.nvml` through NVML), and which NVML
device a JAX device is. Imports JAX only through the device it is given."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ...hardware.nvml import ClockReading, Clocks, nvml_clocks, read_clocks

__all__ = ["ClockWatch", "nvml_index"]


def nvml_index(device: Any, visible: str | None = None) -> int:
    """The NVML index of a CUDA device: its ordinal, through ``CUDA_VISIBLE_DEVICES`` where that lists indices."""
    ordinal = int(getattr(device, "local_hardware_id", None) or getattr(device, "id", 0) or 0)
    listed = [
        v.strip()
        for v in (visible if visible is not None else os.environ.get("CUDA_VISIBLE_DEVICES", "")).split(",")
        if v.strip()
    ]
    if ordinal < len(listed) and listed[ordinal].isdigit():
        return int(listed[ordinal])
    return ordinal


class ClockWatch:
    """Reads a device's clocks before and after its runs; ``unavailable`` says why it cannot (one line)."""

    def __init__(self, device: Any, module: Any | None = None) -> None:
        platform = str(device.platform)
        source = nvml_clocks(platform, str(getattr(device, "device_kind", "")), nvml_index(device),
                             getattr(device, "pci_bus_id", None), module)
        self._nvml: Any = None
        self._handle: Any = None
        self.unavailable = ""
        if isinstance(source, str):
            self.unavailable = source
        else:
            self._nvml, self._handle = source

    def read(self) -> ClockReading | None:
        if self._nvml is None:
            return None
        try:
            return read_clocks(self._nvml, self._handle)
        except Exception as exc:  # noqa: BLE001 - a reading NVML refuses: said once, then no more readings
            self.unavailable, self._nvml = f"NVML stopped answering: {exc}", None
            return None

    def around(self, run: Callable[[], Any]) -> tuple[Any, Clocks]:
        """``run()`` between two readings; where the runs throttled, ``run()`` once more (the second result kept,
        the record says so)."""
        before = self.read()
        result = run()
        after = self.read()
        if after is not None and after.throttle:
            before, result = after, run()
            after = self.read()
            return result, Clocks(before, after, self.unavailable, remeasured=True)
        return result, Clocks(before, after, self.unavailable)
