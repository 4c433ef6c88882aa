"""The device in use and its ceilings: detection through JAX, then the table, an override file or a
calibration (imports JAX)."""

from __future__ import annotations

import jax

from ...base.kinds import CeilingsMode, CeilingsUsed
from ...hardware.calibration_cache import Refresh
from ...hardware.spec import HardwareSpec
from ...hardware.table import HardwareSource, find_spec, load_shipped_table, merge_overrides

__all__ = ["detect_device", "resolve_hardware"]


def detect_device() -> tuple[str, str]:
    """``(platform, device_kind)`` of JAX's default device, e.g. ``("gpu", "NVIDIA H100 80GB HBM3")``."""
    device = jax.devices()[0]
    return str(device.platform), str(device.device_kind)


def resolve_hardware(platform: str, device_kind: str, hardware: str | HardwareSpec | None = None,
                     hardware_file: HardwareSource = None, ceilings: CeilingsMode = "auto",
                     refresh: Refresh = "cached") -> tuple[HardwareSpec, CeilingsUsed]:
    """The ceilings for a device, and which kind they are.

    CPU ceilings are calibrated unless the table (or an override file) has an entry for the CPU and
    ``ceilings="datasheet"``; accelerators use the datasheet unless ``ceilings="calibrated"`` or ``"live"``.
    ``"auto"`` is live on a CPU (its ceilings are measured anyway) and the datasheet on accelerators (where
    clocks and temperature drift, live is opt-in). Live ceilings are the calibrated ones, scaled during the
    measurement by the reference kernels (:mod:`.reference_kernels`). A ``HardwareSpec`` given as ``hardware`` is used
    as it is ("given"); a name forces that table entry.
    """
    if isinstance(hardware, HardwareSpec):
        return hardware, "given"
    table = merge_overrides(load_shipped_table(), hardware_file)
    if platform == "cpu" and hardware is None:
        from ...hardware.cpu import cpu_info
        from .calibration_kernels import cpu_spec

        if ceilings == "datasheet":
            model = cpu_info()["model"]
            for spec in table.values():
                if spec.platform == "cpu" and any(k in ("cpu", model) for k in spec.device_kinds):
                    return spec, "datasheet"
            raise ValueError("ceilings='datasheet' on a CPU needs a CPU entry in a hardware file "
                             "(device_kinds: [\"cpu\"]); CPU ceilings are otherwise measured")
        return cpu_spec(device_kind, refresh), "calibrated" if ceilings == "calibrated" else "live"
    spec = find_spec(table, platform, device_kind, hardware)
    if ceilings in ("calibrated", "live"):
        if spec.platform != platform:
            raise ValueError(f"hardware {spec.name!r} is a {spec.platform.upper()} entry, but the device measured is "
                             f"a {platform.upper()} ({device_kind}): {ceilings} ceilings would file this "
                             f"{platform.upper()}'s figures under {spec.name!r}; drop the hardware name, or use "
                             f"ceilings='datasheet' to judge against its datasheet")
        from .calibration_kernels import calibrated_spec

        return calibrated_spec(spec, device_kind, refresh), "calibrated" if ceilings == "calibrated" else "live"
    return spec, "datasheet"
