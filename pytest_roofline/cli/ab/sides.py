"""The two sides of a comparison and how a side's pytest process is started: its folder, its label, its command (the
side's script, ``plugin/ab/child.py``, which makes the base import its own tree), its environment, and the line
of its output that says why it could not run."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...history.paired import Side
from ..errors import CliError

__all__ = ["SideProcess", "sides_of", "command", "side_env", "CHILD", "QUIET_OUTPUTS", "EXIT_NAMES", "problem_line",
           "log_problem"]

CHILD = Path(__file__).resolve().parent.parent.parent / "plugin" / "ab" / "child.py"
# Outputs a project may have configured (in the environment or its ini file) that a comparison must not write to.
QUIET_OUTPUTS = ("history", "html", "baseline")
EXIT_NAMES = {2: "interrupted or errors during collection", 3: "internal error", 4: "usage error",
              5: "no tests collected"}


@dataclass(frozen=True)
class SideProcess:
    """Where one side's pytest processes run: its name, its folder, the base's worktree ("" for the head, whose
    imports are left alone) and its label ("the base (1a2b3c4d5e6f)")."""

    name: Side
    cwd: Path
    base_root: str
    label: str


def sides_of(root: Path, cwd: Path, base_root: Path, commit: str,
             head: tuple[str, bool]) -> tuple[SideProcess, SideProcess]:
    """The base (``commit`` checked out at ``base_root``) and the head (the working tree; ``head``: its commit and
    whether it has uncommitted changes), each run from the folder ab was run from."""
    relative = cwd.resolve().relative_to(root)
    base_cwd = base_root / relative
    if not base_cwd.is_dir():
        raise CliError(f"{relative} does not exist at the base ({commit[:12]}): run ab from a folder both have")
    head_commit, dirty = head
    head_label = f"the head ({head_commit[:12]}{' + uncommitted changes' if dirty else ''})"
    return (SideProcess("base", base_cwd, str(base_root), f"the base ({commit[:12]})"),
            SideProcess("head", cwd.resolve(), "", head_label))


def command(side: SideProcess, root: Path, args: Sequence[str], *, report: Path | None = None,
            once: bool = False) -> list[str]:
    """A side's pytest command: the script, the head's root and the base's, ``--once`` for a round's process that
    runs to its end, the pytest arguments, the comparison's outputs switched off (``report``: its own report)."""
    quiet = [arg for name in QUIET_OUTPUTS for arg in ("-o", f"roofline_{name}=")]
    return [sys.executable, str(CHILD), str(root), side.base_root, *(["--once"] if once else []), *args,
            "-p", "no:cacheprovider", *quiet, *([f"--roofline-report={report}"] if report is not None else [])]


def side_env(cache_dir: Path) -> dict[str, str]:
    """A side's environment: the user's, less our outputs, no bytecode written (with ``-p no:cacheprovider``, ab
    leaves the head's working tree as it found it, ignored files included), JAX's persistent compilation cache
    shared by both sides (unless the user set one: its key holds the program, the compiler options and the jaxlib
    version, so the sides never share a program that differs), and device memory taken as needed rather than
    preallocated (two processes may share one accelerator)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    for name in (*QUIET_OUTPUTS, "report"):
        env[f"PYTEST_ROOFLINE_{name.upper()}"] = ""  # empty: not set
    if not env.get("JAX_COMPILATION_CACHE_DIR"):
        env["JAX_COMPILATION_CACHE_DIR"] = str(cache_dir)
        env.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    return env


def problem_line(output: str) -> str:
    """The line of a pytest run's output that says what went wrong."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(("ERROR", "E ", "INTERNALERROR>")) or "Error" in line.split(":")[0]:
            return line
    return lines[-1] if lines else "no output"


def log_problem(log: Path) -> str:
    try:
        return problem_line(log.read_text(errors="replace"))
    except OSError:
        return "no output"
