"""The plugin's settings as values that remember where they came from: thresholds (one for every device, or a
mapping per platform and hardware), baseline drops, booleans (each checked by :mod:`pytest_roofline.base.values`);
and :class:`ConfigError`, whose message names the value and its source. No pytest, no JAX."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..base import values
from ..hardware.per_device import PerDevice, Picked, parse_per_device, pick_setting

__all__ = ["ConfigError", "Threshold", "ThresholdSetting", "parse_threshold", "parse_max_drop", "parse_bool",
           "parse_threshold_setting", "pick_threshold"]


class ConfigError(ValueError):
    """A bad setting; the message names the value and where it came from."""


def parse_threshold(raw: Any, where: str) -> float:
    """A utilization threshold, a number in (0, 1]."""
    return values.at(where, values.threshold, raw, ConfigError)


def parse_max_drop(raw: Any, where: str) -> float:
    """A drop in utilization relative to the baseline, a fraction in (0, 1)."""
    return values.at(where, values.max_drop, raw, ConfigError)


def parse_bool(raw: Any, where: str) -> bool:
    return values.at(where, values.boolean, raw, ConfigError)


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
