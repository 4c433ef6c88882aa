"""The hooks a suite implements in its conftest.py (plugin/hookspecs.py, docs/hooks.md), each in a conftest as a user
writes it. The plugin runs for real, in process, with a FAKE measurement and FAKE hardware detection
(tests/support/fakes.py: made-up utilizations on a made-up CPU); a real measurement against a hook's hardware entry is
tests/e2e/test_plugin_config.py's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import FAKE_SESSION_CONFTEST

pytest_plugins = ["pytester"]

TESTS = """
import pytest

@pytest.mark.roofline(min=0.2)
def test_a(roofline):
    roofline(len, 1, name="plain")
    roofline(len, 1, name="low")

def test_b(roofline):
    roofline(len, 1, name="mapped")
"""

# The suite's own table (docs/hooks.md's example): thresholds by test and kernel; what the plugin gave is logged.
THRESHOLD_HOOK = """
import json

TABLE = {("test_a", "low"): 0.9, ("test_b", "mapped"): {"cpu": 0.3, "H100 SXM": 0.8}}

def pytest_roofline_threshold(config, nodeid, label, threshold):
    with open("asked.jsonl", "a") as log:
        log.write(json.dumps([nodeid, label, threshold]) + "\\n")
    return TABLE.get((nodeid.split("::")[-1], label))
"""


def _run(pytester: pytest.Pytester, hooks: str, utils: str, *args: str) -> pytest.RunResult:
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils=utils) + hooks)
    pytester.makepyfile(test_k=TESTS)
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_a_threshold_from_the_suites_table_is_judged_on_and_named(pytester: pytest.Pytester) -> None:
    """Made-up utilizations of 0.5 each: ``plain`` keeps its marker's 20%, ``low`` fails the 90% the hook gives
    (measured twice; its origin named), and ``mapped`` is judged on the mapping's CPU entry, 30%."""
    result = _run(pytester, THRESHOLD_HOOK, "0.5, 0.5, 0.5, 0.5", "--roofline-report=r.json")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*kernel 'low'*below its threshold 90%*"])
    asked = [json.loads(line) for line in (pytester.path / "asked.jsonl").read_text().splitlines()]
    assert asked == [["test_k.py::test_a", "plain", 0.2], ["test_k.py::test_a", "low", 0.2],
                     ["test_k.py::test_b", "mapped", None]]  # what the call, marker or settings gave
    records = {r["label"]: r for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    assert records["low"]["threshold"] == 0.9 and records["low"]["verdict"] == "fail"
    assert records["low"]["threshold_origin"] == "the pytest_roofline_threshold hook for test_k.py::test_a [low]"
    assert records["plain"]["threshold"] == 0.2 and records["plain"]["verdict"] == "pass"
    assert records["mapped"]["threshold"] == 0.3 and records["mapped"]["verdict"] == "pass"


def test_a_bad_threshold_from_the_hook_fails_the_test_naming_the_hook(pytester: pytest.Pytester) -> None:
    bad = "\ndef pytest_roofline_threshold(config, nodeid, label, threshold):\n    return 1.5\n"
    result = _run(pytester, bad, "0.5, 0.5, 0.5")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*roofline: the pytest_roofline_threshold hook for test_k.py::test_a [[]plain[]]: "
                                 "returned 1.5*"])


# A store of the suite's own (docs/hooks.md's example posts each record; here it appends it to a file), and a test
# that reads the store right after its call: the record is there as soon as it is made.
RECORD_HOOK = """
import json

def pytest_roofline_record(config, record):
    with open("store.jsonl", "a") as store:
        store.write(json.dumps({"test": record.nodeid, "kernel": record.label, "verdict": record.verdict,
                                "utilization": record.utilization, "json": record.to_dict()["label"]}) + "\\n")
"""
READS_THE_STORE = """

def test_c(roofline):
    roofline(len, 1, name="seen")
    with open("store.jsonl") as store:
        assert json.loads(store.read().splitlines()[-1])["kernel"] == "seen"
"""


def test_each_record_reaches_the_hook_as_it_is_made(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.5, 0.1, 0.1, 0.5, 0.5") + RECORD_HOOK)
    pytester.makepyfile(test_k="import json\n" + TESTS + READS_THE_STORE)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)  # test_a's low is at 10% twice, below its marker's 20%
    stored = [json.loads(line) for line in (pytester.path / "store.jsonl").read_text().splitlines()]
    assert [(s["test"].split("::")[1], s["kernel"], s["verdict"]) for s in stored] == [
        ("test_a", "plain", "pass"), ("test_a", "low", "fail"), ("test_b", "mapped", "measured"),
        ("test_c", "seen", "measured")]
    assert stored[1]["utilization"] == pytest.approx(0.1) and all(s["json"] == s["kernel"] for s in stored)


