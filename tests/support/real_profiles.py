"""The real accelerator profiles in tests/data, each read once per test session: the files do not change, and no
reader modifies what it gets (the TPU profile alone takes about 0.3 s to read and flatten)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pytest_roofline.analysis.runs.trace_events import TraceEvent, flatten
from pytest_roofline.analysis.runs.xspace import read_xspace


@functools.cache
def real_space(path: Path) -> Any:
    """The XSpace of a profile, as our reader reads it."""
    return read_xspace(path.read_bytes(), str(path))


@functools.cache
def real_events(path: Path) -> tuple[TraceEvent, ...]:
    """Every event of a profile, flattened."""
    return tuple(flatten(real_space(path)))
