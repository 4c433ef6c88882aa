"""Errors users catch: importable without JAX."""

from __future__ import annotations

__all__ = ["MeasureError", "exception_text"]

_TRACEBACK = "Traceback (most recent call last):"


class MeasureError(RuntimeError):
    """A kernel that cannot be measured (bad arguments, failed compilation, failed run, unreadable HLO)."""


def exception_text(exc: BaseException) -> str:
    """``Type: message`` in one line; a Python traceback embedded in the message (as JAX embeds that of a failed
    host callback) is reduced to its last line, the exception it ended in."""
    text = str(exc)
    head, found, tail = text.partition(_TRACEBACK)
    if found:
        last = [line.strip() for line in tail.splitlines() if line.strip()][-1:]
        text = " ".join([head.strip(), *last]).strip()
    return f"{type(exc).__name__}: {' '.join(text.split())}"
