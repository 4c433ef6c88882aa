"""Data re-read from the cache inside loops (pytest_roofline.analysis.model.loop_reuse), on real compiled HLO (jax on
the CPU) and a fake CPU spec whose cache is 32 MiB at 200 GB/s against 50 GB/s of main memory: a loop whose state
fits the cache is charged at the cache's bandwidth for every iteration after the first, one that does not fit is
charged at main memory's, and the per-op rows agree with the program."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from fakes import FAKE_CPU
from helpers import compile_counts

from pytest_roofline.analysis.model.loop_reuse import REREAD, loop_reuse
from pytest_roofline.analysis.model.program_model import program_model
from pytest_roofline.hardware.spec import Ceiling

jax = pytest.importorskip("jax")
jnp = jax.numpy
MiB = 2**20
# A fake CPU: the fake's peaks, 50 GB/s of main memory, a 32 MiB last-level cache at 200 GB/s.
CACHED_CPU = replace(FAKE_CPU, memory_bandwidth=Ceiling(5e10, "calibration", "fake", "2026-11-27"),
                     cache_bandwidth=Ceiling(2e11, "calibration", "fake", "2026-11-27"), cache_bytes=32 * MiB)


def _power(n: int, iterations: int) -> Any:
    def power(a: Any, v: Any) -> Any:
        return jax.lax.fori_loop(0, iterations, lambda i, u: jnp.tanh(a @ u), v)

    return compile_counts(power, jnp.ones((n, n), jnp.float32), jnp.ones((n,), jnp.float32))


def test_a_loop_whose_state_fits_the_cache_re_reads_it_from_there_after_its_first_iteration() -> None:
    counts, module, _ = _power(1024, 50)  # a 4 MiB matrix, 50 matvecs
    reuse = loop_reuse(module, CACHED_CPU)
    matrix = 4 * 1024 * 1024
    assert reuse.bytes == pytest.approx(49 * matrix, rel=0.02)  # the matrix, read again in 49 iterations
    (line,) = reuse.lines
    assert "49 of its 50 iterations re-read its 4.2 MB state from the cache" in line
    before = program_model(FAKE_CPU, counts, module, 1)  # no cache bandwidth known: main memory's for every byte
    after = program_model(CACHED_CPU, counts, module, 1, cold_written=8.0 * 1024)
    assert before.reuse.bytes == 0 and REREAD in after.memory.note
    # One iteration at 50 GB/s and 49 at 200 GB/s: the memory time is about 4.7x lower than at 50 GB/s throughout.
    total = counts.bytes_accessed
    expected = (total - reuse.bytes) / 5e10 + reuse.bytes / 2e11
    assert after.estimate.memory_time_s == pytest.approx(expected, rel=0.01)
    assert sum(r.memory_time_s for r in after.rows) == pytest.approx(expected, rel=0.05)


def test_a_loop_whose_state_does_not_fit_the_cache_is_charged_at_main_memory() -> None:
    counts, module, _ = _power(4096, 4)  # a 64 MiB matrix: more than the fake's 32 MiB cache
    assert loop_reuse(module, CACHED_CPU).bytes == 0
    model = program_model(CACHED_CPU, counts, module, 1, cold_written=16.0 * 1024)
    assert REREAD not in model.memory.note
    assert model.estimate.memory_time_s == pytest.approx(counts.bytes_accessed / 5e10, rel=0.01)


def test_analytic_bytes_are_the_user_s_and_are_not_split() -> None:
    counts, module, _ = _power(1024, 50)
    model = program_model(CACHED_CPU, counts, module, 1, bytes_accessed=1e9, cold_written=8.0 * 1024)
    assert model.reuse.bytes == 0 and model.estimate.memory_time_s == pytest.approx(1e9 / 5e10, rel=0.01)


def test_an_operand_a_fusion_reads_many_times_is_charged_once() -> None:
    """4096 rows gathered from a 64 x 64 table (16 kB) inside one fusion: the table is read 64 times over, from the
    cache after its first touch, and is charged once (its bytes), not once per row gathered."""
    table, rows = jnp.ones((64, 64), jnp.float32), jnp.zeros((4096,), jnp.int32)
    counts, _, _ = compile_counts(lambda t, i: t[i] * 2.0, table, rows)
    written = 4096 * 64 * 4
    assert counts.bytes_accessed == pytest.approx(written + table.nbytes + rows.nbytes, rel=0.01)
