"""Pallas kernels: cost estimates read back exactly from real programs lowered for TPU (on this CPU-only jaxlib),
from constructed GPU custom calls (named as constructed: lowering Pallas for GPU needs the GPU jaxlib), and from
the traced program in interpret mode; kernels without one are named with how to give one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CPU

from pytest_roofline.analysis.program.counts import hlo_counts
from pytest_roofline.analysis.program.hlo_reader import parse_hlo
from pytest_roofline.analysis.program.interpreted import interpret_counts
from pytest_roofline.analysis.program.pallas_costs import KernelEstimate, TracedKernel, assign_estimates
from pytest_roofline.cli.main import main

jax = pytest.importorskip("jax")
jnp = jax.numpy
pl = pytest.importorskip("jax.experimental.pallas")

M, N = 256, 128
FLOPS, TRANS, BYTES = 3 * M * N, 7, 3 * M * N * 4  # what the kernel's author states (any numbers read back)


def add_kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[...] * 2.0 + y_ref[...]


def matmul_kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
    o_ref[...] = jnp.dot(x_ref[...], y_ref[...])


def add(x: Any, y: Any, *, estimate: bool = True, interpret: bool = False) -> Any:
    cost = pl.CostEstimate(flops=FLOPS, transcendentals=TRANS, bytes_accessed=BYTES) if estimate else None
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), cost_estimate=cost,
                          interpret=interpret)(x, y)


def matmul(x: Any, y: Any, *, interpret: bool = True) -> Any:
    m, k = x.shape
    n = y.shape[1]
    cost = pl.CostEstimate(flops=2 * m * n * k, transcendentals=0, bytes_accessed=4 * (m * k + k * n + m * n))
    return pl.pallas_call(matmul_kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), cost_estimate=cost,
                          interpret=interpret)(x, y)


X = jnp.ones((M, N), jnp.float32)


def tpu_hlo(fn: Any, *args: Any) -> str:
    """HLO of ``fn`` lowered for TPU: a real Mosaic custom call, lowered on this CPU-only machine."""
    return str(jax.jit(fn).trace(*args).lower(lowering_platforms=("tpu",)).as_text(dialect="hlo"))


def test_tpu_custom_call_carries_the_estimate_and_it_is_read_back_exactly() -> None:
    text = tpu_hlo(add, X, X)
    assert "tpu_custom_call" in text and '"cost_estimate": {\n' in text  # the JSON spans lines: read across them
    module = parse_hlo(text)
    (call,) = [i for c in module.computations.values() for i in c.instructions if i.opcode == "custom-call"]
    counts = hlo_counts(module)
    assert (counts.flops, counts.transcendentals, counts.bytes_accessed) == (FLOPS, TRANS, BYTES)
    assert counts.estimated == (f"{call.name} (TPU Mosaic)",) and counts.uncounted == () and not counts.lower_bound


def test_the_traced_program_tells_whether_a_kernels_flops_are_matrix_work() -> None:
    from dataclasses import replace

    from pytest_roofline.measurement.pallas_calls import traced_program

    module = parse_hlo(tpu_hlo(add, X, X))
    assert hlo_counts(module).matrix_flops == {"f32": FLOPS}  # from the HLO alone: taken as matrix work
    kernels = traced_program(jax.jit(add).trace(X, X)).kernels  # the body has no dot: vector work
    counts = hlo_counts(replace(module, kernel_estimates=assign_estimates(module, kernels)))
    assert counts.flops == FLOPS and counts.matrix_flops == {}


def test_tpu_kernel_without_an_estimate_is_named_with_the_remedy() -> None:
    module = parse_hlo(tpu_hlo(lambda x, y: add(x, y, estimate=False), X, X))
    counts = hlo_counts(module)
    assert counts.lower_bound and counts.flops == 0
    (name,) = counts.uncounted
    assert name.endswith("(tpu_custom_call: a TPU Mosaic Pallas kernel without a cost_estimate)")
    assert counts.bytes_accessed == 3 * M * N * 4  # its operands and result, as for any custom call


def test_analyze_reads_the_estimate_from_a_tpu_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "module_0001.jit_add.tpu_after_optimizations.txt"
    dump.write_text(tpu_hlo(add, X, X))
    assert main(["analyze", "--hlo", str(dump), "--json"]) == 0
    (program,) = json.loads(capsys.readouterr().out)["programs"]
    assert (program["flops"], program["transcendentals"], program["bytes_accessed"]) == (FLOPS, TRANS, BYTES)
    assert program["counts_from_cost_estimate"] and program["counts_incomplete"] == []
    assert main(["analyze", "--hlo", str(dump), "--hardware", "TPU v5e"]) == 0
    assert "counts from the kernel's cost_estimate" in capsys.readouterr().out


# Constructed, in the spelling of an XLA GPU program with Pallas kernels (Triton states the kernel's name in its
# backend_config; Mosaic GPU does not). jax 0.10.2's GPU lowerings drop cost_estimate: the estimates come from
# the traced program.
CONSTRUCTED_GPU = """HloModule jit_two_kernels, is_scheduled=true

