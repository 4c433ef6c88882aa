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
    "cache_damage",
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
# A calibration during which other processes (or other VMs, as steal time) used more than this share of the
# CPUs is contended: a busy-loop neighbour on a 2-core VM shows as 34%, a quiet machine as 0-2%.
CONTENDED_ABOVE = 0.1

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
                path: Path | None = None) -> dict[str, Any] | None:
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
    why = cache_damage(raw, key)
    if why is None:
        data: dict[str, Any] = json.loads(raw)
        return data
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


_OPTIONAL = ("transcendental", "integer", "first_touch", "cache_memory")


def cache_damage(raw: bytes, key: Mapping[str, Any]) -> str | None:
    """Why a calibration cache file's content cannot be used for ``key`` (None when it can)."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return f"not UTF-8 JSON: {exc}"
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    if data.get("key") != dict(key):
        return "its key is not this machine's"
    peaks, details = data.get("peaks"), data.get("details")
    if not isinstance(peaks, dict) or not peaks:
        return "no peaks"
    if not isinstance(details, dict):
        return "no details"
    figures = {**{f"peaks.{k}": v for k, v in peaks.items()}, "memory": data.get("memory"),
               **{k: data[k] for k in _OPTIONAL if data.get(k)}}
    for name, value in figures.items():
        if not _positive(value):
            return f"{name} is {value!r}, not a positive number"
        if name.removeprefix("peaks.") not in details:
            return f"no details for {name}"
    if (beyond := _beyond_any_cpu(figures, key)) is not None:
        return beyond
    needed = {"bytes_per_fault": "first_touch", "cache_bytes": "cache_memory"}
    for name, figure in needed.items():
        if data.get(figure) and not _positive(data.get(name)):
            return f"{name} is {data.get(name)!r}, not a positive number"
    if not isinstance(data.get("date"), str):
        return "no date"
    if not isinstance(data.get("references", {}), dict) or not isinstance(data.get("contention", 0.0), (int, float)):
        return "references or contention of the wrong type"
    return None


# What no CPU core reaches, with room to spare: 6 GHz x 2,048 FLOP a cycle (an Intel AMX tile unit's bf16 rate is
# 1,024; AVX-512 with two FMA units, 64 in f32), and no machine's memory: 20 TB/s (HBM on a CPU package: about 1 TB/s).
_CORE_FLOPS_MAX = 6e9 * 2048
_MEMORY_MAX = 20e12


def _beyond_any_cpu(figures: Mapping[str, Any], key: Mapping[str, Any]) -> str | None:
    """Why a CPU calibration's figure cannot be a measurement (above what its cores or any memory could do), else
    None: a hand-edited or foreign file (a provisional one claiming 1,000 PFLOP/s was used before)."""
    if key.get("platform") != "cpu":
        return None
    given = key.get("cores")
    cores: int = given if isinstance(given, int) and given > 0 else 1024
    limits = {"memory": _MEMORY_MAX, "cache_memory": 10 * _MEMORY_MAX, "transcendental": cores * _CORE_FLOPS_MAX,
              "integer": cores * _CORE_FLOPS_MAX}
    for name, value in figures.items():
        # int8 runs at twice the bf16 rate where a core has units for both (AMX: 2,048 int8 ops a cycle)
        limit = cores * _CORE_FLOPS_MAX * (2 if name == "peaks.int8" else 1) if name.startswith("peaks.") \
            else limits.get(name)
        if limit is not None and value > limit:
            return (f"{name} is {value:.3g}, above what {cores} CPU core(s) could do ({limit:.3g}): not a "
                    f"measurement")
    return None


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf")


def store_cached(key: Mapping[str, Any], figures: Mapping[str, Any]) -> Path:
    """Write atomically: a reader never sees half a file."""
    payload = json.dumps({"key": dict(key), **figures}, indent=2, sort_keys=True)
    return write_text_atomic(cache_file(key), payload)


def calibration_figures(key: Mapping[str, Any], refresh: Refresh, measure: Callable[[], dict[str, Any]],
                        notice: Callable[[str], None] = lambda text: None) -> tuple[dict[str, Any], str]:
    """The cached figures for ``key``, or new ones from ``measure()``; and where they came from.

    Only a quiet calibration is cached. One during which other processes used more than :data:`CONTENDED_ABOVE`
    of the CPUs (``figures["contention"]``) is used by this process only, and ``notice`` says so: a quiet
    calibration cached earlier is kept instead, and the next quiet run calibrates again. A contended calibration
    cached by an older version is not read.
    """
    cached = stale = load_cached(key, notice)
    if cached is not None and _contended(cached):
        cached = None
    else:
        stale = None
    if refresh == "cached":
        if cached is not None:
            return cached, f"cached in {cache_file(key)}"
        if (mine := _RUN_ONLY.get(cache_file(key))) is not None:
            return mine
        if (kept := load_provisional(cache_file(key), lambda path: load_cached(key, notice, path))) is not None:
            _once(notice, provisional_file(cache_file(key)), f"using a provisional calibration: {kept[1]}")
            _RUN_ONLY[cache_file(key)] = kept  # this process's figures, which the others of its program share
            return kept
    if stale is not None:
        notice(f"the cached calibration of {stale.get('date', '?')} was measured while other processes used "
               f"{stale['contention']:.0%} of the CPUs: not used, calibrating again")
    figures = measure()
    figures["date"] = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    busy = figures.get("contention")
    if not _contended(figures):
        _RUN_ONLY.pop(cache_file(key), None)
        drop_provisional(cache_file(key))
        return _stored(key, figures, notice)
    if cached is not None:
        notice(f"the new calibration ran while other processes used {busy:.0%} of the CPUs: not cached; kept the "
               f"quiet calibration of {cached.get('date', '?')} ({cache_file(key)})")
        return cached, (f"cached in {cache_file(key)}; a calibration on {figures['date']} was not kept: other "
                        f"processes used {busy:.0%} of the CPUs during it")
    return _provisional(key, figures, notice)


def _provisional(key: Mapping[str, Any], figures: dict[str, Any],
                 notice: Callable[[str], None]) -> tuple[dict[str, Any], str]:
    """A contended calibration with no quiet one cached: kept as provisional for the next invocations (within the
    hour), or, where the cache cannot be written, for this run only."""
    busy = figures["contention"]
    path = store_provisional(cache_file(key), key, figures)
    if path is not None:
        notice(f"calibrated while other processes used {busy:.0%} of the CPUs: its ceilings are low, so they are "
               f"kept as provisional ({path}): used only while no quiet calibration exists, for an hour, and a "
               f"figure above them proves nothing; the next quiet run calibrates again")
        where = provisional_source(busy, path, figures["date"])
    else:
        notice(f"calibrated while other processes used {busy:.0%} of the CPUs: its ceilings are low, so they are "
               f"used by this run only and not cached; the next quiet run calibrates again")
        where = f"measured now while other processes used {busy:.0%} of the CPUs; this run only, not cached"
    _RUN_ONLY[cache_file(key)] = figures, where
    return _RUN_ONLY[cache_file(key)]


def _stored(key: Mapping[str, Any], figures: dict[str, Any],
            notice: Callable[[str], None]) -> tuple[dict[str, Any], str]:
    """A quiet calibration written to the cache; where the cache cannot be written, kept in this process's memory
    (each later kernel uses it; nothing calibrates again) and named once by ``notice``."""
    try:
        return figures, f"measured now, cached in {store_cached(key, figures)}"
    except OSError as exc:
        why = f"{cache_file(key).parent} cannot be written ({exc.strerror or exc})"
    notice(f"the calibration cannot be cached: {why}; this run keeps it in memory, and the next run calibrates "
           f"again (set {CACHE_DIR_ENV} to a writable directory to keep it)")
    _RUN_ONLY[cache_file(key)] = figures, f"measured now; not cached: {why}; this run only"
    return _RUN_ONLY[cache_file(key)]


def shared_figures(key: Mapping[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The figures this process uses for ``key`` (its own run-only ones, else the quiet cached ones) and where they
    came from, for the other processes of its program; None where it has none (datasheet ceilings)."""
    mine = _RUN_ONLY.get(cache_file(key))
    if mine is not None:
        return mine
    cached = load_cached(key)
    return (cached, f"cached in {cache_file(key)}") if cached is not None and not _contended(cached) else None


