"""The ``@pytest.mark.roofline(...)`` marker: its keywords, checked once at collection. No pytest."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any

from ..analysis.model.exposed import ExposedLimit, parse_max_exposed
from ..analysis.program.memory import MemoryLimit, parse_max_memory
from ..analysis.verdict.census import OpsLimit, parse_max_ops
from ..base.kinds import EXPECTED_BOUNDS, ExpectedBound, Model, choose
from ..hardware.per_device import PerDevice, Picked, Threshold, ThresholdSetting, parse_per_device, pick_setting
from ..measurement.options import OPTION_CHECKS, TIMING_KEYWORDS, GivenSettings, timing_defaults_text
from .settings import ConfigError, parse_max_drop, parse_model, parse_threshold_setting

__all__ = ["MARKER_SIGNATURE", "MARKER_KEYWORDS", "MEASURE_KEYWORDS", "MarkerSpec", "parse_marker",
           "parse_bound", "BoundSetting", "parse_bound_setting", "pick_bound"]

MARKER_SIGNATURE = (
    f"roofline(min=None, *, flops=None, bytes=None, transcendentals=None, bound=None, model=None, "
    f"ceilings=None, first_touch=None, cache=None, counts=None, max_drop=None, max_memory=None, max_ops=None, "
    f"max_exposed=None, {timing_defaults_text()}): measure this "
    "test's kernels "
    "against the roofline; fail when utilization < min (a fraction in (0, 1]) or, with bound='compute'/"
    "'memory', when a kernel is bound by the other (min and bound may be mappings by platform or hardware name: "
    "{'cpu': 0.4, 'gpu': 0.7, 'H100 SXM': 0.8, 'default': 0.5}, the most specific key winning, a device not named "
    "measured but not judged); model='program' (default) or 'ops' picks the roofline the "
    "threshold uses; flops/bytes/transcendentals replace the compiler's counts (analytic model FLOPs give "
    "MFU); ceilings='live'/'calibrated'/'datasheet' overrides --roofline-ceilings; first_touch='include'/'exclude' "
    "overrides --roofline-first-touch (whether the roofline includes the first touch of fresh pages); "
    "cache='cold'/'warm'/'auto' overrides --roofline-cache (the cache state of the timed runs); "
    "counts='compiled'/'source' overrides --roofline-counts (judge on the source's FLOPs); max_drop (a "
    "fraction) is the "
    "smallest drop from the --roofline-baseline that fails; max_memory (bytes, '2 GiB', or a fraction of the "
    "device's memory such as 0.5 or '50%') fails a kernel whose compiled program needs more; max_ops (device ops "
    "per run, or a mapping of 'total' or a family such as 'copy' or 'cuBLAS' to them) fails a kernel whose run "
    "executes more; max_exposed (a fraction of the run) fails a kernel whose collectives leave more of a run "
    "overlapped by no compute; the rest tune "
    "the measurement (see pytest_roofline.measure)."
)


def parse_bound(raw: Any, where: str) -> ExpectedBound:
    return choose(raw, EXPECTED_BOUNDS, where, ConfigError)


# The bound a test expects: one for every device, or a mapping by platform and hardware name.
BoundSetting = ExpectedBound | PerDevice[ExpectedBound]


def parse_bound_setting(raw: Any, where: str, origin: str, names: Callable[[], Iterable[str]]) -> BoundSetting:
    return parse_per_device(raw, parse_bound, where, names, ConfigError, origin)


def pick_bound(setting: BoundSetting | None, origin: str, hardware: str, platform: str) -> Picked[ExpectedBound] | None:
    """The bound expected on one device (:func:`~pytest_roofline.hardware.per_device.pick_setting`, typed)."""
    return pick_setting(setting, origin, hardware, platform)


# Keywords handed to measure() as they are, checked as measure() checks them (OPTION_CHECKS) but for threshold,
# which the marker spells min.
MEASURE_KEYWORDS = tuple(key for key in OPTION_CHECKS if key != "threshold")
assert set(TIMING_KEYWORDS) <= set(MEASURE_KEYWORDS)
MARKER_KEYWORDS = ("min", "bound", "model", "max_drop", "max_memory", "max_ops", "max_exposed", *MEASURE_KEYWORDS)


@dataclass(frozen=True)
class MarkerSpec:
    min: ThresholdSetting | None
    bound: BoundSetting | None
    given: GivenSettings = GivenSettings()  # the measurement's settings, read and checked at collection
    model: Model | None = None
    max_drop: Threshold | None = None
    max_memory: MemoryLimit | None = None
    _: KW_ONLY  # fields from the seventh on are given by keyword
    max_ops: OpsLimit | None = None
    max_exposed: ExposedLimit | None = None


def parse_marker(args: tuple[Any, ...], kwargs: Mapping[str, Any], test: str,
                 names: Callable[[], Iterable[str]] = tuple) -> MarkerSpec:
    """Check a marker's arguments; errors name the test and the keyword (and the key of a mapping).
    ``names``: the hardware names a ``min``/``bound`` mapping may use besides the platforms."""
    where = f"roofline marker of {test}"
    if len(args) > 1:
        raise ConfigError(f"{where}: takes at most one positional argument (min), got {len(args)}")
    merged = dict(kwargs)
    if args:
        if "min" in merged:
            raise ConfigError(f"{where}: min given both positionally and as a keyword")
        merged["min"] = args[0]
    unknown = sorted(set(merged) - set(MARKER_KEYWORDS))
    if unknown:
        raise ConfigError(f"{where}: unknown keyword {unknown[0]!r}; allowed: {', '.join(MARKER_KEYWORDS)}")
    values = {k: v for k, v in merged.items() if v is not None}
    threshold = None
    if "min" in values:
        threshold = parse_threshold_setting(values["min"], f"{where}: min={values['min']!r}", f"marker of {test}",
                                            names)
    model = parse_model(values["model"], f"{where}: model={values['model']!r}") if "model" in values else None
    max_drop = None
    if "max_drop" in values:
        max_drop = Threshold(parse_max_drop(values["max_drop"], f"{where}: max_drop={values['max_drop']!r}"),
                             f"max_drop in the marker of {test}")
    max_memory = None
    if "max_memory" in values:
        max_memory = parse_max_memory(values["max_memory"], where, f"max_memory in the marker of {test}", ConfigError)
    max_ops = (parse_max_ops(values["max_ops"], where, f"max_ops in the marker of {test}", ConfigError)
               if "max_ops" in values else None)
    max_exposed = (parse_max_exposed(values["max_exposed"], where, f"max_exposed in the marker of {test}", ConfigError)
                   if "max_exposed" in values else None)
    bound = (parse_bound_setting(values["bound"], f"{where}: bound={values['bound']!r}", f"marker of {test}", names)
             if "bound" in values else None)
    try:
        given = GivenSettings.read({k: v for k, v in values.items() if k in MEASURE_KEYWORDS},
                                   lambda key, value: f"{where}: {key}={value!r}:")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return MarkerSpec(threshold, bound, given, model, max_drop, max_memory, max_ops=max_ops, max_exposed=max_exposed)
