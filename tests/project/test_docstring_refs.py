"""Docstrings that cannot go stale: every ``:mod:``/``:func:``/``:class:``/``:meth:``/``:data:``/``:attr:``
reference in the package's docstrings names something that exists (read from the source, nothing imported), and
every file a docstring names (``fixture.py``, ``bench/process_draw.py``) is one the repository holds."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest
from paths import PACKAGE
from sources import nodes, python_files, tree

ROOT = PACKAGE.parent
ROLE = re.compile(r":(mod|func|class|meth|data|attr|exc):`~?([^`]+)`")
FOLDER = re.compile(r"``(\w+)/``")
FILE = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[A-Za-z_]\w*\.py)\b(?!::)")  # not a test id's file (t.py::test_a)


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _module_file(dotted: str) -> Path | None:
    """The file of the module ``pytest_roofline.a.b`` (a package: its ``__init__.py``), or None."""
    parts = dotted.split(".")
    if parts[0] != "pytest_roofline":
        return None
    base = ROOT.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _own_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, (ast.If, ast.Try)):
        return [name for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt) for name in _targets(child)]
    return []


@functools.cache
def _names(path: Path) -> dict[str, set[str]]:
    """A module's top-level names, each with its members (a class's methods, class attributes and the attributes
    its methods set on self)."""
    out: dict[str, set[str]] = {}
    for node in tree(path).body:
        for name in _targets(node):
            out.setdefault(name, set())
        if isinstance(node, ast.ClassDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.stmt) and inner is not node:
                    out[node.name].update(_targets(inner))
                if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == "self":
                    out[node.name].add(inner.attr)
    return out


def _in_module(path: Path, chain: list[str], role: str) -> bool:
    names = _names(path)
    if not chain:
        return True
    if chain[0] in names:
        return len(chain) == 1 or (len(chain) == 2 and chain[1] in names[chain[0]])
    # a bare method or attribute of one of the module's classes, as :meth:`state` inside that class's docstrings
    return len(chain) == 1 and role in ("meth", "attr") and any(chain[0] in members for members in names.values())


def resolves(target: str, role: str, here: Path) -> bool:
    """Whether the reference ``target`` (``.hlo``, ``~..history.paired.judge_pairs``, ``check_settings``,
    ``pytest_roofline.base.calls``) written in module ``here`` names something that exists."""
    own = _own_name(here)
    if target.startswith("."):
        dots = len(target) - len(target.lstrip("."))
        package = own if here.name == "__init__.py" else own.rsplit(".", 1)[0]
        base = package.split(".")[: len(package.split(".")) - dots + 1]
        full = ".".join(base + [target[dots:]])
    elif target.startswith("pytest_roofline"):
        full = target
    else:  # a bare name: in this module
        return role != "mod" and _in_module(here, target.split("."), role)
    parts = full.split(".")
    for cut in range(len(parts), 0, -1):
        path = _module_file(".".join(parts[:cut]))
        if path is not None:
            rest = parts[cut:]
            return (not rest) if role == "mod" else _in_module(path, rest, role)
    return False


def _docstrings(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in nodes(path):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.append((getattr(node, "lineno", 1), doc))
    return out


@functools.cache
def _repo_files() -> dict[str, list[str]]:
    """Every Python file of the repository by its name, with its path."""
    out: dict[str, list[str]] = {}
    for path in python_files(ROOT, skip=frozenset({".venv", ".git", ".tox", "build"})):
        out.setdefault(path.name, []).append(path.relative_to(ROOT).as_posix())
    return out


@functools.cache
def _folders() -> set[str]:
    """The names of the package's folders, at any depth, and the repository's top-level ones."""
    return {d.name for d in PACKAGE.rglob("*") if d.is_dir() and d.name != "__pycache__"} | {
        d.name for d in ROOT.iterdir() if d.is_dir()}


def stale(path: Path) -> list[str]:
    """The references and file names in ``path``'s docstrings that name nothing."""
    out = []
    for line, doc in _docstrings(path):
        for role, target in ROLE.findall(doc):
            if not resolves(target, role, path):
                out.append(f"line {line}: :{role}:`{target}` names nothing")
        for name in FILE.findall(doc):
            paths = _repo_files().get(name.rsplit("/", 1)[-1], [])
            if not any(p == name or p.endswith("/" + name) for p in paths):
                out.append(f"line {line}: {name} is no file of the repository")
        for folder in FOLDER.findall(doc):
            if folder not in _folders():
                out.append(f"line {line}: {folder}/ is no folder of the package")
    return out


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_docstring_references_name_what_exists(path: Path) -> None:
    found = stale(path)
    assert not found, f"{path.relative_to(ROOT)}: stale docstring references: " + "; ".join(found)


def test_a_stale_reference_is_caught(tmp_path: Path) -> None:
    """References that resolve, and ones made up (constructed docstrings in this file's own checks)."""
    fixture = PACKAGE / "plugin" / "fixture.py"
    assert resolves("pytest_roofline.analysis.verdict.decide.decide", "func", fixture)
    assert resolves(".marker", "mod", fixture) and resolves("..history.paired.judge_pairs", "func", fixture)
    assert resolves("RooflineFixture.measure", "meth", fixture) and resolves("FIXTURE_SETTINGS", "data", fixture)
    assert not resolves(".ab_served", "mod", fixture)
    assert not resolves("..measurement.settings", "mod", fixture)
    assert not resolves("pytest_roofline.analysis.verdict.decide.no_such_function", "func", fixture)
    assert not resolves("RooflineFixture.no_such_method", "meth", fixture)
    assert not resolves("no_such_name", "data", fixture)
    made_up = tmp_path / "made_up.py"  # a constructed module whose docstring names what is gone
    made_up.write_text('"""See ``ab_serve.py`` and ``serving/``."""\n')
    assert [why.split(": ", 1)[1] for why in stale(made_up)] == ["ab_serve.py is no file of the repository",
                                                                 "serving/ is no folder of the package"]
