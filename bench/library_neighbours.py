"""Kernels whose work goes to a library's own threads or to XLA's, quiet and beside busy neighbours: each kernel's
device time, utilization with its 95% interval, verdict, the share of their ready time its threads waited for a
CPU other processes held, and whether the live ceilings were used or set aside (and why). The neighbours are
``bench/busy_neighbours.py``'s: half spinning in a Python loop, half streaming a 256 MiB array through memory.

    python bench/library_neighbours.py TESTS [--neighbours 2 4] [-- PYTEST_ARGS...]

TESTS is a pytest target of roofline tests (a file of kernels from the libraries at hand). Prints a table per
setting and the two counts that must be 0: kernels that pass quietly and fail beside the neighbours, and figures
above 105% shown without a flag. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from busy_neighbours import flagged, neighbours  # noqa: E402


def run(target: str, extra: list[str], report: Path) -> list[dict[str, Any]]:
    command = [sys.executable, "-m", "pytest", target, "-q", "-p", "no:cacheprovider", "-W", "ignore",
               f"--roofline-report={report}", *extra]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if not report.exists():
        sys.exit(f"pytest wrote no report (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    records: list[dict[str, Any]] = json.loads(report.read_text())["results"]
    return records


def cell(rec: dict[str, Any]) -> str:
    r = rec["result"]
    low, high = r.get("utilization_interval") or (r["utilization"], r["utilization"])
    waited = f"{r['cpu_waiting']:.0%}" if r.get("cpu_waiting") is not None else "-"
    live = "live" if r.get("live") else "calibrated"
    flag = " UNFLAGGED ABOVE 105%" if r["utilization"] > 1.05 and not flagged(r) else ""
    return (f"{r['device_time_s'] * 1e3:.1f} ms, {r['utilization']:.1%} [{low:.0%}-{high:.0%}] {rec['verdict']}{flag}, "
            f"waited {waited}, {live}")


def set_aside(rec: dict[str, Any]) -> str:
    notes = rec["result"].get("notes") or []
    return next((n for n in notes if n.endswith("calibrated ceilings used")), "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests")
    parser.add_argument("--neighbours", type=int, nargs="+", default=[2, 4])
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="library-neighbours-"))
    settings: dict[str, list[dict[str, Any]]] = {"quiet": run(args.tests, args.pytest_args, work / "quiet.json")}
    for count in args.neighbours:
        stop, procs = neighbours(count)
        try:
            settings[f"{count} neighbours"] = run(args.tests, args.pytest_args, work / f"busy-{count}.json")
        finally:
            stop.set()
            for p in procs:
                p.join(timeout=10)
    names = {f"{r['nodeid'].split('::')[-1]} [{r['label']}]": r["threshold"] for recs in settings.values()
             for r in recs}
    pass_then_fail = unflagged = 0
    for name, threshold in names.items():
        print(f"\n{name} (min {threshold:.0%})")
        quiet = None
        for setting, recs in settings.items():
            rec = next((r for r in recs if f"{r['nodeid'].split('::')[-1]} [{r['label']}]" == name), None)
            if rec is None:
                print(f"  {setting:<13} -")
                continue
            print(f"  {setting:<13} {cell(rec)}")
            if why := set_aside(rec):
                print(f"  {'':<13} {why}")
            unflagged += rec["result"]["utilization"] > 1.05 and not flagged(rec["result"])
            quiet = rec if setting == "quiet" else quiet
            if setting != "quiet" and quiet and quiet["verdict"] == "pass" and rec["verdict"] == "fail":
                pass_then_fail += 1
    print(f"\nkernels that pass quietly and fail beside the neighbours: {pass_then_fail}")
    print(f"figures above 105% shown without a flag: {unflagged}")


if __name__ == "__main__":
    main()
