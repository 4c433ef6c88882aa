"""The git side of ``pytest-roofline ab``: the repository around a folder, a revision's commit, whether the
working tree has changes, and a revision checked out into a temporary worktree that is removed afterwards (also
on Ctrl-C). The user's working tree and index are never touched: ``git worktree`` writes only its own
bookkeeping under ``.git/worktrees``, and that is pruned with the worktree. A run killed outright (SIGKILL)
cannot clean up: its folder names its process, and the next run removes the folders of processes that are gone."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ...base.files import process_running
from ..errors import CliError

__all__ = ["toplevel", "commit_of", "is_dirty", "worktree", "remove_leftovers"]

_PREFIX = "pytest-roofline-ab-"
_OWNER = "owner-pid"


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise CliError("git is not installed (ab compares two revisions of a git repository)") from None


def toplevel(folder: Path) -> Path:
    """The root of the git working tree holding ``folder``."""
    found = _git(["rev-parse", "--show-toplevel"], folder)
    if found.returncode != 0:
        raise CliError(f"{folder} is not inside a git repository (ab compares two revisions of one)")
    return Path(found.stdout.strip()).resolve()


def commit_of(root: Path, rev: str) -> str:
    """The full hash of the commit ``rev`` names."""
    found = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], root)
    if found.returncode != 0 or not found.stdout.strip():
        raise CliError(f"--base {rev}: not a commit of the repository at {root} (git rev-parse cannot resolve it)")
    return found.stdout.strip()


def is_dirty(root: Path) -> bool:
    """Whether the working tree differs from its HEAD commit (untracked files included, ignored ones not)."""
    return bool(_git(["status", "--porcelain"], root).stdout.strip())


@contextmanager
def worktree(root: Path, commit: str) -> Iterator[Path]:
    """``commit`` checked out (detached) in a temporary folder, removed when the block ends however it ends. The
    folder holds ``base`` (the worktree), ``work`` (for the run's own files) and the process id that made it."""
    folder = Path(tempfile.mkdtemp(prefix=_PREFIX))
    (folder / _OWNER).write_text(str(os.getpid()), encoding="ascii")
    (folder / "work").mkdir()
    path = folder / "base"
    added = _git(["worktree", "add", "--detach", "--quiet", str(path), commit], root)
    if added.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        lines = added.stderr.strip().splitlines() or ["no message"]
        raise CliError(f"git worktree add {commit[:12]} failed: {lines[-1]}")
    try:
        yield path
    finally:
        _git(["worktree", "remove", "--force", str(path)], root)
        shutil.rmtree(folder, ignore_errors=True)
        _git(["worktree", "prune"], root)


def remove_leftovers(root: Path, log: Callable[[str], None]) -> int:
    """Remove the temporary folders (and their git worktrees) of ``ab`` runs whose process is gone, a run killed
    before it could clean up; how many. Folders of runs still going, or of other users, are left alone."""
    removed = 0
    for folder in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*"):
        try:
            pid = int((folder / _OWNER).read_text(encoding="ascii"))
        except (OSError, ValueError):
            continue  # not ours to judge: no owner written
        if process_running(pid):
            continue
        if (folder / "base").exists():
            _git(["worktree", "remove", "--force", str(folder / "base")], root)
        shutil.rmtree(folder, ignore_errors=True)
        log(f"pytest-roofline ab: removed {folder}, left by an earlier run (process {pid}) that was killed")
        removed += 1
    if removed:
        _git(["worktree", "prune"], root)
    return removed

