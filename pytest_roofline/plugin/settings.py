"""Plugin settings: options, their ini twins, environment variables and the YAML config, resolved into one
frozen object. No pytest, no JAX; reads the YAML config and the hardware table it may extend.

Precedence for each setting: command line > environment > ini file > YAML config > default. A test's
threshold: marker ``min`` (or ``min=`` in the fixture call) > the YAML ``thresholds`` pattern matching its
id > the suite floor resolved as above; the marker's, the call's and the YAML's may be a mapping per platform and
hardware (:mod:`pytest_roofline.hardware.per_device`), picked from on the device measured. Every value remembers
where it came from, and a bad one is a :class:`ConfigError` that says so, e.g. ``roofline_min = 1.5 in tox.ini:
must be in (0, 1]``.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..base.files import check_writable, read_text, read_yaml_mapping
from ..base.kinds import (
    CACHE_MODES,
    CEILINGS_MODES,
    COUNTS_FROM,
    FIRST_TOUCH_MODES,
    MODELS,
    CacheMode,
    CeilingsMode,
    CountsFrom,
    FirstTouchMode,
    Model,
    choose,
)
from ..base.values import at, non_empty
from ..hardware.per_device import Threshold, ThresholdSetting
from ..hardware.spec import HardwareError
from ..hardware.table import HardwareEntries, HardwareSource, load_shipped_table, merge_overrides
from .options import OPTIONS, Option
from .survey.gates import ProgramGate, parse_programs
from .thresholds import (
    ConfigError,
    parse_bool,
    parse_max_drop,
    parse_threshold,
    parse_threshold_setting,
)

if TYPE_CHECKING:
    from ..report.outputs import Outputs

__all__ = [
    "ConfigError",
    "OPTIONS",
    "Option",
    "Settings",
    "parse_threshold_setting",
    "hardware_names",
    "resolve_settings",
    "parse_threshold",
    "parse_bool",
    "parse_model",
    "parse_max_drop",
    "load_config_file",
]


def _non_empty(what: str) -> Callable[[Any, str], str]:
    check = non_empty(what)
    return lambda raw, where: at(where, check, raw, ConfigError)


_parse_path = _non_empty("a path")
_parse_name = _non_empty("a hardware name")


def parse_model(raw: Any, where: str) -> Model:
    return choose(raw, MODELS, where, ConfigError)


def parse_first_touch(raw: Any, where: str) -> FirstTouchMode:
    return choose(raw, FIRST_TOUCH_MODES, where, ConfigError)


def parse_counts(raw: Any, where: str) -> CountsFrom:
    return choose(raw, COUNTS_FROM, where, ConfigError)


def parse_cache(raw: Any, where: str) -> CacheMode:
    return choose(raw, CACHE_MODES, where, ConfigError)


def _parse_ceilings(raw: Any, where: str) -> CeilingsMode:
    return choose(raw, CEILINGS_MODES, where, ConfigError)


# How each option's value is parsed and checked (raw value, where it came from -> value), by name.
_PARSERS: dict[str, Callable[[Any, str], Any]] = {
    "min": parse_threshold,
    "hardware": _parse_name,
    "config": _parse_path,
    "calibrate": parse_bool,
    "report": _parse_path,
    "warn_only": parse_bool,
    "ceilings": _parse_ceilings,
    "model": parse_model,
    "first_touch": parse_first_touch,
    "cache": parse_cache,
    "counts": parse_counts,
    "trace_dir": _parse_path,
    "history": _parse_path,
    "baseline": _parse_path,
    "max_drop": parse_max_drop,
    "html": _parse_path,
    "trace_all": parse_bool,
    "survey": parse_bool,
    "survey_strict": parse_bool,
}


S = TypeVar("S")


def _per_test(nodeid: str, marker: S | None, patterns: tuple[tuple[str, S], ...], suite: S | None) -> S | None:
    if marker is not None:
        return marker
    for pattern, value in patterns:
        if fnmatch.fnmatchcase(nodeid, pattern):
            return value
    return suite


@dataclass(frozen=True)
class Settings:
    min: ThresholdSetting | None = None
    hardware: str | None = None
    config: str | None = None
    calibrate: bool = False
    report: str | None = None
    warn_only: bool = False
    _: KW_ONLY  # fields from the seventh on are given by keyword
    ceilings: CeilingsMode = "auto"
    model: Model = "program"
    first_touch: FirstTouchMode = "include"
    cache: CacheMode = "auto"
    counts: CountsFrom = "compiled"
    trace_dir: str | None = None
    trace_all: bool = False
    history: str | None = None
    baseline: str | None = None
    max_drop: Threshold | None = None  # the suite's floor of the baseline gate
    html: str | None = None
    patterns: tuple[tuple[str, ThresholdSetting], ...] = ()  # per-test thresholds from the YAML config
    drop_patterns: tuple[tuple[str, Threshold], ...] = ()  # per-test max_drop from the YAML config
    survey: bool = False
    survey_strict: bool = False
    programs: tuple[tuple[str, ProgramGate], ...] = ()  # the survey's gates by program name (YAML)
    origins: Mapping[str, str] = field(default_factory=dict)
    hardware_entries: HardwareEntries | None = None  # from the pytest_roofline_hardware hook, over the config's

    def threshold_for(self, nodeid: str, marker_min: ThresholdSetting | None = None) -> ThresholdSetting | None:
        """A test's threshold: the marker's ``min``, a YAML pattern's, the suite's (a mapping is picked from on
        the device, :func:`~pytest_roofline.hardware.per_device.pick_threshold`)."""
        return _per_test(nodeid, marker_min, self.patterns, self.min)

    def max_drop_for(self, nodeid: str, marker_drop: Threshold | None = None) -> Threshold | None:
        """The floor of a test's baseline gate: the marker's ``max_drop``, a YAML pattern, the suite's."""
        return _per_test(nodeid, marker_drop, self.drop_patterns, self.max_drop)

    def outputs(self) -> Outputs:
        """Where the session's outputs go (the report, the history folder, the HTML), with their origins."""
        from ..report.outputs import Outputs

        return Outputs(self.report, self.history, self.html, self.origins)

    def hardware_names(self) -> tuple[str, ...]:
        """The hardware names a per-device mapping may use (:func:`hardware_names`), read once."""
        return self._hardware_names

    @functools.cached_property
    def _hardware_names(self) -> tuple[str, ...]:
        return hardware_names(self.hardware_file, self.origins.get("config", ""))

    @property
    def hardware_file(self) -> HardwareSource:
        """The YAML config doubles as the hardware override file (its ``devices`` section); the hook's entries go
        over it."""
        return _over(self.hardware_entries, self.config)


