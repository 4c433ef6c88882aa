"""Numbers as people read them: seconds, quantities with SI prefixes, fractions as percentages."""

from __future__ import annotations

__all__ = ["format_seconds", "format_quantity", "format_fraction"]


def format_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} us"
    return f"{s * 1e9:.3g} ns"


def format_fraction(x: float) -> str:
    """A threshold as a percentage with up to 3 significant digits: 0.9 -> 90%, 0.025 -> 2.5%."""
    return f"{x * 100:.3g}%"


def format_quantity(x: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"
