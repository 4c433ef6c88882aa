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
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, TypeVar

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
from ..hardware.table import load_shipped_table, merge_overrides
from .thresholds import (
    ConfigError,
    parse_bool,
    parse_max_drop,
    parse_threshold,
    parse_threshold_setting,
)

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


@dataclass(frozen=True)
class Option:
    name: str  # attribute of Settings
    flag: str  # command-line flag
    ini: str
    env: str
    kind: str  # "float", "bool", "path", "str"
    help: str
    _: KW_ONLY  # fields from the seventh on are given by keyword
    parse: Callable[[Any, str], Any]
    metavar: str | None = None


OPTIONS: tuple[Option, ...] = (
    Option("min", "--roofline-min", "roofline_min", "PYTEST_ROOFLINE_MIN", "float",
           "fail roofline kernels whose utilization (roofline time / measured time) is below this fraction, "
           "in (0, 1]; without a threshold anywhere kernels are measured and reported, never failed",
           parse=parse_threshold, metavar="FLOAT"),
    Option("hardware", "--roofline-hardware", "roofline_hardware", "PYTEST_ROOFLINE_HARDWARE", "str",
           "measure against this hardware table entry (e.g. 'H100 SXM') instead of the detected device",
           parse=_parse_name, metavar="NAME"),
    Option("config", "--roofline-config", "roofline_config", "PYTEST_ROOFLINE_CONFIG", "path",
           "YAML file with a suite threshold (min), per-test thresholds by test-id pattern (thresholds) "
           "and hardware overrides (devices)", parse=_parse_path, metavar="PATH"),
    Option("calibrate", "--roofline-calibrate", "roofline_calibrate", "PYTEST_ROOFLINE_CALIBRATE", "bool",
           "re-measure the calibrated ceilings (CPU) once in this session instead of using the cache",
           parse=parse_bool),
    Option("report", "--roofline-report", "roofline_report", "PYTEST_ROOFLINE_REPORT", "path",
           "write every measured kernel to this JSON file (atomically)", parse=_parse_path, metavar="PATH"),
    Option("warn_only", "--roofline-warn-only", "roofline_warn_only", "PYTEST_ROOFLINE_WARN_ONLY", "bool",
           "report kernels below their threshold as warnings instead of failing the test", parse=parse_bool),
    Option("ceilings", "--roofline-ceilings", "roofline_ceilings", "PYTEST_ROOFLINE_CEILINGS", "str",
           "which ceilings to measure against: auto (live on CPU, datasheet on accelerators), datasheet, "
           "calibrated, or live (calibrated, scaled by a reference kernel run beside each timed run)",
           parse=_parse_ceilings, metavar="KIND"),
    Option("model", "--roofline-model", "roofline_model", "PYTEST_ROOFLINE_MODEL", "str",
           "which roofline the threshold is checked against: program (one max() over the whole program, "
           "default) or ops (the sum of per-op roofline times, tighter for ops that run one after another)",
           parse=parse_model, metavar="MODEL"),
    Option("first_touch", "--roofline-first-touch", "roofline_first_touch", "PYTEST_ROOFLINE_FIRST_TOUCH", "str",
           "whether the roofline includes the first touch of each kernel's fresh pages (a CPU's page faults on "
           "new output buffers, calibrated on the machine): include (default) or exclude (main memory and "
           "compute alone); both utilizations are reported", parse=parse_first_touch, metavar="MODE"),
    Option("cache", "--roofline-cache", "roofline_cache", "PYTEST_ROOFLINE_CACHE", "str",
           "the cache state kernels are measured in: cold (the last-level cache is evicted before every timed "
           "run, outside the timing), warm (runs back to back) or auto (default: cold where a kernel's working "
           "set fits the last-level cache, warm where it does not, and on a TPU)", parse=parse_cache, metavar="STATE"),
    Option("counts", "--roofline-counts", "roofline_counts", "PYTEST_ROOFLINE_COUNTS", "str",
           "whose FLOPs kernels are judged on: compiled (the compiled program's, default) or source (the work the "
           "program as written asks for, model-FLOPs utilization: a ragged dot XLA runs dense is judged on its "
           "useful work)", parse=parse_counts, metavar="WHOSE"),
    Option("trace_dir", "--roofline-trace-dir", "roofline_trace_dir", "PYTEST_ROOFLINE_TRACE_DIR", "path",
           "where to save the trace (Perfetto, TensorBoard/XProf) and optimized HLO of failing kernels "
           "(default: .pytest_cache/d/roofline-traces, or a temporary directory)", parse=_parse_path, metavar="PATH"),
    Option("history", "--roofline-history", "roofline_history", "PYTEST_ROOFLINE_HISTORY", "path",
           "add this run's JSON report to this directory (named by time and commit): the history that "
           "'pytest-roofline history' reads and --roofline-baseline can compare with", parse=_parse_path,
           metavar="DIR"),
    Option("baseline", "--roofline-baseline", "roofline_baseline", "PYTEST_ROOFLINE_BASELINE", "path",
           "a report, or a history directory whose recent complete runs form the baseline: fail a kernel "
           "whose utilization dropped from it beyond a noise-aware gate", parse=_parse_path, metavar="PATH"),
    Option("max_drop", "--roofline-max-drop", "roofline_max_drop", "PYTEST_ROOFLINE_MAX_DROP", "float",
           "the smallest drop from the baseline that fails, a fraction in (0, 1) (default 0.05 against a "
           "history, 0.10 against one report; the history's noise can widen it)", parse=parse_max_drop,
           metavar="FRACTION"),
    Option("html", "--roofline-html", "roofline_html", "PYTEST_ROOFLINE_HTML", "path",
           "write a self-contained HTML report with roofline charts at the end of the run (needs "
           "pip install 'pytest-roofline[html]')", parse=_parse_path, metavar="PATH"),
    Option("trace_all", "--roofline-trace-all", "roofline_trace_all", "PYTEST_ROOFLINE_TRACE_ALL", "bool",
           "save traces of every measured kernel, not only failing ones", parse=parse_bool),
)


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
    origins: Mapping[str, str] = field(default_factory=dict)

    def threshold_for(self, nodeid: str, marker_min: ThresholdSetting | None = None) -> ThresholdSetting | None:
        """A test's threshold: the marker's ``min``, a YAML pattern's, the suite's (a mapping is picked from on
        the device, :func:`~pytest_roofline.hardware.per_device.pick_threshold`)."""
        return _per_test(nodeid, marker_min, self.patterns, self.min)

    def max_drop_for(self, nodeid: str, marker_drop: Threshold | None = None) -> Threshold | None:
        """The floor of a test's baseline gate: the marker's ``max_drop``, a YAML pattern, the suite's."""
        return _per_test(nodeid, marker_drop, self.drop_patterns, self.max_drop)

    def hardware_names(self) -> tuple[str, ...]:
        """The hardware names a per-device mapping may use (:func:`hardware_names`), read once."""
        return self._hardware_names

    @functools.cached_property
    def _hardware_names(self) -> tuple[str, ...]:
        return hardware_names(self.config, self.origins.get("config", ""))

    @property
    def hardware_file(self) -> str | None:
        """The YAML config doubles as the hardware override file (its ``devices`` section)."""
        return self.config


