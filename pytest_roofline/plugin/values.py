"""The values a setting takes, parsed and remembering where they came from: thresholds (one for every device, or a
mapping per platform and hardware), baseline drops, booleans; and :class:`ConfigError`, whose message names the
value and its source. No pytest, no JAX."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..hardware.per_device import PerDevice, Picked, parse_per_device, pick_setting

__all__ = ["ConfigError", "Threshold", "ThresholdSetting", "parse_threshold", "parse_max_drop", "parse_bool",
           "parse_threshold_setting", "pick_threshold"]


class ConfigError(ValueError):
    """A bad setting; the message names the value and where it came from."""


def _fraction(raw: Any, where: str, kind: str, in_range: Callable[[float], bool], out_of_range: str) -> float:
    if isinstance(raw, bool):
        raise ConfigError(f"{where}: must be {kind}, got {raw!r}")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: must be {kind}, got {raw!r}") from None
    if not in_range(value):
        raise ConfigError(f"{where}: must be {out_of_range}")
    return value


def parse_threshold(raw: Any, where: str) -> float:
    """A utilization threshold, a number in (0, 1]."""
    return _fraction(raw, where, "a number in (0, 1]", lambda v: 0 < v <= 1, "in (0, 1]")


def parse_max_drop(raw: Any, where: str) -> float:
    """A drop in utilization relative to the baseline, a fraction in (0, 1)."""
    return _fraction(raw, where, "a fraction in (0, 1)", lambda v: 0 < v < 1,
                     "in (0, 1) (0.1 = fail a drop of more than 10%)")


def parse_bool(raw: Any, where: str) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{where}: must be true or false, got {raw!r}")


@dataclass(frozen=True)
class Threshold:
    value: float
    origin: str  # e.g. "--roofline-min=0.8 on the command line"


# A threshold for every device, or one per platform and hardware (hardware/per_device.py).
ThresholdSetting = Threshold | PerDevice[float]


def parse_threshold_setting(raw: Any, where: str, origin: str, names: Callable[[], Iterable[str]]) -> ThresholdSetting:
    """A threshold, or a mapping of platforms / hardware names (``names()``) / ``default`` to thresholds."""
    parsed = parse_per_device(raw, parse_threshold, where, names, ConfigError, origin)
    return parsed if isinstance(parsed, PerDevice) else Threshold(parsed, origin)


def pick_threshold(setting: ThresholdSetting | None, hardware: str, platform: str) -> Picked[float] | None:
    """The threshold on one device (None where none is set; a value of None where a mapping does not name it)."""
    if isinstance(setting, Threshold):
        return pick_setting(setting.value, setting.origin, hardware, platform)
    return pick_setting(setting, "", hardware, platform)
