"""Hardware ceilings: the shipped table, user overrides in YAML, and detection of the device in use.

A :class:`HardwareSpec` holds, for every ceiling, its value and where it came from (:class:`Ceiling`).
Nothing here imports JAX: detection takes the ``platform`` and ``device_kind`` strings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "Ceiling",
    "HardwareSpec",
    "HardwareError",
    "UnknownDeviceError",
    "PEAK_KEYS",
    "HARDWARE_FILE_ENV",
    "load_table",
    "load_shipped_table",
    "merge_overrides",
    "find_spec",
    "peak_for_class",
    "read_yaml_mapping",
]

PEAK_KEYS = ("bf16", "f16", "f32", "tf32", "fp8", "int8", "f64", "vector")
HARDWARE_FILE_ENV = "PYTEST_ROOFLINE_HARDWARE_FILE"
_TERA = 1e12
_GIGA = 1e9


class HardwareError(ValueError):
    """A hardware table or override file that cannot be used; the message names the file and key."""


class UnknownDeviceError(HardwareError):
    """The device in use has no entry in the table."""


@dataclass(frozen=True)
class Ceiling:
    """One hardware figure and where it came from.

    ``origin`` is "datasheet", "calibration", "override" or "theoretical"; ``source`` says which
    document, measurement or file; ``date`` when it was read or measured.
    """

    value: float
    origin: str
    source: str
    date: str

    def describe(self) -> str:
        return f"{self.origin}: {self.source} ({self.date})"

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "origin": self.origin, "source": self.source, "date": self.date}


@dataclass(frozen=True)
class HardwareSpec:
    name: str
    platform: str  # "cpu", "gpu" or "tpu"
    peaks: Mapping[str, Ceiling]  # FLOP/s by key of PEAK_KEYS
    memory_bandwidth: Ceiling  # bytes/s
    interconnect_bandwidth: Ceiling | None = None  # bytes/s
    device_kinds: tuple[str, ...] = ()
    theoretical: Mapping[str, Ceiling] = field(default_factory=dict)  # shown beside measured ceilings
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "platform": self.platform,
            "peaks_flops_per_s": {k: c.to_dict() for k, c in self.peaks.items()},
            "memory_bandwidth_bytes_per_s": self.memory_bandwidth.to_dict(),
            "interconnect_bandwidth_bytes_per_s": (
                self.interconnect_bandwidth.to_dict() if self.interconnect_bandwidth else None
            ),
            "theoretical": {k: c.to_dict() for k, c in self.theoretical.items()},
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        peaks = ", ".join(f"{k} {c.value / _TERA:.4g} TFLOP/s" for k, c in self.peaks.items())
        return (f"{self.name} ({self.platform}): {peaks}; memory {self.memory_bandwidth.value / _GIGA:.4g} GB/s "
                f"[{self.memory_bandwidth.origin}]")


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
                "interconnect_gbps", "notes"}


def _parse_device(name: str, raw: Any, where: str, origin: str, base: HardwareSpec | None) -> HardwareSpec:
    if not isinstance(raw, Mapping):
        raise HardwareError(f"{where}: device {name!r} must be a mapping, got {type(raw).__name__}")
    unknown = set(raw) - _DEVICE_KEYS
    if unknown:
        raise HardwareError(f"{where}: device {name!r} has unknown key(s) {sorted(unknown)}; "
                            f"allowed: {sorted(_DEVICE_KEYS)}")
    source = str(raw.get("source", f"override in {where}" if origin == "override" else "unknown source"))
    date = str(raw.get("read", "unknown date"))
    platform = str(raw.get("platform", base.platform if base else "")).lower()
    if platform not in ("cpu", "gpu", "tpu"):
        raise HardwareError(f"{where}: device {name!r} needs platform: cpu, gpu or tpu (got {platform!r})")
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
    interconnect = base.interconnect_bandwidth if base else None
    if raw.get("interconnect_gbps") is not None:
        interconnect = _figure(raw["interconnect_gbps"], _GIGA, f"{where}: {name}.interconnect_gbps",
                               origin, source, date)
    notes = tuple(str(n) for n in raw.get("notes", [])) or (base.notes if base else ())
    return HardwareSpec(name, platform, peaks, memory, interconnect, tuple(kinds_raw),
                        base.theoretical if base else {}, notes)


def read_yaml_mapping(text: str, where: str, error: type[ValueError] = HardwareError) -> dict[str, Any]:
    """Parse YAML that must be a mapping (empty text is an empty mapping); errors name ``where``."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{where}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise error(f"{where}: expected a mapping at the top level, got {type(data).__name__}")
    return dict(data)


