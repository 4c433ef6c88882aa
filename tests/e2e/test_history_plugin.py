"""--roofline-history, --roofline-baseline and the report's session block, through the real hooks in process
with a fake measure (tests/support/fakes.py: constructed results of chosen utilizations, no JAX)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_SESSION_CONFTEST
from paths import SUPPORT

pytest_plugins = ["pytester"]

TWO = """
import pytest

@pytest.mark.roofline(min=0.2)
def test_a(roofline):
    roofline(len, 1)

def test_b(roofline):
    roofline(len, 1)
"""


def _run(pytester: pytest.Pytester, utils: str, body: str, *args: str) -> pytest.RunResult:
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils=utils))
    pytester.makepyfile(test_k=body)
    return pytester.runpytest("-p", "no:cacheprovider", "-vv", *args)  # -vv: the failures' full blocks


def _runs(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("roofline-*.json"))]


def test_every_run_adds_its_report_to_the_history(pytester: pytest.Pytester) -> None:
    for _ in range(2):
        _run(pytester, "0.6, 0.6", TWO, "--roofline-history=hist").assert_outcomes(passed=2)
    names = sorted(p.name for p in (pytester.path / "hist").iterdir())
    assert len(names) == 2 and all(n.startswith("roofline-") and "-nogit" in n for n in names)  # not a checkout
    run = _runs(pytester.path / "hist")[0]
    assert run["session"] == {"exit_status": 0, "exit_name": "OK", "tests_collected": 2, "tests_run": 2,
                              "complete": True, "why_incomplete": ""}


def test_a_run_stopped_by_x_says_it_is_incomplete(pytester: pytest.Pytester) -> None:
    body = TWO.replace("min=0.2", "min=0.9")  # test_a fails (0.5 twice), -x stops before test_b
    _run(pytester, "0.5, 0.5", body, "-x", "--roofline-report=r.json").assert_outcomes(failed=1)
    session = json.loads((pytester.path / "r.json").read_text())["session"]
    assert session["exit_name"] == "TESTS_FAILED" and not session["complete"]
    assert session["why_incomplete"] == "1 of 2 tests ran (stopping after 1 failures)"


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
def test_an_interrupted_run_says_so(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ctrl-C as a test raising KeyboardInterrupt, in a subprocess (in process it would interrupt this run)
    monkeypatch.setenv("PYTHONPATH", str(SUPPORT))
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.6, 0.6"))
    pytester.makepyfile(test_k=TWO + "\ndef test_c():\n    raise KeyboardInterrupt\n\ndef test_d():\n    pass\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--roofline-report=r.json")
    session = json.loads((pytester.path / "r.json").read_text())["session"]
    assert session["exit_status"] == 2 and not session["complete"]
    assert session["why_incomplete"].startswith("interrupted (exit status 2); 2 of 4 tests ran")


_NIGHTS: dict[str, bytes] = {}  # the reports of three nights of TWO at 60%, by file name, made by the first test


def _history(pytester: pytest.Pytester, nights: int = 3) -> None:
    """``nights`` runs of TWO at 60% in ``hist/``: the module's first call runs pytest three times, later ones copy
    those reports (the same runs, without running them again)."""
    if not _NIGHTS:
        for _ in range(3):
            _run(pytester, "0.6, 0.6", TWO, "--roofline-history=hist").assert_outcomes(passed=2)
        _NIGHTS.update((p.name, p.read_bytes()) for p in sorted((pytester.path / "hist").glob("roofline-*.json")))
        assert len(_NIGHTS) == 3
        for name in sorted(_NIGHTS)[nights:]:
            (pytester.path / "hist" / name).unlink()
        return
    (pytester.path / "hist").mkdir()
    for name in sorted(_NIGHTS)[:nights]:
        (pytester.path / "hist" / name).write_bytes(_NIGHTS[name])


def test_baseline_history_fails_a_dropped_kernel_with_both_figures(pytester: pytest.Pytester) -> None:
    _history(pytester)
    # test_a: 0.3 then 0.3 again when re-measured; test_b (no threshold): 0.58, within the gate
    result = _run(pytester, "0.3, 0.3, 0.58", TWO, "--roofline-baseline=hist", "--roofline-report=r.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*roofline: kernel 'len' of test_k.py::test_a: utilization 30.0% dropped 50.0% from the baseline's 60.0% "
        "(3 runs in hist, * to *), beyond its gate 5.0% (floor 5%; noise 0.0% over the runs); floor from the default "
        "(measured twice: 30.0%, then 30.0%)",
        "*  baseline      utilization 30.0% dropped 50.0%*"])
    records = json.loads((pytester.path / "r.json").read_text())["results"]
    assert [r["verdict"] for r in records] == ["regression", "measured"]
    assert records[0]["baseline"]["regressed"] and records[0]["baseline"]["runs"] == 3
    assert records[1]["baseline"]["drop"] == pytest.approx(1 - 0.58 / 0.6)
    result.stdout.fnmatch_lines(["test_k.py::test_a ?len?*regression (min 20%) (-50% vs baseline 60%)*"])


def test_baseline_gates_per_test_by_marker_and_yaml(pytester: pytest.Pytester) -> None:
    _history(pytester)
    pytester.makefile(".yaml", roofline='thresholds:\n  "*::test_b": {max_drop: 0.6}\n')
    body = TWO.replace("min=0.2", "min=0.2, max_drop=0.6")
    result = _run(pytester, "0.3, 0.3", body, "--roofline-baseline=hist", "--roofline-config=roofline.yaml")
    result.assert_outcomes(passed=2)


def test_measure_never_fails_on_a_drop(pytester: pytest.Pytester) -> None:
    body = "def test_a(roofline):\n    roofline.measure(len, 1)\n"
    for _ in range(3):
        _run(pytester, "0.6", body, "--roofline-history=hist").assert_outcomes(passed=1)
    result = _run(pytester, "0.1", body, "--roofline-baseline=hist", "--roofline-report=r.json")
    result.assert_outcomes(passed=1)
    (record,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert record["verdict"] == "measured" and record["baseline"]["regressed"]


def test_baseline_from_one_report_and_a_new_kernel(pytester: pytest.Pytester) -> None:
    _run(pytester, "0.6, 0.6", TWO, "--roofline-report=base.json").assert_outcomes(passed=2)
    body = TWO + "\ndef test_new(roofline):\n    roofline(len, 1)\n"
    # test_a 0.55: -8.3%, under the one-report floor of 10%; test_b 0.5: -16.7%, fails twice
    result = _run(pytester, "0.55, 0.5, 0.5, 0.6", body, "--roofline-baseline=base.json", "--roofline-report=r.json")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_b: utilization 50.0% dropped 16.7% from the baseline's 60.0% (report "
            "base.json, *), beyond its gate 10.0% (floor 10%; noise 0.0% from the 95% intervals); floor from the "
            "default for a one-run baseline*"
        ]
    )
    records = json.loads((pytester.path / "r.json").read_text())["results"]
    assert records[2]["baseline"] == {"missing": "no baseline for this kernel in base.json (a new kernel)"}


@pytest.mark.parametrize("content, fragment", [
    (None, "no such file"),
    ("{not json", "not a pytest-roofline report (not JSON"),
    ('{"a": 1}', "not a pytest-roofline report (no schema_version and results)"),
])
def test_a_missing_or_foreign_baseline_stops_the_run(pytester: pytest.Pytester, content: str | None,
                                                     fragment: str) -> None:
    if content is not None:
        pytester.makefile(".json", base=content)
    result = _run(pytester, "0.6", TWO, "--roofline-baseline=base.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --roofline-baseline=base.json on the command line: base.json: {fragment}*"])


def test_an_incomplete_report_is_no_baseline(pytester: pytest.Pytester) -> None:
    _run(pytester, "0.5, 0.5", TWO.replace("min=0.2", "min=0.9"), "-x", "--roofline-report=base.json")
    result = _run(pytester, "0.6", TWO, "--roofline-baseline=base.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*base.json: this report's run was incomplete (1 of 2 tests ran*); it cannot be "
                                 "a baseline"])


def test_bad_max_drop_values(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "0.6", TWO, "--roofline-max-drop=1.5")
    result.stderr.fnmatch_lines(["ERROR: --roofline-max-drop=1.5 on the command line: must be in (0, 1)*"])
    result = _run(pytester, "0.6", TWO.replace("min=0.2", "max_drop='x'"))
    result.stderr.fnmatch_lines(["*roofline marker of test_k.py::test_a: max_drop='x': must be a fraction in (0, 1)*"])


def test_html_report_at_the_end_of_a_run(pytester: pytest.Pytester) -> None:
    _history(pytester)
    result = _run(pytester, "0.6, 0.6", TWO, "--roofline-history=hist", "--roofline-html=out/r.html")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["roofline history: this run added as hist/roofline-*.json",
                                 "roofline HTML report written to out/r.html"])
    text = (pytester.path / "out" / "r.html").read_text()
    assert text.count('class="plotly-graph-div"') == 1 + 2  # roofline chart, a sparkline per kernel
    assert "4 runs" in text  # the history, this run included


def test_a_foreign_file_in_the_history_is_left_out_with_a_warning(pytester: pytest.Pytester) -> None:
    """One truncated file must not make the history unusable: the baseline and the HTML report read the rest."""
    _history(pytester, nights=2)
    (pytester.path / "hist" / "roofline-20260101T000000Z-cut.json").write_text('{"schema_version": 1, "resu')
    result = _run(pytester, "0.3, 0.3, 0.6", TWO, "--roofline-baseline=hist", "--roofline-history=hist",
                  "--roofline-html=r.html")
    result.assert_outcomes(passed=1, failed=1)  # test_a regressed against the two good runs
    result.stdout.fnmatch_lines([
        "*RooflineWarning: --roofline-baseline=hist on the command line: hist/roofline-20260101T000000Z-cut.json: "
        "not a pytest-roofline report (not JSON: *; left out of the history*",
        "roofline history: hist/roofline-20260101T000000Z-cut.json: not a pytest-roofline report*",
        "roofline HTML report written to r.html"])
    assert "3 runs" in (pytester.path / "r.html").read_text()  # two good ones and this run


def test_html_without_plotly_stops_the_run_at_start(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "plotly", None)  # as if not installed
    result = _run(pytester, "0.6", TWO, "--roofline-html=r.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --roofline-html=r.html on the command line: the HTML report needs plotly: "
                                 "pip install 'pytest-roofline[html]'"])


def test_a_drop_measured_on_a_contended_machine_warns_instead_of_failing(pytester: pytest.Pytester) -> None:
    """The same drop as above, but the (made-up) runs' threads waited for a CPU during 40% of their ready time."""
    _history(pytester)
    result = _run(pytester, "0.3, 0.3, 0.58, waiting=0.4", TWO, "--roofline-baseline=hist", "--roofline-report=r.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*dropped 50.0% from the baseline's 60.0%*not judged: measured on a contended "
                                 "machine*"])
    records = json.loads((pytester.path / "r.json").read_text())["results"]
    assert [r["verdict"] for r in records] == ["contended", "measured"]


