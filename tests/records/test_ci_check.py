"""CI's check of the example suite's report (.ci/check_report.py) on constructed reports (records of fake
results, tests/support/fakes.py): warn-only shortfalls pass, an impossible result, an unmeasured kernel, an incomplete
run or an empty report fail."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from fakes import fake_result, record_of
from paths import ROOT

from pytest_roofline.base.kinds import Verdict
from pytest_roofline.records.kernel_record import Unmeasured
from pytest_roofline.report.document import report_document, session_block

SCRIPT = ROOT / ".ci" / "check_report.py"


def _check() -> Any:
    spec = importlib.util.spec_from_file_location("check_report", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _report(tmp_path: Path, verdicts: dict[str, tuple[float, Verdict]], unmeasured: tuple[Unmeasured, ...] = (),
            complete: bool = True) -> str:
    records = [record_of(f"example_suite/t.py::{name}", "k", fake_result(u, name="k"), verdict, threshold=0.5)
               for name, (u, verdict) in verdicts.items()]
    n = len(verdicts) + len(unmeasured)
    provenance = {"session": session_block(0 if complete else 2, n, n if complete else 0)}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report_document(records, {}, "2026-11-23T00:00:00+00:00", provenance, unmeasured)))
    return str(path)


def test_warn_only_shortfalls_pass(tmp_path: Path) -> None:
    path = _report(tmp_path, {"test_a": (0.2, "fail"), "test_b": (0.9, "pass")})
    assert _check().problems(path) == []


def test_impossible_unmeasured_incomplete_and_empty_fail(tmp_path: Path) -> None:
    check = _check()
    path = _report(tmp_path, {"test_a": (1.6, "impossible")}, (Unmeasured("example_suite/t.py::test_c", "k", "boom"),))
    assert check.problems(path) == ["example_suite/t.py::test_a [k]: impossible (160.0% of the roofline)",
                                    "example_suite/t.py::test_c [k]: cannot be measured: boom"]
    incomplete = check.problems(_report(tmp_path, {"test_a": (0.9, "pass")}, complete=False))
    assert len(incomplete) == 1 and incomplete[0].startswith("the run did not complete")
    assert check.problems(_report(tmp_path, {})) == ["no kernel was measured"]
