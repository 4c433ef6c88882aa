"""From a survey to a gate, on a small suite written here, every step's output printed as a user sees it:

1. ``pytest --roofline-min=0.8``: no test uses the fixture or the marker; the run says the threshold judged nothing;
2. ``pytest --roofline-survey --roofline-report=survey.json``: every program the tests ran;
3. ``pytest-roofline suggest survey.json --program jit_project -o roofline.yaml``: a gate for the program kept;
4. ``pytest --roofline-survey --roofline-config=roofline.yaml``: the unchanged code passes;
5. the same with the kept program made slower (its matmul computed twice more): the test that runs it fails.

Run: python bench/survey_gate_demo.py [FOLDER]   (default: a temporary folder; nothing is asserted)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

SUITE = '''import jax
import jax.numpy as jnp

REPEAT = {repeat}


@jax.jit
def project(x, w):
    out = x @ w
    for k in range(1, REPEAT):
        out = out + (x * (1.0 + k)) @ w  # the same matmul again: the work of one, REPEAT times
    return out


@jax.jit
def normalize(x):
    return (x - x.mean(axis=-1, keepdims=True)) / (x.std(axis=-1, keepdims=True) + 1e-6)


def test_project():
    x, w = jnp.ones((512, 512)), jnp.ones((512, 512))
    for _ in range(10):
        assert project(x, w).shape == (512, 512)


def test_normalize():
    x = jnp.ones((2048, 1024))
    for _ in range(10):
        assert normalize(x).shape == x.shape
'''


def _show(folder: Path, command: list[str]) -> None:
    shown = " ".join(("pytest" if c == "pytest" else c) for c in command)
    print(f"$ {shown}", flush=True)
    argv = [sys.executable, "-m", *command] if command[0] in ("pytest", "pytest_roofline") else command
    done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, check=False)
    print(done.stdout.rstrip() + ("\n" + done.stderr.rstrip() if done.stderr.strip() else ""), flush=True)
    print(f"(exit status {done.returncode})\n", flush=True)


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="survey-gate-"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_suite.py").write_text(SUITE.format(repeat=1))
    quiet = ["-q", "-p", "no:cacheprovider"]
    _show(folder, ["pytest", *quiet, "--roofline-min=0.8"])
    _show(folder, ["pytest", *quiet, "--roofline-survey", "--roofline-report=survey.json"])
    _show(folder, ["pytest_roofline", "suggest", "survey.json", "--program", "jit_project", "-o", "roofline.yaml"])
    print("$ cat roofline.yaml\n" + (folder / "roofline.yaml").read_text(), flush=True)
    _show(folder, ["pytest", *quiet, "--roofline-survey", "--roofline-config=roofline.yaml"])
    (folder / "test_suite.py").write_text(SUITE.format(repeat=3))
    print("# project() now computes its matmul three times", flush=True)
    _show(folder, ["pytest", *quiet, "--roofline-survey", "--roofline-config=roofline.yaml"])


if __name__ == "__main__":
    main()
