"""The cache state a kernel is measured in: the choice per setting, platform and working set, the bytes written to
evict the cache, and the eviction check, on made-up sizes (pure; the real eviction is in bench/cache_states.py
and the slow measure() tests)."""

from __future__ import annotations

import pytest

from pytest_roofline.analysis.model.cache_state import GPU_CACHE_ASSUMED, CacheState, plan_cache
from pytest_roofline.analysis.model.work_shares import memory_level
from pytest_roofline.hardware.spec import Ceiling, HardwareSpec

MiB = 2**20


def test_auto_is_cold_where_the_working_set_fits_the_cache_and_warm_where_it_does_not() -> None:
    cold, check = plan_cache("auto", "cpu", 4 * MiB, 32 * MiB, "as the system reports it")
    assert (cold.state, check, cold.evicted_bytes) == ("cold", True, 64 * MiB)
    assert cold.why == "auto: the working set 4.19 MB fits the cache, where warm and cold differ"
    warm, check = plan_cache("auto", "cpu", 256 * MiB, 32 * MiB, "as the system reports it")
    assert (warm.state, check, warm.evicted_bytes) == ("warm", False, 0)
    assert "larger than the cache, so each run evicts its own data" in warm.why
    unknown, check = plan_cache("auto", "cpu", None, 32 * MiB, "")
    assert (unknown.state, check) == ("warm", False) and "unknown" in unknown.why


def test_a_vm_reporting_the_hosts_huge_cache_counts_and_evicts_only_its_share() -> None:
    """A made-up VM that reports a 480 MiB last-level cache: at most 64 MiB of it counts as its own."""
    plan, check = plan_cache("auto", "cpu", 100 * MiB, 480 * MiB, "as the system reports it")
    assert plan.state == "warm" and not check
    plan, _ = plan_cache("cold", "cpu", 100 * MiB, 480 * MiB, "as the system reports it")
    assert plan.evicted_bytes == 128 * MiB


def test_explicit_states_win_and_cold_beyond_the_cache_is_not_checked() -> None:
    plan, check = plan_cache("cold", "cpu", 256 * MiB, 32 * MiB, "x")
    assert plan.state == "cold" and plan.evicted_bytes == 64 * MiB and not check
    assert plan.why == "cache='cold' asked for (working set 268 MB)"
    plan, check = plan_cache("warm", "cpu", 4 * MiB, 32 * MiB, "x")
    assert plan.state == "warm" and plan.evicted_bytes == 0 and not check


def test_gpu_evicts_twice_its_l2_and_a_tpu_evicts_nothing() -> None:
    """Made-up devices: a GPU with a 50 MiB L2 read from the runtime, one whose L2 could not be read, a TPU."""
    plan, check = plan_cache("auto", "gpu", 16 * MiB, 50 * MiB, "L2, from the CUDA runtime")
    assert (plan.state, plan.evicted_bytes, check) == ("cold", 100 * MiB, True)
    plan, _ = plan_cache("cold", "gpu", 16 * MiB, None, "L2 size not readable here")
    assert plan.evicted_bytes == 2 * GPU_CACHE_ASSUMED
    plan, check = plan_cache("auto", "tpu", 16 * MiB, None, "")
    assert (plan.state, plan.evicted_bytes, check) == ("warm", 0, False)
    assert "no hardware-managed cache" in plan.why
    plan, _ = plan_cache("cold", "tpu", 16 * MiB, None, "")
    assert plan.state == "cold" and plan.evicted_bytes == 0 and plan.text().startswith("cold: nothing evicted")


def test_the_check_says_when_cold_runs_were_not_slower() -> None:
    plan, _ = plan_cache("auto", "cpu", 4 * MiB, 32 * MiB, "as the system reports it")
    slower = plan.with_check(2e-3, 1e-3)
    assert slower.took is True and "cold runs 2 ms vs warm 1 ms (2.00x)" in slower.text()
    assert "NOT SLOWER" not in slower.text()
    same = plan.with_check(1e-3, 1e-3)
    assert same.took is False and same.text().endswith(
        "(1.00x): NOT SLOWER COLD, so the eviction did not take or this kernel's time does not depend on the cache")
    assert plan.took is None and "cold runs" not in plan.text()
    assert plan.text().startswith("cold: the 33.6 MB last-level cache (as the system reports it) evicted before "
                                  "every timed run (67.1 MB written, outside the timing)")


def test_the_state_reads_back_from_its_json() -> None:
    plan, _ = plan_cache("auto", "cpu", 4 * MiB, 32 * MiB, "as the system reports it")
    for state in (plan, plan.with_check(2e-3, 1e-3)):
        data = state.to_dict()
        assert CacheState.from_dict(data) == state
        assert data["text"] == state.text() and data["took"] == state.took
    with pytest.raises(ValueError, match="cache state 'tepid'"):
        CacheState.from_dict({"state": "tepid"})


def test_cold_holds_the_bytes_read_to_main_memory_and_those_the_cache_keeps_to_the_cache() -> None:
    """A made-up CPU with a 32 MiB cache at 200 GB/s and memory at 50 GB/s."""
    spec = HardwareSpec("made-up CPU", "cpu", {"f32": Ceiling(1e11, "calibration", "x", "2026-11-23")},
                        Ceiling(5e10, "calibration", "x", "2026-11-23"),
                        cache_bandwidth=Ceiling(2e11, "calibration", "x", "2026-11-23"), cache_bytes=32 * MiB)
    assert memory_level(spec, 4 * MiB).in_cache
    # Cold, a 4 MiB in-place kernel reads 4 MiB from memory and writes 4 MiB that stay in the write-back cache
    # until after the run: 8 MiB over 4 MiB / 50 GB/s + 4 MiB / 200 GB/s.
    level = memory_level(spec, 4 * MiB, (8 * MiB, 4 * MiB))
    assert not level.in_cache
    assert level.ceiling.value == pytest.approx(8 * MiB / (4 * MiB / 5e10 + 4 * MiB / 2e11))
    assert level.note.startswith("cold: the 4.19 MB the run writes stay in the cache during it (written back after)")
    # A 128 MiB in-place kernel: only the last 32 MiB of its writes can stay.
    big = memory_level(spec, 128 * MiB, (256 * MiB, 128 * MiB))
    assert big.ceiling.value == pytest.approx(256 * MiB / (224 * MiB / 5e10 + 32 * MiB / 2e11))
    # Nothing written, or no measured cache bandwidth: main memory's.
    assert memory_level(spec, 4 * MiB, (8 * MiB, 0.0)).ceiling.value == 5e10
    no_cache = HardwareSpec("made-up GPU", "gpu", spec.peaks, spec.memory_bandwidth)
    assert memory_level(no_cache, 4 * MiB, (8 * MiB, 4 * MiB)).ceiling.value == 5e10
