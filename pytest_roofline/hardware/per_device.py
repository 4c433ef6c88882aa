"""A setting that depends on the hardware: one value for every device, or a mapping keyed by platform
(``cpu``, ``gpu``, ``tpu``), by hardware table name (``"H100 SXM"``, ``"TPU v5e"``) and ``default``, e.g.
``{"cpu": 0.4, "gpu": 0.7, "H100 SXM": 0.8}``. The most specific key wins: the hardware's name, then its
platform, then ``default``; a device the mapping does not name gets no value (a threshold: measured, not
judged). Pure: the caller hands in the value's parser and the hardware names it may use."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..base.kinds import PLATFORMS

__all__ = ["DEFAULT_KEY", "PerDevice", "Picked", "parse_per_device", "pick", "pick_setting", "Threshold",
           "ThresholdSetting", "pick_threshold"]

T = TypeVar("T")
DEFAULT_KEY = "default"


@dataclass(frozen=True)
class Picked(Generic[T]):
    """What a setting comes to on one device: the value (None: the mapping names neither this hardware, its
    platform nor a default), where it came from, and which key decided ("" for one value for every device)."""

    value: T | None
    origin: str
    key: str = ""
    keys: tuple[str, ...] = ()  # the keys a mapping gives, to say what it does not name

    @property
    def where(self) -> str:
        """Where the value came from, with the key that decided: ``marker of t.py::test_a, key 'cpu'``."""
        return f"{self.origin}, key {self.key!r}" if self.key else self.origin

    def unnamed(self, what: str, hardware: str, platform: str) -> str:
        """Why a device gets no value: ``min names gpu, H100 SXM; not cpu (AMD EPYC), and no default``."""
        return (f"{what} names {', '.join(self.keys)}; not {platform} ({hardware}), and no {DEFAULT_KEY!r} key "
                f"({self.origin})")


@dataclass(frozen=True)
class PerDevice(Generic[T]):
    """A mapping from keys (platforms, hardware table names, ``default``) to values, as given, and where."""

    values: tuple[tuple[str, T], ...]
    origin: str

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.values)

    def to_dict(self) -> dict[str, T]:
        return dict(self.values)


def pick(setting: PerDevice[T], hardware: str, platform: str) -> Picked[T]:
    """The value of ``setting`` on the hardware named ``hardware`` of ``platform``: its most specific key."""
    by_key = {key.lower(): (key, value) for key, value in setting.values}
    for wanted in (hardware.lower(), platform.lower(), DEFAULT_KEY):
        if wanted in by_key:
            key, value = by_key[wanted]
            return Picked(value, setting.origin, key, setting.keys)
    return Picked(None, setting.origin, "", setting.keys)


def pick_setting(setting: PerDevice[T] | T | None, origin: str, hardware: str, platform: str) -> Picked[T] | None:
    """A setting on one device: a mapping's most specific key, or one value for every device (from ``origin``);
    None where nothing is set."""
    if setting is None:
        return None
    if isinstance(setting, PerDevice):
        return pick(setting, hardware, platform)
    return Picked(setting, origin)


def parse_per_device(raw: Any, parse: Callable[[Any, str], T], where: str,
                     hardware_names: Callable[[], Iterable[str]], error: type[ValueError],
                     origin: str) -> T | PerDevice[T]:
    """One value (``parse(raw, where)``) or a mapping of keys to values, each parsed; ``origin`` is where the
    mapping came from as reports show it (``marker of t``). An unknown key, an empty
    mapping or a key given twice (in two spellings) raises ``error`` naming ``where``, the key and the keys
    allowed; a bad value raises what ``parse`` raises, naming the key."""
    if not isinstance(raw, Mapping):
        return parse(raw, where)
    names = {name.lower(): name for name in hardware_names()}
    allowed = [*PLATFORMS, DEFAULT_KEY]
    if not raw:
        raise error(f"{where}: an empty mapping; give a value, or keys from: {', '.join(allowed)} or a hardware "
                    f"name")
    values: list[tuple[str, T]] = []
    seen: dict[str, str] = {}
    for key, value in raw.items():
        text = str(key).strip()
        low = text.lower()
        if low in PLATFORMS or low == DEFAULT_KEY:
            canonical = low
        elif low in names:
            canonical = names[low]
        else:
            raise error(f"{where}: unknown key {text!r}; allowed: {', '.join(allowed)} or a hardware name: "
                        f"{', '.join(sorted(names.values()))}")
        if low in seen:
            raise error(f"{where}: key {text!r} given twice (also as {seen[low]!r})")
        seen[low] = text
        values.append((canonical, parse(value, f"{where}: key {text!r}")))
    return PerDevice(tuple(values), origin)


@dataclass(frozen=True)
class Threshold:
    """A utilization threshold for every device, and where it came from."""

    value: float
    origin: str  # e.g. "--roofline-min=0.8 on the command line"


# A threshold for every device, or one per platform and hardware: the typed value from where it is read (the marker,
# the call, the YAML, the command line) to the measurement that picks it on its hardware.
ThresholdSetting = Threshold | PerDevice[float]


def pick_threshold(setting: ThresholdSetting | None, hardware: str, platform: str) -> Picked[float] | None:
    """The threshold on one device (None where none is set; a value of None where a mapping does not name it)."""
    if isinstance(setting, Threshold):
        return pick_setting(setting.value, setting.origin, hardware, platform)
    return pick_setting(setting, "", hardware, platform)
