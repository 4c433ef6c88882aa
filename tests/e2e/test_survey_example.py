"""``--roofline-survey`` on the example suite, whose programs are known (real kernels, real profiles, the machine's
own ceilings): every program a roofline fixture measured is found in the survey, under the test that ran it, and
where the fixture counted the compiled program (not counts the test states, nor a Pallas kernel's cost estimate)
the survey's counts as it ran are the fixture's. The fixture's verdicts are warnings here: this machine is not the
hardware the suite's thresholds were set on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from paths import ROOT

pytestmark = pytest.mark.slow


def test_the_survey_finds_every_program_the_example_suite_measures_with_its_counts(tmp_path: object) -> None:
    report = os.path.join(str(tmp_path), "r.json")
    run = subprocess.run([sys.executable, "-m", "pytest", "example_suite", "-q", "-p", "no:cacheprovider",
                          "--roofline-survey", f"--roofline-report={report}", "--roofline-warn-only"],
                         cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "roofline survey (worst first by time lost)" in run.stdout
    data = json.loads(open(report).read())
    survey, results = data["survey"], data["results"]
    assert len(results) >= 17
    fingerprints = Counter((p["platform"], p["fingerprint"]) for p in survey["programs"])
    assert max(fingerprints.values()) == 1  # each compiled program once
    compared = 0
    for record in results:
        r = record["result"]
        found = [p for p in survey["programs"] if p["module"] == r["module_name"] and record["nodeid"] in p["tests"]]
        assert found, f"{record['nodeid']} [{record['label']}]: {r['module_name']} not in the survey"
        if r["flops_source"] == "compiler" and r["bytes_source"] == "compiler":
            assert any(p["flops"] == r["flops"] and p["bytes_accessed"] == pytest.approx(r["bytes_accessed"], rel=1e-3)
                       for p in found), (record["nodeid"], r["flops"], r["bytes_accessed"], found)
            compared += 1
    assert compared >= 12
