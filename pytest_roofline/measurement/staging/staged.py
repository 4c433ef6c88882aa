"""What a kernel staged for measuring is: its traced and lowered program and the inputs its compiled form takes;
and which argument leaves are arrays (traced), the rest static (imports JAX)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Any

import jax
import numpy as np

__all__ = ["Staged", "is_array", "describe_type"]


@dataclass(frozen=True)
class Staged:
    """A traced and lowered program, and what its compiled form is called with."""

    traced: Any  # jax.stages.Traced, or None where the jitted function has no ``trace``
    lowered: Any  # jax.stages.Lowered
    leaves: list[Any]  # the dynamic argument leaves, in the order the compiled program takes them
    treedef: Any  # of (args, kwargs) for the compiled program
    donated: list[bool]
    static: tuple[str, ...] = ()  # the arguments compiled in, in words
    _: KW_ONLY  # fields from the seventh on are given by keyword
    via: str = ""  # how it was jitted, where not as given (a note for the result)
    donate_with: str = ""  # how its author donates an input, where not by jax.jit's donate_argnums


def is_array(x: Any) -> bool:
    """What equinox's ``is_array`` calls an array: traced; everything else is static."""
    return isinstance(x, (jax.Array, np.ndarray, np.generic))


def describe_type(x: Any) -> str:
    return f"{type(x).__module__}.{type(x).__qualname__}"
