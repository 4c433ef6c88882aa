"""Errors users catch: importable without JAX."""

from __future__ import annotations

__all__ = ["MeasureError"]


class MeasureError(RuntimeError):
    """A kernel that cannot be measured (bad arguments, failed compilation, failed run, unreadable HLO)."""
