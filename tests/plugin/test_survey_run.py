"""``--roofline-survey`` as pytest runs it (in process): the programs the tests ran, found by profiling them and
counted as they ran; no test's outcome changed unless a gate says so; the programs below a threshold named, and the
tests that ran a gated one failed. The hardware is a fake, named so: ceilings far above any machine (every program
is below any threshold on it, whatever this machine's speed); the programs, the profiles and their reading are
real."""

from __future__ import annotations

import json
from typing import Any

import jax  # noqa: F401 - imported here, before pytester's in-process runs, which would otherwise import it afresh
import pytest

pytest_plugins = ["pytester"]

# A fake hardware (made up): a CPU with 10 PFLOP/s and 100 TB/s, so that every program is far below any threshold;
# and a fake reading of the CPU time the test's threads waited for (none: whatever else this machine runs, the gate is
# this test's subject; tests/plugin/test_survey_contended.py fakes a neighbour).
FAST_FAKE = """
THREAD_TIMES = lambda: None

import pytest
from pytest_roofline.hardware.spec import Ceiling, HardwareSpec
from pytest_roofline.plugin.hooks import activate

FAKE_FAST_CPU = HardwareSpec("fake fast CPU", "cpu", {"f32": Ceiling(1e16, "calibration", "fake", "2026-11-28")},
                             Ceiling(1e14, "calibration", "fake", "2026-11-28"))

@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    activate(config)._hardware = lambda settings, recalibrate: (FAKE_FAST_CPU, "calibrated")
    survey = config.pluginmanager.get_plugin("roofline-survey")
    if survey is not None:
        survey.thread_times = THREAD_TIMES
"""

TESTS = """
import jax
import jax.numpy as jnp

M, K, N = 128, 256, 192

@jax.jit
def dense(x, w):
    return x @ w

def looped(x):
    return jax.lax.fori_loop(0, 5, lambda i, c: c @ c, x)

def test_dense():
    x, w = jnp.ones((M, K)), jnp.ones((K, N))
    for _ in range(3):
        dense(x, w)  # not waited for: the survey waits for what a test left running

def test_loop_then_fail():
    jax.jit(looped)(jnp.ones((64, 64))).block_until_ready()
    assert False, "this test fails on its own"

def test_no_kernel():
    assert 1 + 1 == 2
"""


def _survey(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    pytester.makeconftest(FAST_FAKE)
    pytester.makepyfile(test_s=TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--roofline-report=r.json", *args)
    return result, json.loads((pytester.path / "r.json").read_text())["survey"]


def test_the_survey_finds_each_program_once_counts_it_as_it_ran_and_changes_no_outcome(
        pytester: pytest.Pytester) -> None:
    result, survey = _survey(pytester, "--roofline-survey", "--roofline-min=0.5")
    result.assert_outcomes(passed=2, failed=1)  # below --roofline-min: named, not failed
    programs = {p["module"]: p for p in survey["programs"]}
    dense, loop = programs["jit_dense"], programs["jit_looped"]
    assert dense["tests"] == {"test_s.py::test_dense": 3}
    assert dense["flops"] == 2 * 128 * 256 * 192
    assert loop["flops"] == 5 * 2 * 64 ** 3  # the loop's five trips, as they ran
    assert not any("barrier" in name for name in programs)  # the survey's own program is left out
    assert survey["tests"] == 3 and survey["hardware"].startswith("fake fast CPU")
    result.stdout.fnmatch_lines(["*roofline survey (worst first by time lost)*", "program * time lost",
                                 "jit_*", "below their threshold (*", "  jit_dense: *below 50% (--roofline-min=0.5*"])


def test_the_config_programs_section_fails_the_tests_that_ran_a_program_below_it(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", roofline="programs:\n  jit_dense: {cpu: 0.5}\n")
    result, survey = _survey(pytester, "--roofline-survey", "--roofline-config=roofline.yaml")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*roofline survey: a program this test ran is below its threshold*",
                                 "*program jit_dense ran at *% of its roofline here, below 50% (programs: 'jit_dense'*"
                                 ])
    assert [b["module"] for b in survey["below"]] == ["jit_dense"]  # the loop's program is not gated
    warned = pytester.runpytest("-p", "no:cacheprovider", "--roofline-survey", "--roofline-config=roofline.yaml",
                                "--roofline-warn-only")
    warned.assert_outcomes(passed=2, failed=1, warnings=1)


def test_strict_fails_the_tests_that_ran_a_program_below_the_suite_threshold(pytester: pytest.Pytester) -> None:
    result, _ = _survey(pytester, "--roofline-survey-strict", "--roofline-min=0.5")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["FAILED test_s.py::test_dense*"])


def test_a_threshold_with_no_fixture_and_no_survey_says_it_judged_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_s="def test_plain():\n    assert True\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--roofline-min=0.8")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["roofline: --roofline-min=0.8 on the command line judged nothing: no test used the "
                                 "roofline fixture or marker (--roofline-survey *"])
