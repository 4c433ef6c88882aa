"""FLOPs, transcendentals and bytes of real compiled programs against analytic formulas."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

from helpers import compile_counts  # noqa: E402

from pytest_roofline.analysis.program.counts import CostAnalysisError, normalize_cost_analysis  # noqa: E402
from pytest_roofline.analysis.program.xla_costs import OpCost  # noqa: E402

# What XLA's CPU backend makes of these programs: compiled for the CPU device wherever the tests run.
pytestmark = pytest.mark.cpu_backend

# Each shape in both dtypes: one of each pair in the quick loop, the other (a compile each) in the full run.
MATMULS = [(m, k, n, dtype, size) for m, k, n in [(1024, 1024, 1024), (256, 512, 128), (8, 4096, 1024), (1000, 300, 70)]
           for dtype, size in [("float32", 4), ("bfloat16", 2)]]


@pytest.mark.parametrize("m,k,n,dtype,itemsize", [  # f32 for the 1st and 3rd shape, bf16 for the others
    pytest.param(*case, marks=() if (i // 2 + i) % 2 == 0 else pytest.mark.slow) for i, case in enumerate(MATMULS)])
def test_matmul_counts(m: int, k: int, n: int, dtype: str, itemsize: int) -> None:
    a = jnp.ones((m, k), dtype)
    b = jnp.ones((k, n), dtype)
    counts, _, _ = compile_counts(lambda x, y: x @ y, a, b)
    elements = m * k + k * n + m * n
    cls = "f32" if dtype == "float32" else "bf16"
    assert counts.matrix_flops == {cls: 2 * m * n * k}
    assert not counts.lower_bound
    if dtype == "float32" or jax.default_backend() != "cpu":
        assert counts.flops == 2 * m * n * k
        assert counts.bytes_accessed == itemsize * elements
        assert counts.vector_flops == 0
    else:
        # XLA:CPU runs a bf16 dot as convert-to-f32, f32 dot, convert back: one FLOP per converted
        # element, and the f32 copies are real memory traffic (bf16 read + f32 write + f32 read ...).
        assert counts.flops == 2 * m * n * k + elements
        assert counts.bytes_accessed >= itemsize * elements


def test_batched_matmul_counts() -> None:
    b, m, k, n = 8, 128, 256, 64
    x = jnp.ones((b, m, k), jnp.float32)
    y = jnp.ones((b, k, n), jnp.float32)
    counts, _, _ = compile_counts(jnp.matmul, x, y)
    assert counts.flops == 2 * b * m * n * k
    assert counts.matrix_flops == {"f32": 2 * b * m * n * k}
    assert counts.bytes_accessed == 4 * b * (m * k + k * n + m * n)


def test_elementwise_counts() -> None:
    n = 1 << 20
    x = jnp.ones((n,), jnp.float32)
    counts, _, _ = compile_counts(lambda v: v * 2.0 + 1.0, x)
    assert counts.flops == 2 * n  # one multiply and one add per element, fused
    assert counts.bytes_accessed == 2 * 4 * n  # read once, written once: fusion keeps the temporary
    assert counts.matrix_flops == {}
    assert counts.transcendentals == 0


def test_transcendental_counts() -> None:
    n = 1 << 16
    counts, _, _ = compile_counts(jnp.tanh, jnp.ones((n,), jnp.float32))
    assert counts.transcendentals == n
    assert counts.flops == 0


def test_reduction_counts() -> None:
    x = jnp.ones((1024, 1024), jnp.float32)
    counts, module, _ = compile_counts(lambda v: v.sum(axis=1), x)
    assert counts.flops == 1024 * 1023  # one add per element but the first of each row, however it is split
    one_pass = 4 * (1024 * 1024 + 1024)
    if any(i.opcode == "reduce-window" for c in module.computations.values() for i in c.instructions):
        # XLA:CPU of jax 0.9 and older sums rows in two passes (reduce-window, then reduce): a little more traffic.
        assert one_pass < counts.bytes_accessed < 1.1 * one_pass
    else:
        assert counts.bytes_accessed == one_pass


def test_softmax_counts() -> None:
    rows, cols = 512, 1024
    x = jnp.ones((rows, cols), jnp.float32)
    counts, _, _ = compile_counts(lambda v: jax.nn.softmax(v, axis=-1), x)
    # One exp per element; bytes at least one read of the input and one write of the output.
    assert counts.transcendentals == rows * cols
    assert counts.bytes_accessed >= 2 * 4 * rows * cols
    # max-reduce + subtract + sum-reduce + divide: about 4 FLOPs per element.
    assert 3 * rows * cols <= counts.flops <= 6 * rows * cols


def test_fori_loop_multiplied_by_trip_count() -> None:
    n, trips = 256, 10
    x = jnp.ones((n, n), jnp.float32)
    counts, _, _ = compile_counts(lambda v: jax.lax.fori_loop(0, trips, lambda i, y: jnp.tanh(y @ y), v), x)
    assert counts.loops and "trip count 10" in counts.loops[0]
    assert not counts.lower_bound
    dot = 2 * n**3
    # XLA counted the body once; the result counts it ten times; the loop counter's adds and compares are integer ops.
    assert counts.flops == pytest.approx(trips * dot, abs=4 * trips) and 0 < counts.int_ops <= 4 * trips
    assert counts.transcendentals == trips * n * n
    assert counts.matrix_flops["f32"] == pytest.approx(trips * dot)


def test_while_loop_with_unknown_trip_count_is_a_lower_bound() -> None:
    x = jnp.ones((64, 64), jnp.float32)

    def until_large(v: Any) -> Any:
        return jax.lax.while_loop(lambda s: s.sum() < 1e6, lambda s: s @ s, v)

    counts, _, _ = compile_counts(until_large, x)
    assert counts.lower_bound
    assert "unknown" in counts.loops[0]
    assert counts.flops >= 2 * 64**3


def test_normalize_accepts_dict_and_list_and_missing_keys() -> None:
    assert normalize_cost_analysis({"flops": 3.0}) == {"flops": 3.0, "transcendentals": 0.0, "bytes_accessed": 0.0}
    assert normalize_cost_analysis([{"bytes accessed": 8}])["bytes_accessed"] == 8.0


@pytest.mark.parametrize("raw,fragment", [
    ({"flops": -1.0}, "negative"),
    (None, "no cost analysis"),
    ([], "expected one"),
    ({"flops": "many"}, "not a number"),
])
def test_normalize_rejects_nonsense_and_shows_it(raw: object, fragment: str) -> None:
    with pytest.raises(CostAnalysisError, match=fragment) as info:
        normalize_cost_analysis(raw)
    assert repr(raw)[:10] in str(info.value)


def _model_vs_compiler(fn: Callable[..., Any], *args: Any) -> tuple[OpCost, dict[str, float]]:
    from pytest_roofline.analysis.program.hlo_reader import parse_hlo
    from pytest_roofline.analysis.program.xla_costs import computation_cost

    compiled = jax.jit(fn).lower(*args).compile()
    module = parse_hlo(compiled.as_text())
    return computation_cost(module, module.entry_name, multiply_loops=False), normalize_cost_analysis(
        compiled.cost_analysis())


@pytest.mark.parametrize("kernel", ["matmul", "softmax", "mlp", "elementwise", "reduction", "in_place_update"])
def test_per_op_model_reproduces_the_compiler_totals(kernel: str) -> None:
    # The loop correction adds (trip count - 1) x the model's body cost to XLA's totals, so the model must
    # count what XLA counts. Checked here on loop-free programs, op by op summed.
    x = jnp.ones((512, 512), jnp.float32)
    cases: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
        "matmul": (lambda a, b: a @ b, (x, x)),
        "softmax": (lambda v: jax.nn.softmax(v, axis=-1), (x,)),
        "mlp": (lambda v, w1, w2: jax.nn.gelu(v @ w1) @ w2, (x, x, x)),
        "elementwise": (lambda v: jnp.tanh(v * 2.0 + 1.0), (x,)),
        "reduction": (lambda v: v.sum(axis=1), (x,)),
        "in_place_update": (lambda acc, v, i: acc.at[i].set(jnp.sin(v[i])), (x, x, 3)),
    }
    fn, args = cases[kernel]
    model, compiler = _model_vs_compiler(fn, *args)
    # XLA counts integer ops (an index's arithmetic) as FLOPs; the model counts them apart.
    assert model.flops + model.int_ops == pytest.approx(compiler["flops"], rel=1e-6)
    assert model.transcendentals == pytest.approx(compiler["transcendentals"], rel=1e-6)
    assert model.bytes == pytest.approx(compiler["bytes_accessed"], rel=1e-6)


def test_loop_of_in_place_row_updates_counts_rows_not_buffers() -> None:
    rows, cols, trips = 1024, 1024, 64
    x = jnp.ones((rows, cols), jnp.float32)
    counts, _, _ = compile_counts(
        lambda v: jax.lax.fori_loop(0, trips, lambda i, acc: acc.at[i].set(jnp.sin(v[i])), v), x)
    assert counts.transcendentals == trips * cols
    # Two copies of the 4 MiB input before the loop, then per iteration a few rows: far below 64 x 4 MiB.
    assert counts.bytes_accessed < 4 * 4 * rows * cols


def test_integer_ops_are_counted_apart_from_flops_and_held_to_their_own_rate() -> None:
    """A threefry-like bit mix on u32 (shift, xor): XLA's cost analysis counts its 5 ops an element as FLOPs; they are
    integer ops, held to a made-up integer rate of 1e10/s on a fake CPU, never to its f32 peak (1e11 FLOP/s)."""
    from fakes import FAKE_CPU

    from pytest_roofline.analysis.model.program_model import program_model
    from pytest_roofline.hardware.spec import Ceiling

    n = 1 << 16

    def mix(x: Any) -> Any:
        x = x ^ (x << 13)
        x = x ^ (x >> 17)
        return x + jnp.uint32(1)

    counts, module, compiled = compile_counts(mix, jnp.arange(n, dtype=jnp.uint32))
    assert normalize_cost_analysis(compiled.cost_analysis())["flops"] == 5 * n  # the compiler's: all "FLOPs"
    assert counts.flops == 0 and counts.int_ops == 5 * n
    fake = replace(FAKE_CPU, integer=Ceiling(1e10, "calibration", "fake", "2026-11-27"))
    model = program_model(fake, counts, module, 1)
    assert model.estimate.compute_time_s == pytest.approx(5 * n / 1e10)
    assert [u.work for u in model.uses if u.key == "integer"] == ["integer ops"]
    # Without an integer rate they add no time (the result's notes say so), rather than meet a FLOP peak.
    assert program_model(FAKE_CPU, counts, module, 1).estimate.compute_time_s == 0.0


def test_an_integer_scatter_add_is_integer_work_not_flops() -> None:
    """A histogram (``.at[].add`` on int32): its adds are integer ops, one per element added, counted with the index
    arithmetic around them; the FLOPs are none, and the per-op sum matches what XLA counts (all as "FLOPs")."""
    from pytest_roofline.analysis.model.compiler_agreement import ops_check

    counts, module, compiled = compile_counts(lambda s: jnp.zeros(64, jnp.int32).at[s].add(1),
                                              jnp.zeros(4096, jnp.int32))
    assert counts.flops == 0 and counts.int_ops >= 4096
    assert counts.int_ops == normalize_cost_analysis(compiled.cost_analysis())["flops"]
    assert ops_check(module, compiled.cost_analysis()).ok