_CONFIG_KEYS = {"min", "max_drop", "thresholds", "devices", "ceilings", "model", "first_touch", "cache", "counts"}
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
    thresholds = data.get("thresholds", {}) or {}
    if not isinstance(thresholds, dict):
        raise ConfigError(f"roofline config {path}: 'thresholds' must map test-id patterns to fractions")
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
        value = opt.parse(raw, where)
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
) -> Settings:
    """Resolve every option. ``cli``/``ini`` map option names to raw values (None when not given). In steps:
    the sources in order, the YAML config, the hardware name against the table, the output paths."""
    values, origins = _from_sources(cli, env, ini, ini_file, base_dir)
    patterns: list[tuple[str, ThresholdSetting]] = []
    drop_patterns: list[tuple[str, Threshold]] = []
    config_path = values.get("config")
    data = load_config_file(config_path, origins["config"]) if config_path is not None else None
    _check_hardware(values.get("hardware"), origins.get("hardware", ""), config_path, origins.get("config", ""))
    if data is not None:
        patterns, drop_patterns = _merge_config(data, str(config_path), values, origins)
    _check_outputs(values, origins)
    return Settings(patterns=tuple(patterns), drop_patterns=tuple(drop_patterns), origins=origins, **values)


def hardware_names(config_path: str | None = None, config_where: str = "") -> tuple[str, ...]:
    """The names a per-device mapping may use besides the platforms: the hardware table's, with the devices of
    the config (or of $PYTEST_ROOFLINE_HARDWARE_FILE). Read when a mapping is first parsed: a suite without one
    never loads the table."""
    try:
        return tuple(merge_overrides(load_shipped_table(), config_path, config_where))
    except HardwareError as exc:
        raise ConfigError(str(exc)) from None


def _check_hardware(name: str | None, where: str, config_path: str | None, config_where: str) -> None:
    """The hardware table with the config's devices must read, and hold a forced hardware name."""
    if name is None and config_path is None:
        return
    table = hardware_names(config_path, config_where)
    if name is not None and name.lower() not in {k.lower() for k in table}:
        raise ConfigError(f"{where}: no hardware named {name!r} in the table; known: {', '.join(sorted(table))}")
