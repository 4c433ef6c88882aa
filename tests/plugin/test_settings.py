"""Settings resolution and the marker's checks, called directly (no pytest run, no JAX)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_roofline.hardware.per_device import Threshold
from pytest_roofline.measurement.options import DEFAULT_TIMING
from pytest_roofline.plugin.marker import MARKER_SIGNATURE, parse_marker
from pytest_roofline.plugin.settings import ConfigError, Settings, resolve_settings

NONE: dict[str, object] = {}


def resolve(cli: dict[str, object] = NONE, env: dict[str, str] | None = None, ini: dict[str, object] = NONE,
            base: str = ".") -> Settings:
    return resolve_settings(cli, env or {}, ini, "tox.ini", base)


def test_precedence_cli_env_ini_and_origins() -> None:
    s = resolve({"min": "0.7"}, {"PYTEST_ROOFLINE_MIN": "0.6"}, {"min": "0.5"})
    assert isinstance(s.min, Threshold) and (s.min.value, s.min.origin) == (
        0.7,
        "--roofline-min=0.7 on the command line",
    )
    s = resolve({}, {"PYTEST_ROOFLINE_MIN": "0.6"}, {"min": "0.5"})
    assert isinstance(s.min, Threshold) and s.min.origin == "PYTEST_ROOFLINE_MIN=0.6 in the environment"
    s = resolve({}, {}, {"min": "0.5", "model": "OPS ", "ceilings": "datasheet", "warn_only": "yes"})
    assert isinstance(s.min, Threshold)
    assert (s.min.value, s.model, s.ceilings, s.warn_only) == (0.5, "ops", "datasheet", True)
    assert s.origins["model"] == "roofline_model = OPS  in tox.ini"


def test_relative_ini_paths_are_relative_to_the_ini_file(tmp_path: Path) -> None:
    s = resolve({}, {}, {"trace_dir": "saved"}, base=str(tmp_path))
    assert s.trace_dir == str(tmp_path / "saved")


def test_yaml_config_supplies_min_thresholds_model_and_devices(tmp_path: Path) -> None:
    config = tmp_path / "r.yaml"
    config.write_text("min: 0.3\nmodel: ops\nthresholds:\n  '*::test_x': 0.9\ndevices:\n  Box:\n    platform: gpu\n"
                      "    peak_tflops: {f32: 1}\n    memory_gbps: 10\n")
    s = resolve({"config": str(config), "hardware": "box"})
    assert isinstance(s.min, Threshold) and s.min.value == 0.3 and s.model == "ops" and s.hardware == "box"
    pattern, suite = s.threshold_for("a.py::test_x"), s.threshold_for("a.py::test_y")
    assert (
        isinstance(pattern, Threshold) and isinstance(suite, Threshold) and (pattern.value, suite.value) == (0.9, 0.3)
    )


@pytest.mark.parametrize("cli,fragment", [
    ({"min": "1.5"}, "--roofline-min=1.5 on the command line: must be in (0, 1]"),
    ({"ceilings": "live?"}, "--roofline-ceilings=live? on the command line: must be one of 'auto', 'datasheet', "
                            "'calibrated', 'live', got 'live?'"),
    ({"hardware": "NoSuchGPU"}, "--roofline-hardware=NoSuchGPU on the command line: no hardware named 'NoSuchGPU'"),
    ({"config": "/nonexistent/r.yaml"}, "roofline config /nonexistent/r.yaml (--roofline-config=/nonexistent/r.yaml "
                                        "on the command line): cannot read it"),
])
def test_bad_values_name_where_they_came_from(cli: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve(cli)
    assert str(info.value).startswith(fragment)


def test_bad_yaml_config_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "r.yaml"
    config.write_text("thresholds: [1, 2]\n")
    with pytest.raises(ConfigError, match="r.yaml: 'thresholds' must map test-id patterns to fractions"):
        resolve({"config": str(config)})
    config.write_text("devices:\n  Box:\n    platform: quantum\n")
    with pytest.raises(ConfigError, match="device 'Box' needs platform: cpu, gpu or tpu"):
        resolve({"config": str(config)})


# --- the marker ---
def test_marker_keywords_are_checked_and_split() -> None:
    spec = parse_marker((0.8,), {"bound": "compute", "model": "ops", "flops": 10, "min_runs": 3, "timer": "auto",
                                 "ceilings": "Live"}, "t.py::test_a")
    assert isinstance(spec.min, Threshold) and spec.min.value == 0.8 and spec.min.origin == "marker of t.py::test_a"
    assert (spec.bound, spec.model) == ("compute", "ops")
    assert spec.given.given() == {"flops": 10.0, "min_runs": 3, "timer": "auto", "ceilings": "live"}


@pytest.mark.parametrize("args,kwargs,fragment", [
    ((0.5, 0.6), {}, "takes at most one positional argument (min), got 2"),
    ((0.5,), {"min": 0.6}, "min given both positionally and as a keyword"),
    ((), {"mni": 0.5}, "unknown keyword 'mni'"),
    ((), {"min_runs": 5, "max_runs": 2}, "max_runs=2: must be at least min_runs (5)"),
    ((), {"warmup": -1}, "warmup=-1: must be an integer >= 0"),
    ((), {"budget_s": 0}, "budget_s=0: must be a positive number"),
    ((), {"flops": True}, "flops=True: must be a non-negative number"),
    ((), {"ceilings": "alive"}, "ceilings='alive': must be one of 'auto', 'datasheet', 'calibrated', 'live'"),
])
def test_bad_marker_arguments_name_test_and_keyword(args: tuple[object, ...], kwargs: dict[str, object],
                                                    fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_marker(args, kwargs, "t.py::test_a")
    assert str(info.value).startswith("roofline marker of t.py::test_a: ") and fragment in str(info.value)


def test_marker_signature_shows_the_timing_defaults() -> None:
    assert f"warmup={DEFAULT_TIMING.warmup}, min_runs={DEFAULT_TIMING.min_runs}" in MARKER_SIGNATURE
    assert f"min_time_s={DEFAULT_TIMING.min_time_s}, timer='auto'" in MARKER_SIGNATURE
    assert "ceilings=None" in MARKER_SIGNATURE


def test_first_touch_from_the_ini_and_the_yaml_config(tmp_path: Path) -> None:
    assert resolve().first_touch == "include"
    assert resolve({}, {}, {"first_touch": "Exclude"}).first_touch == "exclude"
    config = tmp_path / "roofline.yaml"
    config.write_text("first_touch: exclude\n")
    assert resolve({"config": str(config)}).first_touch == "exclude"
    config.write_text("first_touch: never\n")
    with pytest.raises(ConfigError, match="first_touch: never in .*roofline.yaml: must be one of 'include', 'exclude'"):
        resolve({"config": str(config)})


def test_cache_state_from_every_source(tmp_path: Path) -> None:
    assert resolve().cache == "auto"
    assert resolve({"cache": "cold"}).cache == "cold"
    assert resolve({}, {"PYTEST_ROOFLINE_CACHE": "Warm"}).cache == "warm"
    assert resolve({}, {}, {"cache": "cold"}).cache == "cold"
    config = tmp_path / "roofline.yaml"
    config.write_text("cache: warm\n")
    assert resolve({"config": str(config)}).cache == "warm"
    assert resolve({"config": str(config), "cache": "cold"}).cache == "cold"  # the command line wins
    config.write_text("cache: lukewarm\n")
    with pytest.raises(ConfigError, match="cache: lukewarm in .*roofline.yaml: must be one of 'auto', 'cold', 'warm'"):
        resolve({"config": str(config)})
    with pytest.raises(ConfigError, match="--roofline-cache=hot on the command line: must be one of 'auto', 'cold'"):
        resolve({"cache": "hot"})
    assert parse_marker((), {"cache": "cold"}, "t.py::test_a").given.given() == {"cache": "cold"}


@pytest.mark.parametrize(("key", "value"), [
    ("flops", -1), ("bytes", "8"), ("transcendentals", True), ("warmup", 1.5), ("min_runs", 0), ("max_runs", -2),
    ("budget_s", 0), ("target_spread", -0.1), ("min_time_s", "0.2"), ("timer", "sundial"), ("ceilings", "alive"),
    ("first_touch", "maybe"), ("cache", "tepid"),
])
def test_the_marker_and_measure_check_a_setting_alike(key: str, value: object) -> None:
    """One check per setting (measurement/options.py: OPTION_CHECKS), whether a marker or measure() gives it."""
    from pytest_roofline.measurement.options import MeasureOptions

    with pytest.raises(ConfigError) as marker:
        parse_marker((), {key: value}, "t.py::test_a")
    with pytest.raises(ValueError) as call:
        MeasureOptions.from_keywords({key: value})
    problem = str(call.value).removeprefix(f"{key}= ")
    assert (
        problem.startswith("must be ")
        and str(marker.value) == f"roofline marker of t.py::test_a: {key}={value!r}: {problem}"
    )


def test_counts_from_the_command_line_the_yaml_config_the_marker_and_the_call(tmp_path: Path) -> None:
    """Whose FLOPs a kernel is judged on reaches the measurement's options from every place it can be set."""
    from pytest_roofline.measurement.options import GivenSettings, MeasureOptions
    from pytest_roofline.plugin.session import RooflineSession

    assert resolve().counts == "compiled"
    assert resolve({"counts": "source"}).counts == "source"
    config = tmp_path / "roofline.yaml"
    config.write_text("counts: source\n")
    settings = resolve({"config": str(config)})
    assert settings.counts == "source"
    assert RooflineSession(settings).options(GivenSettings()).counts_from == "source"
    # The marker's and the call's counts= are checked measurement settings, the call's winning.
    assert RooflineSession(resolve()).options(GivenSettings.read({"counts": "source"}, lambda k, v: f"{k}=")) \
        .counts_from == "source"
    assert MeasureOptions.from_keywords({"counts": "Source"}).counts_from == "source"
    with pytest.raises(ValueError, match="counts= must be one of 'compiled', 'source'"):
        MeasureOptions.from_keywords({"counts": "model"})
    config.write_text("counts: useful\n")
    with pytest.raises(ConfigError, match="counts: useful in .*roofline.yaml: must be one of 'compiled', 'source'"):
        resolve({"config": str(config)})
