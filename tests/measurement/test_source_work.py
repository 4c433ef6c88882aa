"""The work the source asks for (its jaxpr), beside the compiled program's: dots, ragged dots, convolutions and
elementwise work against analytic formulas; a ragged dot XLA:CPU runs dense said to do 8x; counts="source" judging
on the source's FLOPs. Real tracing and compiling on this machine's CPU; the last test times real runs (slow)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_roofline.analysis.program.info import SourceWork, more_than_source_text

jax = pytest.importorskip("jax")
jnp = jax.numpy
compile_program = pytest.importorskip("pytest_roofline.measurement.compiled").compile_program

M, K, N, G = 1024, 512, 256, 8


def _ragged(lhs: Any, rhs: Any, sizes: Any) -> Any:
    return jax.lax.ragged_dot(lhs, rhs, sizes)


def _ragged_args() -> tuple[Any, ...]:
    return jnp.ones((M, K)), jnp.ones((G, K, N)), jnp.full((G,), M // G, jnp.int32)


def test_the_source_counts_match_analytic_formulas() -> None:
    a, b = jnp.ones((128, 64)), jnp.ones((64, 32))
    assert compile_program(lambda x, y: x @ y, (a, b), {}, "mm").source == SourceWork(2 * 128 * 64 * 32)
    # tanh is a transcendental, the add one FLOP per element
    assert compile_program(lambda x: jnp.tanh(x) + 1.0, (a,), {}, "t").source == SourceWork(128 * 64, 128 * 64)
    x, w = jnp.ones((2, 4, 16, 16)), jnp.ones((8, 4, 3, 3))
    conv = compile_program(lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME"), (x, w), {}, "conv")
    assert conv.source == SourceWork(2 * (2 * 8 * 16 * 16) * (4 * 3 * 3))
    # A grouped matmul's useful work: each row meets one group's matrix, whatever the number of groups.
    assert compile_program(_ragged, _ragged_args(), {}, "ragged").source == SourceWork(2 * M * K * N)


def test_a_segment_sum_counts_one_add_per_element_in_the_source_the_ops_and_the_compiler() -> None:
    """jraph's message passing and jax-md's forces sum with segment_sum (a scatter-add): the compiler counts one add
    per element added; the source and the per-op model counted it as one FLOP and as none, so the summary said
    "[2.8x source FLOPs]" of work that is not there."""
    from pytest_roofline.analysis.model.compiler_agreement import GATHER_BYTES, ops_check
    from pytest_roofline.analysis.program.counts import hlo_counts
    from pytest_roofline.analysis.program.hlo_reader import parse_hlo

    edges, nodes, features = 4096, 512, 32
    data, segments = jnp.ones((edges, features)), jnp.zeros((edges,), jnp.int32)
    program = compile_program(lambda d, s: jax.ops.segment_sum(d, s, num_segments=nodes), (data, segments), {}, "ss")
    assert program.source == SourceWork(edges * features)
    module = parse_hlo(program.hlo_text)
    assert hlo_counts(module).flops == edges * features
    assert ops_check(module, program.raw_cost_analysis).ok
    # A gather: the compiler counts its whole operand's bytes, the per-op model the rows it reads, and says so.
    gathered = compile_program(lambda d, s: d[s[:nodes]] * 2.0, (data, segments), {}, "g")
    check = ops_check(parse_hlo(gathered.hlo_text), gathered.raw_cost_analysis)
    assert [m for m in check.mismatches if GATHER_BYTES in m]


def test_a_while_loop_or_a_pallas_kernel_leaves_the_source_uncompared() -> None:
    program = compile_program(lambda v: jax.lax.while_loop(lambda s: s.sum() < 1e9, lambda s: s * 2.0, v),
                              (jnp.ones(64),), {}, "loop")
    assert program.source is not None and "while loop" in program.source.unknown
    assert program.source.factor(1e9) is None


def test_a_fori_loop_counts_its_trips() -> None:
    program = compile_program(lambda v: jax.lax.fori_loop(0, 5, lambda i, y: y @ y, v), (jnp.ones((32, 32)),), {},
                              "fori")
    assert program.source is not None and not program.source.unknown
    assert program.source.flops >= 5 * 2 * 32**3


def test_the_words_for_a_program_that_does_more_than_its_source() -> None:
    assert more_than_source_text(8.62e9, 1.07e9) == ("the compiled program does 8.1x the FLOPs the source asks for "
                                                     "(8.62 GFLOP against 1.07 GFLOP)")


@pytest.mark.slow
def test_a_ragged_dot_run_dense_is_said_to_do_more_and_counts_source_judges_its_useful_work() -> None:
    import pytest_roofline

    fast = {"min_runs": 3, "max_runs": 5, "budget_s": 0.3, "warmup": 1}
    compiled = pytest_roofline.measure(_ragged, *_ragged_args(), **fast)
    assert compiled.source_flops == 2 * M * K * N
    factor = compiled.compiled_over_source
    assert factor is not None and factor > 1.5, factor  # XLA:CPU runs every group over every row
    assert f"{factor:.1f}x the FLOPs the source asks for" in str(compiled)
    data = compiled.to_dict()
    assert data["compiled_over_source"] == factor and data["source_flops"] == 2 * M * K * N
    useful = pytest_roofline.measure(_ragged, *_ragged_args(), counts="source", **fast)
    assert useful.flops == 2 * M * K * N and useful.work.flops_source == "source"
    assert useful.compiled_over_source == pytest.approx(factor)
    assert any("judged on the FLOPs the source asks for" in n for n in useful.notes)
    # The same program on the same machine: judged on a 1/factor of the FLOPs, its FLOPs' time drops as much (its
    # integer ops, the groups' index arithmetic, keep their own time).
    integer = compiled.hardware.integer
    int_s = compiled.work.int_ops / integer.value if integer is not None else 0.0
    assert useful.work.int_ops == compiled.work.int_ops
    assert useful.roofline.compute_time_s - int_s == pytest.approx((compiled.roofline.compute_time_s - int_s) / factor,
                                                                   rel=1e-6)


def test_jax_0_11s_one_minus_square_is_two_flops_an_element() -> None:
    """JAX 0.11 writes tanh's derivative as ``one_minus_square`` (1 - x^2), which JAX 0.10 has not: a FAKE jaxpr of that
    one equation (seen in equinox's training step on an H200 with JAX 0.11.2, whose source count it left unknown)."""
    from types import SimpleNamespace

    from pytest_roofline.measurement.pallas_body import count_body

    aval = SimpleNamespace(shape=(64, 32), dtype=jnp.float32.dtype)
    eqn = SimpleNamespace(primitive=SimpleNamespace(name="one_minus_square"), outvars=[SimpleNamespace(aval=aval)],
                          invars=[SimpleNamespace(aval=aval)], params={})
    found = count_body(SimpleNamespace(eqns=[eqn]))
    assert found.flops == 2 * 64 * 32 and not found.lower_bound


EXPANDING = {
    "erf_inv": jax.lax.erf_inv, "erfc": jax.lax.erfc, "lgamma": jax.lax.lgamma, "digamma": jax.lax.digamma,
    "asin": jax.lax.asin, "acos": jax.lax.acos, "sinh": jax.lax.sinh, "cosh": jax.lax.cosh, "asinh": jax.lax.asinh,
    "acosh": lambda v: jax.lax.acosh(v * v + 2.0), "atanh": jax.lax.atanh, "logistic": jax.lax.logistic,
    "bessel_i0e": jax.lax.bessel_i0e, "bessel_i1e": jax.lax.bessel_i1e,
    "polygamma": lambda v: jax.lax.polygamma(jnp.ones_like(v), v), "zeta": lambda v: jax.lax.zeta(v + 2.0, v),
}


@pytest.mark.parametrize("name", sorted(EXPANDING))
def test_each_expanded_primitive_is_charged_what_the_compiler_counts_for_it(name: str) -> None:
    """The source count's table (pallas_body.EXPANDED) against the compiler in use, per output element: the program
    of the primitive alone (plus one or two FLOPs an element made to keep its argument in its domain)."""
    from pytest_roofline.measurement.pallas_body import EXPANDED

    n = 4096
    program = compile_program(EXPANDING[name], (jnp.full((n,), 0.3),), {}, name)
    assert program.source is not None and not program.source.unknown
    compiled = program.raw_cost_analysis
    compiled = compiled[0] if isinstance(compiled, list) else compiled
    flops, transcendentals = EXPANDED[name]
    assert compiled["transcendentals"] / n == transcendentals
    assert program.source.flops == pytest.approx(compiled["flops"], abs=2 * n)  # the domain's one or two FLOPs
    assert program.source.flops >= flops * n and program.source.transcendentals == transcendentals * n


def test_a_sampler_is_charged_its_threefry_rounds_and_erf_inv_so_no_waste_is_marked() -> None:
    """jax.random.normal: threefry2x32's rounds (45 FLOPs a word) and erf_inv's polynomial are its work. Before, the
    source counted them as nothing and one transcendental, and distrax's Normal.sample read 6.3x source FLOPs."""
    from pytest_roofline.analysis.program.info import MORE_THAN_SOURCE

    n = 1 << 14
    program = compile_program(lambda k: jax.random.normal(k, (n,)), (jax.random.key(0),), {}, "normal")
    compiled = program.raw_cost_analysis
    compiled = compiled[0] if isinstance(compiled, list) else compiled
    assert program.source is not None and program.source.flops >= (45 + 37) * n
    assert compiled["flops"] / program.source.flops < MORE_THAN_SOURCE
