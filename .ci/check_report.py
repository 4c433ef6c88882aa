"""CI's check of the example suite's report, run with warn-only verdicts on hardware it was not tuned on: a
shortfall is shown, not failed, but an impossible result (faster than the roofline allows), a kernel that could
not be measured, a run that did not complete or an empty report fails CI.

    python .ci/check_report.py REPORT.json
"""

from __future__ import annotations

import sys

from pytest_roofline.history.reports import Run, load_run


def problems(path: str) -> list[str]:
    return run_problems(load_run(path))


def run_problems(run: Run) -> list[str]:
    found = [f"{rec.nodeid} [{rec.label}]: impossible ({rec.utilization:.1%} of the roofline)" for rec in run.records
             if rec.verdict == "impossible"]
    found += [f"{u.nodeid} [{u.label}]: cannot be measured: {u.error}" for u in run.unmeasured]
    if not run.complete:
        found.append(f"the run did not complete: {run.why_incomplete}")
    if not run.records:
        found.append("no kernel was measured")
    return found


def main() -> int:
    path = sys.argv[1]
    run = load_run(path)
    found = run_problems(run)
    for line in found:
        print(f"{path}: {line}", file=sys.stderr)
    if not found:
        verdicts = sorted({rec.verdict for rec in run.records})
        print(f"{path}: {len(run.records)} kernels measured, none impossible or unmeasured "
              f"(verdicts: {', '.join(verdicts)})")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
