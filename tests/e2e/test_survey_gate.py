"""From a survey to a gate, as a team runs it (real kernels, this machine's ceilings, pytest in subprocesses): a
suite's survey, ``pytest-roofline suggest`` on its report, then the same suite with that config and the survey. The
unchanged code passes; a kept program made eight times slower (its matmul computed eight times) fails the test
that runs it, named so, unless its runs were made beside a neighbour, which the survey never judges (it says so). The
config states the program's work as surveyed, so eight times the work is eight times the time for the same work; the
threshold is half the median measured: an eighth of the median lies well under it, even where a busy runner slowed
the first survey and not the last (four times slower was seen to pass so, once: the first median 1.3x slow, the last
1.3x fast)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SUITE = """
import jax
import jax.numpy as jnp

REPEAT = {repeat}

@jax.jit
def project(x, w):
    out = x @ w
    for k in range(1, REPEAT):
        out = out + (x * (1.0 + k)) @ w  # the same matmul again: REPEAT times the work of one
    return out

def test_project():
    x, w = jnp.ones((512, 512)), jnp.ones((512, 512))
    for _ in range(10):
        project(x, w).block_until_ready()
"""


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=folder,
                          capture_output=True, text=True, timeout=900, check=False)


def test_a_suggested_gate_passes_unchanged_code_and_fails_a_kept_program_made_slower(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE.format(repeat=1))
    first = _pytest(tmp_path, "--roofline-survey", "--roofline-report=survey.json")
    assert first.returncode == 0, first.stdout[-3000:]
    done = subprocess.run([sys.executable, "-m", "pytest_roofline", "suggest", "survey.json", "--program",
                           "jit_project", "-o", "roofline.yaml"], cwd=tmp_path, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "jit_project:\n    min:\n      cpu: " in (tmp_path / "roofline.yaml").read_text()
    again = _pytest(tmp_path, "--roofline-survey", "--roofline-config=roofline.yaml", "--roofline-report=again.json")
    contended = json.loads((tmp_path / "again.json").read_text())["survey"]["contended"]
    assert again.returncode == 0 or contended, again.stdout[-3000:]
    (tmp_path / "test_suite.py").write_text(SUITE.format(repeat=8))
    slower = _pytest(tmp_path, "--roofline-survey", "--roofline-config=roofline.yaml", "--roofline-report=slow.json")
    if json.loads((tmp_path / "slow.json").read_text())["survey"]["contended"]:
        assert "[contended]" in slower.stdout  # a neighbour held the CPUs: said, and not judged
        return
    assert slower.returncode == 1, slower.stdout[-3000:]
    assert "FAILED test_suite.py::test_project" in slower.stdout
    assert "program jit_project ran at" in slower.stdout and "(programs: 'jit_project'" in slower.stdout
