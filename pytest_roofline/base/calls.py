"""A kernel and the arguments it is called with, told apart from the settings of the call that measures it.

Two forms, for ``measure()`` and the ``roofline`` fixture alike:

* short: ``measure(f, x, y, flag=True, warmup=3)``: a keyword that names a setting is the setting, every other
  keyword goes to the kernel. A setting that is also a parameter of the kernel (``def f(x, name)`` with
  ``name=``) is an error naming both, never taken silently.
* explicit: ``measure(f, args=(x, y), kwargs={"flag": True, "name": "mine"}, warmup=3)``: the kernel gets
  exactly ``args`` and ``kwargs``; every other keyword must be a setting.

A kernel that takes ``**kwargs`` accepts any name; its settings keywords are still the settings (pass its own
through ``kwargs=``). Pure: no JAX."""

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
        raise CallError(f"{where}: the kernel's arguments are given twice, {len(args)} positionally and as "
                        f"args=/kwargs=; give them one way")
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


def split_call(fn: Callable[..., Any], args: tuple[Any, ...], keywords: Mapping[str, Any],
               settings: Collection[str], where: str) -> tuple[KernelCall, dict[str, Any]]:
    """The kernel call and the settings among ``keywords`` (names in ``settings``); see the module's rules.
    ``where`` names the call in errors."""
    rest = dict(keywords)
    if "args" in rest or "kwargs" in rest:
        return _explicit(fn, args, rest, settings, where)
    mine = {k: v for k, v in rest.items() if k in settings}
    clash = sorted(set(mine) & _keyword_parameters(fn))
    if clash:
        name = clash[0]
        raise CallError(
            f"{where}: {name}= is both a setting of the measurement and a parameter of kernel "
            f"{kernel_name(fn)!r}, so it cannot tell which you mean. Pass the kernel's arguments explicitly: "
            f"args=(...), kwargs={{{name!r}: ...}} for the kernel, and {name}=... beside them for the setting")
    return KernelCall(fn, tuple(args), {k: v for k, v in rest.items() if k not in settings}), mine
