"""A calibration measured beside other work, kept as provisional: on a runner that is never quiet, each pytest
invocation would otherwise calibrate again (a minute or more on a busy 2-core machine) before its first kernel.

It is written beside the quiet calibration's file, as ``<name>.provisional.json``, never in its place; it is read
only while no quiet calibration exists, for :data:`PROVISIONAL_FOR_S` after it was measured (then the machine is
calibrated again, in the hope of a quiet moment), and removed when a quiet calibration is cached. Its ceilings are
low, and are said to be: its source names the other processes' share of the CPUs, which
:attr:`~.spec.HardwareSpec.low_ceilings` reads (a figure above such a roofline proves nothing, as for a run
measured while contended). Pure apart from the file it reads and writes.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..base.files import write_text_atomic
from .calibration_figures import CalibrationFigures

__all__ = ["PROVISIONAL_FOR_S", "PROVISIONAL", "provisional_file", "load_provisional", "store_provisional",
           "drop_provisional", "provisional_source"]

PROVISIONAL_FOR_S = 3600.0
PROVISIONAL = "provisional"  # the word a provisional calibration's source carries


def provisional_file(quiet_file: Path) -> Path:
    return quiet_file.with_name(quiet_file.stem + ".provisional.json")


def provisional_source(busy: float, path: Path, date: str) -> str:
    """Where a provisional calibration's figures come from, as a ceiling's source says it."""
    measured = _parsed(date)
    until = measured + _dt.timedelta(seconds=PROVISIONAL_FOR_S) if measured is not None else None
    kept = f" until {until.strftime('%H:%M:%S UTC')}" if until is not None else ""
    return (f"measured on {date} while other processes used {busy:.0%} of the CPUs; {PROVISIONAL}: kept in {path}"
            f"{kept}, used only while no quiet calibration exists")


def load_provisional(quiet_file: Path, load: Callable[[Path], CalibrationFigures | None],
                     now: _dt.datetime | None = None) -> tuple[CalibrationFigures, str] | None:
    """The provisional figures beside ``quiet_file`` and their source, where there are some younger than
    :data:`PROVISIONAL_FOR_S`; ``load`` reads and checks a calibration file (None: missing or damaged)."""
    path = provisional_file(quiet_file)
    figures = load(path)
    if figures is None:
        return None
    measured = _parsed(figures.date)
    now = now or _dt.datetime.now(_dt.UTC)
    if measured is None or figures.contention is None:
        return None
    if not 0 <= (now - measured).total_seconds() <= PROVISIONAL_FOR_S:
        return None
    return figures, provisional_source(figures.contention, path, figures.date)


def store_provisional(quiet_file: Path, key: Mapping[str, Any], figures: CalibrationFigures) -> Path | None:
    """Write a contended calibration as provisional; None where it cannot be written (it is then this run's only)."""
    payload = json.dumps({"key": dict(key), **figures.to_dict()}, indent=2, sort_keys=True)
    try:
        return write_text_atomic(provisional_file(quiet_file), payload)
    except OSError:
        return None


def drop_provisional(quiet_file: Path) -> None:
    """A quiet calibration is cached: the provisional one is no longer used."""
    try:
        provisional_file(quiet_file).unlink()
    except OSError:
        pass


def _parsed(date: str) -> _dt.datetime | None:
    try:
        return _dt.datetime.strptime(date, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.UTC)
    except ValueError:
        return None
