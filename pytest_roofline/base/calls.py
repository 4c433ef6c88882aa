"""A kernel and the arguments it is called with, told apart from the settings of the call that measures it.

The rules, for ``measure()`` and the ``roofline`` fixture alike:

* a keyword that the kernel's signature names goes to the kernel, whatever it is called (``args=`` of
  ``optimistix.root_find`` and ``jax.scipy.optimize.minimize``, a parameter called ``name`` or ``min``);
* ``roofline_<setting>=`` is always the setting (``roofline_name=``, ``roofline_min=``): the way to give a setting
  that a kernel parameter shares the name of;
* any other keyword that names a setting is the setting; every other keyword goes to the kernel;
* explicit form, where the kernel names neither ``args`` nor ``kwargs``: ``measure(f, args=(x, y),
  kwargs={"flag": True}, warmup=3)``: the kernel gets exactly ``args`` and ``kwargs``; every other keyword must be a
  setting.

A bare setting's name that went to the kernel is said in one line (:attr:`KernelCall.readings`), naming both
readings. A kernel that takes ``**kwargs`` accepts any name, but only the names its signature spells out take
precedence over the settings (pass others through ``kwargs=``). Pure: no JAX."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from .labels import kernel_name

__all__ = ["KernelCall", "CallError", "split_call"]


class CallError(TypeError):
    """The kernel's arguments and the settings of the call cannot be told apart; the message says how to."""


@dataclass(frozen=True)
class KernelCall:
    """``fn(*args, **kwargs)``: what is measured."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    # one line per keyword that names a setting but went to the kernel, its parameter (both readings named)
    readings: tuple[str, ...] = field(default=(), compare=False)


def _keyword_parameters(fn: Callable[..., Any]) -> set[str]:
    """The names ``fn`` takes as keywords (its signature's named parameters; none where it has no signature)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _explicit(fn: Callable[..., Any], args: tuple[Any, ...], keywords: dict[str, Any],
              settings: Collection[str], where: str) -> tuple[KernelCall, dict[str, Any]]:
    if args:
        which = "args" if "args" in keywords else "kwargs"
        raise CallError(f"{where}: the kernel's arguments are given twice, {len(args)} positionally and as "
                        f"args=/kwargs=; give them one way (if {which}= is a keyword of kernel {kernel_name(fn)!r} "
                        f"that its signature does not name, pass it as kwargs={{{which!r}: ...}})")
    given_args = keywords.pop("args", None)
    given_kwargs = keywords.pop("kwargs", None)
    if given_args is None:
        given_args = ()
    if not isinstance(given_args, (tuple, list)):
        raise CallError(f"{where}: args= must be a tuple of the kernel's positional arguments, got "
                        f"{type(given_args).__name__}")
    if given_kwargs is None:
        given_kwargs = {}
    if not isinstance(given_kwargs, Mapping) or not all(isinstance(k, str) for k in given_kwargs):
        raise CallError(f"{where}: kwargs= must be a dict of the kernel's keyword arguments, got "
                        f"{type(given_kwargs).__name__}")
    unknown = sorted(k for k in keywords if k not in settings)
    if unknown:
        raise CallError(f"{where}: unknown keyword {unknown[0]!r}: with args=/kwargs= every other keyword is a "
                        f"setting (known: {', '.join(sorted(settings))}); a keyword of the kernel goes into kwargs=")
    return KernelCall(fn, tuple(given_args), dict(given_kwargs)), keywords


PREFIX = "roofline_"


def split_call(fn: Callable[..., Any], args: tuple[Any, ...], keywords: Mapping[str, Any],
               settings: Collection[str], where: str) -> tuple[KernelCall, dict[str, Any]]:
    """The kernel call and the settings among ``keywords`` (names in ``settings``); see the module's rules.
    ``where`` names the call in errors."""
    rest = dict(keywords)
    named = _keyword_parameters(fn)
    mine = _namespaced(rest, settings, named, where)
    if ("args" in rest and "args" not in named) or ("kwargs" in rest and "kwargs" not in named):
        call, bare = _explicit(fn, args, rest, settings, where)
        return call, _merge(bare, mine, where)
    bare = {k: v for k, v in rest.items() if k in settings and k not in named}
    readings = tuple(f"{k}= went to kernel {kernel_name(fn)!r}, a parameter of it, not to the setting {k}= "
                     f"(write {PREFIX}{k}= for the setting)" for k in sorted(rest) if k in settings and k in named)
    kernel_kwargs = {k: v for k, v in rest.items() if k not in bare}
    return KernelCall(fn, tuple(args), kernel_kwargs, readings), _merge(bare, mine, where)


def _namespaced(rest: dict[str, Any], settings: Collection[str], named: set[str], where: str) -> dict[str, Any]:
    """Take the ``roofline_<setting>=`` keywords out of ``rest`` (a kernel parameter of that very name keeps it)."""
    mine = {}
    for key in [k for k in rest if k.startswith(PREFIX) and k not in named]:
        setting = key[len(PREFIX):]
        if setting not in settings:
            raise CallError(f"{where}: unknown setting {key}= (known: "
                            f"{', '.join(PREFIX + s for s in sorted(settings))})")
        mine[setting] = rest.pop(key)
    return mine


def _merge(bare: dict[str, Any], namespaced: dict[str, Any], where: str) -> dict[str, Any]:
    both = sorted(set(bare) & set(namespaced))
    if both:
        raise CallError(f"{where}: the setting {both[0]} is given twice, as {both[0]}= and as {PREFIX}{both[0]}=; "
                        f"give it once")
    return {**bare, **namespaced}
