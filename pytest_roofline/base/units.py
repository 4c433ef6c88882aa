"""Numbers as people read them: seconds, quantities with SI prefixes, fractions as percentages."""

from __future__ import annotations

__all__ = ["format_seconds", "format_quantity", "format_fraction", "format_bytes"]


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


def format_bytes(n: float) -> str:
    """Bytes with binary prefixes, as memory sizes are read: 67108864 -> 64 MiB."""
    for scale, prefix in ((2**40, "Ti"), (2**30, "Gi"), (2**20, "Mi"), (2**10, "Ki")):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {prefix}B"
    return f"{n:.3g} B"
