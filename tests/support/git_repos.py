"""Git repositories made for a test, and the CLI run inside one as a user runs it (``ab``, ``noise``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_roofline.cli.main import main

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed on this machine")

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, capture_output=True, text=True,
                          check=True)
    return done.stdout


def make_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    """A repository at ``tmp_path/repo`` whose first commit holds ``files``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, files, "first")
    return repo


def commit(repo: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def run_cli(capsys: pytest.CaptureFixture[str], repo: Path, *argv: str) -> tuple[int, str, str]:
    """``pytest-roofline ARGV`` run from ``repo``: its exit status, stdout and stderr."""
    old = Path.cwd()
    os.chdir(repo)
    try:
        status = main(list(argv))
    finally:
        os.chdir(old)
    out, err = capsys.readouterr()
    return status, out, err
