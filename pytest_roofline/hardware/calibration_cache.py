"""Calibrated ceilings: the cache of measured figures and the :class:`HardwareSpec` built from them.

A calibration is a robust high quantile of what this machine did on a large matmul per dtype, a donated stream
and transcendental chains, plus the median rates of the reference kernels of live ceilings (the kernels run in
:mod:`pytest_roofline.measurement.machine.calibration_kernels`). It is never raised by a later measurement: the maximum
of noisy re-measurements is no calibration. Figures are cached per machine key (CPU model,
core count, device kind, jax and jaxlib versions) as JSON in the user cache directory
(``$PYTEST_ROOFLINE_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-roofline``, else ``~/.cache/pytest-roofline``).
Reads and writes that cache; no JAX.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from ..base.files import write_text_atomic
from ..base.quantiles import quantile, relative_iqr
from .calibration_figures import CONTENDED_ABOVE, CalibrationFigures, damage
from .cpu import cpu_info, machine_memory, theoretical_cpu_peak
from .provisional import (
    drop_provisional,
    load_provisional,
    provisional_file,
    provisional_source,
    store_provisional,
)
from .spec import PEAK_KEYS, Ceiling, HardwareSpec

__all__ = [
    "CACHE_DIR_ENV",
    "CACHE_VERSION",
    "CONTENDED_ABOVE",
    "Refresh",
    "refresh_mode",
    "cache_dir",
    "load_cached",
    "store_cached",
    "RunOnly",
    "RUN_ONLY",
    "shared_figures",
    "adopt_figures",
    "robust_rate",
    "calibration_figures",
    "cpu_spec_from",
    "calibrated_spec_from",
]

CACHE_DIR_ENV = "PYTEST_ROOFLINE_CACHE_DIR"
# 7: an int8 matmul rate (CPU); 6: an integer-op rate (u32 xor-shift); 5: noisy figures measured again, matmul
# shapes in two rounds
CACHE_VERSION = 7
# The rate of this quantile of the run times is the ceiling: high, but not the one luckiest run.
CEILING_QUANTILE = 0.2

Refresh = Literal["cached", "replace"]
"""Use the cache; re-measure and replace it."""


def refresh_mode(recalibrate: bool | str) -> Refresh:
    """``measure(recalibrate=...)``: False or True as a :data:`Refresh`."""
    if recalibrate is False:
        return "cached"
    if recalibrate is True:
        return "replace"
    if recalibrate == "best":
        raise ValueError("recalibrate='best' is gone: keeping the best of noisy calibrations raised ceilings on "
                         "every lucky run; use recalibrate=True (a fresh, robust calibration)")
    raise ValueError(f"recalibrate= must be False or True, got {recalibrate!r}")


def robust_rate(work: float, times_s: Sequence[float]) -> tuple[float, float]:
    """``work`` over the :data:`CEILING_QUANTILE` quantile of the run times (a robust high rate), and the spread
    of the times (relative IQR)."""
    if not times_s or min(times_s) <= 0:
        raise ValueError("calibration runs need positive times")
    return work / quantile(times_s, CEILING_QUANTILE), relative_iqr(times_s)


def cache_dir() -> Path:
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-roofline"


def cache_file(key: Mapping[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / f"calibration-{key['platform']}-{digest}.json"


def load_cached(key: Mapping[str, Any], notice: Callable[[str], None] = lambda text: None,
                path: Path | None = None) -> CalibrationFigures | None:
    """The cached figures for ``key`` (in ``path``: the quiet calibration's file unless another is named); None
    where there are none. A damaged file (not JSON, another machine's key, a figure missing or not a positive
    number) is named by ``notice`` once, set aside beside it as ``.damaged`` (kept for a bug report) and not used."""
    path = path or cache_file(key)
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        _once(notice, path, f"cannot read the calibration cache {path}: {exc.strerror or exc}; calibrating again")
        return None
    why = damage(raw, key)
    if why is None:
        return CalibrationFigures.from_dict(json.loads(raw))
    aside = path.with_name(path.name + ".damaged")
    try:
        path.replace(aside)
        kept = f"set aside as {aside}"
    except OSError as exc:
        kept = f"left in place ({exc.strerror or exc}) and not used"
    _once(notice, path, f"the calibration cache {path} is damaged ({why}): {kept}; calibrating again")
    return None


# Cache files already named in a notice by this process: a damaged or unreadable file is named once.
_NAMED: set[Path] = set()


def _once(notice: Callable[[str], None], path: Path, text: str) -> None:
    if path not in _NAMED:
        _NAMED.add(path)
        notice(text)


def store_cached(key: Mapping[str, Any], figures: CalibrationFigures) -> Path:
    """Write atomically: a reader never sees half a file."""
    payload = json.dumps({"key": dict(key), **figures.to_dict()}, indent=2, sort_keys=True)
    return write_text_atomic(cache_file(key), payload)


Taken = tuple[CalibrationFigures, str]
"""A calibration's figures and where they came from (a ceiling's source names it)."""


class RunOnly:
    """Calibrations this process uses that were not written to the cache (contended ones, any where the cache
    cannot be written, and those another process of its program measured), by cache file: used by this run only.
    Only :func:`calibration_figures` and :func:`adopt_figures` keep one here."""

    def __init__(self) -> None:
        self._kept: dict[Path, Taken] = {}

    def get(self, key: Mapping[str, Any]) -> Taken | None:
        return self._kept.get(cache_file(key))

    def keep(self, key: Mapping[str, Any], figures: CalibrationFigures, where: str) -> Taken:
        self._kept[cache_file(key)] = figures, where
        return figures, where

    def forget(self, key: Mapping[str, Any]) -> None:
        self._kept.pop(cache_file(key), None)


RUN_ONLY = RunOnly()  # this process's


def calibration_figures(key: Mapping[str, Any], refresh: Refresh, measure: Callable[[], CalibrationFigures],
                        notice: Callable[[str], None] = lambda text: None) -> Taken:
    """The cached figures for ``key``, or new ones from ``measure()``; and where they came from.

    Only a quiet calibration is cached. One during which other processes used more than :data:`CONTENDED_ABOVE`
    of the CPUs (:attr:`~.calibration_figures.CalibrationFigures.contended`) is used by this process only, and
    ``notice`` says so: a quiet calibration cached earlier is kept instead, and the next quiet run calibrates again.
    A contended calibration cached by an older version is not read.
    """
    cached = stale = load_cached(key, notice)
    if cached is not None and cached.contended:
        cached = None
    else:
        stale = None
    if refresh == "cached":
        if cached is not None:
            return cached, f"cached in {cache_file(key)}"
        if (mine := RUN_ONLY.get(key)) is not None:
            return mine
        if (kept := load_provisional(cache_file(key), lambda path: load_cached(key, notice, path))) is not None:
            _once(notice, provisional_file(cache_file(key)), f"using a provisional calibration: {kept[1]}")
            return RUN_ONLY.keep(key, *kept)  # this process's figures, which the others of its program share
    if stale is not None:
        notice(f"the cached calibration of {stale.date or '?'} was measured while other processes used "
               f"{stale.contention:.0%} of the CPUs: not used, calibrating again")
    figures = measure().dated(_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    if not figures.contended:
        RUN_ONLY.forget(key)
        drop_provisional(cache_file(key))
        return _stored(key, figures, notice)
    if cached is not None:
        notice(f"the new calibration ran while other processes used {figures.contention:.0%} of the CPUs: not "
               f"cached; kept the quiet calibration of {cached.date or '?'} ({cache_file(key)})")
        return cached, (f"cached in {cache_file(key)}; a calibration on {figures.date} was not kept: other "
                        f"processes used {figures.contention:.0%} of the CPUs during it")
    return _provisional(key, figures, notice)


def _provisional(key: Mapping[str, Any], figures: CalibrationFigures, notice: Callable[[str], None]) -> Taken:
    """A contended calibration with no quiet one cached: kept as provisional for the next invocations (within the
    hour), or, where the cache cannot be written, for this run only."""
    busy = figures.contention or 0.0
    path = store_provisional(cache_file(key), key, figures)
    if path is not None:
        notice(f"calibrated while other processes used {busy:.0%} of the CPUs: its ceilings are low, so they are "
               f"kept as provisional ({path}): used only while no quiet calibration exists, for an hour, and a "
               f"figure above them proves nothing; the next quiet run calibrates again")
        where = provisional_source(busy, path, figures.date)
    else:
        notice(f"calibrated while other processes used {busy:.0%} of the CPUs: its ceilings are low, so they are "
               f"used by this run only and not cached; the next quiet run calibrates again")
        where = f"measured now while other processes used {busy:.0%} of the CPUs; this run only, not cached"
    return RUN_ONLY.keep(key, figures, where)


def _stored(key: Mapping[str, Any], figures: CalibrationFigures, notice: Callable[[str], None]) -> Taken:
    """A quiet calibration written to the cache; where the cache cannot be written, kept in this process's memory
    (each later kernel uses it; nothing calibrates again) and named once by ``notice``."""
    try:
        return figures, f"measured now, cached in {store_cached(key, figures)}"
    except OSError as exc:
        why = f"{cache_file(key).parent} cannot be written ({exc.strerror or exc})"
    notice(f"the calibration cannot be cached: {why}; this run keeps it in memory, and the next run calibrates "
           f"again (set {CACHE_DIR_ENV} to a writable directory to keep it)")
    return RUN_ONLY.keep(key, figures, f"measured now; not cached: {why}; this run only")


def shared_figures(key: Mapping[str, Any]) -> Taken | None:
    """The figures this process uses for ``key`` (its own run-only ones, else the quiet cached ones) and where they
    came from, for the other processes of its program; None where it has none (datasheet ceilings)."""
    mine = RUN_ONLY.get(key)
    if mine is not None:
        return mine
    cached = load_cached(key)
    return (cached, f"cached in {cache_file(key)}") if cached is not None and not cached.contended else None


def adopt_figures(key: Mapping[str, Any], figures: CalibrationFigures, where: str) -> None:
    """Use ``figures`` for ``key`` in this process, as if calibrated here (another process of the program measured
    them on this machine); a quiet calibration in the cache still comes first."""
    RUN_ONLY.keep(key, figures, where)


def cpu_spec_from(figures: CalibrationFigures, where: str, device_kind: str = "cpu") -> HardwareSpec:
    """The CPU's ceilings from calibration figures measured on this machine (``where``: cached or new)."""
    info = cpu_info()
    date, details = figures.date, figures.details
    peaks = {k: Ceiling(v, "calibration", f"{details[k]} on this machine; {where}", date)
             for k, v in _in_table_order(figures.peaks)}
    memory = Ceiling(figures.memory, "calibration", f"{details['memory']} on this machine; {where}", date)
    theoretical: dict[str, Ceiling] = {}
    notes = ["CPU ceilings are measured on this machine, not read from a datasheet", *_unmeasured(figures)]
    derived = theoretical_cpu_peak(info)
    if derived is not None:
        theoretical["f32"] = Ceiling(derived[0], "theoretical", derived[1], date[:10])
        if "f32" in peaks and peaks["f32"].value > derived[0]:
            notes.append(f"the measured f32 ceiling ({peaks['f32'].value / 1e9:.0f} GFLOP/s) is above the "
                         f"theoretical peak at the {info.get('clock', 'reported clock')} "
                         f"({derived[0] / 1e9:.0f} GFLOP/s): the CPU runs faster than that clock")
    name = f"CPU {info['model']} x{info['cores']}"
    trans = _transcendental(figures, f"on this machine; {where}")
    touch, cache = figures.first_touch, figures.cache_memory
    return HardwareSpec(name, "cpu", peaks, memory, None, (device_kind,), theoretical=theoretical, notes=tuple(notes),
                        transcendental=trans,
                        reference_rates=dict(figures.references), memory_capacity=machine_memory(),
                        first_touch=_measured(figures, "first_touch", where) if touch else None,
                        bytes_per_fault=figures.bytes_per_fault if touch else None,
                        cache_bandwidth=_measured(figures, "cache_memory", where) if cache else None,
                        cache_bytes=figures.cache_bytes if cache else None,
                        integer=_measured(figures, "integer", where) if figures.integer else None)


