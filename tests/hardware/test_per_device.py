"""Thresholds and bounds per platform and per hardware: ``min={"cpu": 0.4, "gpu": 0.7, "H100 SXM": 0.8}``.

The most specific key wins (the hardware's name, its platform, ``default``); a device a mapping does not name is
measured, not judged; bad keys and values stop the run naming the test, the key and the keys allowed. Every
source is covered: the marker, the ``roofline(...)`` call, the YAML config's ``min`` and ``thresholds``. The
hardware is the real table's (an H100 entry on this CPU: a fake device, with made-up utilizations from
tests/support/fakes.py); no JAX, no timing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CPU, FAKE_SESSION_CONFTEST
from harness import NODE, Failed, Harness, kernel

from pytest_roofline.hardware.per_device import PerDevice, parse_per_device, pick
from pytest_roofline.hardware.table import load_shipped_table
from pytest_roofline.plugin.marker import parse_marker
from pytest_roofline.plugin.settings import ConfigError, Settings, parse_threshold, resolve_settings

pytest_plugins = ["pytester"]

TABLE = load_shipped_table()
H100 = TABLE["H100 SXM"]  # the table's entry, standing in for a GPU this CPU does not have
V5E = TABLE["TPU v5e"]
NAMES = tuple(TABLE)
MAPPING = {"cpu": 0.4, "gpu": 0.7, "H100 SXM": 0.8}


def names() -> tuple[str, ...]:
    return NAMES


def parsed(raw: Any) -> Any:
    return parse_per_device(raw, parse_threshold, "where", names, ConfigError, "origin")


@pytest.mark.parametrize("hardware,platform,value,key", [
    ("H100 SXM", "gpu", 0.8, "H100 SXM"),  # the hardware's name beats its platform
    ("h100 sxm", "gpu", 0.8, "H100 SXM"),  # names match whatever their case
    ("A100 80GB SXM", "gpu", 0.7, "gpu"),
    ("AMD EPYC 9R14", "cpu", 0.4, "cpu"),
    ("TPU v5e", "tpu", None, ""),  # not named, no default: not judged
])
def test_the_most_specific_key_wins(hardware: str, platform: str, value: float | None, key: str) -> None:
    setting = parsed(MAPPING)
    assert isinstance(setting, PerDevice)
    picked = pick(setting, hardware, platform)
    assert (picked.value, picked.key) == (value, key)


def test_default_covers_what_no_other_key_names_and_says_it_decided() -> None:
    setting = parsed({"gpu": 0.7, "default": 0.3})
    picked = pick(setting, "TPU v5e", "tpu")
    assert (picked.value, picked.key, picked.where) == (0.3, "default", "origin, key 'default'")


def test_a_device_not_named_is_said_why() -> None:
    picked = pick(parsed({"gpu": 0.7, "H100 SXM": 0.8}), "TPU v5e", "tpu")
    assert picked.value is None
    assert picked.unnamed("min", "TPU v5e", "tpu") == ("min names gpu, H100 SXM; not tpu (TPU v5e), and no "
                                                       "'default' key (origin)")


def test_one_value_is_not_a_mapping() -> None:
    assert parsed(0.5) == 0.5


@pytest.mark.parametrize("raw,message", [
    ({"gpus": 0.7}, "where: unknown key 'gpus'; allowed: cpu, gpu, tpu, default or a hardware name: A100 40GB SXM"),
    ({"H200": 0.7}, "where: unknown key 'H200'"),
    ({"gpu": 1.5}, "where: key 'gpu': must be in (0, 1]"),
    ({"cpu": "fast"}, "where: key 'cpu': must be a number in (0, 1], got 'fast'"),
    ({"GPU": 0.5, "gpu": 0.6}, "where: key 'gpu' given twice (also as 'GPU')"),
    ({}, "where: an empty mapping"),
])
def test_bad_keys_and_values_name_the_key_and_what_is_allowed(raw: Any, message: str) -> None:
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        parsed(raw)


def test_the_marker_takes_mappings_for_min_and_bound() -> None:
    spec = parse_marker((), {"min": MAPPING, "bound": {"cpu": "compute", "default": "memory"}}, NODE, names)
    assert isinstance(spec.min, PerDevice) and spec.min.origin == f"marker of {NODE}"
    assert isinstance(spec.bound, PerDevice) and spec.bound.to_dict() == {"cpu": "compute", "default": "memory"}


@pytest.mark.parametrize("kwargs,message", [
    ({"min": {"tpu": 0.5, "TPU v9": 0.5}}, "roofline marker of test_k.py::test_a: min={'tpu': 0.5, 'TPU v9': 0.5}: "
                                           "unknown key 'TPU v9'; allowed: cpu, gpu, tpu, default or a hardware name"),
    ({"bound": {"gpu": "compute-ish"}}, "roofline marker of test_k.py::test_a: bound={'gpu': 'compute-ish'}: key "
                                        "'gpu': must be one of"),
    ({"min": {"cpu": 0}}, "roofline marker of test_k.py::test_a: min={'cpu': 0}: key 'cpu': must be in (0, 1]"),
])
def test_bad_marker_mappings_name_the_test_and_the_key(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_marker((), kwargs, NODE, names)
    assert str(info.value).startswith(message)


def test_marker_mapping_on_a_gpu_decides_with_its_hardware_key() -> None:
    h = Harness(0.75, 0.75, marker={"min": MAPPING}, hardware=H100)
    with pytest.raises(Failed) as info:
        h.fixture(kernel, 1)
    (rec,) = h.records
    assert (rec.verdict, rec.threshold, rec.threshold_key) == ("fail", 0.8, "H100 SXM")
    assert rec.threshold_origin == f"marker of {NODE}, key 'H100 SXM'"
    assert f"  threshold     80% (marker of {NODE}, key 'H100 SXM')" in str(info.value)
    # The measurement picked it once, on the H100 it measured on: the runs aimed at it, the record shows that pick.
    assert isinstance(h.measure.calls[0].threshold, PerDevice) and h.measure.calls[0].sample_to_threshold


def test_the_same_marker_on_a_cpu_passes_with_the_cpu_key() -> None:
    h = Harness(0.75, marker={"min": MAPPING})
    h.fixture(kernel, 1)
    (rec,) = h.records
    assert (rec.verdict, rec.threshold, rec.threshold_key, rec.not_judged) == ("pass", 0.4, "cpu", "")


def test_a_platform_not_named_is_measured_not_judged() -> None:
    h = Harness(0.01, marker={"min": {"gpu": 0.7}}, hardware=V5E)
    h.fixture(kernel, 1)
    (rec,) = h.records
    assert (rec.verdict, rec.threshold, rec.threshold_origin) == ("measured", None, "")
    assert rec.not_judged.startswith("min names gpu; not tpu (TPU v5e)")
    # The setting went to the measurement, whose pick on the TPU has no value: nothing to aim at, nothing judged.
    assert len(h.measure.calls) == 1 and isinstance(h.measure.calls[0].threshold, PerDevice)
    assert h.fixture.results[0].picked is not None and h.fixture.results[0].picked.value is None
    assert h.fixture.results[0].threshold is None


def test_the_call_overrides_the_marker_and_bound_mappings_decide_the_bound() -> None:
    h = Harness(0.9, marker={"min": MAPPING}, bound="compute", hardware=H100)
    with pytest.raises(Failed) as info:
        h.fixture(kernel, 1, min={"default": 0.5}, bound={"gpu": "memory", "cpu": "compute"})
    (rec,) = h.records
    assert (rec.verdict, rec.threshold, rec.threshold_key, rec.expected_bound, rec.bound_key) == (
        "wrong-bound", 0.5, "default", "memory", "gpu")
    assert "bound         expected memory-bound (key 'gpu'), measured compute-bound" in str(info.value)


def test_a_bound_mapping_that_does_not_name_the_device_checks_no_bound_there() -> None:
    h = Harness(0.9, marker={"min": 0.5, "bound": {"gpu": "memory"}}, bound="compute")
    h.fixture(kernel, 1)
    (rec,) = h.records
    assert (rec.verdict, rec.threshold, rec.expected_bound, rec.not_judged) == ("pass", 0.5, None, "")


def test_a_bad_call_mapping_fails_the_test_naming_the_key() -> None:
    h = Harness(0.9)
    with pytest.raises(Failed, match=r"roofline\(\.\.\.\) in test_k.py::test_a: min=\{'gpu': 2\}: key 'gpu': must be "
                                     r"in \(0, 1\]"):
        h.fixture(kernel, 1, min={"gpu": 2})


def _settings(tmp_path: Path, yaml: str) -> Settings:
    (tmp_path / "roofline.yaml").write_text(yaml)
    return resolve_settings({"config": str(tmp_path / "roofline.yaml")}, {}, {}, "no ini file")


def test_yaml_min_and_thresholds_take_mappings_and_the_config_s_own_devices(tmp_path: Path) -> None:
    s = _settings(tmp_path, "min: {cpu: 0.3, gpu: 0.6}\nthresholds:\n  '*::test_x': {gpu: 0.9, my box: 0.2}\n"
                            "  '*::test_y': {min: {default: 0.5}, max_drop: 0.2}\n"
                            "devices:\n  my box: {platform: cpu, peak_tflops: {f32: 1}, memory_gbps: 10}\n")
    suite, x, y = (s.threshold_for(f"a.py::test_{n}") for n in "zxy")
    assert isinstance(suite, PerDevice) and suite.to_dict() == {"cpu": 0.3, "gpu": 0.6}
    assert isinstance(x, PerDevice) and x.to_dict() == {"gpu": 0.9, "my box": 0.2}
    assert isinstance(y, PerDevice) and y.to_dict() == {"default": 0.5}
    assert pick(x, "my box", "cpu").key == "my box"
    assert s.max_drop_for("a.py::test_y") is not None


@pytest.mark.parametrize("yaml,message", [
    ("min: {cpus: 0.3}\n", "min: {'cpus': 0.3} in {path}: unknown key 'cpus'; allowed: cpu, gpu, tpu, default"),
    ("thresholds:\n  '*x': {tpu: 3}\n", "thresholds: '*x': {'tpu': 3} in {path}: key 'tpu': must be in (0, 1]"),
    ("thresholds:\n  '*x': {min: 0.3, gpu: 0.5}\n", "thresholds: '*x': {'min': 0.3, 'gpu': 0.5} in {path}: unknown "
                                                   "key(s) ['gpu']"),
])
def test_bad_yaml_mappings_name_the_file_and_the_key(tmp_path: Path, yaml: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        _settings(tmp_path, yaml)
    assert str(info.value).startswith(message.replace("{path}", str(tmp_path / "roofline.yaml")))


def test_suite_says_which_key_decided_and_what_was_not_judged(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.6, 0.6, 0.6"))
    pytester.makepyfile(test_k="""
