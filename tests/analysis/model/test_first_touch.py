"""The CPU's first-touch term, the plausibility of a live drift and the choice of the memory level, on synthetic
figures (no JAX, no timing). The machines here are made up: the ceilings are round numbers, named as such."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fakes import fake_result

from pytest_roofline.analysis.model.first_touch import first_touch
from pytest_roofline.analysis.model.live import MAX_PLAUSIBLE_DRIFT, implausible_drift, scaled_roofline_time
from pytest_roofline.analysis.model.roofline import estimate
from pytest_roofline.analysis.model.work_shares import CACHE_SIDE_MAX, memory_level
from pytest_roofline.hardware.spec import Ceiling, HardwareSpec

MIB = 2**20
# A made-up CPU: 4 GB/s of first touch, 4 KiB per fault, 50 GB/s of DRAM, 200 GB/s in a 32 MiB cache.
TOUCH = Ceiling(4e9, "calibration", "made up for this test", "2026-11-23")


def made_up_cpu(cache_bytes: int | None = 32 * MIB) -> HardwareSpec:
    dram = Ceiling(50e9, "calibration", "made up DRAM stream", "2026-11-23")
    cache = Ceiling(200e9, "calibration", "made up in-cache stream", "2026-11-23")
    return HardwareSpec("made-up CPU", "cpu", {"f32": Ceiling(1e11, "calibration", "made up", "2026-11-23")}, dram,
                        first_touch=TOUCH, bytes_per_fault=4096.0, cache_bandwidth=cache, cache_bytes=cache_bytes)


def test_fresh_bytes_are_outputs_and_temporaries_not_aliased() -> None:
    # A 128 MiB fresh output and a 64 MiB temporary: 49,152 pages of 4 KiB, 201 MB at 4 GB/s.
    touch = first_touch(128 * MIB, 64 * MIB, 0, TOUCH, 4096.0, None)
    assert touch is not None
    assert touch.fresh_bytes == 192 * MIB and touch.donatable_bytes == 128 * MIB
    assert touch.expected_faults == 49152
    assert touch.time_s == pytest.approx(192 * MIB / 4e9)
    assert touch.saving_s == pytest.approx(128 * MIB / 4e9)  # the temporary cannot be donated
    # Donated: the output reuses the input's pages; nothing fresh, nothing to save.
    donated = first_touch(128 * MIB, 0, 128 * MIB, TOUCH, 4096.0, 0)
    assert donated is not None and donated.fresh_bytes == 0 and donated.time_s == 0 and donated.saving_text() == ""


def test_counted_faults_cap_the_charged_bytes() -> None:
    expected = first_touch(128 * MIB, 0, 0, TOUCH, 4096.0, 32769)
    assert expected is not None and expected.agrees and expected.charged_bytes == 128 * MIB
    assert "32,768 faults expected" in expected.faults_text() and "as expected" in expected.faults_text()
    # A small output the allocator reused: no fault counted, nothing charged, and the text says why.
    reused = first_touch(4 * MIB, 0, 0, TOUCH, 4096.0, 0)
    assert reused is not None and reused.time_s == 0 and reused.agrees is False
    assert "allocator reused" in reused.faults_text()
    # More faults than the buffers (the harness's own): only the expected ones are charged.
    more = first_touch(MIB, 0, 0, TOUCH, 4096.0, 10_000)
    assert more is not None and more.charged_bytes == MIB and "only the expected ones" in more.faults_text()
    # Huge pages: one fault maps 2 MiB; 64 counted faults are the whole 128 MiB.
    huge = first_touch(128 * MIB, 0, 0, TOUCH, 2.0 * MIB, 64)
    assert huge is not None and huge.expected_faults == 64 and huge.charged_bytes == 128 * MIB


def test_no_term_without_a_calibrated_rate() -> None:
    assert first_touch(MIB, 0, 0, None, 4096.0, 256) is None  # accelerators, or no measurable cost
    assert first_touch(MIB, 0, 0, TOUCH, None, 256) is None


def test_first_touch_adds_to_the_max_and_follows_a_fresh_reference() -> None:
    roof = estimate({"f32": (1e9, 1e11)}, 268e6, 50e9)  # compute 10 ms, memory 5.36 ms
    charged = replace(roof, first_touch_time_s=0.03)
    assert charged.core_time_s == pytest.approx(0.01) and charged.roofline_time_s == pytest.approx(0.04)
    # A fresh-output reference at half speed scales memory and first touch; a donated one memory alone.
    assert scaled_roofline_time(charged, "first-touch", 0.5) == pytest.approx(max(0.01, 2 * 5.36e-3) + 0.06)
    assert scaled_roofline_time(charged, "memory", 0.5) == pytest.approx(max(0.01, 2 * 5.36e-3) + 0.03)
    assert scaled_roofline_time(charged, "compute", 0.5) == pytest.approx(0.02 + 0.03)


def test_a_result_reports_both_utilizations() -> None:
    touch = first_touch(128 * MIB, 0, 0, TOUCH, 4096.0, 32768)
    assert touch is not None
    base = fake_result(0.5)  # made up: roofline 0.5 ms, measured 1 ms
    result = replace(base, roofline=replace(base.roofline, first_touch_time_s=touch.time_s), first_touch=touch)
    with_touch = (0.5e-3 + touch.time_s) / 1e-3
    assert result.first_touch_charged and result.utilization == pytest.approx(with_touch)
    assert result.utilization_with_first_touch == pytest.approx(with_touch)
    assert result.utilization_without_first_touch == pytest.approx(0.5)
    data = result.to_dict()
    assert data["first_touch"]["counted_faults"] == 32768 and data["first_touch_charged"] is True
    assert "donate_argnums" in data["first_touch"]["text"] and "without" in str(result)
    excluded = replace(base, first_touch=touch, first_touch_mode="exclude")
    assert not excluded.first_touch_charged and excluded.utilization == pytest.approx(0.5)
    assert excluded.utilization_with_first_touch == pytest.approx(with_touch)


def test_a_drift_no_machine_produces_is_refused_with_its_cause() -> None:
    assert implausible_drift(1.0) == "" and implausible_drift(MAX_PLAUSIBLE_DRIFT) == ""
    assert implausible_drift(0.3) == ""  # a busy neighbour really can slow a machine down 3x
    why = implausible_drift(2.13)
    assert "213%" in why and "did not meet the ceiling" in why and "calibrated ceilings used" in why
    assert implausible_drift(1.3) == ""  # a VM's host moves by 20-30% between phases
    assert implausible_drift(1.92) == ""  # and once, memory bandwidth by 1.9x (a stream kernel beside it agreed)
    assert implausible_drift(4.0) != ""  # a reference whose data stayed in a cache, or whose buffers were reused
    # Against ceilings calibrated beside other work (known low), a drift above 200% is the machine freed of its
    # neighbours: the live scaling is the better estimate and is kept (dm-haiku's remat gradient read 128-154%
    # "impossible" when it was set aside).
    assert implausible_drift(2.15, contended_calibration=True) == ""


def test_the_memory_level_follows_the_working_set() -> None:
    cpu = made_up_cpu()
    small = memory_level(cpu, 8 * MIB)  # fits half the 32 MiB cache
    assert small.in_cache and small.ceiling.value == 200e9 and "fits the 33.6 MB last-level cache" in small.note
    partly = memory_level(cpu, 24 * MIB)  # between half the cache and the cache: DRAM, said plainly
    assert not partly.in_cache and partly.ceiling.value == 50e9 and "may not bound it" in partly.note
    large = memory_level(cpu, 512 * MIB)
    assert not large.in_cache and large.ceiling.value == 50e9 and large.note == ""
    # A VM that reports its host's 480 MiB cache: only CACHE_SIDE_MAX of it counts as the VM's.
    vm = made_up_cpu(480 * MIB)
    assert memory_level(vm, CACHE_SIDE_MAX / 2).in_cache
    assert not memory_level(vm, 128 * MIB).in_cache and "may not bound it" in memory_level(vm, 128 * MIB).note
    # No calibrated cache (an accelerator's datasheet): main memory, nothing said.
    assert memory_level(made_up_cpu(None), MIB).ceiling.value == 50e9


def test_per_op_rows_meet_the_same_bandwidth_as_the_program() -> None:
    # A real compiled elementwise kernel on a made-up CPU (fake figures): an 8 MiB working set fits half the
    # 32 MiB cache, so every op's memory time is its bytes over the cache's 200 GB/s, as the program's is.
    import jax.numpy as jnp
    from helpers import compile_counts

    from pytest_roofline.analysis.model.program_model import program_model

    x = jnp.ones((MIB,), jnp.float32)  # 4 MiB in, 4 MiB out
    counts, module, _ = compile_counts(lambda v: v * 2.0 + 1.0, x)
    cpu = made_up_cpu()
    for working_set, bandwidth in ((8 * MIB, 200e9), (512 * MIB, 50e9)):
        model = program_model(cpu, counts, module, 1, working_set=working_set)
        moving = [row for row in model.rows if row.bytes > 0]
        assert moving and model.memory.ceiling.value == bandwidth
        assert all(row.memory_time_s == pytest.approx(row.bytes / bandwidth) for row in moving)


def test_a_first_touch_cheaper_than_calibrated_is_said_not_failed() -> None:
    # Made-up result (fakes): the calibrated page faults (about 33.6 ms for 128 MiB at 4 GB/s) against 25 ms
    # measured reads 136% with the term, 2% without it. Page faults are a cost that moves with the host, not a
    # ceiling: the result passes with a note, and only traffic and compute above 105% stay impossible.
    from pytest_roofline.analysis.verdict.decide import decide

    touch = first_touch(128 * MIB, 0, 0, TOUCH, 4096.0, 32768)
    assert touch is not None
    base = fake_result(0.5)  # roofline 0.5 ms, measured 1 ms
    slow = replace(base.timing, per_run_s=(25e-3,) * 5)
    result = replace(base, roofline=replace(base.roofline, first_touch_time_s=touch.time_s), first_touch=touch,
                     timing=slow)
    assert result.utilization > 1.3 and not result.impossible and result.first_touch_beaten
    assert "first touch cheaper than calibrated" in str(result) and result.to_dict()["first_touch_beaten"]
    assert decide(result.figures, 0.8).verdict == "pass"
    # Beating traffic and compute alone is still impossible, first touch or not.
    fast = replace(result, timing=replace(base.timing, per_run_s=(0.4e-3,) * 5))
    assert fast.impossible and not fast.first_touch_beaten
    assert decide(fast.figures, 0.8).verdict == "impossible"
    # Excluded from the roofline, the term plays no part in the verdict.
    assert not replace(result, first_touch_mode="exclude").first_touch_beaten
    # The summary marks it and says what the mark means.
    from fakes import record_of

    from pytest_roofline.report.text import summary_lines

    lines = summary_lines([record_of("t.py::test_scale", "scale", result, "pass", 0.8, "marker")])
    assert "[faults cheaper]" in lines[1] and any(line.startswith("[faults cheaper]: ") for line in lines)
    plain = summary_lines([record_of("t.py::test_scale", "scale", base, "pass", 0.4, "marker")])
    assert not any("faults cheaper" in line for line in plain)


def test_each_run_is_judged_against_its_own_first_touch() -> None:
    """A made-up memory-bound result (fakes) of six runs: five faulted 8,192 pages (32 MiB at 4 GB/s: 8.4 ms of first
    touch) and took 12 ms, one faulted none and took 3 ms (a tokamax layer norm beside busy neighbours). Against the
    median's 8,192 faults that run read 3.5x its roofline and lifted the interval's top to 383%; against its own
    faults it reads what its traffic allows."""
    touch = first_touch(32 * MIB, 0, 0, TOUCH, 4096.0, 8192)
    assert touch is not None
    base = fake_result(0.25)  # roofline 0.25 ms of traffic
    runs, faults = (12e-3,) * 5 + (3e-3,), (8192,) * 5 + (0,)
    timing = replace(base.timing, per_run_s=runs, wall_per_run_s=runs, faults_per_run=faults)
    result = replace(base, roofline=replace(base.roofline, first_touch_time_s=touch.time_s), first_touch=touch,
                     timing=timing)
    core = base.roofline.roofline_time_s
    assert result.per_run_utilization[-1] == pytest.approx(core / 3e-3)  # no fault, no first-touch term
    assert result.per_run_utilization[0] == pytest.approx((core + touch.time_s) / 12e-3)
    assert max(result.utilization_interval) < 1.0 and not result.suspect
    # Faults not counted for every run: every run keeps the median's term, as before.
    unknown = replace(result, timing=replace(timing, faults_per_run=()))
    assert unknown.per_run_utilization[-1] == pytest.approx((core + touch.time_s) / 3e-3)
    assert unknown.per_run_utilization[-1] > 2.8
