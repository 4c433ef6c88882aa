"""A made-up record with every optional part set, shared by the tests of the records, the report and the result."""

from __future__ import annotations

from dataclasses import replace

from fakes import FAKE_CPU, FAKE_FOOTPRINT, fake_result, record_of

from pytest_roofline.analysis.model.compiler_agreement import OpsCheck
from pytest_roofline.analysis.model.first_touch import FirstTouch
from pytest_roofline.analysis.model.live import Live
from pytest_roofline.analysis.model.per_op import OpRow, OpsModel
from pytest_roofline.analysis.program.memory import MemoryLimit, check_memory
from pytest_roofline.analysis.verdict.regressions import gate
from pytest_roofline.hardware.spec import Ceiling
from pytest_roofline.records.kernel_record import Artifacts, KernelRecord
from pytest_roofline.records.series_judgement import BaselineCheck
from pytest_roofline.result.result import Result

RATE = Ceiling(4e9, "calibration", "made up", "2026-11-23")


def _op(name: str, measured: float | None) -> OpRow:
    return OpRow(name, "fusion", "kLoop", "main", "f32[1024]", ("f32[1024]", "f32[1024]"), dtype="vector",
                 executions=1, flops=1024.0, transcendentals=0.0,
                 bytes=8192.0, collective_bytes=0.0, compute_time_s=1e-8, memory_time_s=8e-7, comms_time_s=0.0,
                 measured_s=measured, events_per_run=1.0)


def rich_result() -> Result:
    """A made-up result with every optional part: live ceilings, first touch, per-op rows and a failing ops
    check, a device peak, contention, hints and notes."""
    base = fake_result(0.6, notes=("a note",), waiting=0.4)
    return replace(base, live=Live("f32 stream 64 MiB", "memory", (1e-3,) * 6, 1e10, (0.9, 0.95, 1.0, 0.92, 0.97)),
                   first_touch=FirstTouch(1_000_000, 500_000, RATE, 4096.0, 200.0),
                   ops_model=OpsModel((_op("fusion.1", 4e-4), _op("copy.2", None)),
                                      OpsCheck({"flops": 2.0}, {"flops": 1.0}, 0.02, ("flops: 2 vs 1",))),
                   memory=replace(FAKE_FOOTPRINT, device_peak=9_000_000, device_peak_note="allocator"),
                   hints=("donate the input",), timing=replace(base.timing, others_cpu_share=0.5))


def rich_record() -> KernelRecord:
    result = rich_result()
    check = BaselineCheck(record_of("t.py::test_k", "k", result, "fail").key, 0.6, gate([0.9]), "report r.json",
                          "the default")
    memory = check_memory(result.memory, MemoryLimit(0.5, True, "marker"), FAKE_CPU.memory_capacity, "fake CPU")
    return record_of("t.py::test_k", "k", result, "regression", 0.5, "marker", model="program",
                     expected_bound="memory", first_utilization=0.58, warn_only=True, baseline=check,
                     max_memory=memory, artifacts=Artifacts("/traces/k", "/traces/k/hlo.txt", "/traces/k/p.json.gz"))
