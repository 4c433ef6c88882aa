"""Where the wall time of one pytest run of a roofline suite goes, per kernel and in total.

Run: python bench/measure_cost.py [--suite example_suite] [--repeats 1] [-- PYTEST_ARGS...]   (prints tables)

Runs ``pytest SUITE`` in a fresh process (as a user would: calibration read from its cache; run the suite once
first if it is not cached) with ``--roofline-report``, times the whole process, and reads each kernel's
``time_spent`` from the report: compile, inputs (waiting for the test's arrays, which JAX computes
asynchronously), hardware (reading the cached calibration), warm-up, timed runs (the runs
that count: the wall clock of each), between runs (the loop's own work), references (live ceilings), profiler
start/stop, trace reading, cache state (eviction and its check), model (counting, before and after the runs),
second measurement of a shortfall, artifacts saved for a failure, and everything else in the roofline(...) call.
"outside kernels" is the process's wall time no roofline(...) call accounts for (Python and JAX start-up,
collection, test bodies making their inputs, the session's end).

The ratios the bench prints: the process's wall time over the time the kernels spend in timed runs as the report
states it (the sum over kernels of runs x median device time); and over the suite's floor, what it cannot avoid:
the wall time of a fresh ``pytest --collect-only`` process (interpreter, pytest, JAX, the test modules) plus the
compiles and the timed runs' wall clock; and over that floor with the tests' own work added (their setup, call and
teardown times as ``--durations`` gives them, less the time in roofline calls: making their inputs, their fixtures;
plus the "inputs" phase, the roofline calls' wait for those inputs), which no measurement could skip. Nothing is
asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from pytest_roofline.analysis.runs.time_spent import PHASES  # noqa: E402

# As a user's shell has it: compiled modules kept (a shell with PYTHONDONTWRITEBYTECODE compiles each every run).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
_DURATION = re.compile(r"^(\d+\.\d+)s (?:setup|call|teardown) ")
SHORT = {
    "compile": "compile",
    "inputs": "inputs",
    "hardware": "hw",
    "warm-up": "warm",
    "timed runs": "timed",
    "between runs": "loop",
    "references": "refs",
    "profiler": "prof",
    "trace reading": "trace",
    "cache state": "cache",
    "model": "model",
    "second measurement": "2nd",
    "second pass": "2ndpas",
    "artifacts": "artif",
    "everything else": "else",
}


def one_run(suite: str, extra: list[str]) -> tuple[float, list[dict], str, float]:
    """The process's wall time, the report's records, pytest's last line and the seconds in the tests (their setup,
    call and teardown, as ``--durations`` says)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "pytest", suite, "-q", "-rf", "-p", "no:cacheprovider",
                   f"--roofline-report={report}", "--durations=0", "--durations-min=0", *extra]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False, env=ENV)
        wall = time.perf_counter() - start
        if not report.exists():
            sys.exit(f"pytest wrote no report (exit status {done.returncode}):\n{done.stdout[-2000:]}{done.stderr}")
        records = json.loads(report.read_text())["results"]
    lines = done.stdout.strip().splitlines() or [""]
    last = lines[-1]
    for line in lines:
        if line.startswith("FAILED"):
            print(line[:300])
    in_tests = sum(float(m.group(1)) for m in map(_DURATION.match, lines) if m)
    return wall, records, last, in_tests


def in_timed_runs(record: dict) -> float:
    result = record["result"]
    return result["runs"] * result["device_time_s"]


def print_kernels(records: list[dict]) -> None:
    header = f"{'kernel':34} {'runs':>4} {'median':>8} " + " ".join(f"{SHORT[p]:>6}" for p in PHASES)
    print(header + f" {'total':>6}")
    for record in records:
        spent = record.get("time_spent") or {}
        result = record["result"]
        name = f"{record['nodeid'].split('::')[-1][:24]}[{record['label'][:8]}]"
        cells = " ".join(f"{spent.get(p, 0.0):6.2f}" for p in PHASES)
        print(f"{name:34} {result['runs']:4d} {result['device_time_s'] * 1e3:6.1f}ms {cells} "
              f"{sum(spent.values()):6.2f}")


