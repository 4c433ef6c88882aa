"""Where a report was made: the machine, the git commit of the suite, the versions of the packages.
Not pure: runs ``git`` and reads installed package metadata."""

from __future__ import annotations

import platform
import socket
import subprocess
from typing import Any

from ..base.dependencies import installed

__all__ = ["machine", "git_commit", "versions"]


def machine() -> dict[str, str]:
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "machine": platform.machine(),
            "python": platform.python_version()}


def git_commit(directory: str) -> dict[str, Any] | None:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True,
                                timeout=10)
        if commit.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=directory,
                               capture_output=True, text=True, timeout=10)
        return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return None


def versions() -> dict[str, str | None]:
    from .. import __version__

    return {"pytest_roofline": __version__, "jax": installed("jax"), "jaxlib": installed("jaxlib"),
            "pytest": installed("pytest")}
