"""The values a setting takes, each checked in one place for the plugin's options and markers, the command line
and ``measure()``: a check returns the value or raises ``ValueError("must be ...")``; the caller adds where the
value came from (:func:`at`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .kinds import choose

__all__ = ["at", "threshold", "max_drop", "boolean", "count", "positive_int", "non_negative_int", "positive_number",
           "one_of", "name", "non_empty", "whole_number", "ratio_above_one", "duration"]

T = TypeVar("T")


def at(where: str, check: Callable[[Any], T], raw: Any, error: type[ValueError] = ValueError) -> T:
    """``check(raw)``, a bad value raised as ``error("WHERE: must be ...")``."""
    try:
        return check(raw)
    except ValueError as exc:
        raise error(f"{where}: {exc}") from None


def _fraction(raw: Any, kind: str, in_range: Callable[[float], bool], out_of_range: str) -> float:
    if isinstance(raw, bool):
        raise ValueError(f"must be {kind}, got {raw!r}")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"must be {kind}, got {raw!r}") from None
    if not in_range(value):
        raise ValueError(f"must be {out_of_range}")
    return value


def threshold(raw: Any) -> float:
    """A utilization threshold, a number in (0, 1]."""
    return _fraction(raw, "a number in (0, 1]", lambda v: 0 < v <= 1, "in (0, 1]")


def max_drop(raw: Any) -> float:
    """A drop in utilization relative to a baseline or between two revisions, a fraction in (0, 1)."""
    return _fraction(raw, "a fraction in (0, 1)", lambda v: 0 < v < 1,
                     "in (0, 1) (0.1 = fail a drop of more than 10%)")


def boolean(raw: Any) -> bool:
    """A flag as an option, an ini line or an environment variable gives it."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"must be true or false, got {raw!r}")


def count(raw: Any) -> float:
    """A count or a duration given in Python: a number >= 0."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw >= 0:
        raise ValueError(f"must be a non-negative number, got {raw!r}")
    return float(raw)


def positive_int(raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise ValueError(f"must be a positive integer, got {raw!r}")
    return raw


def non_negative_int(raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise ValueError(f"must be an integer >= 0, got {raw!r}")
    return raw


def positive_number(raw: Any) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw > 0:
        raise ValueError(f"must be a positive number, got {raw!r}")
    return float(raw)


def one_of(choices: tuple[str, ...]) -> Callable[[Any], str]:
    """A check for one of ``choices`` (case and spaces forgiven, as :func:`~.kinds.choose` reads them)."""

    def check(raw: Any) -> str:
        try:
            return choose(raw, choices, "")
        except ValueError as exc:
            raise ValueError(str(exc).removeprefix(": ")) from None

    return check


def name(raw: Any) -> str:
    if not isinstance(raw, str):
        raise ValueError(f"must be a string, got {raw!r}")
    return raw


def non_empty(what: str) -> Callable[[Any], str]:
    """A check for a text that must not be empty (a path, a hardware name), stripped."""

    def check(raw: Any) -> str:
        text = str(raw).strip()
        if not text:
            raise ValueError(f"must be {what}, got an empty value")
        return text

    return check


def whole_number(raw: Any) -> int:
    """A count given as text on the command line: a whole number of 1 or more."""
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"must be a whole number of 1 or more, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"must be a whole number of 1 or more, got {raw!r}")
    return value


def ratio_above_one(raw: Any) -> float:
    """A ratio given as text on the command line, above 1 and finite (e.g. a compile-time slowdown)."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"must be a ratio above 1, e.g. 1.5, got {raw!r}") from None
    if not value > 1 or value == float("inf"):
        raise ValueError(f"must be a ratio above 1, e.g. 1.5, got {raw!r}")
    return value


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def duration(raw: Any) -> float:
    """Seconds from ``300``, ``300s``, ``5m`` or ``1.5h`` (more than 0)."""
    text = str(raw).strip().lower()
    scale = _UNITS.get(text[-1:], None) if text else None
    number = text[:-1] if scale is not None else text
    try:
        value = float(number) * (scale or 1.0)
    except ValueError:
        raise ValueError(f"must be a duration such as 300s, 5m or 1h, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"must be a duration above 0 such as 300s, 5m or 1h, got {raw!r}")
    return value
