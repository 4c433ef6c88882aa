"""The package's layers and their import rules, read from the source (every import statement, also those
inside functions), so that the layout cannot erode; and the sizes: no module over 400 lines, no function over 60, no
function or dataclass taking more than six arguments by position.

    base/         kinds, errors, files, units, quantiles, labels, calls, dependencies   nothing of the package but base
    hardware/     table, peaks, CPU, calibration cache, NVML             base
    analysis/     pure analysis, four folders in order: program/ (HLO counts), runs/ (traces), model/ (the
                  roofline), verdict/; each imports only those before it            base, hardware
    result/       the Result, its text and its record (the figures a report holds)   base, hardware, analysis
    records/      the current run's records (a kernel's record, its baseline check)
                                                                         base, hardware, analysis, result
    history/      reports over time, regressions, paired revisions       base, hardware, analysis, result, records
    ab/           what ab's driver and its sides share (messages, programs pass)   base ... records
    report/       text, JSON and HTML                                    base, hardware, analysis, result, records,
    history measurement/  the only JAX                                           base, hardware, analysis, result
    plugin/       the only pytest                                        anything but JAX itself and cli
    cli/          the pytest-roofline command                            anything but pytest (JAX only through
    measurement)

No module lies loose at the package root but ``__init__`` and ``__main__``, and no folder holds more than 13 modules.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from pathlib import Path

import pytest
from paths import PACKAGE
from sources import nodes

ALLOWED = {
    "base": {"base"},
    "hardware": {"base", "hardware"},
    "analysis": {"base", "hardware", "analysis"},
    "result": {"base", "hardware", "analysis", "result"},
    "records": {"base", "hardware", "analysis", "result", "records"},
    "history": {"base", "hardware", "analysis", "result", "records", "history"},
    "report": {
        "base",
        "hardware",
        "analysis",
        "result",
        "records",
        "history",
        "report",
        "package",
    },  # package: __version__
    "measurement": {"base", "hardware", "analysis", "result", "measurement"},
    "ab": {"base", "hardware", "analysis", "result", "records", "ab"},
    "plugin": {"base", "hardware", "analysis", "result", "records", "history", "ab", "report", "measurement",
               "plugin"},
    "package": {"base", "hardware", "analysis", "result", "measurement"},
    "cli": {"base", "hardware", "analysis", "result", "records", "history", "ab", "report", "measurement", "cli",
            "package"},
}
# The folders inside analysis/, in order: each may import itself and those before it, never one after it.
ANALYSIS_ORDER = ("program", "runs", "model", "verdict")
JAX = {"jax", "jaxlib"}
PYTEST = {"pytest", "_pytest", "pluggy"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    if parts[1] == "__main__":
        return "cli"
    return parts[1]


@functools.cache
def _imports(path: Path) -> frozenset[str]:
    """Absolute names of everything ``path`` imports (read once for every test that asks)."""
    module = _name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    return frozenset(_imports_in(nodes(path), package))


def _imports_of(text: str, package: str) -> set[str]:
    return _imports_in(ast.walk(ast.parse(text)), package)


def _imports_in(walked: Iterable[ast.AST], package: str) -> set[str]:
    out: set[str] = set()
    for node in walked:
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            out.add(prefix)
            out.update(f"{prefix}.{alias.name}" for alias in node.names)  # a submodule, or a name in it
    return out


def _internal_layers(imported: AbstractSet[str]) -> set[str]:
    layers = set()
    for name in imported:
        if name == "pytest_roofline" or name.startswith("pytest_roofline."):
            parts = name.split(".")
            # "pytest_roofline.X" names a layer; "pytest_roofline.__version__" is the package itself
            layers.add(_layer(name) if len(parts) > 1 and (PACKAGE / parts[1]).exists() or
                       len(parts) > 1 and (PACKAGE / f"{parts[1]}.py").exists() else "package")
    return layers


def test_every_module_is_in_a_known_layer() -> None:
    assert {_layer(_name(p)) for p in _modules()} <= set(ALLOWED)


def test_each_layer_has_its_tests() -> None:
    """Each layer's folder has a folder of tests of the same name with tests in it (the other direction:
    test_the_tests_mirror_the_package)."""
    tests = PACKAGE.parent / "tests"
    layers = [d.name for d in PACKAGE.iterdir() if (d / "__init__.py").exists()]
    missing = sorted(name for name in layers if not any((tests / name).rglob("test_*.py")))
    assert not missing, f"layers without tests/ of their own: {missing}"


def test_no_module_lies_loose_at_the_root_and_no_folder_is_crowded() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"], (
        f"modules at the package root: {loose}: put each in its layer's folder"
    )
    crowded = {str(d.relative_to(PACKAGE)): n for d in [PACKAGE, *PACKAGE.rglob("*/")]
               if d.is_dir() and (n := len([p for p in d.glob("*.py") if p.name != "__init__.py"])) > 13}
    assert not crowded, f"folders over 13 modules: {crowded}: split them by what they hold"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_import_rules(path: Path) -> None:
    module = _name(path)
    layer = _layer(module)
    imported = _imports(path)
    roots = {name.split(".")[0] for name in imported}
    if layer != "measurement":
        assert not roots & JAX, f"{module} imports JAX: only pytest_roofline.measurement may"
    if layer != "plugin":
        assert not roots & PYTEST, f"{module} imports pytest: only pytest_roofline.plugin may"
    assert not (roots & JAX and roots & PYTEST), f"{module} imports both JAX and pytest"
    wrong = _internal_layers(imported) - ALLOWED[layer]
    assert not wrong, f"{module} ({layer}) imports from {sorted(wrong)}"


def _analysis_folders(imported: AbstractSet[str]) -> set[str]:
    """The folders of analysis/ among ``imported``."""
    return {name.split(".")[2] for name in imported
            if name.startswith("pytest_roofline.analysis.") and name.split(".")[2] in ANALYSIS_ORDER}


def _analysis_order_broken(folder: str, imported: AbstractSet[str]) -> set[str]:
    """The folders of analysis/ that a module of ``folder`` imports against the order."""
    allowed = set(ANALYSIS_ORDER[: ANALYSIS_ORDER.index(folder) + 1])
    return _analysis_folders(imported) - allowed


@pytest.mark.parametrize("path", sorted((PACKAGE / "analysis").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_analysis_folders_import_in_order(path: Path) -> None:
    parts = path.relative_to(PACKAGE / "analysis").parts
    if len(parts) == 1:  # analysis/__init__.py
        assert not _analysis_folders(_imports(path))
        return
    broken = _analysis_order_broken(parts[0], _imports(path))
    assert not broken, (f"analysis/{'/'.join(parts)} imports from {sorted(broken)}: inside analysis/ a folder imports "
                        f"only those before it ({' -> '.join(ANALYSIS_ORDER)})")


def test_the_order_inside_analysis_catches_a_violation() -> None:
    # Constructed source for a module of analysis/model/ that imports the verdict (after it) inside a function.
    text = "from ..program.counts import Work\ndef f():\n    from ..verdict.op_family import op_family\n"
    imported = _imports_of(text, "pytest_roofline.analysis.model")
    assert _analysis_order_broken("model", imported) == {"verdict"}
    assert _analysis_order_broken("verdict", imported) == set()


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= 400, f"{path.relative_to(PACKAGE)} has {lines} lines: split it by what it holds"


def test_the_rules_catch_a_violation() -> None:
    # Constructed source for a module of analysis/ that breaks two rules, inside a function as well.
    text = "def f():\n    import jax.numpy\n    from ..plugin.settings import Settings\n"
    imported = _imports_of(text, "pytest_roofline.analysis")
    assert "jax" in {n.split(".")[0] for n in imported}
    assert _internal_layers(imported) - ALLOWED["analysis"] == {"plugin"}


ENTRY_MODULES = [
    "pytest_roofline",
    "pytest_roofline.plugin.hooks",
    "pytest_roofline.result.result",
    "pytest_roofline.cli.main",
    "pytest_roofline.report.text",
    "pytest_roofline.plugin.fixture",
    "pytest_roofline.plugin.abort_watch",
]


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
def test_importing_does_not_import_jax() -> None:
    # One fresh interpreter imports the entry points one after the other and says, after each, whether JAX is
    # loaded: the first that loads it is named (JAX once loaded stays, so where none loads it, none does alone).
    code = ("import importlib, sys\n"
            f"for name in {ENTRY_MODULES!r}:\n"
            "    importlib.import_module(name)\n"
            "    print(name, sorted(m for m in ('jax', 'jaxlib') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [f"{name} []" for name in ENTRY_MODULES]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_functions_stay_short(path: Path) -> None:
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines, line {node.lineno})"
            for node in nodes(path)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None
            and node.end_lineno - node.lineno + 1 > 60]
    assert not long, f"{path.relative_to(PACKAGE)}: functions over 60 lines: {', '.join(long)}"


def _module_graph() -> dict[str, set[str]]:
    """Each module and the modules of the package it imports (a name inside a module counts as that module)."""
    names = {_name(p) for p in _modules()}
    graph: dict[str, set[str]] = {}
    for path in _modules():
        out = set()
        for imported in _imports(path):
            while imported and imported not in names:
                imported = imported.rpartition(".")[0]
            if imported and imported != _name(path):
                out.add(imported)
        graph[_name(path)] = out
    return graph


def test_no_module_imports_itself_through_others() -> None:
    # Every import statement counts, also those inside functions or under TYPE_CHECKING: a loop is a loop to anyone
    # reading it. A package's __init__ is left out as a target (importing a submodule runs it first anyway).
    graph = {m: {t for t in targets if (PACKAGE.parent / t.replace(".", "/")).with_suffix(".py").exists()}
             for m, targets in _module_graph().items()}
    state: dict[str, int] = {}
    loops: list[str] = []

    def visit(module: str, trail: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                loops.append(" -> ".join([*trail[trail.index(target):], target]))
            elif target not in state:
                visit(target, [*trail, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not loops, f"import loops: {loops}"


def test_no_two_module_names_differ_by_a_suffix() -> None:
    # Look-alikes (check / checks, records / recorded, trace / trace_runs) make a reader guess which holds what.
    stems = sorted({p.stem for p in _modules() if p.stem not in ("__init__", "__main__")})
    alike = [(a, b) for a in stems for b in stems
             if a != b and (b.startswith(f"{a}_") or b in (f"{a}s", f"{a}d", f"{a}ed"))]
    assert not alike, f"module names that differ by a suffix: {alike}"


def _positional(node: ast.AST) -> list[str]:
    """The parameters a function, or a dataclass's ``__init__``, takes by position (self and cls aside)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [a.arg for a in node.args.posonlyargs + node.args.args if a.arg not in ("self", "cls")]
    if isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
        fields = [s for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                  and "ClassVar" not in ast.unparse(s.annotation)]
        names = [f.target.id for f in fields if isinstance(f.target, ast.Name)]
        kw_only = next((i for i, f in enumerate(fields) if ast.unparse(f.annotation) == "KW_ONLY"), len(names))
        return names[:kw_only]
    return []