def adopt_figures(key: Mapping[str, Any], figures: dict[str, Any], where: str) -> None:
    """Use ``figures`` for ``key`` in this process, as if calibrated here (another process of the program measured
    them on this machine); a quiet calibration in the cache still comes first."""
    _RUN_ONLY[cache_file(key)] = figures, where


# Calibrations of this process that were not written, by cache file (contended ones, and any where the cache
# cannot be written): used by this run only.
_RUN_ONLY: dict[Path, tuple[dict[str, Any], str]] = {}


def _contended(figures: Mapping[str, Any]) -> bool:
    busy = figures.get("contention")
    return busy is not None and busy > CONTENDED_ABOVE


def cpu_spec_from(figures: Mapping[str, Any], where: str, device_kind: str = "cpu") -> HardwareSpec:
    """The CPU's ceilings from calibration figures measured on this machine (``where``: cached or new)."""
    info = cpu_info()
    date = figures["date"]
    details = figures["details"]
    peaks = {k: Ceiling(float(v), "calibration", f"{details[k]} on this machine; {where}", date)
             for k, v in _in_table_order(figures["peaks"])}
    memory = Ceiling(float(figures["memory"]), "calibration", f"{details['memory']} on this machine; {where}", date)
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
    touch = figures.get("first_touch")
    cache = figures.get("cache_memory")
    return HardwareSpec(name, "cpu", peaks, memory, None, (device_kind,), theoretical=theoretical, notes=tuple(notes),
                        transcendental=trans,
                        reference_rates=dict(figures.get("references", {})), memory_capacity=machine_memory(),
                        first_touch=_measured(figures, "first_touch", where) if touch else None,
                        bytes_per_fault=float(figures["bytes_per_fault"]) if touch else None,
                        cache_bandwidth=_measured(figures, "cache_memory", where) if cache else None,
                        cache_bytes=int(figures["cache_bytes"]) if cache else None,
                        integer=_measured(figures, "integer", where) if figures.get("integer") else None)


