"""The pull-request story, scripted: a small git repository with a two-kernel suite and three commits,

1. the suite (``total`` sums a 64 MiB array, ``matmul`` multiplies two 512x512 matrices; each test states the
   useful work of its kernel with ``bytes=`` / ``flops=``),
2. ``total`` makes a second pass over its data that needs the first pass's sum: twice the memory traffic for
   the same useful work,
3. an identical copy of commit 2 (only a comment in the README changes),

then ``pytest-roofline ab --base HEAD~1`` at commit 2 (expected: ``total`` a regression, ``matmul`` unchanged,
exit 1) and at commit 3 (expected: nothing regressed, exit 0), and for comparison the time of running the suite
twice. Prints every command and its output, then a table; exits 1 if an outcome is not as expected.

    python bench/ab_demo.py [WORK_DIR] [--rounds N]   # default: a new temporary directory, ab's default rounds
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOTAL_BASE = "def total(x):\n    return x.sum()\n"
TOTAL_SLOW = ("def total(x):\n    s = x.sum()\n"
              "    return (x - s / x.size).sum() + s  # a second pass that needs the first one's result\n")
KERNELS = '''"""The demo's kernels."""


{total}

def matmul(a, b):
    return a @ b
'''
TESTS = '''import jax.numpy as jnp
import pytest

import kernels

N = 1 << 24  # 64 MiB of float32


@pytest.mark.roofline(min=0.05)
def test_total(roofline):
    x = jnp.ones(N, jnp.float32)
    roofline(kernels.total, x, bytes=x.nbytes)  # the useful work: read x once


@pytest.mark.roofline(min=0.05)
def test_matmul(roofline):
    a = jnp.ones((512, 512), jnp.float32)
    roofline(kernels.matmul, a, a, flops=2 * 512**3)
'''


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "demo", "GIT_AUTHOR_EMAIL": "demo@example.com",
           "GIT_COMMITTER_NAME": "demo", "GIT_COMMITTER_EMAIL": "demo@example.com"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def build(repo: Path) -> None:
    (repo / "tests").mkdir(parents=True)
    (repo / "kernels.py").write_text(KERNELS.format(total=TOTAL_BASE))
    (repo / "tests" / "test_kernels.py").write_text(TESTS)
    (repo / "README.md").write_text("demo\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two kernels")
    (repo / "kernels.py").write_text(KERNELS.format(total=TOTAL_SLOW))
    git(repo, "commit", "-qam", "total: a second pass over the data")


def run(cmd: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    print(f"\n$ cd {cwd} && {' '.join(cmd)}", flush=True)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    print(done.stdout.rstrip())
    print(done.stderr.rstrip())
    print(f"[exit status {done.returncode}, {seconds:.0f} s]")
    return done, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("work_dir", nargs="?", type=Path, help="default: a new temporary directory")
    parser.add_argument("--rounds", type=int, help="ab's --rounds (default: ab's own)")
    args = parser.parse_args()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="roofline-ab-demo-"))
    rounds = ["--rounds", str(args.rounds)] if args.rounds else []
    repo = work / "repo"
    build(repo)
    script = Path(sys.executable).parent / "pytest-roofline"  # else the package run as a module (not installed)
    cli = [str(script)] if script.exists() else [sys.executable, "-m", "pytest_roofline"]
    rows, problems = [], []
    pytest_cmd = [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"]
    twice = sum(run(pytest_cmd, repo)[1] for _ in range(2))
    for case, expected in (("commit 2 (total: a second pass) against commit 1", {"test_total": "regression"}),
                           ("commit 3 (identical code) against commit 2", {})):
        if not expected:
            (repo / "README.md").write_text("demo, again\n")
            git(repo, "commit", "-qam", "README only")
        out = work / f"ab-{len(rows)}.json"
        done, seconds = run([*cli, "ab", "--base", "HEAD~1", *rounds, "--json", str(out), "--", "tests", "-q"], repo)
        verdicts = {k["nodeid"].split("::")[-1]: k["verdict"] for k in json.loads(out.read_text())["kernels"]}
        regressed = {name: v for name, v in verdicts.items() if v == "regression"}
        want_status = 1 if expected else 0
        if regressed != expected or done.returncode != want_status:
            problems.append(f"{case}: exit {done.returncode}, regressions {regressed} (expected {want_status}, "
                            f"{expected})")
        document = json.loads(out.read_text())
        rows.append((case, done.returncode, ", ".join(f"{n} {v}" for n, v in sorted(verdicts.items())),
                     document["rounds"], seconds))
    print("\n| case | exit | verdicts | rounds | seconds |\n|---|---|---|---|---|")
    for case, status, verdicts_text, rounds, seconds in rows:
        print(f"| {case} | {status} | {verdicts_text} | {rounds} | {seconds:.0f} |")
    print(f"| the suite run twice (plain pytest) | | | | {twice:.0f} |")
    for problem in problems:
        print(f"NOT AS EXPECTED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
