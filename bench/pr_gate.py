"""What a pull-request gate costs on this machine, against one plain run: ``pytest-roofline ab`` on a copy of the
example suite in a fresh git repository, as a user would run it in a clone.

1. one plain ``pytest FILE`` (the calibration cached, as on a runner that keeps its cache), its wall time;
2. ``ab --base HEAD -- FILE`` with nothing changed: every kernel compiles to the same program, none is timed;
3. ``ab --base HEAD -- FILE`` with one kernel changed: made slower (``--change loop``, the default: the row sum
   written as a loop over rows, ``jax.lax.map``, the same work counted, each row a small step of a while loop), or
   scaled (``--change scaled``: the row sum of ``x * 2``, halved: one more multiply per element, a trace of the
   usual size): that kernel timed and called, the others "same program";
4. the same change with ``--time-all`` (every kernel timed, the way ab worked before its programs pass);
5. the floor of a gate that draws a fresh pair of processes each round, on this machine: two processes started at
   once that start up (Python, JAX, pytest, the plugin, collecting the changed test) and prepare it as a round's
   processes do (its inputs built, its kernel compiled from JAX's cache and fingerprinted, nothing timed: ab's
   programs pass of that one test; the median of three pairs), and the changed test's measurement per side from
   3.'s JSON (its seconds waiting on each side over its rounds). Six rounds (the fewest a 95% interval of a median
   allows) of such a pair and two measurements in turn cost at least that.

Prints each command's verdict lines and a table of wall times against the plain run.

    python bench/pr_gate.py [FILE] [--rounds N] [--change loop|scaled] [--skip-time-all]
    # FILE: an example suite file (test_elementwise.py)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROW_SUM = "roofline(lambda x: x.sum(axis=-1), normal(key, (ROWS, COLS)), name=\"row_sum\")"
CHANGES = {"loop": ("the row sum made slower", ROW_SUM.replace("x.sum(axis=-1)", "jax.lax.map(jnp.sum, x)")),
           "scaled": ("the row sum of x * 2, halved", ROW_SUM.replace("x.sum(axis=-1)", "(x * 2).sum(axis=-1) * 0.5"))}


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def timed(command: list[str], cwd: Path) -> tuple[float, int, str]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done.returncode, done.stdout + done.stderr


def shown(output: str) -> str:
    """The lines a reader wants: ab's progress summary, header, table and verdict; pytest's last line."""
    keep = ("programs pass", "pytest-roofline ab:", "nothing timed", "rounds in", "example_suite/", "no kernel",
            "kernel regressed", "kernels regressed", "round ")
    lines = [line for line in output.splitlines() if line.startswith(keep) or " passed" in line]
    return "\n".join(lines)


def pair_start_up(command: list[str], cwd: Path, work: Path) -> float:
    """Seconds until both of two processes started at once have ended (the median of three pairs), each a programs
    pass of ``command``'s tests with JAX's compilation cache filled by a first pass."""
    if importlib.util.find_spec("pytest_roofline.plugin.ab.side_modes") is not None:
        command = [*command, "-p", "pytest_roofline.plugin.ab.side_modes"]  # the plugin that reads the variable
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(work / "jax-cache"),
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "PYTEST_ROOFLINE_PROGRAMS_PASS": str(work / "pass.json")}
    subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=True)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        pair = [subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 env={**env, "PYTEST_ROOFLINE_PROGRAMS_PASS": str(work / f"p{i}.json")})
                for i in range(2)]
        if any(p.wait() != 0 for p in pair):
            raise SystemExit(f"{' '.join(command)} failed in {cwd}")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def floor_line(start_up: float, report: Path, plain: float, rounds: int = 6) -> str:
    """The fewest seconds ``rounds`` rounds of fresh pairs take: each a pair's start-up, then both sides measured."""
    data = json.loads(report.read_text())
    waited = sum(data["pytest_seconds"].values())
    per_side = waited / max(2 * data["rounds"], 1)
    floor = rounds * (start_up + 2 * per_side)
    return (f"floor of {rounds} rounds of fresh pairs: {rounds} x (a pair's start-up and preparation "
            f"{start_up:.1f} s + the changed test measured on each side, {per_side:.2f} s each) = {floor:.1f} s = "
            f"{floor / plain:.1f}x the plain run")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("file", nargs="?", default="test_elementwise.py")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--change", choices=sorted(CHANGES), default="loop")
    parser.add_argument("--skip-time-all", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="roofline-pr-gate-"))
    repo = work / "repo"
    shutil.copytree(ROOT / "example_suite", repo / "example_suite", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "pytest.ini").write_text("[pytest]\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the example suite")
    suite = repo / "example_suite"
    python = sys.executable
    pytest_cmd = [python, "-m", "pytest", args.file, "-q", "-p", "no:cacheprovider"]
    ab = [python, "-m", "pytest_roofline", "ab", "--base", "HEAD", "--rounds", str(args.rounds)]
    rows: list[tuple[str, float, int]] = []

    def run(name: str, command: list[str]) -> None:
        seconds, status, output = timed(command, suite)
        rows.append((name, seconds, status))
        print(f"== {name}: {' '.join(command[1:])} ({seconds:.1f} s, exit status {status})\n{shown(output)}\n",
              flush=True)

    run("plain run (warm-up, not counted)", pytest_cmd)
    run("plain run", pytest_cmd)
    run("ab, nothing changed", [*ab, "--", args.file, "-q"])
    source = suite / "test_elementwise.py"
    text = source.read_text()
    if ROW_SUM not in text:
        raise SystemExit(f"{source}: the row sum's line is not as this bench expects: {ROW_SUM}")
    what, line = CHANGES[args.change]
    source.write_text(text.replace(ROW_SUM, line))
    run(f"ab, {what}", [*ab, "--summary-md", str(work / "summary.md"), "--json", str(work / "ab.json"), "--",
                        args.file, "-q"])
    run("plain run of the head", pytest_cmd)
    if not args.skip_time_all:
        run(f"ab --time-all, {what}", [*ab, "--time-all", "--", args.file, "-q"])
    plain = rows[1][1]
    print(f"machine: {os.uname().nodename}, {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M')}; "
          f"{args.file}; ab at most {args.rounds} rounds")
    print(f"{'command':<42} {'seconds':>8} {'x plain':>8} {'exit':>5}")
    for name, seconds, status in rows[1:]:
        print(f"{name:<42} {seconds:>8.1f} {seconds / plain:>7.1f}x {status:>5}")
    start_up = pair_start_up([*pytest_cmd[:3], f"{args.file}::test_row_sum", *pytest_cmd[4:]], suite, work)
    print(floor_line(start_up, work / "ab.json", plain))
    print(f"\nthe Markdown summary ({work / 'summary.md'}):\n")
    print((work / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
