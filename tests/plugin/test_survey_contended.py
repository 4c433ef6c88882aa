"""A neighbour never fails a test: the survey's runs made while other processes held the CPUs are counted and
marked, and no threshold judges them, strict or not. The neighbour is a fake (named so): the reading of the CPU time
the test's threads waited for says they waited half their ready time, while other processes used half the machine
(a test's threads waiting for each other is no neighbour: tests/plugin/test_survey_run.py); the hardware is the fake of
tests/plugin/test_survey_run.py; the programs and their profiles are real."""

from __future__ import annotations

import json

import jax  # noqa: F401 - imported before pytester's in-process runs, which would otherwise import it afresh
import pytest
from test_survey_run import FAST_FAKE, TESTS

pytest_plugins = ["pytester"]

# A fake reading: each call, 1 ms more on a CPU and 1 ms more waiting for one (a busy neighbour).
NEIGHBOUR = """
import itertools
_ticks = itertools.count()
THREAD_TIMES = lambda: (next(_ticks) * 1_000_000, next(_ticks) * 1_000_000)

class BUSY:  # other processes held half the machine meanwhile
    share = 0.5
    def __enter__(self): return self
    def __exit__(self, *exc): pass
"""


def test_runs_made_beside_a_busy_neighbour_are_marked_and_never_judged(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAST_FAKE.replace("THREAD_TIMES = lambda: None\n", NEIGHBOUR).replace(
        "survey.thread_times = THREAD_TIMES", "survey.thread_times, survey.contention = THREAD_TIMES, BUSY"))
    pytester.makepyfile(test_s=TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--roofline-survey-strict", "--roofline-min=0.5",
                                "--roofline-report=r.json")
    result.assert_outcomes(passed=2, failed=1)  # only the test that fails on its own
    result.stdout.fnmatch_lines(["jit_dense * [[]contended[]]", "*; 3 of 3 runs contended",
                                 "[[]contended[]]: 2 tests ran while other processes held the CPUs*"])
    survey = json.loads((pytester.path / "r.json").read_text())["survey"]
    assert survey["below"] == [] and len(survey["contended"]) == 2
