"""One side of ``pytest-roofline ab`` in a fresh process, run as a script (never imported)::

    python ab_child.py HEAD_ROOT BASE_ROOT [--once | --serve=REQ_FD,ANS_FD [--prepare [--first]]] PYTEST_ARGS...

With BASE_ROOT not empty, every module whose file lies in the head's tree is loaded from the same path in the
base's worktree instead. A project installed in editable mode (a ``.pth`` path or setuptools' import finder)
points into the head's tree, so without this the base's tests would run the head's code. A file the base's
checkout does not have (a virtual environment or a build folder inside the working tree, or a module the base's
code never imports) is imported from where it is.

With ``--once`` (a round's side), every kernel is measured once (:class:`MeasureOnce`). With ``--serve``, the
process stays up and runs the tests it is asked for, one at a time, as often as asked
(``ab_server.py``; the two numbers are the file descriptors of its pipes); with ``--prepare`` it first compiles
every test's kernels with nothing timed, so that a request only measures; with ``--first`` too, it first says
what every test compiled (the comparison's programs pass) and prepares only the tests it is then asked to.

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


class MeasureOnce:
    """A side of one round in a fresh process (``--once``): every kernel measured once, as a long-lived side
    measures it: no second measurement of a shortfall, no sampling toward a threshold, no trace saved for a
    failure, and the shorter timing the session keeps for this (``ONCE_TIMING``). The rounds are the sample, and
    a kernel near its threshold on one side only is not measured more there."""

    def pytest_sessionstart(self, session: Any) -> None:
        from pytest_roofline.plugin.hooks import SESSION_KEY  # the side's own plugin (the base's, through the finder)

        roofline = session.config.stash.get(SESSION_KEY, None)
        if roofline is not None:
            roofline.once = True


def main(argv: Sequence[str]) -> int:
    head, base, *args = argv
    if base:
        sys.meta_path.insert(0, BaseTree(Path(head), Path(base)))
    sys.path.insert(0, os.getcwd())  # as `python -m pytest` does
    import pytest

    plugins: list[object] = []
    if args and args[0] == "--once":
        args.pop(0)
        plugins.append(MeasureOnce())
    if args and args[0].startswith("--serve="):
        from pytest_roofline.plugin.ab_server import AbServer

        requests_fd, answers_fd = (int(fd) for fd in args.pop(0).removeprefix("--serve=").split(","))
        prepare = bool(args) and args[0] == "--prepare"
        if prepare:
            args.pop(0)
        first = prepare and bool(args) and args[0] == "--first"
        if first:
            args.pop(0)
        # without --prepare (--first), the two-argument (three-argument) call an older plugin (a base revision of
        # this project) also takes
        plugins.append(AbServer(requests_fd, answers_fd, prepare, first) if first else
                       AbServer(requests_fd, answers_fd, prepare) if prepare else AbServer(requests_fd, answers_fd))
    sys.argv = ["pytest", *args]
    return int(pytest.main(list(args), plugins=plugins))


if __name__ == "__main__":
    sys.path.pop(0)  # this script's folder: its file names must not shadow the project's modules
    sys.exit(main(sys.argv[1:]))
