"""A busy machine never makes the plugin lie: the example suite (and the framework kernels of tests/frameworks,
where flax, optax, equinox and diffrax are installed) measured quietly, then beside busy processes (two per core:
half spinning in a Python loop, half streaming a 256 MiB array through memory), then once more beside them from an
empty calibration cache, so that the calibration itself is made beside them.

Per kernel: utilization and verdict quietly, beside the neighbours, and beside them on a calibration made there;
the ceilings of both calibrations and whether each was cached; then the two counts that must be 0: kernels that
pass quietly and fail beside the neighbours, and figures above 105% shown without a flag (impossible, suspect,
faults cheaper).

    python bench/busy_neighbours.py [--keep DIR] [--no-frameworks]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STREAM_MIB = 256


def spin(stop: Any) -> None:
    while not stop.is_set():
        sum(range(10_000))


def stream(stop: Any) -> None:
    import numpy as np

    a = np.ones(STREAM_MIB * 2**20 // 8)
    b = np.empty_like(a)
    while not stop.is_set():
        np.copyto(b, a)
        np.copyto(a, b)


def neighbours(count: int) -> tuple[Any, list[Any]]:
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    procs = [ctx.Process(target=spin if i % 2 == 0 else stream, args=(stop,), daemon=True) for i in range(count)]
    for p in procs:
        p.start()
    time.sleep(2.0)  # the streams have their arrays
    return stop, procs


def run_suite(groups: list[list[str]], report: Path, cache: Path) -> tuple[dict[str, Any], float, str]:
    """Each group of test paths in its own pytest process (the example suite's conftest and the tests' share a
    module name), one after the other; their results as one report."""
    env = {**os.environ, "PYTEST_ROOFLINE_CACHE_DIR": str(cache)}
    merged: dict[str, Any] = {"results": []}
    said: list[str] = []
    start = time.perf_counter()
    for i, targets in enumerate(groups):
        part = report.with_suffix(f".{i}.json")
        done = subprocess.run([sys.executable, "-m", "pytest", *targets, "-q", "-p", "no:cacheprovider",
                               f"--roofline-report={part}"], cwd=ROOT, env=env, capture_output=True, text=True)
        if not part.exists() or not json.loads(part.read_text())["results"]:
            print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"pytest {' '.join(targets)} measured nothing (exit {done.returncode})")
        merged["results"] += json.loads(part.read_text())["results"]
        said += [line for line in done.stdout.splitlines() if line.startswith("roofline: CPU")][:1]
        said += [line for line in done.stderr.splitlines() if "calibrat" in line]
    report.write_text(json.dumps(merged))
    return merged, time.perf_counter() - start, "\n".join(said)


def flagged(result: dict[str, Any]) -> bool:
    return bool(result.get("impossible") or result.get("suspect") or result.get("first_touch_beaten"))


def table(runs: dict[str, dict[str, Any]]) -> tuple[list[str], int, int]:
    rows = {}
    for way, report in runs.items():
        for rec in report["results"]:
            rows.setdefault(f"{rec['nodeid'].split('::')[-1]} [{rec['label']}]", {})[way] = rec
    lines = ["| kernel | " + " | ".join(runs) + " |", "|---" * (len(runs) + 1) + "|"]
    pass_then_fail = unflagged = 0
    for name, found in sorted(rows.items()):
        cells = []
        for way in runs:
            rec = found.get(way)
            if rec is None:
                cells.append("-")
                continue
            r = rec["result"]
            high = r["utilization"] > 1.05 and not flagged(r)
            unflagged += high
            mark = " UNFLAGGED ABOVE 105%" if high else (" [flagged]" if flagged(r) else "")
            cells.append(f"{r['utilization']:.1%} {rec['verdict']}{mark}")
        quiet, busy = found.get("quiet"), found.get("busy")
        if quiet and busy and quiet["verdict"] == "pass" and busy["verdict"] in ("fail", "regression"):
            pass_then_fail += 1
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines, pass_then_fail, unflagged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="a folder to keep the reports and caches in")
    parser.add_argument("--no-frameworks", action="store_true", help="the example suite only")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="busy-neighbours-"))
    work.mkdir(parents=True, exist_ok=True)
    targets = [["example_suite"]]
    if not args.no_frameworks and all(importlib.util.find_spec(m) for m in ("equinox", "optax", "diffrax")):
        targets.append(["tests/frameworks/test_equinox.py", "tests/frameworks/test_diffrax.py"])
    quiet_cache, busy_cache = work / "cache-quiet", work / "cache-busy"
    runs: dict[str, dict[str, Any]] = {}
    runs["quiet"], quiet_s, quiet_said = run_suite(targets, work / "quiet.json", quiet_cache)
    count = 2 * (os.cpu_count() or 1)
    stop, procs = neighbours(count)
    try:
        runs["busy"], busy_s, busy_said = run_suite(targets, work / "busy.json", quiet_cache)
        runs["busy, calibrated beside them"], cal_s, cal_said = run_suite(targets, work / "busy-cal.json", busy_cache)
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=10)
    lines, pass_then_fail, unflagged = table(runs)
    print(
        f"targets: {' '.join(t for group in targets for t in group)}; neighbours: {count} ({count // 2} spinning, "
        f"{count - count // 2} streaming "
        f"{STREAM_MIB} MiB)"
    )
    print(f"quiet run {quiet_s:.0f} s; beside the neighbours {busy_s:.0f} s; beside them, calibrating there "
          f"{cal_s:.0f} s")
    print(f"quiet calibration: {quiet_said}")
    print(f"beside the neighbours, on the quiet calibration: {busy_said}")
    print(f"calibrated beside the neighbours: {cal_said}")
    print(f"cached: quiet {len(list(quiet_cache.glob('calibration-*.json')))} file(s); "
          f"beside the neighbours {len(list(busy_cache.glob('calibration-*.json')))} file(s)")
    print("\n".join(lines))
    print(f"kernels that pass quietly and fail beside the neighbours: {pass_then_fail}")
    print(f"figures above 105% shown without a flag: {unflagged}")
    print(f"reports in {work}")


if __name__ == "__main__":
    main()
