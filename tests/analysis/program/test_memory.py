"""Peak memory: footprints of real compiled programs against their analytic sizes, max_memory= parsing and
checking, the allocator peak (fake allocator statistics: a CPU reports none), and the fixture's verdict."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from fakes import FAKE_CPU, FAKE_FOOTPRINT
from harness import Failed, Harness, kernel

from pytest_roofline.analysis.program.memory import (
    MemoryFootprint,
    check_memory,
    device_peak,
    footprint_from_stats,
    parse_max_memory,
)
from pytest_roofline.hardware.spec import Ceiling

# What XLA's CPU backend makes of these programs: compiled for the CPU device wherever the tests run.
pytestmark = pytest.mark.cpu_backend

N = 512  # f32: one N x N array is 1 MiB


def _footprint(fn: Any, *args: Any, **jit: Any) -> MemoryFootprint:
    jax = pytest.importorskip("jax")
    return footprint_from_stats(jax.jit(fn, **jit).lower(*args).compile().memory_analysis())


def test_matmul_needs_its_arguments_and_its_output() -> None:
    jnp = pytest.importorskip("jax.numpy")
    a, b = jnp.ones((N, 2 * N), jnp.float32), jnp.ones((2 * N, N), jnp.float32)
    f = _footprint(lambda a, b: a @ b, a, b)
    assert (f.arguments, f.outputs, f.temporaries, f.aliased) == (2 * 4 * N * 2 * N, 4 * N * N, 0, 0)
    assert f.peak_bytes == 5 * 4 * N * N == f.arguments + f.outputs + f.temporaries - f.aliased


def test_a_donated_update_aliases_its_output_onto_the_argument() -> None:
    jnp = pytest.importorskip("jax.numpy")
    x, rows = jnp.ones((N, N), jnp.float32), jnp.ones((8, N), jnp.float32)
    f = _footprint(lambda x, y: x.at[:8].add(y), x, rows, donate_argnums=0)
    assert f.arguments == 4 * N * N + 4 * 8 * N and f.outputs == 4 * N * N and f.aliased == 4 * N * N
    assert f.peak_bytes == 4 * N * N + 4 * 8 * N  # the update is done in place: x is held once
    undonated = _footprint(lambda x, y: x.at[:8].add(y), x, rows)
    assert undonated.aliased == 0 and undonated.peak_bytes == f.peak_bytes + 4 * N * N


def test_a_large_temporary_is_counted() -> None:
    jnp = pytest.importorskip("jax.numpy")
    v = jnp.ones((N,), jnp.float32)
    # The outer product (N x N f32) must exist in full before it is sorted; only 10 values leave the program.
    f = _footprint(lambda v: jnp.sort(jnp.outer(v, v).ravel())[:10], v)
    assert f.arguments == 4 * N and f.outputs == 4 * 10 and f.aliased == 0
    assert f.temporaries >= 4 * N * N
    assert f.peak_bytes == f.arguments + f.outputs + f.temporaries
    # XLA:CPU's own peak_memory_in_bytes leaves the temporary out: not the figure a limit is checked against.
    assert f.compiler_peak is not None and f.compiler_peak < f.peak_bytes


@pytest.mark.slow  # runs a kernel (its counts are asserted, not its time)
def test_measure_reports_the_footprint() -> None:
    jnp = pytest.importorskip("jax.numpy")
    from pytest_roofline import measure

    a = jnp.ones((256, 256), jnp.float32)
    # Fake ceilings (no calibration in the quick loop); the footprint is the real compiled program's.
    r = measure(lambda a, b: a @ b, a, a, min_runs=3, max_runs=3, warmup=1, hardware=FAKE_CPU)
    assert r.peak_memory_bytes == 3 * 4 * 256 * 256
    assert "peak memory 786 kB (arguments 524 kB + outputs 262 kB + temporaries 0 B - aliased 0 B)" in str(r)
    data = r.to_dict()
    assert data["peak_memory_bytes"] == 3 * 4 * 256 * 256 and data["memory"]["arguments_bytes"] == 2 * 4 * 256 * 256
    # XLA:CPU's device has no allocator statistics; the result says so rather than giving a number.
    assert data["memory"]["device_peak_bytes"] is None
    assert data["memory"]["device_peak_note"] == "the CPU device reports no allocator statistics"


def test_footprint_of_fake_stats_and_host_memory() -> None:
    stats = SimpleNamespace(argument_size_in_bytes=100, output_size_in_bytes=50, temp_size_in_bytes=30,
                            alias_size_in_bytes=50, generated_code_size_in_bytes=7, host_argument_size_in_bytes=64,
                            host_output_size_in_bytes=0, host_temp_size_in_bytes=0, host_alias_size_in_bytes=0,
                            peak_memory_in_bytes=130)  # a fake CompiledMemoryStats
    f = footprint_from_stats(stats)
    assert f.peak_bytes == 130 and f.host == 64 and f.generated_code == 7 and f.compiler_peak == 130
    assert f.breakdown() == "arguments 100 B + outputs 50 B + temporaries 30 B - aliased 50 B; 64 B more on the host"


def test_allocator_peak_from_fake_statistics() -> None:
    # Fake allocator statistics in the shape GPU/TPU devices report (device.memory_stats()).
    assert device_peak(None, None, "cpu") == (None, "the CPU device reports no allocator statistics")
    raised = device_peak({"peak_bytes_in_use": 100}, {"peak_bytes_in_use": 300, "bytes_in_use": 50}, "gpu")
    assert raised == (300, "allocator high-water mark, set during the runs")
    peak, note = device_peak({"peak_bytes_in_use": 300}, {"peak_bytes_in_use": 300}, "gpu")
    assert peak == 300 and "not raised by the runs" in note


@pytest.mark.parametrize(("raw", "value", "fraction"), [
    (1_000_000, 1e6, False), (2e9, 2e9, False), (0.5, 0.5, True), (1.0, 1.0, True), ("512 MiB", 512 * 2**20, False),
    ("2GB", 2e9, False), ("1.5 GiB", 1.5 * 2**30, False), ("40%", 0.4, True), ("100 B", 100, False),
])
def test_max_memory_values(raw: Any, value: float, fraction: bool) -> None:
    limit = parse_max_memory(raw, "here", "origin")
    assert limit.value == pytest.approx(value) and limit.fraction is fraction


@pytest.mark.parametrize("raw", [0, -5, True, 0.0, -0.5, float("inf"), "lots", "12 parsecs", "0%", "150%", [1]])
def test_bad_max_memory_names_where_it_came_from(raw: Any) -> None:
    with pytest.raises(ValueError, match=r"marker of t: max_memory must be bytes .* got"):
        parse_max_memory(raw, "marker of t", "origin")


def test_check_memory_in_bytes_and_as_a_fraction() -> None:
    seven = FAKE_FOOTPRINT  # 7 MB
    ok = check_memory(seven, parse_max_memory("8 MB", "w", "marker"), None, "dev")
    assert ok.ok and ok.limit_bytes == 8e6
    too_much = check_memory(seven, parse_max_memory(6_000_000, "w", "marker of t"), None, "dev")
    assert not too_much.ok
    assert too_much.reason == ("needs 7 MB of device memory, more than max_memory 6 MB (marker of t): arguments 2 MB + "
                               "outputs 1 MB + temporaries 4 MB - aliased 0 B")
    gig = Ceiling(1e9, "measured", "made-up capacity of a fake device", "2026-11-23")  # a fake, not this machine
    frac = check_memory(seven, parse_max_memory(0.005, "w", "call"), gig, "dev")
    assert not frac.ok and frac.limit_bytes == 5e6 and "(0.5% of 1 GB, measured: made-up capacity" in frac.reason
    none = check_memory(seven, parse_max_memory(0.5, "w", "call"), None, "TPU v2")
    assert none.limit_bytes is None and "TPU v2 has no memory capacity in the hardware table" in none.reason


def test_fixture_fails_a_kernel_over_its_max_memory_with_the_breakdown() -> None:
    h = Harness(0.9, marker={"min": 0.5, "max_memory": "6 MB"})
    with pytest.raises(Failed) as info:
        h.fixture(kernel, 1)
    message = str(info.value)
    assert "needs 7 MB of device memory, more than max_memory 6 MB (max_memory in the marker of test_k.py::" in message
    assert "  memory        7 MB peak (arguments 2 MB + outputs 1 MB + temporaries 4 MB - aliased 0 B) vs " \
           "max_memory 6 MB (max_memory in the marker of test_k.py::test_a): TOO MUCH" in message
    (rec,) = h.records
    assert rec.verdict == "over-memory" and rec.max_memory is not None and rec.max_memory.ok is False


def test_fixture_passes_within_max_memory_and_the_call_overrides_the_marker() -> None:
    h = Harness(0.9, 0.9, marker={"max_memory": "6 MB"})
    h.fixture(kernel, 1, max_memory=0.01)  # 1% of the fake 1 GB: 10 MB
    check = h.records[0].max_memory
    assert h.records[0].verdict == "measured" and check is not None and check.limit_bytes == 1e7
    with pytest.raises(Failed, match=r"max_memory= in the roofline\(\) call"):
        h.fixture(kernel, 1, max_memory=0.005)


def test_fixture_with_a_fraction_on_a_device_of_unknown_capacity_says_what_to_add() -> None:
    from dataclasses import replace

    h = Harness(0.9)
    h.measure.hardware = replace(FAKE_CPU, name="fake TPU", memory_capacity=None)
    with pytest.raises(Failed, match="fake TPU has no memory capacity in the hardware table: add memory_capacity_gb"):
        h.fixture(kernel, 1, max_memory=0.5)
    with pytest.raises(Failed, match="max_memory must be bytes"):
        h.fixture(kernel, 1, max_memory="a lot")


def test_bad_max_memory_in_a_marker_names_the_test() -> None:
    from pytest_roofline.plugin.marker import parse_marker
    from pytest_roofline.plugin.settings import ConfigError

    with pytest.raises(ConfigError, match=r"roofline marker of t.py::x: max_memory must be bytes"):
        parse_marker((), {"max_memory": "huge"}, "t.py::x")
    assert parse_marker((), {"max_memory": "1 GiB"}, "t.py::x").max_memory.value == 2**30  # type: ignore[union-attr]


def test_measure_only_records_the_memory_check_and_warns() -> None:
    h = Harness(0.9, 0.9)
    h.fixture.measure(kernel, 1, max_memory="6 MB")  # the fake footprint is 7 MB
    over = h.records[0].max_memory
    assert h.records[0].verdict == "measured" and over is not None and over.ok is False
    (warning,) = h.warnings
    assert warning.startswith("roofline: kernel 'kernel' of test_k.py::test_a: needs 7 MB of device memory")
    h.fixture.measure(kernel, 1, max_memory="8 MB")
    under = h.records[1].max_memory
    assert under is not None and under.ok is True and len(h.warnings) == 1