RACE = """
import os, time
from pathlib import Path
from pytest_roofline.history import reports

_name = reports.history_name

def history_name(report):
    # Both runs get the same name (the same second), and neither writes before both have it.
    barrier = Path(os.environ["RACE_DIR"])
    (barrier / str(os.getpid())).touch()
    while len(arrived := list(barrier.iterdir())) < 2:
        time.sleep(0.001)
    start = max(p.stat().st_mtime for p in arrived) + 0.2  # then both go on within microseconds
    while time.time() < start:
        pass
    return "roofline-20261126T072050Z-nogit.json"

reports.history_name = history_name
"""


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
def test_two_runs_ending_in_the_same_second_keep_both_runs(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Two real pytest processes (a fake measure) writing one history directory at the same moment, under the same
    name: both runs are kept, each under the name it printed."""
    import os
    import subprocess
    import sys

    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.6, 0.6") + RACE)
    pytester.makepyfile(test_k=TWO)
    (tmp_path / "race").mkdir()
    env = {**os.environ, "RACE_DIR": str(tmp_path / "race"),
           "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--roofline-history=hist"]
    runs = [subprocess.Popen(command, cwd=pytester.path, env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(2)]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    names = sorted(p.name for p in (pytester.path / "hist").iterdir())
    assert names == ["roofline-20261126T072050Z-nogit-2.json", "roofline-20261126T072050Z-nogit.json"]
    assert (
        sorted(name for out in outputs for name in names if f"hist/{name}" in out or f"hist{os.sep}{name}" in out)
        == names
    )