_CONFIG_KEYS = {"min", "max_drop", "thresholds", "programs", "devices", "ceilings", "model", "first_touch", "cache",
                "counts"}
_PATTERN_KEYS = {"min", "max_drop"}


def load_config_file(path: str, where: str) -> dict[str, Any]:
    """Read and check the YAML config (devices are checked by the hardware table loader)."""
    try:
        text = read_text(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"roofline config {path} ({where}): cannot read it: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None
    data = read_yaml_mapping(text, f"roofline config {path} ({where})", ConfigError)
    unknown = set(data) - _CONFIG_KEYS
    if unknown:
        raise ConfigError(f"roofline config {path}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_CONFIG_KEYS)}")
    for key, what in (("thresholds", "test-id patterns"), ("programs", "program names (patterns)")):
        if not isinstance(data.get(key, {}) or {}, dict):
            raise ConfigError(f"roofline config {path}: '{key}' must map {what} to fractions")
    return data


def _from_sources(cli: Mapping[str, Any], env: Mapping[str, str], ini: Mapping[str, Any], ini_file: str,
                  base_dir: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Each option from the first source that gives it (command line > environment > ini file), parsed, and
    where it came from."""
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for opt in OPTIONS:
        raw = cli.get(opt.name)
        if raw is not None and raw is not False:
            shown = f"{opt.flag}={raw}" if opt.kind != "bool" else opt.flag
            where = f"{shown} on the command line"
        elif env.get(opt.env) not in (None, ""):
            raw = env[opt.env]
            where = f"{opt.env}={raw} in the environment"
        elif ini.get(opt.name) not in (None, ""):
            raw = ini[opt.name]
            where = f"{opt.ini} = {raw} in {ini_file}"
            if opt.kind == "path" and not os.path.isabs(str(raw).strip()):
                raw = os.path.join(base_dir, str(raw).strip())  # relative to the ini file, like pytest's own paths
        else:
            continue
        value = _PARSERS[opt.name](raw, where)
        values[opt.name] = Threshold(value, where) if opt.name in ("min", "max_drop") else value
        origins[opt.name] = where
    return values, origins


# The YAML config's suite-wide keys, each with its parser; an option given elsewhere wins. min may be a mapping
# (per platform and hardware), parsed with the table's names.
_CONFIG_SETTINGS: dict[str, Callable[[Any, str], Any]] = {
    "max_drop": lambda raw, where: Threshold(parse_max_drop(raw, where), where),
    "ceilings": lambda raw, where: _parse_ceilings(raw, where),
    "model": lambda raw, where: parse_model(raw, where),
    "first_touch": lambda raw, where: parse_first_touch(raw, where),
    "cache": lambda raw, where: parse_cache(raw, where),
    "counts": lambda raw, where: parse_counts(raw, where),
}


def _merge_config(data: Mapping[str, Any], config_path: str, values: dict[str, Any],
                  origins: dict[str, str]) -> tuple[list[tuple[str, ThresholdSetting]], list[tuple[str, Threshold]]]:
    """The YAML config's suite-wide settings into ``values`` (where not given elsewhere), and its per-test
    patterns: (min patterns, max_drop patterns)."""
    def names() -> tuple[str, ...]:
        return hardware_names(config_path, origins.get("config", ""))

    if "min" in data and "min" not in values:
        where = f"min: {data['min']} in {config_path}"
        values["min"] = parse_threshold_setting(data["min"], where, where, names)
        origins["min"] = where
    for key, parse in _CONFIG_SETTINGS.items():
        if key in data and key not in values:
            where = f"{key}: {data[key]} in {config_path}"
            values[key] = parse(data[key], where)
            if key == "max_drop":
                origins[key] = where
    patterns: list[tuple[str, ThresholdSetting]] = []
    drop_patterns: list[tuple[str, Threshold]] = []
    for pattern, raw in (data.get("thresholds") or {}).items():
        where = f"thresholds: {pattern!r}: {raw} in {config_path}"
        # {min: ..., max_drop: ...}, or a threshold: one value, or a mapping by platform and hardware.
        entry = raw if isinstance(raw, dict) and set(raw) & _PATTERN_KEYS else {"min": raw}
        unknown = set(entry) - _PATTERN_KEYS
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_PATTERN_KEYS)}")
        if entry.get("min") is not None:
            patterns.append((str(pattern), parse_threshold_setting(entry["min"], where, where, names)))
        if entry.get("max_drop") is not None:
            drop_patterns.append((str(pattern), Threshold(parse_max_drop(entry["max_drop"], where), where)))
    return patterns, drop_patterns


def _check_outputs(values: Mapping[str, Any], origins: Mapping[str, str]) -> None:
    """The report, HTML, history and trace paths can be written (checked now, not after the run)."""
    for name, what in (("report", "report"), ("html", "HTML report")):
        if values.get(name) is not None:
            problem = check_writable(values[name])
            if problem:
                raise ConfigError(f"{origins[name]}: cannot write the {what} there: {problem}")
    for name, what in (("history", "add runs to that directory"), ("trace_dir", "save traces in that directory")):
        if values.get(name) is not None:
            problem = check_writable(os.path.join(values[name], "roofline-check.json"))
            if problem:
                raise ConfigError(f"{origins[name]}: cannot {what}: {problem}")


def resolve_settings(
    cli: Mapping[str, Any],
    env: Mapping[str, str],
    ini: Mapping[str, Any],
    ini_file: str,
    base_dir: str = ".",
    entries: HardwareEntries | None = None,
) -> Settings:
    """Resolve every option. ``cli``/``ini`` map option names to raw values (None when not given); ``entries``:
    hardware entries a hook gives. In steps: the sources in order, the YAML config, the hardware name against the
    table, the output paths."""
    values, origins = _from_sources(cli, env, ini, ini_file, base_dir)
    patterns: list[tuple[str, ThresholdSetting]] = []
    drop_patterns: list[tuple[str, Threshold]] = []
    config_path = values.get("config")
    data = load_config_file(config_path, origins["config"]) if config_path is not None else None
    _check_hardware(values.get("hardware"), origins.get("hardware", ""), _over(entries, config_path),
                    origins.get("config", ""))
    programs: list[tuple[str, ProgramGate]] = []
    if data is not None:
        patterns, drop_patterns = _merge_config(data, str(config_path), values, origins)
        programs = parse_programs(data, str(config_path), lambda: hardware_names(
            str(config_path), origins.get("config", "")))
    _check_outputs(values, origins)
    if values.get("survey_strict"):
        values["survey"] = True
    return Settings(patterns=tuple(patterns), drop_patterns=tuple(drop_patterns), origins=origins,
                    hardware_entries=entries, programs=tuple(programs), **values)


def _over(entries: HardwareEntries | None, config_path: str | None) -> HardwareSource:
    return config_path if entries is None else replace(entries, file=config_path)


def hardware_names(config_path: HardwareSource = None, config_where: str = "") -> tuple[str, ...]:
    """The names a per-device mapping may use besides the platforms: the hardware table's, with the devices of
    the config (or of $PYTEST_ROOFLINE_HARDWARE_FILE). Read when a mapping is first parsed: a suite without one
    never loads the table."""
    try:
        return tuple(merge_overrides(load_shipped_table(), config_path, config_where))
    except HardwareError as exc:
        raise ConfigError(str(exc)) from None


def _check_hardware(name: str | None, where: str, config_path: HardwareSource, config_where: str) -> None:
    """The hardware table with the config's devices must read, and hold a forced hardware name."""
    if name is None and config_path is None:
        return
    table = hardware_names(config_path, config_where)
    if name is not None and name.lower() not in {k.lower() for k in table}:
        raise ConfigError(f"{where}: no hardware named {name!r} in the table; known: {', '.join(sorted(table))}")
