"""``pytest-roofline noise`` as a user runs it: bad arguments in one line (exit 2), a selection that measures nothing
said so, and (slow) A/A rounds of a real kernel end to end: both sides the same working tree, every kernel measured
in each process, the table with the false alarms of the comparisons drawn from the rounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from git_repos import make_repo, needs_git, run_cli

from pytest_roofline.cli.main import main


def _noise(capsys: pytest.CaptureFixture[str], repo: Path, *args: str) -> tuple[int, str, str]:
    return run_cli(capsys, repo, "noise", *args)


def test_too_few_rounds_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _noise(capsys, tmp_path, "--rounds", "3")
    assert status == 2 and err.strip() == ("pytest-roofline noise: error: --rounds 3: at least 6 (a 95% interval of a "
                                           "median needs six pairs)")


def test_the_plugin_turned_off_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["noise", "--", "-p", "no:roofline"]) == 2
    assert "turn pytest-roofline off (-p no:roofline)" in capsys.readouterr().err


@needs_git
@pytest.mark.slow
def test_a_selection_that_measures_nothing_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path, {"test_plain.py": "def test_x():\n    pass\n"})
    status, _, err = _noise(capsys, repo, "--rounds", "6")
    assert status == 2 and "measured no kernel on either side" in err


@needs_git
@pytest.mark.slow
def test_a_real_kernel_a_over_a(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path, {"test_k.py": "import jax.numpy as jnp\n\n\ndef test_sum(roofline):\n"
                                         "    roofline(lambda x: x.sum(), jnp.ones(1 << 22), name='total')\n"})
    status, out, err = _noise(capsys, repo, "--rounds", "6", "--comparisons", "5", "--json",
                              str(tmp_path / "noise.json"))
    assert status == 0, err
    assert err.count("round ") == 6 and "round 2/6 (B then A" in err
    assert out.startswith("6 A/A rounds (the same code on both sides, 12 pytest processes) in ")
    (kernel,) = json.loads((tmp_path / "noise.json").read_text())["kernels"]
    assert kernel["label"] == "total" and len(kernel["ratios"]) <= 6  # a contended round leaves its ratio out
    assert "test_k.py::test_sum [total]" in out
    if len(kernel["ratios"]) == 6:  # every round quiet on both sides: judged
        assert kernel["comparisons"] == 5 and kernel["detectable_drop"] is not None
    else:
        assert kernel["comparisons"] == 0 and "cannot judge" in out
