"""The nightly story, scripted: six runs of a small suite into a history directory, then a run in which one
kernel is deliberately slower (ROOFLINE_DEMO_SLOW=matmul: redundant work), judged three ways:

1. that run itself, with --roofline-baseline=<history>: the slower test fails, the others pass;
2. ``pytest-roofline history <history>``: flags that kernel and no other (exit 1);
3. ``pytest-roofline compare <the six nights> <slow run>``: exit 1, that kernel alone a regression.

Also shown: ``compare <sixth night's report> <slow run>``, a baseline of one report, which cannot know how much
nights differ; it flags every kernel whose utilization moved more than its floor (10%) and the two runs'
intervals, noisy kernels included.

It also writes the HTML report of the slow run with the history's sparklines. Prints every command and its
output; exits 1 if any of the three does not come out as stated.

    python bench/nightly_demo.py [WORK_DIR]     # default: a new temporary directory
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = "bench/nightly_demo"
SLOW_TEST = "test_matmul"


def run(cmd: list[str], env: dict[str, str] | None = None, show: bool = True) -> subprocess.CompletedProcess[str]:
    shown = " ".join(f"{k}={v}" for k, v in (env or {}).items())
    print(f"\n$ {shown + ' ' if shown else ''}{' '.join(cmd)}", flush=True)
    done = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    if show:
        print(done.stdout.rstrip())
        if done.stderr.strip():
            print(done.stderr.rstrip())
    print(f"[exit status {done.returncode}]")
    return done


def main() -> int:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="roofline-nightly-"))
    history = work / "history"
    bindir = Path(sys.executable).parent
    pytest_cmd = [sys.executable, "-m", "pytest", SUITE, "-q", "-p", "no:cacheprovider"]
    cli = [str(bindir / "pytest-roofline")]
    problems = []
    for night in range(1, 7):
        done = run([*pytest_cmd, f"--roofline-history={history}"], show=night == 6)
        if done.returncode != 0:
            problems.append(f"night {night}: pytest exit status {done.returncode}")
    sixth = sorted(history.glob("roofline-*.json"))[-1]
    six_nights = work / "six-nights"
    shutil.copytree(history, six_nights)
    slow = run([*pytest_cmd, f"--roofline-history={history}", f"--roofline-baseline={history}",
                f"--roofline-report={work / 'slow.json'}", f"--roofline-html={work / 'slow.html'}"],
               env={"ROOFLINE_DEMO_SLOW": "matmul"})
    failed = [line for line in slow.stdout.splitlines() if line.startswith("FAILED")]
    if len(failed) != 1 or SLOW_TEST not in failed[0]:
        problems.append(f"--roofline-baseline: expected {SLOW_TEST} alone to fail, got {failed}")
    hist = run([*cli, "history", str(history)])
    flagged = [line.split()[0] for line in hist.stdout.splitlines()
               if not line.startswith(" ") and line.rstrip().endswith("regression")]
    if hist.returncode != 1 or len(flagged) != 1 or SLOW_TEST not in flagged[0]:
        problems.append(f"history: expected exit 1 and {SLOW_TEST} alone flagged, got {hist.returncode}, {flagged}")
    compare = run([*cli, "compare", str(six_nights), str(work / "slow.json")])
    regressed = [line.split()[0] for line in compare.stdout.splitlines() if line.rstrip().endswith("REGRESSION")]
    if compare.returncode != 1 or len(regressed) != 1 or SLOW_TEST not in regressed[0]:
        problems.append(f"compare: expected exit 1 and {SLOW_TEST} alone, got {compare.returncode}, {regressed}")
    run([*cli, "compare", str(sixth), str(work / "slow.json")])  # one report as the baseline: shown only
    print(f"\nwork directory: {work} (history/, six-nights/, slow.json, slow.html)")
    print("demo: " + ("as stated" if not problems else "NOT as stated: " + "; ".join(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