HARDWARE_HOOK = """
def pytest_roofline_hardware(config):
    return {"Lab CPU": {"platform": "cpu", "device_kinds": ["cpu"], "read": "2026-11-27",
                        "peak_tflops": {"f32": 1.2}, "memory_gbps": 80},
            "H100 SXM": {"memory_gbps": 3000}}
"""


def test_hardware_entries_from_the_hook_are_in_the_table(pytester: pytest.Pytester) -> None:
    """A forced hardware name (without the hook, a usage error) and a threshold mapping may name the hook's entry;
    a table entry it changes keeps the figures it does not give."""
    from pytest_roofline.hardware.table import HardwareEntries, load_shipped_table, merge_overrides

    marked = "\n@pytest.mark.roofline(min={'Lab CPU': 0.9, 'cpu': 0.3})\ndef test_d(roofline):\n    roofline(len, 1)\n"
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.5") + HARDWARE_HOOK)
    pytester.makepyfile(test_k="import pytest\n" + marked)
    pytester.runpytest("-p", "no:cacheprovider", "--roofline-hardware=Lab CPU").assert_outcomes(passed=1)
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.5"))
    refused = pytester.runpytest("-p", "no:cacheprovider", "--roofline-hardware=Lab CPU")
    refused.stderr.fnmatch_lines(["*no hardware named 'Lab CPU' in the table*"])
    shipped = load_shipped_table()["H100 SXM"]
    table = merge_overrides(load_shipped_table(), HardwareEntries({"H100 SXM": {"memory_gbps": 3000}}, "a hook"))
    changed = table["H100 SXM"]
    assert changed.memory_bandwidth.value == 3000e9 and changed.peaks == shipped.peaks


def test_a_bad_hardware_entry_stops_the_run_naming_the_hook(pytester: pytest.Pytester, tmp_path: Path) -> None:
    bad = HARDWARE_HOOK.replace('"memory_gbps": 80', '"memory_gbps": -1')
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.5") + bad)
    pytester.makepyfile(test_k=TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--roofline-min=0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the pytest_roofline_hardware hook: Lab CPU.memory_gbps: must be a positive*"])
    listed = "\ndef pytest_roofline_hardware(config):\n    return ['Lab CPU']\n"
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.5") + listed)
    result = pytester.runpytest("-p", "no:cacheprovider", "--roofline-min=0.1")
    result.stderr.fnmatch_lines(["*the pytest_roofline_hardware hook returned list, not a mapping of device names*"])


RAISES = "\ndef {hook}({args}):\n    raise {error}\n"


@pytest.mark.parametrize(("hook", "args", "said"), [
    ("pytest_roofline_threshold", "config, nodeid, label, threshold",
     "*roofline: the pytest_roofline_threshold hook raised KeyError: 'lab table' (*conftest.py:*)*"),
    ("pytest_roofline_record", "config, record",
     "*roofline: kernel 'plain' of test_k.py::test_a: the pytest_roofline_record hook raised KeyError: 'lab table' "
     "(*conftest.py:*)*"),
])
def test_a_hook_that_raises_fails_the_test_naming_the_hook_and_its_line(pytester: pytest.Pytester, hook: str,
                                                                         args: str, said: str) -> None:
    """Before, the error came through the plugin's frames with no line naming the hook."""
    result = _run(pytester, RAISES.format(hook=hook, args=args, error="KeyError('lab table')"), "0.5, 0.5, 0.5")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([said])
    assert "pytest_roofline/plugin" not in result.stdout.str()


def test_a_report_hook_that_raises_keeps_the_report_the_summary_and_pytests_last_line(
        pytester: pytest.Pytester) -> None:
    """Before, the summary, the report and pytest's own last line were lost (an INTERNALERROR)."""
    result = _run(pytester, RAISES.format(hook="pytest_roofline_report", args="config, report",
                                          error="RuntimeError('upload failed')"), "0.5, 0.5, 0.5",
                  "--roofline-report=r.json")
    result.stdout.fnmatch_lines(["*roofline summary*", "roofline: the pytest_roofline_report hook raised RuntimeError: "
                                 "upload failed (*conftest.py:*)", "*2 passed*"])
    assert json.loads((pytester.path / "r.json").read_text())["results"]
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR and "INTERNALERROR" not in result.stdout.str()


def test_a_hardware_hook_that_raises_stops_the_run_naming_it(pytester: pytest.Pytester) -> None:
    """Before: an INTERNALERROR through the plugin's frames."""
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.5")
                          + RAISES.format(hook="pytest_roofline_hardware", args="config", error="OSError('no lab')"))
    pytester.makepyfile(test_k=TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "--roofline-min=0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the pytest_roofline_hardware hook raised OSError: no lab (*conftest.py:*)*"])
