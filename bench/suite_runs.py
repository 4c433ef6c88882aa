"""The example suite, run again and again: is its verdict the same every time, with or without a neighbour?

Run: python bench/suite_runs.py [--runs 10] [--calibrate]   (prints a table; nothing here is asserted)

Each run is ``pytest example_suite --roofline-report=...`` in a subprocess (``--roofline-calibrate`` too with
``--calibrate``: a fresh calibration every run, as issue 10 asked). During every second run a neighbour process
is busy (bench/neighbours.py: a busy loop and a memory-copy loop, alternately). Per kernel: min / median / max
utilization over all runs, its threshold, min / threshold as a margin, and how many runs failed it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from neighbours import neighbour  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def condition(run: int) -> Iterator[str]:
    if run % 2 == 0:
        yield "quiet"
        return
    kind = "busy" if run % 4 == 1 else "memcopy"
    with neighbour(kind, seconds=300):
        yield kind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--calibrate", action="store_true", help="--roofline-calibrate on every run")
    options = parser.parse_args()
    series: dict[str, list[float]] = {}
    thresholds: dict[str, float | None] = {}
    failed: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(options.runs):
            report = Path(tmp) / f"run{run}.json"
            args = [sys.executable, "-m", "pytest", "example_suite", "-q", "-p", "no:cacheprovider",
                    f"--roofline-report={report}"] + (["--roofline-calibrate"] if options.calibrate else [])
            with condition(run) as where:
                done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
            data: dict[str, Any] = json.loads(report.read_text())
            fails = [r["nodeid"] for r in data["results"] if r["verdict"] in ("fail", "wrong-bound", "impossible")]
            print(f"run {run + 1:2d} ({where:7}): exit {done.returncode}, {len(data['results'])} kernels, "
                  f"failed: {', '.join(fails) or 'none'}", flush=True)
            for r in data["results"]:
                name = f"{r['nodeid'].split('::', 1)[1]} [{r['label']}]"
                series.setdefault(name, []).append(r["result"]["utilization"])
                thresholds[name] = r["threshold"]
                failed[name] = failed.get(name, 0) + (r["nodeid"] in fails)
    print(f"\n{'kernel':70} {'min':>7} {'median':>7} {'max':>7} {'min':>7} {'min/med':>7} {'fails':>5}")
    for name, values in sorted(series.items()):
        threshold = thresholds[name]
        mid = statistics.median(values)
        print(f"{name:70} {min(values):7.1%} {mid:7.1%} {max(values):7.1%} "
              f"{'-' if threshold is None else format(threshold, '.0%'):>7} "
              f"{'-' if threshold is None else format(threshold / mid, '.2f'):>7} {failed[name]:5d}")


if __name__ == "__main__":
    main()