def _unmeasured(figures: Mapping[str, Any]) -> list[str]:
    """Notes for the reference kernels the calibration could not rate: kernels they pair with keep the
    calibrated ceilings."""
    return [f"no live ceiling from the {key} reference: {why}; kernels it pairs with use the calibrated ceilings "
            f"(recalibrate with --roofline-calibrate)" for key, why in sorted(figures.get("unmeasured", {}).items())]


def _measured(figures: Mapping[str, Any], name: str, where: str) -> Ceiling:
    return Ceiling(float(figures[name]), "calibration", f"{figures['details'][name]} on this machine; {where}",
                   figures["date"])


def calibrated_spec_from(base: HardwareSpec, figures: Mapping[str, Any], where: str) -> HardwareSpec:
    """An accelerator's table entry with its bf16 and f32 peaks and memory bandwidth replaced by measurements.

    The f32 matmul runs at JAX's default precision, so on a GPU it is stored as the TF32 ceiling.
    Peaks the calibration does not measure keep their datasheet figure.
    """
    date = figures["date"]
    details = figures["details"]
    peaks = dict(base.peaks)
    for dtype, value in _in_table_order(figures["peaks"]):
        slot = "tf32" if (dtype == "f32" and base.platform == "gpu") else dtype
        if base.platform == "tpu" and dtype == "f32":
            continue  # default-precision f32 on TPU is one bf16 pass: the bf16 figure covers it
        peaks[slot] = Ceiling(float(value), "calibration", f"{details[dtype]}; {where}", date)
    memory = Ceiling(float(figures["memory"]), "calibration", f"{details['memory']}; {where}", date)
    theoretical = {k: v for k, v in base.peaks.items()}
    theoretical["memory"] = base.memory_bandwidth
    return replace(base, peaks=peaks, memory_bandwidth=memory, theoretical=theoretical,
                   notes=base.notes + ("calibrated ceilings; datasheet figures kept under 'theoretical'",
                                       *_unmeasured(figures)),
                   transcendental=_transcendental(figures, where) or base.transcendental,
                   reference_rates=dict(figures.get("references", {})))


def _transcendental(figures: Mapping[str, Any], where: str) -> Ceiling | None:
    value = figures.get("transcendental")
    if not value:
        return None
    return Ceiling(float(value), "calibration", f"{figures['details']['transcendental']} {where}", figures["date"])


def _in_table_order(peaks: Mapping[str, float]) -> list[tuple[str, float]]:
    """Peaks in the order of :data:`PEAK_KEYS` (bf16, f16, f32 ...), whether fresh or read from the cache."""
    return sorted(peaks.items(), key=lambda kv: PEAK_KEYS.index(kv[0]) if kv[0] in PEAK_KEYS else len(PEAK_KEYS))
