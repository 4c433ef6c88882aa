"""The ``@pytest.mark.roofline(...)`` marker: its keywords, checked once at collection. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .config import ConfigError, Threshold, parse_model, parse_threshold

__all__ = ["MARKER_SIGNATURE", "MARKER_KEYWORDS", "MarkerSpec", "parse_marker"]

MARKER_SIGNATURE = (
    "roofline(min=None, *, flops=None, bytes=None, transcendentals=None, bound=None, model=None, warmup=2, "
    "min_runs=5, max_runs=100, budget_s=1.0, target_spread=0.02, min_time_s=0.2, timer='auto'): measure this test's kernels "
    "against the roofline; fail when utilization < min (a fraction in (0, 1]) or, with bound='compute'/"
    "'memory', when a kernel is bound by the other; model='program' (default) or 'ops' picks the roofline the "
    "threshold uses; flops/bytes/transcendentals replace the compiler's counts (analytic model FLOPs give "
    "MFU); the rest tune the measurement (see pytest_roofline.measure)."
)


def _count(raw: Any, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw >= 0:
        raise ConfigError(f"{where}: must be a non-negative number, got {raw!r}")
    return float(raw)


def _positive_int(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise ConfigError(f"{where}: must be a positive integer, got {raw!r}")
    return raw


def _non_negative_int(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise ConfigError(f"{where}: must be an integer >= 0, got {raw!r}")
    return raw


def _positive_float(raw: Any, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw > 0:
        raise ConfigError(f"{where}: must be a positive number, got {raw!r}")
    return float(raw)


def _bound(raw: Any, where: str) -> str:
    if raw not in ("compute", "memory"):
        raise ConfigError(f"{where}: must be 'compute' or 'memory', got {raw!r}")
    return str(raw)


def _timer(raw: Any, where: str) -> str:
    if raw not in ("auto", "profiler", "wallclock"):
        raise ConfigError(f"{where}: must be 'auto', 'profiler' or 'wallclock', got {raw!r}")
    return str(raw)


MARKER_KEYWORDS = {
    "min": None,  # handled apart: becomes a Threshold
    "flops": _count,
    "bytes": _count,
    "transcendentals": _count,
    "bound": _bound,
    "warmup": _non_negative_int,
    "min_runs": _positive_int,
    "max_runs": _positive_int,
    "budget_s": _positive_float,
    "target_spread": _count,
    "min_time_s": _count,
    "timer": _timer,
    "model": None,  # handled apart: which roofline the threshold uses
}
# Keywords handed to measure() as they are.
MEASURE_KEYWORDS = ("flops", "bytes", "transcendentals", "warmup", "min_runs", "max_runs", "budget_s",
                    "target_spread", "min_time_s", "timer")


@dataclass(frozen=True)
class MarkerSpec:
    min: Threshold | None
    bound: str | None
    measure_kwargs: Mapping[str, Any]
    model: str | None = None


def parse_marker(args: tuple[Any, ...], kwargs: Mapping[str, Any], test: str) -> MarkerSpec:
    """Check a marker's arguments; errors name the test and the keyword."""
    if len(args) > 1:
        raise ConfigError(f"roofline marker of {test}: takes at most one positional argument (min), got {len(args)}")
    merged = dict(kwargs)
    if args:
        if "min" in merged:
            raise ConfigError(f"roofline marker of {test}: min given both positionally and as a keyword")
        merged["min"] = args[0]
    unknown = sorted(set(merged) - set(MARKER_KEYWORDS))
    if unknown:
        raise ConfigError(f"roofline marker of {test}: unknown keyword {unknown[0]!r}; "
                          f"allowed: {', '.join(MARKER_KEYWORDS)}")
    threshold = None
    if merged.get("min") is not None:
        where = f"roofline marker of {test}: min={merged['min']!r}"
        threshold = Threshold(parse_threshold(merged["min"], where), f"marker of {test}")
    model = None
    if merged.get("model") is not None:
        model = parse_model(merged["model"], f"roofline marker of {test}: model={merged['model']!r}")
    checked: dict[str, Any] = {}
    for key, value in merged.items():
        if key in ("min", "model") or value is None:
            continue
        parse = MARKER_KEYWORDS[key]
        assert parse is not None
        checked[key] = parse(value, f"roofline marker of {test}: {key}={value!r}")
    if "min_runs" in checked and "max_runs" in checked and checked["max_runs"] < checked["min_runs"]:
        raise ConfigError(f"roofline marker of {test}: max_runs={checked['max_runs']} is below "
                          f"min_runs={checked['min_runs']}")
    bound = checked.pop("bound", None)
    return MarkerSpec(threshold, bound, {k: v for k, v in checked.items() if k in MEASURE_KEYWORDS}, model)
