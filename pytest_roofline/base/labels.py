"""How a kernel is named in results and reports when its test gives no name. Pure; imports no JAX."""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["kernel_name"]


def kernel_name(fn: Any) -> str:
    """The name of the function a kernel runs: through ``functools.partial`` (``partial(flash, interpret=True)``
    is "flash", not "partial"), else its ``__name__``, else its type's name."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) and name else type(fn).__name__