def _unmeasured(figures: CalibrationFigures) -> list[str]:
    """Notes for the reference kernels the calibration could not rate: kernels they pair with keep the
    calibrated ceilings."""
    return [f"no live ceiling from the {key} reference: {why}; kernels it pairs with use the calibrated ceilings "
            f"(recalibrate with --roofline-calibrate)" for key, why in sorted(figures.unmeasured.items())]


def _measured(figures: CalibrationFigures, name: str, where: str) -> Ceiling:
    value = getattr(figures, name)
    return Ceiling(float(value), "calibration", f"{figures.details[name]} on this machine; {where}", figures.date)


def calibrated_spec_from(base: HardwareSpec, figures: CalibrationFigures, where: str) -> HardwareSpec:
    """An accelerator's table entry with its bf16 and f32 peaks and memory bandwidth replaced by measurements.

    The f32 matmul runs at JAX's default precision, so on a GPU it is stored as the TF32 ceiling.
    Peaks the calibration does not measure keep their datasheet figure.
    """
    date, details = figures.date, figures.details
    peaks = dict(base.peaks)
    for dtype, value in _in_table_order(figures.peaks):
        slot = "tf32" if (dtype == "f32" and base.platform == "gpu") else dtype
        if base.platform == "tpu" and dtype == "f32":
            continue  # default-precision f32 on TPU is one bf16 pass: the bf16 figure covers it
        peaks[slot] = Ceiling(float(value), "calibration", f"{details[dtype]}; {where}", date)
    memory = Ceiling(figures.memory, "calibration", f"{details['memory']}; {where}", date)
    theoretical = {k: v for k, v in base.peaks.items()}
    theoretical["memory"] = base.memory_bandwidth
    return replace(base, peaks=peaks, memory_bandwidth=memory, theoretical=theoretical,
                   notes=base.notes + ("calibrated ceilings; datasheet figures kept under 'theoretical'",
                                       *_unmeasured(figures)),
                   transcendental=_transcendental(figures, where) or base.transcendental,
                   reference_rates=dict(figures.references))


def _transcendental(figures: CalibrationFigures, where: str) -> Ceiling | None:
    if not figures.transcendental:
        return None
    return Ceiling(figures.transcendental, "calibration", f"{figures.details['transcendental']} {where}", figures.date)


def _in_table_order(peaks: Mapping[str, float]) -> list[tuple[str, float]]:
    """Peaks in the order of :data:`PEAK_KEYS` (bf16, f16, f32 ...), whether fresh or read from the cache."""
    return sorted(peaks.items(), key=lambda kv: PEAK_KEYS.index(kv[0]) if kv[0] in PEAK_KEYS else len(PEAK_KEYS))
