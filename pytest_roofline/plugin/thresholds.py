"""The plugin's settings as values that remember where they came from: thresholds (one for every device, or a
mapping per platform and hardware), baseline drops, booleans (each checked by :mod:`pytest_roofline.base.values`);
and :class:`ConfigError`, whose message names the value and its source. No pytest, no JAX."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..base import values
from ..hardware.per_device import PerDevice, Threshold, ThresholdSetting, parse_per_device

__all__ = ["ConfigError", "parse_threshold", "parse_max_drop", "parse_bool", "parse_threshold_setting"]


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


def parse_threshold_setting(raw: Any, where: str, origin: str, names: Callable[[], Iterable[str]]) -> ThresholdSetting:
    """A threshold, or a mapping of platforms / hardware names (``names()``) / ``default`` to thresholds."""
    parsed = parse_per_device(raw, parse_threshold, where, names, ConfigError, origin)
    return parsed if isinstance(parsed, PerDevice) else Threshold(parsed, origin)
