"""The abort watch (plugin/abort_watch.py): the last word of a process that JAX stops, printed by a watcher that
outlives it. Reason parsing on JAX's real fatal output; the watcher as a real process, fed a captured file."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from contextlib import nullcontext

import pytest
from paths import DATA

from pytest_roofline.plugin.abort_watch import AbortWatch, abort_line, jax_reason

JAX_ABORT = (DATA / "jax_abort" / "heartbeat_abort_jax_0.10.2.txt").read_text()


def test_the_reason_is_jax_fatal_line_with_its_status_on_one_line() -> None:
    reason = jax_reason("some test output\n" + JAX_ABORT)
    assert reason.startswith("Terminating process because the JAX distributed service detected fatal errors.")
    assert "The following tasks are unhealthy (stopped sending heartbeats): 1 The tasks have crashed." in reason
    assert "\n" not in reason and "Check failure" not in reason and "type.googleapis.com" not in reason
    assert "python -u" not in reason  # JAX's advice about buffering does not apply inside pytest
    assert jax_reason("E1125 04:00:53.195894 2978 x.cc:1] only an error, no fatal line\n") == ""


def test_the_line_says_which_process_what_it_was_doing_and_why() -> None:
    line = abort_line(0, 2, "ready to time kernel 'psum'", "Terminating process because ...")
    assert line == ("roofline: process 0 of 2 ended abruptly (its last word: ready to time kernel 'psum'): JAX "
                    "said: Terminating process because ...")
    assert "nothing it wrote says why" in abort_line(1, 2, "", "")


def _watcher(captured: str, words: list[str]) -> str:
    with tempfile.TemporaryFile() as capture:
        capture.write(captured.encode())
        capture.flush()
        done = subprocess.run([sys.executable, "-m", "pytest_roofline.plugin.abort_watch", "1", "2",
                               str(capture.fileno())], input="".join(w + "\n" for w in words),
                              pass_fds=(capture.fileno(),), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == ""
    return done.stderr


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
def test_a_watched_process_that_ends_without_done_gets_its_line() -> None:
    err = _watcher("test output\n" + JAX_ABORT, ["compiling and calibrating for kernel 'psum'",
                                                 "ready to time kernel 'psum'"])
    assert err.startswith("roofline: process 1 of 2 ended abruptly (its last word: ready to time kernel 'psum'): "
                          "JAX said: Terminating process because the JAX distributed service detected fatal errors.")
    assert len(err.splitlines()) == 1


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
def test_a_process_that_ends_normally_gets_no_line() -> None:
    assert _watcher(JAX_ABORT, ["timing kernel 'psum'", "done"]) == ""


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
def test_the_watch_starts_at_the_first_word_and_says_done_at_close() -> None:
    watch = AbortWatch(nullcontext)
    watch(0, 2, "compiling and calibrating for kernel 'x'")
    child = watch.child
    assert child is not None and child.poll() is None  # running while this process is
    watch(0, 2, "timing kernel 'x'")
    watch.close()
    assert child.returncode == 0 and watch.child is None
    watch.close()  # a second close does nothing
