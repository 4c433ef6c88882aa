"""The typed record: what the plugin keeps for a kernel is what a report file gives back, field for field, and
every reader shows the same text for both. Made-up results (tests/support/fakes.py) with every optional part set
(tests/support/rich_fakes.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CPU, fake_result, record_of
from rich_fakes import rich_record

from pytest_roofline.hardware.spec import HardwareSpec
from pytest_roofline.history.reports import ReportError, load_run
from pytest_roofline.records.kernel_record import KernelRecord
from pytest_roofline.records.series_judgement import BaselineCheck, NoBaseline
from pytest_roofline.report.document import report_document
from pytest_roofline.report.failure import failure_message
from pytest_roofline.report.text import summary_lines
from pytest_roofline.result.recorded_result import RecordedResult


def _through_json(record: KernelRecord) -> KernelRecord:
    return KernelRecord.from_dict(json.loads(json.dumps(record.to_dict())))


def test_a_record_read_back_from_json_equals_the_one_kept() -> None:
    record = rich_record()
    again = _through_json(record)
    assert again == record
    assert again.to_dict() == json.loads(json.dumps(record.to_dict()))
    # The optional parts came back typed, not as dicts.
    r = again.result
    assert isinstance(r.hardware, HardwareSpec) and r.hardware.memory_capacity == FAKE_CPU.memory_capacity
    assert r.live is not None and r.live.drift == pytest.approx(0.95)
    assert r.first_touch is not None and r.first_touch.charged_bytes == pytest.approx(200 * 4096)
    assert [op.name for op in r.ops] == ["fusion.1", "copy.2"] and r.ops[1].measured_s is None
    assert r.ops_check is not None and not r.ops_check.ok
    assert r.memory is not None and r.memory.device_peak == 9_000_000
    assert isinstance(again.baseline, BaselineCheck) and again.baseline.regressed
    assert again.baseline.message() == record.baseline.message()  # type: ignore[union-attr]
    assert again.max_memory is not None and again.max_memory.limit_bytes == pytest.approx(0.5e9)


def test_the_record_s_json_keys_are_the_schema_s() -> None:
    """Schema 1: the keys every report has had, plus the optional ones only where set."""
    plain = record_of("t.py::test_k", "k", fake_result(0.5), "measured").to_dict()
    assert set(plain) == {"nodeid", "label", "threshold", "threshold_origin", "verdict", "expected_bound",
                          "first_utilization", "warn_only", "model", "result"}
    assert plain["result"] == json.loads(json.dumps(fake_result(0.5).to_dict()))
    full = rich_record().to_dict()
    assert set(full) - set(plain) == {"baseline", "max_memory", "trace_dir", "hlo", "perfetto", "xplane"}
    assert full["baseline"]["regressed"] is True and full["max_memory"]["ok"] is True


def test_every_reader_shows_the_same_text_for_a_record_and_its_json() -> None:
    record = rich_record()
    again = _through_json(record)
    assert failure_message(again, "below", full=True) == failure_message(record, "below", full=True)
    assert summary_lines([again]) == summary_lines([record])
    message = failure_message(record, "below", full=True)
    for shown in ("live          the machine ran at 95%", "first touch", "contended", "baseline      utilization 60.0%",
                  "re-measured   first run 58.0%", "counts check  per-op sums differ", "hint          donate the input",
                  "note          a note", "trace         /traces/k", "device peak 9 MB (allocator)"):
        assert shown in message, shown


def test_one_place_says_which_utilization_a_record_was_judged_on() -> None:
    program = record_of("t.py::test_k", "k", fake_result(0.5), "pass", 0.4)
    ops = replace(program, model="ops")
    assert program.utilization == pytest.approx(0.5)
    assert ops.utilization == program.result.ops_utilization == 0.0  # the fake has no op rows
    assert program.key != ops.key and ops.key.model == "ops"


def test_a_missing_baseline_reads_back_as_the_reason() -> None:
    record = replace(rich_record(), baseline=NoBaseline("no baseline for this kernel in b.json (a new kernel)"))
    again = _through_json(record)
    assert isinstance(again.baseline, NoBaseline) and again.baseline.new_kernel


@pytest.mark.parametrize(("change", "named"), [
    (lambda d: d["result"].update(bound="sideways"), "bound 'sideways'"),
    (lambda d: d["result"].pop("device_time_s"), "device_time_s"),
    (lambda d: d.update(verdict="great"), "verdict 'great'"),
    (lambda d: d["result"]["hardware"].pop("memory_bandwidth_bytes_per_s"), "memory_bandwidth_bytes_per_s"),
    (lambda d: d["result"].update(impossible="no"), "impossible 'no'"),
    (lambda d: d["result"].update(timer="sundial"), "timer 'sundial'"),
])
def test_a_malformed_record_in_a_report_names_the_result_and_the_field(tmp_path: Path, change: Any,
                                                                        named: str) -> None:
    data = report_document([rich_record()], {}, "2026-11-23T00:00:00+00:00", {})
    change(data["results"][0])
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ReportError) as info:
        load_run(path)
    assert str(info.value).startswith(f"{path}: result 0 is malformed") and named in str(info.value)


def test_a_report_from_before_the_optional_fields_still_reads(tmp_path: Path) -> None:
    """An older report: no memory, first touch, contention, ops, live or versions keys in its results."""
    data = report_document([record_of("t.py::test_k", "k", fake_result(0.5, footprint=None), "pass", 0.4)], {},
                           "2026-11-23T00:00:00+00:00", {})
    for key in ("memory", "first_touch", "contended", "cpu_waiting", "ops", "live", "versions", "ops_check", "hints",
                "no_work", "utilization_interval", "first_touch_beaten", "suspect", "marginal"):
        data["results"][0]["result"].pop(key)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    (record,) = load_run(path).records
    assert record.utilization == pytest.approx(0.5) and record.key.jax == "?" and record.result.memory is None
    assert "roofline" in failure_message(record, "shown", full=True)






@pytest.mark.slow  # one real measurement: about 2 s
def test_a_record_of_a_real_result_is_what_its_json_reads_back() -> None:
    # The record is built from the typed result (no JSON inside the process); its JSON form, written only at the
    # file, reads back to the same figures. The hardware's JSON leaves out what only a live process has (the
    # device kinds it matched, the reference kernels' rates): compared as its JSON.
    import jax.numpy as jnp

    from pytest_roofline import measure

    result = measure(lambda x: jnp.tanh(x) @ x, jnp.ones((128, 128)), max_runs=6, name="real")
    kept = RecordedResult.of(result)
    again = RecordedResult.from_dict(json.loads(json.dumps(kept.to_dict())))
    assert not kept.json and again.json == kept.to_dict()  # the one measured is written from its figures
    assert replace(kept, hardware=again.hardware) == again
    assert kept.hardware.to_dict() == again.hardware.to_dict()
    assert kept.ops and kept.census is not None and kept.live is not None  # the optional parts were there to compare
















