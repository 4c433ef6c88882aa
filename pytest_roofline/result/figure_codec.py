"""How a recorded figure becomes JSON and is read back, from its declared type alone (the field's annotation in
:class:`~.recorded_result.RecordedResult`): no figure has a writer or a reader of its own. Pure.

Written: a value object by its ``to_dict``, a tuple as a list, a mapping as an object, a scalar as itself. Read: a
class with ``from_dict`` by it, a ``Literal`` as one of its values, ``tuple[X, ...]`` and ``Mapping[str, X]`` item
by item, a scalar by its type; null or an empty object for an optional figure is None, null for a collection is
empty, null for a float is the strict JSON writer's word for a figure that was not finite.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args, get_origin

from ..base.kinds import choose

__all__ = ["encode", "decode", "typed"]

_SCALARS = {float: float, int: int, str: str}


def encode(value: Any) -> Any:
    """The JSON form of a figure's value."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    to_dict = getattr(value, "to_dict", None)
    if to_dict is not None:
        return to_dict()
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    raise TypeError(f"no JSON form for {type(value).__name__}")


def _optional(hint: Any) -> tuple[Any, bool]:
    """The hint without ``| None``, and whether it had it."""
    if get_origin(hint) in (Union, types.UnionType):
        rest = [a for a in get_args(hint) if a is not type(None)]
        if len(rest) == 1:
            return rest[0], len(rest) < len(get_args(hint))
    return hint, False


def _empty_of(hint: Any) -> Any:
    origin = get_origin(hint)
    if origin is tuple:
        return ()
    if origin in (Mapping, dict):
        return {}
    return None


def decode(hint: Any, value: Any, name: str) -> Any:
    """A figure read from its JSON form as its declared type; a wrong value is a ``TypeError`` or ``ValueError`` that
    names the figure."""
    kind, optional = _optional(hint)
    if isinstance(value, (dict, list)) and not value and optional:
        value = None
    if value is None:
        if optional:
            return None
        if kind is float:  # the strict JSON writer's null for a figure that was not finite
            return math.inf if name.endswith("intensity") else math.nan
        empty = _empty_of(kind)
        if empty is None:
            raise TypeError(f"{name} is null")
        return empty
    return _read(kind, value, name)


def _read(kind: Any, value: Any, name: str) -> Any:
    origin, args = get_origin(kind), get_args(kind)
    if origin is Literal:
        return choose(value, args, f"{name} {value!r}")
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{name} {value!r} is not a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v, name) for v in value)
        return tuple(decode(a, v, name) for a, v in zip(args, value, strict=True))
    if origin in (Mapping, dict):
        if not isinstance(value, Mapping):
            raise TypeError(f"{name} {value!r} is not an object")
        return {str(k): decode(args[1], v, name) for k, v in value.items() if v is not None or _optional(args[1])[1]}
    if kind is bool:
        if not isinstance(value, bool):
            raise TypeError(f"{name} {value!r} is not true or false")
        return value
    if kind in _SCALARS:
        return _SCALARS[kind](value)
    from_dict = getattr(kind, "from_dict", None)
    if from_dict is None:
        raise TypeError(f"{name}: no reader for {kind!r}")
    return from_dict(value)


def typed(hint: Any, value: Any) -> Any:
    """A live result's value as the record holds it: sequences as tuples, mappings as dicts without the entries
    their declared type cannot hold (a version that is None)."""
    kind, _ = _optional(hint)
    if value is None:
        return None
    origin, args = get_origin(kind), get_args(kind)
    if origin is tuple:
        return tuple(value)
    if origin in (Mapping, dict):
        keep_none = _optional(args[1])[1]
        return {str(k): v for k, v in value.items() if v is not None or keep_none}
    return value
