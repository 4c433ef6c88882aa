"""What ``--roofline-survey`` costs a test suite: the suite's wall time with and without it, in alternating runs.

Run: python bench/survey_cost.py [--rounds 3] [--cwd DIR] [--python PY] [--keep REPORT] [--no-first] [-- PYTEST ARGS]
(prints a table; --keep: where to copy the last survey's JSON report)

Each round runs ``PY -m pytest -q -p no:cacheprovider ARGS`` plainly and with ``--roofline-survey
--roofline-report=...`` (in alternating order), each in a fresh process, and times the whole process (start-up,
imports, collection, the tests, the survey's summary). A first survey run before the rounds finds the machine's
ceilings (a CPU calibrates once, then reads them from its cache): it is not counted. Per round: both wall times, the
factor, the outcomes of both runs (they must be the same: the survey changes no test's outcome) and the programs the
survey found. The default ARGS run the example suite.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_OUTCOME = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|deselected)")


def _run(python: str, cwd: Path, args: list[str]) -> tuple[float, dict[str, int], str]:
    begun = time.perf_counter()
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=cwd,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - begun
    last = [line for line in done.stdout.splitlines() if line.strip()][-1:] or [""]
    outcomes = {kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in _OUTCOME.findall(last[0])}
    return wall, outcomes, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cwd", default=str(ROOT))
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--keep", help="copy the last survey's JSON report here")
    parser.add_argument("--no-first", action="store_true",
                        help="no first survey run (the machine's ceilings are in the calibration cache already)")
    parser.add_argument("pytest_args", nargs="*", default=["example_suite"])
    options = parser.parse_args()
    cwd = Path(options.cwd)
    with tempfile.TemporaryDirectory() as tmp:
        report = str(Path(tmp) / "survey.json")
        surveyed = [*options.pytest_args, "--roofline-survey", f"--roofline-report={report}"]
        if not options.no_first:
            first, _, _ = _run(options.python, cwd, surveyed)
            print(f"first survey run (finds the ceilings; not counted): {first:.1f} s", flush=True)
        rows = []
        for r in range(options.rounds):
            order = [("plain", options.pytest_args), ("survey", surveyed)]
            got = {name: _run(options.python, cwd, args) for name, args in (order if r % 2 == 0 else order[::-1])}
            survey = json.loads(Path(report).read_text())["survey"]
            judged = sum(not p["small"] for p in survey["programs"])
            rows.append((got["plain"][0], got["survey"][0], got["plain"][1], got["survey"][1],
                         len(survey["programs"]), judged, survey["reading_s"]))
            p, s = rows[-1][0], rows[-1][1]
            print(f"round {r + 1}: plain {p:.1f} s, survey {s:.1f} s, factor {s / p:.2f}; outcomes plain "
                  f"{rows[-1][2]} survey {rows[-1][3]}{'' if rows[-1][2] == rows[-1][3] else '  DIFFERENT'}; "
                  f"{rows[-1][4]} programs ({judged} judged), {rows[-1][6]:.1f} s reading", flush=True)
        if options.keep:
            shutil.copyfile(report, options.keep)
    factors = [s / p for p, s, *_ in rows]
    print(f"\n{'runs':>4}  {'plain median':>12}  {'survey median':>13}  {'factor median':>13}  {'factor max':>10}  "
          f"outcomes")
    same = all(r[2] == r[3] for r in rows)
    plain, survey = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
    print(f"{len(rows):>4}  {plain:>11.1f}s  {survey:>12.1f}s  {statistics.median(factors):>13.2f}  "
          f"{max(factors):>10.2f}  {'the same' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