import pytest

@pytest.mark.roofline(min={"cpu": 0.5, "gpu": 0.9})
def test_keyed(roofline):
    roofline(lambda v: v, 1, name="keyed")

@pytest.mark.roofline(min={"tpu": 0.9, "H100 SXM": 0.9})
def test_unjudged(roofline):
    roofline(lambda v: v, 1, name="unjudged")
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "--roofline-report=r.json", "-v")
    result.assert_outcomes(passed=2)
    out = " ".join(line.strip() for line in result.stdout.lines)  # footnotes wrap at 120 columns
    assert "pass (min 50% cpu)" in out and "measured (not judged on cpu)" in out
    assert (f"not judged: 1 kernel(s) whose min= mapping names neither this hardware, its platform nor a "
            f"'default' (measured and reported only), e.g. min names tpu, H100 SXM; not cpu ({FAKE_CPU.name})") in out
    results = {r["label"]: r for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    assert results["keyed"]["threshold_key"] == "cpu" and "not_judged" not in results["keyed"]
    assert results["unjudged"]["threshold"] is None and results["unjudged"]["not_judged"].startswith("min names tpu")


def test_a_bad_marker_key_stops_the_run(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.6"))
    pytester.makepyfile(test_k="""
import pytest

@pytest.mark.roofline(min={"gpu": 0.5, "H100": 0.9})
def test_bad(roofline):
    roofline(lambda v: v, 1)
""")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*roofline marker of test_k.py::test_bad: min={'gpu': 0.5, 'H100': 0.9}: unknown "
                                 "key 'H100'; allowed: cpu, gpu, tpu, default or a hardware name: *H100 PCIe, "
                                 "H100 SXM*"])


def test_the_fixture_exposes_the_hardware_before_anything_is_measured() -> None:
    h = Harness(hardware=H100)
    assert h.fixture.hardware is H100 and not h.measure.calls
    assert h.fixture.hardware.compute_bound_batch(4096, 8192, "bf16", multiple=128) == 768


def test_hardware_that_cannot_be_detected_fails_the_test_saying_so() -> None:
    h = Harness()

    def unknown(settings: Settings, recalibrate: bool) -> Any:
        raise ValueError("no hardware table entry for device_kind 'Made-up GPU'")

    h.session._hardware = unknown
    with pytest.raises(Failed, match=r"roofline: roofline.hardware in test_k.py::test_a: hardware detection failed: "
                                     r"no hardware table entry for device_kind 'Made-up GPU'"):
        _ = h.fixture.hardware
