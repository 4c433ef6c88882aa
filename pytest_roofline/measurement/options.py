"""The settings a user gives a measurement, typed and checked once where read (:class:`GivenSettings`); the settings
of one measurement, grouped (:class:`MeasureOptions`); how a program is timed (:class:`TimingSettings` and its
defaults, the one place they are written). No JAX."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, fields, replace
from typing import Any

from ..base import values
from ..base.kinds import (
    CACHE_MODES,
    CEILINGS_MODES,
    COUNTS_FROM,
    FIRST_TOUCH_MODES,
    TIMERS,
    CacheMode,
    CeilingsMode,
    CountsFrom,
    FirstTouchMode,
    Timer,
)
from ..hardware.per_device import Picked, Threshold, ThresholdSetting, pick_threshold
from ..hardware.spec import HardwareSpec
from ..hardware.table import HardwareSource

__all__ = ["TimingSettings", "DEFAULT_TIMING", "TIMING_KEYWORDS", "MeasureOptions", "GivenSettings", "GivenCounts",
           "HardwareChoice", "MEASURE_OPTIONS", "OPTION_CHECKS", "check_options"]


# The fewest runs a profiled measurement makes when its program's events would fill the trace's budget sooner.
PROFILED_LEAST_RUNS = 3


@dataclass(frozen=True)
class TimingSettings:
    """How to time a program. ``timer`` is "auto" (profiler, wall clock if it cannot be used),
    "profiler" (an error if it cannot be used) or "wallclock". Its values are checked where a user gives them
    (:meth:`GivenSettings.read`), not here."""

    warmup: int = 1
    min_runs: int = 5
    max_runs: int = 100
    budget_s: float = 1.0
    target_spread: float = 0.02
    timer: Timer = "auto"
    _: KW_ONLY  # fields from the seventh on are given by keyword
    # Sample at least this long before the spread may stop the runs: a fast kernel's first few runs can
    # agree with each other inside one transient of a noisy machine.
    min_time_s: float = 0.5
    # Reading a trace costs about a second per 50k events: runs under the profiler are capped so that
    # runs x ops_per_run stays under this (never below min_runs).
    max_trace_events: int = 100_000
    ops_per_run: int = 1

    def profiled_max_runs(self) -> int:
        """The most runs under the profiler: within the trace's budget of events, but never fewer than
        ``min_runs`` or 3, whichever is less (a program of 25,000 ops per run: 3 runs, 150,000 events)."""
        least = min(self.min_runs, PROFILED_LEAST_RUNS)
        return max(least, min(self.max_runs, self.max_trace_events // max(self.ops_per_run, 1)))

    def warm_check_runs(self, wanted: int) -> int:
        """How many of ``wanted`` warm runs check a cold measurement: fewer (at least 2) where the timed runs
        already fill the trace's budget (a program of tens of thousands of ops per run)."""
        left = self.max_trace_events // max(self.ops_per_run, 1) - self.min_runs
        return max(min(wanted, left), min(wanted, 2))

DEFAULT_TIMING = TimingSettings()
# The settings a user may set on measure(), the marker and the fixture call.
TIMING_KEYWORDS = ("warmup", "min_runs", "max_runs", "budget_s", "target_spread", "min_time_s", "timer")


def timing_defaults_text() -> str:
    """``warmup=1, min_runs=5, ...``: the defaults as a signature shows them."""
    values: dict[str, Any] = {f.name: getattr(DEFAULT_TIMING, f.name) for f in fields(TimingSettings)}
    return ", ".join(f"{k}={values[k]!r}" for k in TIMING_KEYWORDS)


# The check of each measurement setting a marker, a fixture call or measure() may give, by keyword: the one
# place a setting's checks are listed (each written in pytest_roofline.base.values).
OPTION_CHECKS: dict[str, Callable[[Any], Any]] = {
    "flops": values.count,
    "bytes": values.count,
    "transcendentals": values.count,
    "warmup": values.non_negative_int,
    "min_runs": values.positive_int,
    "max_runs": values.positive_int,
    "budget_s": values.positive_number,
    "target_spread": values.count,
    "min_time_s": values.count,
    "timer": values.one_of(TIMERS),
    "ceilings": values.one_of(CEILINGS_MODES),
    "first_touch": values.one_of(FIRST_TOUCH_MODES),
    "cache": values.one_of(CACHE_MODES),
    "counts": values.one_of(COUNTS_FROM),
    "threshold": values.count,
    "name": values.name,
}


def check_options(keywords: Mapping[str, Any], describe: Callable[[str, Any], str]) -> dict[str, Any]:
    """The settings among ``keywords`` that :data:`OPTION_CHECKS` knows, each checked (None: not given); a bad
    value is a ValueError whose text starts with ``describe(keyword, value)`` (where it came from)."""
    checked = {}
    for key, check in OPTION_CHECKS.items():
        value = keywords.get(key)
        if value is None:
            continue
        try:
            checked[key] = check(value)
        except ValueError as exc:
            raise ValueError(f"{describe(key, value)} {exc}") from None
    low, high = checked.get("min_runs", DEFAULT_TIMING.min_runs), checked.get("max_runs", DEFAULT_TIMING.max_runs)
    if high < low:
        raise ValueError(f"{describe('max_runs', high)} must be at least min_runs ({low})")
    return checked


@dataclass(frozen=True)
class GivenCounts:
    """Analytic counts from the user, replacing the compiler's (None: the compiler's)."""

    flops: float | None = None
    bytes: float | None = None
    transcendentals: float | None = None

    @property
    def values(self) -> tuple[float | None, float | None, float | None]:
        """(flops, bytes, transcendentals), in the order :func:`~..analysis.model.program_model` takes them."""
        return self.flops, self.bytes, self.transcendentals


