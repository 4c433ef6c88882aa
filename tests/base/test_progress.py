"""A long step says what it is doing: from a thread while the step holds the main one, and, in pytest, on the
terminal past the test's captured output."""

from __future__ import annotations

import threading

import pytest
from fakes import FAKE_SESSION_CONFTEST

from pytest_roofline.base import progress

pytest_plugins = ["pytester"]


def test_a_slow_step_says_so_until_it_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    heard = threading.Event()

    def sink(text: str) -> None:
        said.append(text)
        if len(said) == 2:
            heard.set()

    monkeypatch.setattr(progress, "_sink", [sink])
    with progress.said_if_slow("still compiling k", every_s=0.01):
        assert heard.wait(30)  # the step ends once it has been heard twice: no fixed wait
    count = len(said)
    assert said[0].startswith("pytest-roofline: still compiling k (") and said[0].endswith(" s so far)")
    with progress.said_if_slow("quick", every_s=30):
        pass
    assert len(said) == count  # the thread stopped with its step; a quick step says nothing


def test_in_pytest_a_progress_line_reaches_the_terminal_while_the_test_runs(pytester: pytest.Pytester) -> None:
    """A fake session (fake hardware, no JAX): a line said inside a test shows in the run's output, not in the
    test's captured output."""
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.6"))
    pytester.makepyfile(
        "import pytest\nfrom pytest_roofline.base import progress\n\n"
        "@pytest.mark.roofline\ndef test_a():\n    progress.say('still timing k: 3 runs in 12 s')\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "pytest-roofline: still timing k: 3 runs in 12 s" in result.stdout.str()
    assert "Captured" not in result.stdout.str()
    assert result.stdout.str().index("still timing k") < result.stdout.str().index("1 passed")