def _too_many_positional(walked: Iterable[ast.AST]) -> list[str]:
    return [f"{getattr(n, 'name', '?')} ({len(_positional(n))})" for n in walked if len(_positional(n)) > 6]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_or_record_takes_more_than_six_arguments_by_position(path: Path) -> None:
    """Beyond six, parameters and a dataclass's fields are keyword-only (``*`` or ``_: KW_ONLY``): a record of 21
    fields is built by name, not by counting commas."""
    found = _too_many_positional(nodes(path))
    assert not found, f"{path.relative_to(PACKAGE)}: more than six positional parameters: {', '.join(found)}"


def test_the_positional_rule_catches_a_violation() -> None:
    # Constructed source: a function of seven positional parameters and a dataclass of seven fields, each made right.
    wrong = ("def f(a, b, c, d, e, g, h): pass\n"
             "@dataclass(frozen=True)\nclass R:\n    a: int\n    b: int\n    c: int\n    d: int\n    e: int\n"
             "    f: int\n    g: int\n")
    assert _too_many_positional(ast.walk(ast.parse(wrong))) == ["f (7)", "R (7)"]
    right = wrong.replace("g, h)", "g, *, h)").replace("    g: int\n", "    _: KW_ONLY\n    g: int\n")
    assert _too_many_positional(ast.walk(ast.parse(right))) == []


def test_the_tests_mirror_the_package() -> None:
    """tests/ holds no test module of its own; each of its folders is a folder of the package (analysis/model ...)
    or one of the folders for what is not one module's: end to end, the project's rules, what tests share, real
    framework code, recorded data."""
    tests = PACKAGE.parent / "tests"
    assert sorted(p.name for p in tests.glob("*.py")) == ["conftest.py"]
    own = {"e2e", "project", "support", "frameworks", "data"}
    folders = {d.relative_to(tests).as_posix() for d in tests.rglob("*") if d.is_dir() and "__pycache__" not in d.parts
               and not d.is_relative_to(tests / "data") and d.name not in own}
    package = {d.relative_to(PACKAGE).as_posix() for d in PACKAGE.rglob("*") if d.is_dir() and d.name != "__pycache__"}
    assert folders <= package, f"test folders that are no folder of the package: {sorted(folders - package)}"
