"""The calibration cache where CI meets it: damaged files, a cache directory that cannot be written. The
calibrations are fakes (figures typed in); the files and directories are real."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.hardware import calibration_cache as calibration
from pytest_roofline.hardware.calibration_figures import CalibrationFigures, damage
from pytest_roofline.hardware.provisional import provisional_file

KEY = {"platform": "cpu", "device_kind": "cpu", "jax": "x"}
FAKE = {"peaks": {"f32": 1e11, "bf16": 5e10}, "memory": 2e10, "date": "2026-11-27T08:00:00Z",
        "details": {"f32": "fake", "bf16": "fake", "memory": "fake"}, "contention": 0.01}


@pytest.fixture(autouse=True)
def fresh_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test is a fresh process: nothing kept in memory, nothing named yet."""
    monkeypatch.setattr(calibration, "RUN_ONLY", calibration.RunOnly())
    monkeypatch.setattr(calibration, "_NAMED", set())
    monkeypatch.setenv(calibration.CACHE_DIR_ENV, str(tmp_path / "cache"))


def _fake_calibration(calls: list[int], **changes: Any) -> Any:
    def measure() -> CalibrationFigures:
        calls.append(1)
        return CalibrationFigures.from_dict({**FAKE, **changes})

    return measure


def _damaged(change: dict[str, Any]) -> bytes:
    data: dict[str, Any] = {"key": KEY, **json.loads(json.dumps(FAKE))}
    for name, value in change.items():
        if value is None:
            data.pop(name)
        else:
            data[name] = value
    return json.dumps(data).encode()


DAMAGES = {
    "details missing": (_damaged({"details": None}), "no details"),
    "a peak that is a string": (_damaged({"peaks": {"f32": "1e11"}}), "peaks.f32 is '1e11', not a positive number"),
    "zero peaks": (_damaged({"peaks": {"f32": 0, "bf16": 0}}), "peaks.f32 is 0, not a positive number"),
    "a negative peak": (_damaged({"peaks": {"f32": -1e11}}), "peaks.f32 is -100000000000.0, not a positive number"),
    "UTF-16": (json.dumps({"key": KEY, **FAKE}).encode("utf-16"), "not UTF-8 JSON"),
    "binary": (bytes(range(256)), "not UTF-8 JSON"),
    "half written": (b'{"key": {"platform": "cpu"', "not UTF-8 JSON"),
    "a list": (b"[1, 2]", "a JSON list, not an object"),
    # A FAKE file claiming more than any CPU could do (KEY names no core count: taken as 1,024 cores).
    "1,000 PFLOP/s": (_damaged({"peaks": {"f32": 1e18, "bf16": 1e18}}),
                      "peaks.f32 is 1e+18, above what 1024 CPU core(s) could do (1.26e+16): not a measurement"),
    "a memory beyond any machine's": (_damaged({"memory": 5e13}),
                                      "memory is 5e+13, above what 1024 CPU core(s) could do (2e+13)"),
}


def test_a_provisional_calibration_beyond_what_its_cores_could_do_is_not_used(tmp_path: Path) -> None:
    """A FAKE provisional calibration of a 2-core CPU claiming 1,000 PFLOP/s (before, it was used as measured): set
    aside as damaged, and the machine calibrated again."""
    key = {**KEY, "cores": 2}
    path = provisional_file(calibration.cache_file(key))
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"key": key, **FAKE, "peaks": {"f32": 1e18, "bf16": 1e18}}))
    notices: list[str] = []
    assert calibration.load_cached(key, notices.append, path) is None
    assert "above what 2 CPU core(s) could do (2.46e+13): not a measurement" in notices[0]


@pytest.mark.parametrize("case", sorted(DAMAGES))
def test_a_damaged_cache_is_named_set_aside_and_calibrated_again(case: str) -> None:
    raw, why = DAMAGES[case]
    path = calibration.cache_file(KEY)
    path.parent.mkdir(parents=True)
    path.write_bytes(raw)
    calls: list[int] = []
    notices: list[str] = []
    figures, where = calibration.calibration_figures(KEY, "cached", _fake_calibration(calls), notices.append)
    assert calls == [1] and figures.peaks["f32"] == 1e11 and "measured now, cached in" in where
    assert len(notices) == 1 and f"the calibration cache {path} is damaged (" in notices[0] and why in notices[0]
    aside = path.with_name(path.name + ".damaged")
    assert f"set aside as {aside}" in notices[0] and aside.read_bytes() == raw  # kept for a bug report
    assert damage(path.read_bytes(), KEY) is None  # the new calibration replaced it
    calibration.cpu_spec_from(figures, where)  # usable


def test_a_damaged_cache_is_never_kept_as_the_quiet_calibration() -> None:
    """--roofline-calibrate beside other work: the new calibration is contended; the damaged file is no quiet
    calibration to keep instead of it."""
    path = calibration.cache_file(KEY)
    path.parent.mkdir(parents=True)
    path.write_bytes(DAMAGES["details missing"][0])
    calls: list[int] = []
    figures, where = calibration.calibration_figures(KEY, "replace", _fake_calibration(calls, contention=0.5))
    assert calls == [1] and "provisional" in where and figures.details
    calibration.cpu_spec_from(figures, where)


def _unwritable(tmp_path: Path, kind: str) -> Path:
    if kind == "under a file":
        (tmp_path / "a-file").write_text("")
        return tmp_path / "a-file" / "cache"
    if kind == "under /proc":
        return Path("/proc/pytest-roofline-cache")
    if os.geteuid() == 0:
        pytest.skip("permission bits do not stop root: the other cases cover it")
    (tmp_path / "ro").mkdir(mode=0o555)
    return tmp_path / "ro" / "cache"


@pytest.mark.parametrize("kind", ["under a file", "under /proc", "read-only"])
def test_an_unwritable_cache_is_named_once_and_the_calibration_kept_in_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    where_to = _unwritable(tmp_path, kind)
    monkeypatch.setenv(calibration.CACHE_DIR_ENV, str(where_to))
    calls: list[int] = []
    notices: list[str] = []
    for _ in range(4):  # one kernel after another in one session
        figures, where = calibration.calibration_figures(KEY, "cached", _fake_calibration(calls), notices.append)
    assert calls == [1]  # calibrated once, not once per kernel
    assert len(notices) == 1 and f"{where_to} cannot be written" in notices[0]
    assert calibration.CACHE_DIR_ENV in notices[0] and "not cached" in where
    spec = calibration.cpu_spec_from(figures, where)
    assert spec.peaks["f32"].value == 1e11
