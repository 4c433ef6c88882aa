"""The package's source as the project's rule tests read it: each module's syntax tree parsed once for the whole
session, whichever test module reads it (the layer rules and the docstring references read every module)."""

from __future__ import annotations

import ast
import functools
import os
from pathlib import Path


@functools.cache
def tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for every test that reads it."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a module's syntax tree, in :func:`ast.walk`'s order, listed once for every test that reads it."""
    return tuple(ast.walk(tree(path)))


def python_files(root: Path, *, skip: frozenset[str]) -> list[Path]:
    """Every ``.py`` file under ``root``, not descending into a folder named in ``skip`` (a virtual environment
    holds tens of thousands of files that a walk into it and a filter after would read)."""
    out: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip]
        out.extend(Path(folder) / f for f in files if f.endswith(".py"))
    return sorted(out)
