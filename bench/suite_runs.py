"""The example suite, run again and again: is its verdict the same every time, with or without a neighbour?

Run: python bench/suite_runs.py [--runs 10] [--calibrate]   (prints a table; nothing here is asserted)

Each run is ``pytest example_suite --roofline-report=...`` in a subprocess (``--roofline-calibrate`` too with
``--calibrate``: a fresh calibration every run). During every second run a neighbour process
is busy (bench/neighbours.py: a busy loop and a memory-copy loop, alternately). Per kernel: min / median / max
utilization over all runs (and min-median-max of the quiet runs and of those beside a neighbour), its
threshold, threshold / median, and how many runs failed it. Each run's line shows its calibrated f32 and memory
ceilings.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from neighbours import neighbour  # noqa: E402

from pytest_roofline.history.reports import load_run  # noqa: E402

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
    by_condition: dict[tuple[str, str], list[float]] = {}
    thresholds: dict[str, float | None] = {}
    failed: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(options.runs):
            report = Path(tmp) / f"run{run}.json"
            args = [sys.executable, "-m", "pytest", "example_suite", "-q", "-p", "no:cacheprovider",
                    f"--roofline-report={report}"] + (["--roofline-calibrate"] if options.calibrate else [])
            with condition(run) as where:
                done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
            records = load_run(report).records
            fails = [r.nodeid for r in records if r.verdict in ("fail", "wrong-bound", "impossible")]
            hardware = records[0].result.hardware if records else None
            f32 = hardware.peaks["f32"].value if hardware and "f32" in hardware.peaks else 0.0
            memory = hardware.memory_bandwidth.value if hardware else 0.0
            print(f"run {run + 1:2d} ({where:7}): exit {done.returncode}, {len(records)} kernels, "
                  f"ceilings f32 {f32 / 1e9:.0f} GFLOP/s, memory {memory / 1e9:.1f} GB/s; "
                  f"failed: {', '.join(fails) or 'none'}", flush=True)
            for r in records:
                name = f"{r.nodeid.split('::', 1)[1]} [{r.label}]"
                series.setdefault(name, []).append(r.result.utilization)
                side = "quiet" if where == "quiet" else "neighbour"
                by_condition.setdefault((name, side), []).append(r.result.utilization)
                thresholds[name] = r.threshold
                failed[name] = failed.get(name, 0) + (r.nodeid in fails)
    print(f"\n{'kernel':58} {'min':>6} {'median':>6} {'max':>6} {'quiet':>17} {'neighbour':>17} {'min':>5} "
          f"{'min/med':>7} {'fails':>5}")

    def span(values: list[float]) -> str:
        return f"{min(values):5.0%}-{statistics.median(values):3.0%}-{max(values):3.0%}" if values else "-"

    for name, values in sorted(series.items()):
        threshold = thresholds[name]
        mid = statistics.median(values)
        print(
            f"{name[:58]:58} {min(values):6.1%} {mid:6.1%} {max(values):6.1%} "
            f"{span(by_condition.get((name, 'quiet'), [])):>17} {span(by_condition.get((name, 'neighbour'), [])):>17} "
            f"{'-' if threshold is None else format(threshold, '.0%'):>5} "
            f"{'-' if threshold is None else format(threshold / mid, '.2f'):>7} {failed[name]:5d}"
        )


if __name__ == "__main__":
    main()
