"""The YAML config's ``programs:`` section: the survey's gates, one per program-name pattern. Each gives a threshold
(one value, or one per platform and hardware, as ``min`` takes) and, where ``pytest-roofline suggest`` wrote it,
the work to judge the program on per platform (its FLOPs, bytes and transcendentals per run as surveyed): a program
made slower by doing more (a matmul computed twice) then falls below its threshold, as a test that states its
kernel's work does.

    programs:
      jit_attention*: 0.3
      jit_project:
        min: {cpu: 0.31, gpu: 0.4}
        work: {cpu: {flops: 268435456, bytes: 3145728, transcendentals: 0}}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...analysis.model.recorded_profile import Work
from ...analysis.verdict.survey_book import program_setting
from ...base import values
from ...hardware.per_device import ThresholdSetting
from ..thresholds import ConfigError, parse_threshold_setting

__all__ = ["ProgramGate", "parse_programs", "stated_work"]

_KEYS = {"min", "work"}
_WORK_KEYS = ("flops", "bytes", "transcendentals")


@dataclass(frozen=True)
class ProgramGate:
    min: ThresholdSetting
    work: Mapping[str, Work] = field(default_factory=dict)  # by platform


def _work(raw: Any, where: str) -> dict[str, Work]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise ConfigError(f"{where}: 'work' must map platforms to {{flops, bytes, transcendentals}}")
    out = {}
    for platform, counts in raw.items():
        unknown = set(counts) - set(_WORK_KEYS)
        if unknown or "flops" not in counts or "bytes" not in counts:
            raise ConfigError(f"{where}: work for {platform!r} needs flops and bytes (and may give "
                              f"transcendentals), not {sorted(counts)}")
        flops, nbytes, trans = (values.at(f"{where}: work: {platform}: {k}", values.count, counts.get(k, 0),
                                          ConfigError) for k in _WORK_KEYS)
        out[str(platform)] = (flops, nbytes, trans)
    return out


def parse_programs(data: Mapping[str, Any], config_path: str,
                   names: Callable[[], Iterable[str]]) -> list[tuple[str, ProgramGate]]:
    """The section's gates, in order (the first pattern that matches a program's name decides)."""
    out = []
    for pattern, raw in (data.get("programs") or {}).items():
        where = f"programs: {pattern!r}: {raw} in {config_path}"
        entry = raw if isinstance(raw, dict) and set(raw) & _KEYS else {"min": raw}
        if set(entry) - _KEYS or entry.get("min") is None:
            raise ConfigError(f"{where}: give min (and work, as pytest-roofline suggest writes it); "
                              f"not {sorted(set(entry) - _KEYS) or 'without min'}")
        origin = f"programs: {pattern!r} in {config_path}"
        out.append((str(pattern), ProgramGate(parse_threshold_setting(entry["min"], where, origin, names),
                                              _work(entry.get("work"), where))))
    return out


def stated_work(gates: Iterable[tuple[str, ProgramGate]]) -> Callable[[str, str], Work | None]:
    """The work a program of this name is judged on, on this platform (None: its counts as it ran)."""
    listed = list(gates)

    def stated(name: str, platform: str) -> Work | None:
        gate, found = program_setting(name, listed, None)
        return gate.work.get(platform) if found else None

    return stated
