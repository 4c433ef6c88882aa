"""Errors users catch: importable without JAX."""

from __future__ import annotations

import os
import traceback
from pathlib import Path

__all__ = ["MeasureError", "exception_text", "origin_frames"]

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


# Frames of these packages are the measuring machinery, not the code that raised.
_MACHINERY = (str(Path(__file__).resolve().parents[1]) + os.sep,)
_MACHINERY_PARTS = (f"{os.sep}jax{os.sep}", f"{os.sep}jaxlib{os.sep}", f"{os.sep}_pytest{os.sep}",
                    f"{os.sep}pluggy{os.sep}")


def _shown(frame: traceback.FrameSummary, own: bool) -> bool:
    name = frame.filename
    return (own or not name.startswith(_MACHINERY)) and not any(part in name for part in _MACHINERY_PARTS)


def origin_frames(exc: BaseException | None, style: str = "auto", own: bool = False) -> str:
    """The frames of the user's and its libraries' code where ``exc`` (the error a kernel raised) came from, in
    pytest's traceback style: "long"/"auto"/"native" with each line of source, "short" one line a frame,
    "line"/"no" none; "" where no such frame is known. JAX's and pytest's frames are left out, and
    pytest-roofline's own unless ``own`` (an error of pytest-roofline's, to report)."""
    if exc is None or style in ("no", "line"):
        return ""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _shown(f, own)]
    if not frames:
        return ""
    lines = [f"{type(exc).__name__} raised here (innermost last):"]
    for f in frames:
        if style == "short":
            lines.append(f"  {f.filename}:{f.lineno}: in {f.name}: {(f.line or '').strip()}")
        else:
            lines.append(f'  File "{f.filename}", line {f.lineno}, in {f.name}')
            if f.line:
                lines.append(f"    {f.line.strip()}")
    return "\n".join(lines)
