"""What installing the plugin costs a pytest run that measures nothing: its entry point imports its options alone,
and a run of a suite that never uses the fixture or the marker imports nothing more of the plugin. Real
subprocesses (fresh interpreters); the time is held to a budget ten times what it takes on the 2-core VMs
(``bench/plugin_start_up.py`` prints the whole run's cost)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # fresh interpreters: the quick loop starts no process

# As a user's shell has it: compiled modules kept (a shell with PYTHONDONTWRITEBYTECODE compiles each every time).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENTRY = {"pytest_roofline", "pytest_roofline.plugin", "pytest_roofline.plugin.hooks", "pytest_roofline.plugin.options",
         "pytest_roofline.plugin.pytest_run"}
IMPORT = """
import json, sys, time
import pytest
before = set(sys.modules)
begun = time.perf_counter()
import pytest_roofline.plugin.hooks
print(json.dumps([time.perf_counter() - begun, sorted(set(sys.modules) - before)]))
"""


def _import(directory: Path) -> tuple[float, list[str]]:
    done = subprocess.run([sys.executable, "-c", IMPORT], capture_output=True, text=True, cwd=directory, env=ENV,
                          check=True)
    seconds, modules = json.loads(done.stdout)
    return float(seconds), modules


def test_the_entry_point_imports_its_options_alone_within_20_ms(tmp_path: Path) -> None:
    _import(tmp_path)  # the first import compiles the modules, as a fresh install's first run does
    runs = [_import(tmp_path) for _ in range(3)]
    new = set(runs[0][1])
    assert new == ENTRY, sorted(new - ENTRY)  # no JAX, no YAML, none of the plugin's machinery
    assert min(seconds for seconds, _ in runs) < 0.020, runs


def test_a_suite_that_never_measures_wakes_nothing_of_the_plugin(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_nothing():\n    assert 1 + 1 == 2\n")
    (tmp_path / "conftest.py").write_text(
        "import json, sys\n\ndef pytest_unconfigure(config):\n"
        "    found = sorted(m for m in sys.modules if m.split('.')[0] in ('pytest_roofline', 'jax', 'yaml'))\n"
        "    open('modules.json', 'w').write(json.dumps(found))\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    found = set(json.loads((tmp_path / "modules.json").read_text()))
    # The options, the worker pinning (an xdist worker's device, before any test module starts JAX), the xdist
    # controller's hooks (registered where xdist is installed; they import nothing more until a worker hands records
    # in) and the name of the programs pass's variable: nothing that measures, reports or reads a setting.
    assert found <= ENTRY | {"pytest_roofline.plugin.xdist", "pytest_roofline.plugin.xdist.workers",
                             "pytest_roofline.plugin.xdist.controller",
                             "pytest_roofline.plugin.hookspecs",
                             "pytest_roofline.ab", "pytest_roofline.ab.same_programs"}, sorted(found)


@pytest.mark.parametrize("how", ["an option", "the marker"])
def test_the_plugin_wakes_for_an_option_or_a_roofline_test(tmp_path: Path, how: str) -> None:
    """A bad option value is still refused at start-up; a marked test still gets the plugin (a bad marker key is
    refused at collection). Nothing is measured."""
    (tmp_path / "test_plain.py").write_text("def test_nothing():\n    assert 1 + 1 == 2\n")
    args = ["--roofline-min=7"] if how == "an option" else []
    if how == "the marker":
        (tmp_path / "test_k.py").write_text("import pytest\n\n@pytest.mark.roofline(mn=0.5)\ndef test_k():\n"
                                            "    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=tmp_path,
                          env=ENV, capture_output=True, text=True)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    said = done.stderr + done.stdout
    assert ("--roofline-min=7 on the command line" in said) if how == "an option" else ("unknown keyword 'mn'" in said)
