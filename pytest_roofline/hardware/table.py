"""The hardware table: ``hardware.yaml`` shipped with the package, a user's override file in the same layout,
and finding the entry for a device by its JAX ``platform`` and ``device_kind`` strings. No JAX."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..base.files import read_text, read_yaml_mapping
from ..base.kinds import PLATFORMS, Platform
from .spec import PEAK_KEYS, Ceiling, HardwareError, HardwareSpec, UnknownDeviceError

__all__ = ["HARDWARE_FILE_ENV", "SHARED_TOP_LEVEL_KEYS", "load_table", "load_shipped_table", "merge_overrides",
           "find_spec", "find_spec_for_profile", "HardwareEntries", "HardwareSource"]

HARDWARE_FILE_ENV = "PYTEST_ROOFLINE_HARDWARE_FILE"
# A hardware file may be the plugin's YAML config, whose other top-level keys the plugin reads.
SHARED_TOP_LEVEL_KEYS = frozenset({"thresholds", "programs", "min", "ceilings", "model", "max_drop", "first_touch",
                                   "cache", "counts"})
_TERA = 1e12
_GIGA = 1e9
_GIB = 2.0**30


def _figure(raw: Any, scale: float, where: str, origin: str, source: str, date: str) -> Ceiling:
    if isinstance(raw, Mapping):
        unknown = set(raw) - {"value", "source", "read"}
        if unknown or "value" not in raw:
            raise HardwareError(f"{where}: a figure mapping needs 'value' (and may have 'source', 'read'); "
                                f"got keys {sorted(raw)}")
        source = str(raw.get("source", source))
        date = str(raw.get("read", date))
        raw = raw["value"]
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise HardwareError(f"{where}: expected a number, got {raw!r}")
    try:
        value = float(raw)
    except ValueError:
        raise HardwareError(f"{where}: expected a number, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise HardwareError(f"{where}: must be a positive number, got {raw!r}")
    return Ceiling(value * scale, origin, source, date)


_DEVICE_KEYS = {"platform", "device_kinds", "source", "read", "peak_tflops", "memory_gbps",
                "interconnect_gbps", "transcendentals_gps", "notes", "compute_capability", "memory_capacity_gb",
                "memory_capacity_gib", "host_link_gbps", "integer_tops"}
# The figures a device may leave out: (its key, the HardwareSpec field, the scale of its unit); an override without
# one keeps its base entry's.
_OPTIONAL_FIGURES = (("interconnect_gbps", "interconnect_bandwidth", _GIGA),
                     ("transcendentals_gps", "transcendental", _GIGA),
                     ("host_link_gbps", "host_link_bandwidth", _GIGA),
                     ("integer_tops", "integer", _TERA))  # elementwise integer ops (INT32, not tensor cores)


def _parse_device(name: str, raw: Any, where: str, origin: str, base: HardwareSpec | None) -> HardwareSpec:
    if not isinstance(raw, Mapping):
        raise HardwareError(f"{where}: device {name!r} must be a mapping, got {type(raw).__name__}")
    unknown = set(raw) - _DEVICE_KEYS
    if unknown:
        raise HardwareError(f"{where}: device {name!r} has unknown key(s) {sorted(unknown)}; "
                            f"allowed: {sorted(_DEVICE_KEYS)}")
    source = str(raw.get("source", f"override in {where}" if origin == "override" else "unknown source"))
    date = str(raw.get("read", "unknown date"))
    text = str(raw.get("platform", base.platform if base else "")).lower()
    if text not in PLATFORMS:
        raise HardwareError(f"{where}: device {name!r} needs platform: cpu, gpu or tpu (got {text!r})")
    platform: Platform = next(p for p in PLATFORMS if p == text)
    kinds_raw = raw.get("device_kinds", list(base.device_kinds) if base else [])
    if not isinstance(kinds_raw, list) or not all(isinstance(k, str) for k in kinds_raw):
        raise HardwareError(f"{where}: device {name!r}: device_kinds must be a list of strings")
    peaks: dict[str, Ceiling] = dict(base.peaks) if base else {}
    peaks_raw = raw.get("peak_tflops", {})
    if not isinstance(peaks_raw, Mapping):
        raise HardwareError(f"{where}: device {name!r}: peak_tflops must be a mapping of dtype to TFLOP/s")
    for key, value in peaks_raw.items():
        if key not in PEAK_KEYS:
            raise HardwareError(f"{where}: device {name!r}: unknown peak key {key!r}; allowed: {list(PEAK_KEYS)}")
        peaks[key] = _figure(value, _TERA, f"{where}: {name}.peak_tflops.{key}", origin, source, date)
    if "memory_gbps" in raw:
        memory = _figure(raw["memory_gbps"], _GIGA, f"{where}: {name}.memory_gbps", origin, source, date)
    elif base is not None:
        memory = base.memory_bandwidth
    else:
        raise HardwareError(f"{where}: device {name!r} needs memory_gbps")
    if not peaks:
        raise HardwareError(f"{where}: device {name!r} needs at least one figure in peak_tflops")
    optional: dict[str, Ceiling | None] = {
        field: _figure(raw[key], scale, f"{where}: {name}.{key}", origin, source, date)
        if raw.get(key) is not None else (getattr(base, field) if base else None)
        for key, field, scale in _OPTIONAL_FIGURES}
    notes = tuple(str(n) for n in raw.get("notes", [])) or (base.notes if base else ())
    caps_raw = raw.get("compute_capability", list(base.compute_capability) if base else [])
    if not isinstance(caps_raw, list) or not all(isinstance(c, (str, int, float)) for c in caps_raw):
        raise HardwareError(f"{where}: device {name!r}: compute_capability must be a list like [\"9.0\"]")
    capacity = base.memory_capacity if base else None
    if "memory_capacity_gb" in raw and "memory_capacity_gib" in raw:
        raise HardwareError(f"{where}: device {name!r}: give memory_capacity_gb or memory_capacity_gib, not both")
    for key, scale in (("memory_capacity_gb", _GIGA), ("memory_capacity_gib", _GIB)):
        if raw.get(key) is not None:
            capacity = _figure(raw[key], scale, f"{where}: {name}.{key}", origin, source, date)
    return HardwareSpec(name, platform, peaks, memory, optional["interconnect_bandwidth"], tuple(kinds_raw),
                        theoretical=base.theoretical if base else {}, notes=notes,
                        transcendental=optional["transcendental"],
                        compute_capability=tuple(str(c) for c in caps_raw), memory_capacity=capacity,
                        host_link_bandwidth=optional["host_link_bandwidth"], integer=optional["integer"])


@dataclass(frozen=True)
class HardwareEntries:
    """Hardware entries given as data (a plugin's ``pytest_roofline_hardware`` hook), each as an override file's
    ``devices:`` entry, with where they came from; applied over ``file`` (an override file, else the environment's)."""

    devices: Mapping[str, Any]
    where: str
    file: str | os.PathLike[str] | None = None


# Where overrides come from: an override file's path, entries given as data, or None (the environment's file).
HardwareSource = str | os.PathLike[str] | HardwareEntries | None


def load_table(text: str, where: str, origin: str = "datasheet",
               base: Mapping[str, HardwareSpec] | None = None) -> dict[str, HardwareSpec]:
    """Read a table in the layout of ``hardware.yaml``; entries named in ``base`` are merged figure by figure."""
    return _devices(read_yaml_mapping(text, where, HardwareError), where, origin, base)


def _devices(data: Mapping[str, Any], where: str, origin: str,
             base: Mapping[str, HardwareSpec] | None) -> dict[str, HardwareSpec]:
    devices = data.get("devices", {})
    extra = set(data) - {"devices"} - SHARED_TOP_LEVEL_KEYS
    if extra:
        raise HardwareError(f"{where}: unknown top-level key(s) {sorted(extra)}; expected 'devices'")
    if not isinstance(devices, Mapping):
        raise HardwareError(f"{where}: 'devices' must be a mapping of device name to its figures")
    table = dict(base or {})
    for name, raw in devices.items():
        table[str(name)] = _parse_device(str(name), raw, where, origin, table.get(str(name)))
    return table


def load_shipped_table() -> dict[str, HardwareSpec]:
    return dict(_shipped_table())


@functools.cache
def _shipped_table() -> dict[str, HardwareSpec]:
    """The table shipped with the package, read once per process (its entries are frozen)."""
    text = resources.files("pytest_roofline.hardware").joinpath("hardware.yaml").read_text(encoding="utf-8")
    return load_table(text, "pytest_roofline/hardware/hardware.yaml")


def merge_overrides(table: Mapping[str, HardwareSpec], path: HardwareSource,
                    origin_hint: str = "") -> dict[str, HardwareSpec]:
    """Apply a user's override file (path argument, else ``$PYTEST_ROOFLINE_HARDWARE_FILE``), and entries given as
    data over it."""
    if isinstance(path, HardwareEntries):
        under = merge_overrides(table, path.file, origin_hint)
        return _devices({"devices": path.devices}, path.where, "override", under)
    if path is None:
        env = os.environ.get(HARDWARE_FILE_ENV)
        if not env:
            return dict(table)
        path, origin_hint = env, f"${HARDWARE_FILE_ENV}"
    p = Path(path)
    where = f"{p}" + (f" (from {origin_hint})" if origin_hint else "")
    try:
        text = read_text(p)
    except (OSError, ValueError) as exc:
        raise HardwareError(f"hardware override file {where}: cannot read it: "
                            f"{getattr(exc, 'strerror', None) or exc}") from None
    return load_table(text, where, origin="override", base=table)


def find_spec(table: Mapping[str, HardwareSpec], platform: str, device_kind: str,
              forced_name: str | None = None) -> HardwareSpec:
    """The table entry for a device: by forced name, else by exact ``device_kind`` (case-insensitive)."""
    if forced_name is not None:
        if forced_name in table:
            return table[forced_name]
        lowered = {k.lower(): v for k, v in table.items()}
        if forced_name.lower() in lowered:
            return lowered[forced_name.lower()]
        raise UnknownDeviceError(f"hardware {forced_name!r} is not in the table; known: {', '.join(sorted(table))}")
    wanted = device_kind.strip().lower()
    for spec in table.values():
        if spec.platform == platform and any(k.lower() == wanted for k in spec.device_kinds):
            return spec
    known = sorted(k for s in table.values() if s.platform == platform for k in s.device_kinds)
    raise UnknownDeviceError(
        f"unknown {platform.upper()} device_kind {device_kind!r}: pytest-roofline has no ceilings for it.\n"
        f"Known {platform} device kinds: {', '.join(known) or 'none'}.\n"
        f"Add it in a YAML file and pass it with --roofline-config / hardware_file= or ${HARDWARE_FILE_ENV}:\n"
        f"devices:\n"
        f"  My {platform.upper()}:\n"
        f"    platform: {platform}\n"
        f"    device_kinds: [\"{device_kind}\"]\n"
        f"    source: vendor datasheet\n"
        f"    read: YYYY-MM-DD\n"
        f"    peak_tflops: {{bf16: 100, f32: 50, vector: 50}}   # dense TFLOP/s\n"
        f"    memory_gbps: 1000                               # GB/s"
    )




def find_spec_for_profile(table: Mapping[str, HardwareSpec], platform: str,
                          plane_stats: Mapping[str, Any]) -> tuple[HardwareSpec, str]:
    """The table entry for the device a profile was recorded on, from its device plane's stats, and how it
    was found. TPU: ``device_type_string`` ("TPU v6 Lite") is a device_kind. GPU: ``device_vendor`` and
    ``compute_cap_major/minor`` pick the entries of that vendor and capability; ``memory_size`` (bytes)
    picks among them by memory capacity, ``memory_bandwidth`` (bytes/s) by memory bandwidth (H100 SXM from
    PCIe). Raises :class:`UnknownDeviceError` when nothing or several fit."""
    if platform == "tpu":
        kind = str(plane_stats.get("device_type_string", "")).strip()
        if not kind:
            raise UnknownDeviceError("the profile's TPU plane does not say which TPU it is (no device_type_string)")
        return find_spec(table, "tpu", kind), f"device_type_string {kind!r} of the profile"
    if platform != "gpu":
        raise UnknownDeviceError(f"no ceilings for a {platform} profile: pass --hardware NAME")
    vendor = str(plane_stats.get("device_vendor", "")).strip()
    major, minor = plane_stats.get("compute_cap_major"), plane_stats.get("compute_cap_minor")
    if major is None or minor is None:
        raise UnknownDeviceError("the profile's GPU plane does not state its compute capability: pass --hardware NAME")
    cap = f"{int(major)}.{int(minor)}"
    said = f"{vendor or 'unknown vendor'} GPU, compute capability {cap}"
    candidates = [s for s in table.values() if s.platform == "gpu" and cap in s.compute_capability
                  and (not vendor or any(k.upper().startswith(vendor.upper()) for k in s.device_kinds))]
    size = plane_stats.get("memory_size")
    if len(candidates) > 1 and size:
        gb = float(size) / 1e9
        fits = [s for s in candidates if s.memory_capacity_gb and abs(s.memory_capacity_gb - gb) <= 0.15 * gb]
        if fits:
            candidates = fits
        said += f", {gb:.0f} GB"
    bandwidth = plane_stats.get("memory_bandwidth")  # bytes/s, from the memory clock and bus width
    if len(candidates) > 1 and bandwidth:
        gbps = float(bandwidth) / 1e9
        fits = [s for s in candidates if abs(s.memory_bandwidth.value / 1e9 - gbps) <= 0.15 * gbps]
        if fits:
            candidates = fits
        said += f", memory {gbps / 1e3:.2f} TB/s"
    if len(candidates) == 1:
        return candidates[0], f"the profile's device plane: {said}"
    if not candidates:
        raise UnknownDeviceError(f"no hardware entry fits the profile's device ({said}): pass --hardware NAME "
                                 f"(known: {', '.join(sorted(table))})")
    raise UnknownDeviceError(f"several hardware entries fit the profile's device ({said}): "
                             f"{', '.join(s.name for s in candidates)}; pass --hardware NAME")
