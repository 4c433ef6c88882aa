"""How long one whole roofline test of a ~10 ms kernel takes (pytest's call duration), per ceilings mode.

Run: python bench/whole_test_time.py [--repeats 5] [--package-root DIR]   (prints a table)

A 1024^3 f32 matmul (7-10 ms on the 2-core VMs of docs/measurements.md) in a test with a threshold (min=0.3) and one
without (roofline.measure), each run ``--repeats`` times in a fresh pytest process with ``--durations``; the
calibration is read from the cache (run the example suite once first). ``--package-root`` runs another checkout of
pytest_roofline (e.g. a ``git worktree`` of an older commit) to compare with it.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TEST = """
import jax.numpy as jnp
import pytest

A = jnp.ones((1024, 1024), jnp.float32)


@pytest.mark.roofline(min=0.3)
def test_with_threshold(roofline):
    roofline(lambda x, y: x @ y, A, A, name="matmul")


def test_without_threshold(roofline):
    roofline.measure(lambda x, y: x @ y, A, A, name="matmul")
"""


def durations(folder: Path, mode: str, root: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if root:
        env["PYTHONPATH"] = root
    args = [sys.executable, "-m", "pytest", "test_time.py", "-q", "-p", "no:cacheprovider", "--durations=0",
            "--durations-min=0"] + ([f"--roofline-ceilings={mode}"] if mode else [])
    out = subprocess.run(args, cwd=folder, capture_output=True, text=True, env=env).stdout
    return {m.group(2): float(m.group(1)) for m in re.finditer(r"([\d.]+)s call\s+test_time.py::(\w+)", out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--package-root", default=None)
    options = parser.parse_args()
    modes = [""] if options.package_root else ["calibrated", "live"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "test_time.py").write_text(TEST)
        print(f"{'package':12} {'ceilings':10} {'test':24} {'min':>6} {'median':>6} {'max':>6}")
        for mode in modes:
            runs = [durations(folder, mode, options.package_root) for _ in range(options.repeats)]
            for test in ("test_with_threshold", "test_without_threshold"):
                values = [r[test] for r in runs if test in r]
                if not values:
                    print(f"{'(failed)':12} {mode or 'default':10} {test}")
                    continue
                print(f"{'other' if options.package_root else 'this':12} {mode or 'default':10} {test:24} "
                      f"{min(values):6.2f} {statistics.median(values):6.2f} {max(values):6.2f}")


if __name__ == "__main__":
    main()