ENTRY main {
  x = f32[256,128]{1,0} parameter(0)
  y = f32[256,128]{1,0} parameter(1)
  a = f32[256,128]{1,0} custom-call(x, y), custom_call_target="__gpu$xla.gpu.triton", backend_config={"name":"add_kernel","ir":"","num_stages":3,"num_warps":4,"grid_x":1,"grid_y":1,"grid_z":1,"debug":false}
  ROOT b = f32[256,128]{1,0} custom-call(a, y), custom_call_target="mosaic_gpu_v2", backend_config={"kernel_hash":"","module":""}
}
"""  # noqa: E501 (HLO text as XLA prints it)
EST = KernelEstimate(FLOPS, TRANS, BYTES, matrix=False)


def test_constructed_gpu_calls_get_the_estimates_of_the_traced_kernels() -> None:
    module = parse_hlo(CONSTRUCTED_GPU)
    # Both kernels state the same estimate: each call gets it (Triton by its name, Mosaic GPU as the shared one).
    same = [TracedKernel("add_kernel", EST, False), TracedKernel("other_kernel", EST, False)]
    assert assign_estimates(module, same) == {"a": EST, "b": EST}
    from dataclasses import replace

    counts = hlo_counts(replace(module, kernel_estimates=assign_estimates(module, same)))
    assert counts.flops == 2 * FLOPS and counts.bytes_accessed == 2 * BYTES and counts.matrix_flops == {}
    assert counts.estimated == ("a (GPU Triton)", "b (Mosaic GPU)")
    # Different estimates: Triton's call is matched by name; the nameless Mosaic GPU call cannot be told apart.
    other = KernelEstimate(1.0, 0.0, 2.0)
    differ = [TracedKernel("add_kernel", EST, False), TracedKernel("other_kernel", other, False)]
    assigned = assign_estimates(module, differ)
    assert assigned == {"a": EST}
    counts = hlo_counts(replace(module, kernel_estimates=assigned))
    assert counts.uncounted == ("b (mosaic_gpu_v2: a Mosaic GPU Pallas kernel without a cost_estimate)",)
    assert counts.lower_bound


def test_interpret_mode_counts_are_the_estimates_times_their_runs() -> None:
    from pytest_roofline.measurement.pallas_calls import traced_program

    def program(x: Any, y: Any) -> Any:
        out, _ = jax.lax.scan(lambda c, _: (matmul(c, y), None), x, None, length=3)
        return out + 1.0

    sq = jnp.ones((N, N), jnp.float32)
    traced = traced_program(jax.jit(program).trace(sq, sq))
    (kernel,) = traced.kernels
    assert kernel.name == "matmul_kernel" and kernel.interpret and kernel.times == 3 and kernel.dtypes == ("f32", "f32")
    assert kernel.estimate == KernelEstimate(2.0 * N**3, 0.0, 4.0 * 3 * N * N, matrix=True)  # a dot in its body
    assert traced.outside == ("add",)
    counts = interpret_counts(traced.kernels, traced.outside)
    assert counts is not None and counts.source == "cost_estimate"
    assert counts.flops == 3 * 2.0 * N**3 and counts.matrix_flops == {"f32": 3 * 2.0 * N**3}
    assert (
        counts.lower_bound
        and "outside the interpret-mode Pallas kernels (add) is not counted" in counts.lower_bound_why[0]
    )
    elementwise = traced_program(jax.jit(lambda x, y: add(x, y, interpret=True)).trace(X, X))
    assert elementwise.kernels[0].estimate == EST and elementwise.outside == ()


@pytest.mark.slow  # runs a kernel (its counts are asserted, not its time)
def test_measure_reports_the_estimate_not_the_interpreters_work() -> None:
    from pytest_roofline import measure

    # Fake ceilings (named so): only the counts and the notes are asserted.
    r = measure(lambda x, y: add(x, y, interpret=True), X, X, hardware=FAKE_CPU, min_runs=3, max_runs=3, warmup=1)
    assert (r.flops, r.transcendentals, r.bytes_accessed) == (FLOPS, TRANS, BYTES)
    assert r.flops_source == "cost_estimate" and not r.counts_lower_bound
    assert "counts from the kernel's cost_estimate: 'add_kernel' (interpret mode)" in r.notes
    assert any("ran in interpret mode" in n and "say nothing about the kernel's speed on an accelerator" in n
               for n in r.notes)
    bare = measure(lambda x, y: add(x, y, estimate=False, interpret=True), X, X, hardware=FAKE_CPU, min_runs=3,
                   max_runs=3, warmup=1)
    # Without a cost_estimate the kernel is counted from its body: a multiply and an add per element, its blocks (the
    # whole arrays, one grid step) as bytes; the bytes are said to be a lower bound.
    assert bare.flops == 2 * M * N and bare.transcendentals == 0 and bare.bytes_accessed == 3 * M * N * 4
    assert bare.flops_source == "kernel_body" and bare.counts_lower_bound
    assert "Pallas kernel 'add_kernel' counted from its body: bytes: the blocks the grid maps in and out" in \
        bare.work.lower_bound_reason
    assert any(n.startswith("counts from the Pallas kernel's body (no cost_estimate") and
               "'add_kernel' (interpret mode, counted from its body)" in n for n in bare.notes)
    assert bare.to_dict()["uncounted_custom_calls"] == []


def _pallas_matmul(a: Any, b: Any, block: int = 64) -> Any:
    """A blocked Pallas matmul without a cost_estimate: grid (M/block, N/block), each step a (block, K) x
    (K, block) dot."""
    def kernel(a_ref: Any, b_ref: Any, o_ref: Any) -> None:
        o_ref[...] = jnp.dot(a_ref[...], b_ref[...])

    m, k = a.shape
    n = b.shape[1]
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // block, n // block),
                          in_specs=[pl.BlockSpec((block, k), lambda i, j: (i, 0)),
                                    pl.BlockSpec((k, block), lambda i, j: (0, j))],
                          out_specs=pl.BlockSpec((block, block), lambda i, j: (i, j)), interpret=True)(a, b)


@pytest.mark.slow  # compiles and times two real kernels
def test_kernels_without_an_estimate_are_counted_from_their_body_against_analytic_flops() -> None:
    """JAX's own flash attention (pallas.ops.gpu.attention.mha, interpret mode) and a blocked matmul: their
    matrix FLOPs from the body equal the analytic 4*B*H*S^2*D and 2*M*N*K."""
    from jax.experimental.pallas.ops.gpu import attention

    from pytest_roofline import measure

    b, s, h, d = 1, 256, 2, 64
    q = jnp.ones((b, s, h, d), jnp.float32)

    def mha(q: Any, k: Any, v: Any) -> Any:
        return attention.mha(q, k, v, segment_ids=None, interpret=True,
                             block_sizes=attention.BlockSizes(block_q=64, block_k=64))

    r = measure(mha, q, q, q, hardware=FAKE_CPU, min_runs=1, max_runs=1, warmup=0, cache="warm")
    analytic = 4 * b * h * s * s * d
    # The two dots are matrix FLOPs (analytic); the softmax's arithmetic adds vector FLOPs: 2.5% here.
    assert analytic <= r.flops <= 1.03 * analytic and r.flops_source == "kernel_body"
    assert r.transcendentals == (s // 64) * (64 * 64 + 64) * (s // 64) * b * h  # exp2 per key block and row
    assert r.work.matrix_flops == {"f32": r.flops}
    # Bytes: per grid step a 64-row q block, the whole k and v (256 rows), a 64-row output block.
    assert r.bytes_accessed == (s // 64) * b * h * 4 * (64 * d + 2 * s * d + 64 * d)
    a = jnp.ones((256, 128), jnp.float32)
    w = jnp.ones((128, 192), jnp.float32)
    mm = measure(_pallas_matmul, a, w, hardware=FAKE_CPU, min_runs=1, max_runs=1, warmup=0, cache="warm")
    assert mm.flops == 2 * 256 * 192 * 128 and mm.flops_source == "kernel_body"
    assert mm.bytes_accessed == (256 // 64) * (192 // 64) * 4 * (64 * 128 + 128 * 64 + 64 * 64)


@pytest.mark.slow
@pytest.mark.skipif(jax.devices()[0].platform != "gpu", reason="needs a GPU jaxlib and a GPU: run on a lent device")
def test_real_gpu_pallas_kernel_gets_its_estimate() -> None:  # pragma: no cover - GPU only
    from pytest_roofline import measure

    r = measure(add, X, X)
    assert (r.flops, r.transcendentals, r.bytes_accessed) == (FLOPS, TRANS, BYTES)
    assert any("cost_estimate" in n for n in r.notes)
