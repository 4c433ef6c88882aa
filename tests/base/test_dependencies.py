"""The declared dependency floors: one list (pytest_roofline.base.dependencies.FLOORS) that setup.cfg and the oldest
versions CI installs (.ci/oldest.txt) agree with, and one clear line when an installed version is older."""

from __future__ import annotations

import configparser

import pytest
from paths import ROOT

from pytest_roofline.base import dependencies
from pytest_roofline.base.dependencies import FLOORS, release, too_old


def test_release_reads_the_numeric_part() -> None:
    assert release("0.10.2") == (0, 10, 2) and release("8.0.0rc1") == (8, 0, 0) and release("2.0") == (2, 0)
    assert release("0.7.2") < release("0.10.2")  # numeric, not string order
    with pytest.raises(ValueError, match="not a version"):
        release("dev")


def test_setup_cfg_declares_the_floors() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    requires = {line.strip() for line in cfg["options"]["install_requires"].splitlines() if line.strip()}
    for dist in ("jax", "numpy", "pytest"):  # jaxlib comes with jax, pinned to the same release
        assert f"{dist}>={FLOORS[dist]}" in requires


def test_the_oldest_constraints_pin_each_floor() -> None:
    pins = dict(line.split("==") for line in (ROOT / ".ci" / "oldest.txt").read_text().splitlines()
                if line.strip() and not line.startswith("#"))
    assert set(pins) == set(FLOORS)
    for dist, floor in FLOORS.items():
        pinned, wanted = release(pins[dist]), release(floor)
        assert pinned[:len(wanted)] == wanted and not any(pinned[len(wanted):]), (dist, pins[dist], floor)


def test_recent_enough_is_silent_and_older_is_one_line() -> None:
    recent = {"jax": "0.10.2", "jaxlib": "0.10.2", "numpy": "2.4.6", "pytest": "9.2.0"}
    assert too_old(found=recent.get) is None
    old = {**recent, "jax": "0.6.2", "jaxlib": None}  # made-up installed versions
    message = too_old(found=old.get)
    assert message is not None and "\n" not in message
    assert "jax 0.6.2 is installed" in message and "jaxlib is not installed" in message
    assert f"pip install --upgrade 'jax>={FLOORS['jax']}' 'jaxlib>={FLOORS['jaxlib']}'" in message
    assert too_old(("numpy",), found=old.get) is None  # only what is asked for


def test_the_plugin_stops_at_start_up_on_an_old_jax(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Fake: the installed jax is reported as 0.6.2 (nothing is installed or imported).
    real = dependencies.installed
    monkeypatch.setattr(dependencies, "installed", lambda dist: "0.6.2" if dist == "jax" else real(dist))
    pytester.makepyfile(test_plain="def test_a():\n    pass\n")
    assert pytester.runpytest().ret == pytest.ExitCode.OK  # a suite that never measures: the plugin sleeps
    pytester.makepyfile(test_k="import pytest\n@pytest.mark.roofline(min=0.5)\ndef test_k():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR")]
    assert errors == [f"ERROR: pytest-roofline needs jax>={FLOORS['jax']}, jaxlib>={FLOORS['jaxlib']}, "
                      f"numpy>={FLOORS['numpy']}, pytest>={FLOORS['pytest']}, but jax 0.6.2 is installed: "
                      f"pip install --upgrade 'jax>={FLOORS['jax']}' (or run pytest with -p no:roofline)"]


def test_measure_says_the_same_before_importing_jax(monkeypatch: pytest.MonkeyPatch) -> None:
    import pytest_roofline

    monkeypatch.setattr(dependencies, "installed", lambda dist: "1.26.4" if dist == "numpy" else "99")  # fake
    with pytest.raises(pytest_roofline.MeasureError, match=r"numpy 1\.26\.4 is installed"):
        pytest_roofline.measure(lambda x: x, 1.0)