@dataclass(frozen=True)
class HardwareChoice:
    """Which hardware entry and ceilings: ``name`` forces a table entry (or is a ``HardwareSpec``), ``file`` adds
    devices, ``ceilings`` picks the mode, ``recalibrate`` re-measures the cached calibration."""

    name: str | HardwareSpec | None = None
    file: HardwareSource = None
    ceilings: CeilingsMode = "auto"
    recalibrate: bool | str = False


@dataclass(frozen=True)
class GivenSettings:
    """The measurement settings a marker, a fixture call or ``measure()`` gives, typed and checked once, where they
    are read (:meth:`read`); None: not given. ``threshold``: the one a result is judged against, picked on the
    hardware it is measured on (a mapping by platform and hardware, or one value)."""

    _: KW_ONLY
    name: str | None = None
    flops: float | None = None
    bytes: float | None = None
    transcendentals: float | None = None
    hardware: str | HardwareSpec | None = None
    hardware_file: HardwareSource = None
    ceilings: CeilingsMode | None = None
    recalibrate: bool | str | None = None
    warmup: int | None = None
    min_runs: int | None = None
    max_runs: int | None = None
    budget_s: float | None = None
    target_spread: float | None = None
    min_time_s: float | None = None
    timer: Timer | None = None
    threshold: ThresholdSetting | None = None
    first_touch: FirstTouchMode | None = None
    cache: CacheMode | None = None
    counts: CountsFrom | None = None

    @classmethod
    def read(cls, keywords: Mapping[str, Any], describe: Callable[[str, Any], str],
             threshold_origin: str = "threshold=") -> GivenSettings:
        """The settings among ``keywords`` (names of :data:`MEASURE_OPTIONS`), each checked by its check in
        :data:`OPTION_CHECKS` (the hardware's as given); an unknown name is a TypeError, a bad value a ValueError
        whose text starts with ``describe(keyword, value)``."""
        unknown = sorted(set(keywords) - set(MEASURE_OPTIONS))
        if unknown:
            raise TypeError(f"measure() got an unexpected keyword {unknown[0]!r}")
        checked = check_options(keywords, describe)
        threshold = checked.pop("threshold", None)
        return cls(**checked, **{k: keywords[k] for k in ("hardware", "hardware_file", "recalibrate") if k in keywords},
                   threshold=Threshold(threshold, threshold_origin) if threshold is not None else None)

    def given(self) -> dict[str, Any]:
        """The settings given, by name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def over(self, base: GivenSettings) -> GivenSettings:
        """``base`` with these settings in place of its own where given."""
        return replace(base, **self.given())


@dataclass(frozen=True)
class MeasureOptions:
    """Every setting of one measurement, grouped: the label, the counts, the hardware, the timing, the threshold
    (picked on the hardware measured on; the runs go on while its interval straddles it, unless
    ``sample_to_threshold`` is off), whether the roofline charges the first touch of fresh pages, the cache state,
    and whose FLOPs are judged (the compiled program's, or the source's)."""

    name: str | None = None
    counts: GivenCounts = GivenCounts()
    hardware: HardwareChoice = HardwareChoice()
    timing: TimingSettings = DEFAULT_TIMING
    threshold: ThresholdSetting | None = None
    first_touch: FirstTouchMode = "include"
    _: KW_ONLY  # fields from the seventh on are given by keyword
    cache: CacheMode = "auto"
    counts_from: CountsFrom = "compiled"  # counts="source": judged on the FLOPs the source asks for
    sample_to_threshold: bool = True

    def threshold_on(self, hardware: HardwareSpec) -> tuple[Picked[float] | None, float | None]:
        """The threshold picked on the hardware measured on (the one pick the sampling, the verdict, the record and
        the report use), and the value the runs aim at (None where they aim at none)."""
        picked = pick_threshold(self.threshold, hardware.name, hardware.platform)
        return picked, picked.value if picked is not None and self.sample_to_threshold else None

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> MeasureOptions:
        """From ``measure()``'s keywords (:data:`MEASURE_OPTIONS`), each checked; a bad value is a ValueError
        naming it."""
        return cls().overridden(GivenSettings.read(keywords, lambda key, value: f"{key}=", "threshold= of measure()"))

    def overridden(self, given: GivenSettings) -> MeasureOptions:
        """These options with the settings ``given`` in their place."""
        g = given
        counts = GivenCounts(*(v if v is not None else old for v, old in zip((g.flops, g.bytes, g.transcendentals),
                                                                          self.counts.values, strict=True)))
        h = self.hardware
        hardware = HardwareChoice(g.hardware if g.hardware is not None else h.name,
                                  g.hardware_file if g.hardware_file is not None else h.file, g.ceilings or h.ceilings,
                                  g.recalibrate if g.recalibrate is not None else h.recalibrate)
        timing = replace(self.timing, **{n: v for n, v in g.given().items() if n in TIMING_KEYWORDS})
        return replace(self, name=g.name or self.name, counts=counts, hardware=hardware, timing=timing,
                       threshold=g.threshold or self.threshold, first_touch=g.first_touch or self.first_touch,
                       cache=g.cache or self.cache, counts_from=g.counts or self.counts_from)


# The keywords measure() takes for itself; any other goes to the kernel (see pytest_roofline.base.calls).
MEASURE_OPTIONS = ("name", "flops", "bytes", "transcendentals", "hardware", "hardware_file", "ceilings",
                   "recalibrate", *TIMING_KEYWORDS, "threshold", "first_touch", "cache", "counts")