def load_table(text: str, where: str, origin: str = "datasheet",
               base: Mapping[str, HardwareSpec] | None = None) -> dict[str, HardwareSpec]:
    """Read a table in the layout of ``hardware.yaml``; entries named in ``base`` are merged figure by figure."""
    data = read_yaml_mapping(text, where)
    devices = data.get("devices", {})
    extra = set(data) - {"devices", "thresholds", "min", "ceilings", "model"}  # the plugin config shares the file
    if extra:
        raise HardwareError(f"{where}: unknown top-level key(s) {sorted(extra)}; expected 'devices'")
    if not isinstance(devices, Mapping):
        raise HardwareError(f"{where}: 'devices' must be a mapping of device name to its figures")
    table = dict(base or {})
    for name, raw in devices.items():
        table[str(name)] = _parse_device(str(name), raw, where, origin, table.get(str(name)))
    return table


def load_shipped_table() -> dict[str, HardwareSpec]:
    text = resources.files("pytest_roofline").joinpath("hardware.yaml").read_text(encoding="utf-8")
    return load_table(text, "pytest_roofline/hardware.yaml")


def merge_overrides(table: Mapping[str, HardwareSpec], path: str | os.PathLike[str] | None,
                    origin_hint: str = "") -> dict[str, HardwareSpec]:
    """Apply a user's override file (path argument, else ``$PYTEST_ROOFLINE_HARDWARE_FILE``)."""
    if path is None:
        env = os.environ.get(HARDWARE_FILE_ENV)
        if not env:
            return dict(table)
        path, origin_hint = env, f"${HARDWARE_FILE_ENV}"
    p = Path(path)
    where = f"{p}" + (f" (from {origin_hint})" if origin_hint else "")
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise HardwareError(f"hardware override file {where}: cannot read it: {exc.strerror or exc}") from None
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


def peak_for_class(spec: HardwareSpec, compute_class: str, precision: str = "default") -> tuple[str, Ceiling, str]:
    """The peak that FLOPs of one compute class meet on this hardware.

    Returns ``(key used, ceiling, note)``. Rules (documented in README.md, "Which peak"):

    * ``vector``: the vector peak; without one (CPU, most TPUs) the f32 peak on CPU, else the fastest
      matrix peak (a lower bound on time, so utilization can only be understated).
    * ``f32`` on GPU at default/high precision runs as TF32; at ``highest`` as FP32.
    * ``f32`` on TPU runs as bf16 passes: 1 (default), 3 (high), 6 (highest); the bf16 peak is divided.
    * ``f16`` falls back to ``bf16``. A class the table lacks falls back to the fastest peak, with a note.
    """
    peaks = spec.peaks
    note = ""
    if compute_class == "vector":
        if "vector" in peaks:
            return "vector", peaks["vector"], ""
        if spec.platform == "cpu" and "f32" in peaks:
            return "f32", peaks["f32"], "CPU: vector work measured against the f32 ceiling (same SIMD units)"
        key = max(peaks, key=lambda k: peaks[k].value)
        return key, peaks[key], f"no vector peak for {spec.name}: used the {key} peak (utilization understated)"
    if compute_class == "f32":
        if spec.platform == "gpu" and precision != "highest" and "tf32" in peaks:
            return "tf32", peaks["tf32"], "f32 dot at default precision runs as TF32 on this GPU"
        if spec.platform == "tpu" and "f32" not in peaks and "bf16" in peaks:
            passes = {"highest": 6, "high": 3}.get(precision, 1)
            bf16 = peaks["bf16"]
            if passes == 1:
                return "bf16", bf16, "f32 dot at default precision runs as one bf16 pass on TPU"
            return ("bf16", replace(bf16, value=bf16.value / passes),
                    f"f32 dot at precision {precision} runs as {passes} bf16 passes on TPU")
    if compute_class == "f16" and "f16" not in peaks and "bf16" in peaks:
        return "bf16", peaks["bf16"], "f16 measured against the bf16 peak"
    if compute_class in peaks:
        return compute_class, peaks[compute_class], note
    key = max(peaks, key=lambda k: peaks[k].value)
    return key, peaks[key], f"no {compute_class} peak for {spec.name}: used the {key} peak (utilization understated)"
