"""What installing the plugin costs a pytest run that measures nothing.

Run: python bench/plugin_start_up.py [--repeats 10]   (prints a table)

A suite of one trivial test (no roofline fixture, no marker), run in a fresh process the given number of times
with the plugin as installed and with ``-p no:roofline``, in turn; the medians and their difference. Then the
import of the plugin's entry point alone (``pytest_roofline.plugin.hooks`` after pytest), the median of fresh
interpreters. Nothing is asserted (``tests/project/test_start_up.py`` holds the import to its budget).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMPORT = ("import time, pytest; t = time.perf_counter(); import pytest_roofline.plugin.hooks; "
          "print(time.perf_counter() - t)")


# As a user's shell has it: Python keeps the compiled modules it imports (a shell with PYTHONDONTWRITEBYTECODE set
# compiles every module again in every process).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(directory: Path, extra: list[str]) -> float:
    begun = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra], cwd=directory,
                   check=True, capture_output=True, env=ENV)
    return time.perf_counter() - begun


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "test_trivial.py").write_text("def test_nothing():\n    assert 1 + 1 == 2\n")
        run(directory, [])  # the first run warms the file cache
        with_plugin, without = [], []
        for _ in range(args.repeats):
            with_plugin.append(run(directory, []))
            without.append(run(directory, ["-p", "no:roofline"]))
        imports = [float(subprocess.run([sys.executable, "-c", IMPORT], check=True, capture_output=True, text=True,
                                        cwd=directory, env=ENV).stdout) for _ in range(args.repeats)]
    a, b = statistics.median(with_plugin), statistics.median(without)
    print(f"{'pytest run of one trivial test':40} {'median s':>9} (of {args.repeats})")
    print(f"{'  with the plugin installed':40} {a:9.3f}")
    print(f"{'  with -p no:roofline':40} {b:9.3f}")
    print(f"{'  the plugin adds':40} {(a - b) * 1e3:7.0f} ms ({a / b:.2f}x)")
    print(f"{'import of pytest_roofline.plugin.hooks':40} {statistics.median(imports) * 1e3:7.1f} ms (after pytest)")


if __name__ == "__main__":
    main()
