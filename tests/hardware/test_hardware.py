"""The shipped table, detection by device_kind, YAML overrides and their errors, peak selection rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FAKE_CPU

from pytest_roofline.hardware.peaks import peak_for_class
from pytest_roofline.hardware.spec import HardwareError, UnknownDeviceError
from pytest_roofline.hardware.table import HARDWARE_FILE_ENV, find_spec, load_shipped_table, merge_overrides


def test_every_shipped_figure_has_a_source_and_a_date() -> None:
    table = load_shipped_table()
    for name in ("A100 40GB SXM", "A100 80GB SXM", "H100 SXM", "H100 PCIe", "H200 SXM", "B200", "L4",
                 "TPU v2", "TPU v3", "TPU v4", "TPU v5e", "TPU v5p", "TPU v6e"):
        spec = table[name]
        for ceiling in [*spec.peaks.values(), spec.memory_bandwidth]:
            assert ceiling.origin == "datasheet"
            assert ceiling.source and ceiling.source != "unknown source", name
            assert ceiling.date[:4].isdigit(), name


def test_h100_figures() -> None:
    h100 = load_shipped_table()["H100 SXM"]
    assert h100.peaks["bf16"].value == 989e12
    assert h100.peaks["tf32"].value == pytest.approx(494.7e12)
    assert h100.memory_bandwidth.value == 3350e9
    assert h100.interconnect_bandwidth is not None and h100.interconnect_bandwidth.value == 900e9


@pytest.mark.parametrize("platform,kind,name", [
    ("gpu", "NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("gpu", "NVIDIA H100 PCIe", "H100 PCIe"),
    ("gpu", "nvidia h200", "H200 SXM"),
    ("tpu", "TPU v5 lite", "TPU v5e"),
    ("tpu", "TPU v5", "TPU v5p"),
    ("tpu", "TPU v6 lite", "TPU v6e"),
])
def test_detection_by_device_kind(platform: str, kind: str, name: str) -> None:
    assert find_spec(load_shipped_table(), platform, kind).name == name


def test_unknown_device_names_its_kind_and_shows_yaml() -> None:
    with pytest.raises(UnknownDeviceError) as info:
        find_spec(load_shipped_table(), "gpu", "NVIDIA Imaginary 9000")
    text = str(info.value)
    assert "'NVIDIA Imaginary 9000'" in text
    assert 'device_kinds: ["NVIDIA Imaginary 9000"]' in text and "peak_tflops" in text and "memory_gbps" in text


def test_forced_name() -> None:
    table = load_shipped_table()
    assert find_spec(table, "cpu", "cpu", forced_name="tpu v5e").name == "TPU v5e"
    with pytest.raises(UnknownDeviceError, match="'nope' is not in the table"):
        find_spec(table, "cpu", "cpu", forced_name="nope")


def test_override_merges_figures_and_adds_devices(tmp_path: Path) -> None:
    path = tmp_path / "hw.yaml"
    path.write_text(
        "devices:\n"
        "  H100 SXM:\n"
        "    memory_gbps: 3000\n"
        "    source: measured by us\n"
        "  My GPU:\n"
        "    platform: gpu\n"
        "    device_kinds: [\"My GPU 1\"]\n"
        "    read: 2026-01-02\n"
        "    peak_tflops: {bf16: 100, vector: {value: 10, source: spec sheet p.3}}\n"
        "    memory_gbps: 500\n"
    )
    table = merge_overrides(load_shipped_table(), path)
    h100 = table["H100 SXM"]
    assert h100.memory_bandwidth.value == 3000e9
    assert h100.memory_bandwidth.origin == "override" and h100.memory_bandwidth.source == "measured by us"
    assert h100.peaks["bf16"].origin == "datasheet"  # untouched figures keep their source
    mine = find_spec(table, "gpu", "My GPU 1")
    assert mine.peaks["bf16"].value == 100e12 and mine.peaks["bf16"].date == "2026-01-02"
    assert mine.peaks["vector"].source == "spec sheet p.3"
    assert str(path) in mine.memory_bandwidth.source


def test_override_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "env.yaml"
    path.write_text("devices:\n  L4:\n    memory_gbps: 250\n")
    monkeypatch.setenv(HARDWARE_FILE_ENV, str(path))
    spec = merge_overrides(load_shipped_table(), None)["L4"]
    assert spec.memory_bandwidth.value == 250e9
    assert HARDWARE_FILE_ENV in spec.memory_bandwidth.source


@pytest.mark.parametrize("content,fragment", [
    ("devices: [1, 2", "not valid YAML"),
    ("- a\n- b\n", "mapping at the top level"),
    ("devices:\n  X:\n    platform: gpu\n    peak_tflops: {bf16: 1}\n", "needs memory_gbps"),
    ("devices:\n  X:\n    platform: quantum\n", "platform: cpu, gpu or tpu"),
    ("devices:\n  H100 SXM:\n    peak_tflops: {bf17: 3}\n", "unknown peak key 'bf17'"),
    ("devices:\n  H100 SXM:\n    memory_gbps: -3\n", "H100 SXM.memory_gbps: must be a positive number"),
    ("devices:\n  H100 SXM:\n    memory_gbps: fast\n", "expected a number"),
    ("devices:\n  H100 SXM:\n    colour: red\n", "unknown key"),
    ("gadgets: {}\n", "unknown top-level key"),
])
def test_malformed_override_names_the_file_and_key(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(HardwareError) as info:
        merge_overrides(load_shipped_table(), path)
    assert fragment in str(info.value)
    assert str(path) in str(info.value)


def test_missing_override_file(tmp_path: Path) -> None:
    with pytest.raises(HardwareError, match="cannot read it"):
        merge_overrides(load_shipped_table(), tmp_path / "absent.yaml")


def test_peak_rules() -> None:
    table = load_shipped_table()
    h100, v5e, v5p = table["H100 SXM"], table["TPU v5e"], table["TPU v5p"]
    assert peak_for_class(h100, "bf16")[0] == "bf16"
    assert peak_for_class(h100, "f32")[0] == "tf32"  # default precision
    assert peak_for_class(h100, "f32", "highest")[0] == "f32"
    assert peak_for_class(h100, "vector")[0] == "vector"
    key, ceiling, note = peak_for_class(v5e, "f32", "highest")
    assert key == "bf16" and ceiling.value == pytest.approx(197e12 / 6) and "6 bf16 passes" in note
    assert peak_for_class(v5p, "vector")[1].value == 7e12
    key, _, note = peak_for_class(v5e, "vector")  # no VPU figure: fastest peak, said so
    assert key == "int8" and "understated" in note
    assert peak_for_class(h100, "f16")[0] == "f16"


def test_int8_on_a_cpu_meets_the_rate_its_calibration_measured() -> None:
    """Fake CPU specs, named so: one whose calibration measured an int8 matmul rate (a Xeon with AMX ran it at 3.2
    TFLOP/s, 12x its f32 rate: held to the f32 peak, a correct int8 matmul read 732% "impossible"), one without."""
    from dataclasses import replace

    from pytest_roofline.hardware.ceiling import Ceiling

    f32 = Ceiling(2.6e11, "calibration", "fake", "2026-11-28")
    measured = replace(FAKE_CPU, peaks={"f32": f32, "int8": Ceiling(3.2e12, "calibration", "fake", "2026-11-28")})
    key, ceiling, note = peak_for_class(measured, "int8")
    assert (key, ceiling.value) == ("int8", 3.2e12) and note.startswith("int8 matrix work held to the int8 matmul")
    key, _, note = peak_for_class(replace(FAKE_CPU, peaks={"f32": f32}), "int8")
    assert key == "f32" and "may then read high" in note and "--roofline-calibrate" in note


def test_memory_capacity_has_its_source_and_unit() -> None:
    table = load_shipped_table()
    h100, v5e, v4 = table["H100 SXM"], table["TPU v5e"], table["TPU v4"]
    assert h100.memory_capacity is not None and h100.memory_capacity.value == 80e9
    assert h100.memory_capacity.source == h100.memory_bandwidth.source  # the entry's datasheet
    assert v5e.memory_capacity is not None and v5e.memory_capacity.value == 16e9
    assert "v5e docs" in v5e.memory_capacity.source and v5e.memory_capacity.date == "2026-11-23"
    assert v4.memory_capacity is not None and v4.memory_capacity.value == 32 * 2**30  # stated in GiB
    assert table["TPU v2"].memory_capacity is None  # no source read: none rather than a guess
    assert h100.to_dict()["memory_capacity_bytes"]["value"] == 80e9


def test_memory_capacity_override_and_its_errors(tmp_path: Path) -> None:
    good = tmp_path / "hw.yaml"
    good.write_text(
        "devices:\n  H100 SXM:\n    memory_capacity_gib: {value: 79.1, source: nvidia-smi, read: 2026-11-23}\n"
    )
    spec = merge_overrides(load_shipped_table(), good)["H100 SXM"]
    assert spec.memory_capacity is not None and spec.memory_capacity.value == pytest.approx(79.1 * 2**30)
    assert spec.memory_capacity.origin == "override" and spec.memory_capacity.source == "nvidia-smi"
    both = tmp_path / "both.yaml"
    both.write_text("devices:\n  H100 SXM:\n    memory_capacity_gb: 80\n    memory_capacity_gib: 80\n")
    with pytest.raises(HardwareError, match=r"both.yaml.*memory_capacity_gb or memory_capacity_gib"):
        merge_overrides(load_shipped_table(), both)
    bad = tmp_path / "bad.yaml"
    bad.write_text("devices:\n  H100 SXM:\n    memory_capacity_gb: -1\n")
    with pytest.raises(HardwareError, match=r"bad.yaml: H100 SXM.memory_capacity_gb: must be a positive number"):
        merge_overrides(load_shipped_table(), bad)


MEMINFO = "MemTotal:       24684084 kB\nMemFree:        24385824 kB\n"


def test_cpu_memory_is_the_machine_or_its_cgroup_limit(tmp_path: Path) -> None:
    from pytest_roofline.hardware.cpu import machine_memory

    plain = machine_memory(MEMINFO, "0::/\n", str(tmp_path / "none"), date="2026-11-23")
    assert plain is not None and plain.value == 24684084 * 1024 and "MemTotal" in plain.source
    # cgroup v2: memory.max of the process's group ("max" = no limit)
    group = tmp_path / "v2" / "job"
    group.mkdir(parents=True)
    (group / "memory.max").write_text("4294967296\n")
    limited = machine_memory(MEMINFO, "0::/job\n", str(tmp_path / "v2"))
    assert limited is not None and limited.value == 4 * 2**30 and "cgroup" in limited.source
    (group / "memory.max").write_text("max\n")
    unlimited = machine_memory(MEMINFO, "0::/job\n", str(tmp_path / "v2"))
    assert unlimited is not None and unlimited.value == 24684084 * 1024
    # cgroup v1: memory.limit_in_bytes; 2^63 rounded to pages means no limit
    v1 = tmp_path / "v1" / "memory" / "job"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert machine_memory(MEMINFO, "4:memory:/job\n", str(tmp_path / "v1")).value == 24684084 * 1024  # type: ignore[union-attr]
    (v1 / "memory.limit_in_bytes").write_text("1073741824\n")
    assert machine_memory(MEMINFO, "4:memory:/job\n", str(tmp_path / "v1")).value == 2**30  # type: ignore[union-attr]
    assert machine_memory("", "", str(tmp_path / "none")) is None


def test_a_gpu_name_with_calibrated_ceilings_on_a_cpu_is_refused() -> None:
    """Calibrating the CPU would file its figures under the GPU's name: refused before any calibration runs. The
    same name with the datasheet's ceilings stays a deliberate what-if."""
    pytest.importorskip("jax")
    from pytest_roofline.measurement.machine.device import resolve_hardware

    for ceilings in ("calibrated", "live"):
        with pytest.raises(ValueError, match=r"'H100 SXM' is a GPU entry, but the device measured is a CPU"):
            resolve_hardware("cpu", "cpu", "H100 SXM", ceilings=ceilings)
    spec, used = resolve_hardware("cpu", "cpu", "H100 SXM", ceilings="datasheet")
    assert spec.platform == "gpu" and used == "datasheet"


def test_a_gpu_entry_holds_integer_ops_to_its_datasheet_int32_rate_and_an_override_may_give_one() -> None:
    from pytest_roofline.hardware.table import load_table

    table = load_shipped_table()
    for name in ("H100 SXM", "H200 SXM"):
        integer = table[name].integer
        assert integer is not None and integer.value == 33.5e12 and "INT32" in integer.source
        assert integer.value < table[name].peaks["vector"].value  # never the FLOP peak
    assert table["H100 PCIe"].integer is None  # no sourced figure: integer ops add no time there (the notes say so)
    mine = load_table("devices:\n  My GPU:\n    platform: gpu\n    peak_tflops: {f32: 10}\n    memory_gbps: 100\n"
                      "    integer_tops: 5\n", "mine.yaml", "override")
    assert mine["My GPU"].integer is not None and mine["My GPU"].integer.value == 5e12