def print_totals(wall: float, records: list[dict], last: str) -> dict[str, float]:
    totals = {p: sum((r.get("time_spent") or {}).get(p, 0.0) for r in records) for p in PHASES}
    in_kernels = sum(totals.values())
    totals["outside kernels"] = wall - in_kernels
    timed = sum(in_timed_runs(r) for r in records)
    print(f"\n{'phase':20} {'seconds':>8} {'share':>6}")
    for name, seconds in totals.items():
        print(f"{name:20} {seconds:8.2f} {seconds / wall:6.1%}")
    print(f"{'process wall time':20} {wall:8.2f}   ({last})")
    print(f"\nkernels: {len(records)}; time in timed runs (runs x median device time): {timed:.2f} s; "
          f"wall time / time in timed runs: {wall / timed:.1f}x")
    _slowest(records)
    return {**totals, "wall": wall, "timed": timed, "in kernels": in_kernels}


def collection_wall(suite: str, extra: list[str]) -> float:
    """A fresh process that collects the suite and runs nothing: interpreter, pytest, JAX and the test modules."""
    begun = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", suite, "-q", "-p", "no:cacheprovider", "--collect-only", *extra],
                   cwd=ROOT, capture_output=True, text=True, check=False, env=ENV)
    return time.perf_counter() - begun


def print_floor(totals: dict[str, float], collect: float, in_tests: float) -> tuple[float, float]:
    """The suite's wall time against what it cannot avoid: collection, the compiles and the timed runs; and with the
    tests' own work too: their time outside the roofline calls (their fixtures, the inputs they dispatch) and the
    "inputs" phase inside them (waiting for those arrays, which JAX computes asynchronously)."""
    floor = collect + totals["compile"] + totals["timed runs"]
    own = max(in_tests - totals["in kernels"], 0.0) + totals["inputs"]
    print(f"floor: collection {collect:.2f} s + compile {totals['compile']:.2f} s + timed runs "
          f"{totals['timed runs']:.2f} s = {floor:.2f} s; wall / floor: {totals['wall'] / floor:.2f}x")
    print(f"with the tests' own work ({in_tests:.2f} s in the tests, {totals['in kernels']:.2f} s of it in roofline "
          f"calls, {totals['inputs']:.2f} s of those waiting for the tests' inputs): {floor + own:.2f} s; "
          f"wall / that floor: {totals['wall'] / (floor + own):.2f}x")
    return totals["wall"] / floor, totals["wall"] / (floor + own)


def _slowest(records: list[dict]) -> None:
    # A kernel of about 10 ms (a run of 15 ms or less) whose whole measurement took over 1 s.
    slow = [
        r for r in records if r["result"]["device_time_s"] <= 0.015 and sum((r.get("time_spent") or {}).values()) > 1.0
    ]
    for r in slow:
        print(f"  over 1 s for a kernel of {r['result']['device_time_s'] * 1e3:.1f} ms: {r['nodeid']} [{r['label']}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default="example_suite")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    options = parser.parse_args()
    summaries, floors, own_floors = [], [], []
    for k in range(options.repeats):
        wall, records, last, in_tests = one_run(options.suite, options.pytest_args)
        collect = collection_wall(options.suite, options.pytest_args)
        print(f"\n== run {k + 1} of {options.repeats}: pytest {options.suite} ==")
        print_kernels(records)
        summaries.append(print_totals(wall, records, last))
        floor, with_own = print_floor(summaries[-1], collect, in_tests)
        floors.append(floor)
        own_floors.append(with_own)
    if options.repeats > 1:
        ratios = [s["wall"] / s["timed"] for s in summaries]
        print(f"\nwall / timed over {options.repeats} runs: median {statistics.median(ratios):.1f}x "
              f"(min {min(ratios):.1f}x, max {max(ratios):.1f}x); wall median "
              f"{statistics.median(s['wall'] for s in summaries):.1f} s; wall / floor: median "
              f"{statistics.median(floors):.2f}x (min {min(floors):.2f}x, max {max(floors):.2f}x); with the tests' own "
              f"work: median {statistics.median(own_floors):.2f}x (min {min(own_floors):.2f}x, "
              f"max {max(own_floors):.2f}x)")


if __name__ == "__main__":
    main()
