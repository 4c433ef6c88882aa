"""One side of ``pytest-roofline ab`` in a fresh process, run as a script (never imported)::

    python child.py HEAD_ROOT BASE_ROOT [--once | --serve=REQ_FD,ANS_FD[,prepare][,first]] PYTEST_ARGS...

With BASE_ROOT not empty, every module whose file lies in the head's tree is loaded from the same path in the
base's worktree instead. A project installed in editable mode (a ``.pth`` path or setuptools' import finder)
points into the head's tree, so without this the base's tests would run the head's code. A file the base's
checkout does not have (a virtual environment or a build folder inside the working tree, or a module the base's
code never imports) is imported from where it is.

The script is always the head's; the plugin it runs is the side's own (the base's, through the finder, where the
project compared is pytest-roofline itself). It reaches that plugin through two names only: the modes plugin
(``pytest_roofline.plugin.ab.side_modes``, loaded with ``-p`` so that xdist's workers load it too) and, with
``--serve``, ``pytest_roofline.plugin.ab.server.serving``, whose first message says its protocol version
(:mod:`pytest_roofline.ab.protocol`). With ``--once`` (a round's side that runs to its end) every kernel is measured
once: the modes plugin reads that task from the variable the driver sets (:mod:`pytest_roofline.ab.side_task`), and
only a plugin from before the modes needs the flag itself; with ``--serve`` the process stays up and runs the tests
it is asked for (``server.py``). A plugin from before these names cannot serve: the script says so in one line and
exits, and the comparison measures that side in processes that run to their end; there ``--once`` sets the older
plugin's own flag.

Only the standard library is imported before the finder is in place (pytest comes after it, so that a project
that is itself a pytest plugin runs its base revision too).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any


class BaseTree(importlib.abc.MetaPathFinder):
    """Moves the modules of ``head`` to the same relative path under ``base``."""

    def __init__(self, head: Path, base: Path) -> None:
        self.head, self.base = head.resolve(), base.resolve()

    def _in_head(self, path: str) -> Path | None:
        try:
            return Path(path).resolve().relative_to(self.head)
        except (ValueError, OSError):
            return None

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if path is not None and not any(self._in_head(p) is not None for p in path):
            return None  # a submodule of a package outside the head's tree (the base's own, or an installed one)
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None or not spec.has_location or not spec.origin:
            return None
        relative = self._in_head(spec.origin)
        if relative is None:
            return None
        moved = self.base / relative
        if not moved.exists():
            return None  # not in the base's checkout: a virtual environment or a build folder inside the tree
        package = [str(moved.parent)] if spec.submodule_search_locations is not None else None
        return importlib.util.spec_from_file_location(fullname, moved, submodule_search_locations=package)


MODES = "pytest_roofline.plugin.ab.side_modes"
NO_SERVE_STATUS = 7  # none of pytest's: the driver reads the line before it and measures the side otherwise


class _OlderOnce:
    """``--once`` for a plugin from before the modes: its session's own flag."""

    def pytest_sessionstart(self, session: Any) -> None:
        hooks = importlib.import_module("pytest_roofline.plugin.hooks")  # the side's own, from before the modes
        roofline = session.config.stash.get(hooks.SESSION_KEY, None)
        if roofline is not None:
            roofline.once = True


def main(argv: Sequence[str]) -> int:
    head, base, *args = argv
    if base:
        sys.meta_path.insert(0, BaseTree(Path(head), Path(base)))
    sys.path.insert(0, os.getcwd())  # as `python -m pytest` does
    import pytest

    plugins: list[object] = []
    try:
        modes = importlib.util.find_spec(MODES) is not None
    except ImportError:  # no pytest-roofline of this side's own, or one without the folder
        modes = False
    once = bool(args) and args[0] == "--once"
    if once:
        args.pop(0)
        if not modes:  # a plugin with modes reads its task from the driver's variable (ab/side_task.py)
            plugins.append(_OlderOnce())
    serve = bool(args) and args[0].startswith("--serve=")
    if serve:
        spec = args.pop(0).removeprefix("--serve=")
        try:
            from pytest_roofline.plugin.ab.server import serving
        except ImportError:
            print("pytest-roofline ab: this side's pytest-roofline cannot serve requests: it speaks no version of the "
                  "ab protocol (a version from before it had one)", file=sys.stderr)
            return NO_SERVE_STATUS
        plugins.append(serving(spec))
    if modes and not serve:  # a serving process installs its own mode (and runs no xdist workers)
        args = ["-p", MODES, *args]
    sys.argv = ["pytest", *args]
    return int(pytest.main(list(args), plugins=plugins))


if __name__ == "__main__":
    sys.path.pop(0)  # this script's folder: its file names must not shadow the project's modules
    sys.exit(main(sys.argv[1:]))
