"""Library custom calls (cuBLAS/hipBLAS gemms, cuDNN convolutions) and HLO in the spelling of XLA dumps.

The gemm counts are checked on real programs in test_realtraces.py; the HLO below is constructed (named so)
in the spelling of a real GPU dump (no '%', ENTRY without a signature, results as (output, workspace))."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.analysis.program.counts import hlo_counts
from pytest_roofline.analysis.program.hlo_reader import parse_hlo
from pytest_roofline.analysis.program.xla_costs import computation_cost
from pytest_roofline.cli.main import main

# What XLA's CPU backend makes of these programs: compiled for the CPU device wherever the tests run.
pytestmark = pytest.mark.cpu_backend

# Constructed, in the spelling of an XLA GPU dump.
CONSTRUCTED_GPU_DUMP = """HloModule jit_step, is_scheduled=true

fused_dynamic_slice_gemm {
  p0 = f32[16,64,128]{2,1,0} parameter(0)
  p1 = f32[128,256]{1,0} parameter(1)
  i = s32[] parameter(2)
  zero = s32[] constant(0)
  ds = f32[1,64,128]{2,1,0} dynamic-slice(p0, i, zero, zero), dynamic_slice_sizes={1,64,128}
  bc = f32[64,128]{1,0} bitcast(ds)
  gemm = (f32[64,256]{1,0}, s8[1048576]{0}) custom-call(bc, p1), custom_call_target="__cublas$lt$matmul", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}}
  ROOT out = f32[64,256]{1,0} get-tuple-element(gemm), index=0
}

ENTRY main.2076_spmd {
  x = f32[16,64,128]{2,1,0} parameter(0)
  w = f32[128,256]{1,0} parameter(1)
  img = bf16[8,32,32,64]{3,2,1,0} parameter(2)
  k = bf16[3,3,64,128]{3,2,1,0} parameter(3)
  idx = s32[] parameter(4)
  custom-call.40.0 = (bf16[8,32,32,128]{3,2,1,0}, u8[0]{0}) custom-call(img, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, custom_call_target="__cudnn$convForward"
  conv = bf16[8,32,32,128]{3,2,1,0} get-tuple-element(custom-call.40.0), index=0
  sliced = f32[64,256]{1,0} fusion(x, w, idx), kind=kCustom, calls=fused_dynamic_slice_gemm, backend_config={"fusion_backend_config":{"kind":"__custom_fusion","custom_fusion_config":{"name":"dynamic_address_computation"}}}
  flash = bf16[8,32,32,128]{3,2,1,0} custom-call(conv), custom_call_target="__cudnn$fmhaSoftmax"
  ROOT t = (bf16[8,32,32,128]{3,2,1,0}, f32[64,256]{1,0}) tuple(flash, sliced)
}
"""  # noqa: E501 (HLO text as XLA prints it)


def test_constructed_dump_spelling_is_read() -> None:
    module = parse_hlo(CONSTRUCTED_GPU_DUMP)
    assert module.entry_name == "main.2076_spmd"
    call = module.entry.by_name["custom-call.40.0"]
    assert call.operands == ("img", "k") and call.shape.is_tuple


def test_constructed_library_calls_are_counted_and_the_unknown_one_is_named() -> None:
    module = parse_hlo(CONSTRUCTED_GPU_DUMP)
    cost = computation_cost(module, module.entry_name, multiply_loops=True)
    conv = 2.0 * (8 * 32 * 32 * 128) * (3 * 3 * 64)  # 2 x outputs x kernel elements per output feature
    gemm = 2.0 * 64 * 256 * 128  # the gemm inside the address-computation fusion
    assert cost.matrix_flops == {"bf16": conv, "f32": gemm}
    assert cost.custom_call_flops == conv + gemm
    assert cost.uncounted == ("flash (__cudnn$fmhaSoftmax)",)
    counts = hlo_counts(module)
    assert counts.lower_bound and counts.uncounted == ("flash (__cudnn$fmhaSoftmax)",)
    # Traffic: the conv's workspace (u8[0]) and the gemm's (s8[1 MiB]) are scratch, not traffic; the fusion
    # reads only the slice of x it uses.
    conv_bytes = (8 * 32 * 32 * 64 + 3 * 3 * 64 * 128 + 8 * 32 * 32 * 128) * 2
    fusion_bytes = 64 * 128 * 4 + 128 * 256 * 4 + 4 + 64 * 256 * 4
    flash_bytes = 2 * 8 * 32 * 32 * 128 * 2
    assert cost.bytes == conv_bytes + fusion_bytes + flash_bytes


def test_analyze_hlo_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "module_0001.jit_step.sm_90_gpu_after_optimizations.txt"
    dump.write_text(CONSTRUCTED_GPU_DUMP)
    assert main(["analyze", "--hlo", str(dump), "--json"]) == 0
    (program,) = json.loads(capsys.readouterr().out)["programs"]
    assert program["runs"] == 0 and program["per_run_s"] == [] and program["utilization"] is None
    assert program["matrix_flops"]["bf16"] == 2.0 * (8 * 32 * 32 * 128) * (3 * 3 * 64)
    assert program["counts_incomplete"] == ["flash (__cudnn$fmhaSoftmax)"]
    assert main(["analyze", "--hlo", str(dump), "--hardware", "H100 SXM"]) == 0
    out = capsys.readouterr().out
    assert "roofline" in out and "custom-call.40.0" in out and "counts incomplete" in out
    bad = tmp_path / "bad.txt"
    bad.write_text("not hlo at all\n")
    assert main(["analyze", "--hlo", str(bad)]) == 2
    assert "not optimized HLO text" in capsys.readouterr().err


def test_analyze_hlo_of_a_cpu_program_with_a_loop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def ten_matmuls(a: Any) -> Any:
        return jax.lax.fori_loop(0, 10, lambda i, x: jnp.tanh(x @ a), a)

    text = jax.jit(ten_matmuls).lower(jnp.ones((64, 64), jnp.float32)).compile().as_text()
    dump = tmp_path / "loop.txt"
    dump.write_text(text)
    assert main(["analyze", "--hlo", str(dump), "--json"]) == 0
    (program,) = json.loads(capsys.readouterr().out)["programs"]
    assert program["matrix_flops"] == {"f32": 10 * 2.0 * 64**3}  # the loop body times its trip count


# Dense linear algebra on the CPU: real compiled programs (jax on this machine, LAPACK custom calls) against the
# textbook counts of an n x n matrix; what XLA's cost analysis leaves out (it counts a custom call as no FLOP).
N, RHS = 256, 16


@pytest.mark.parametrize(("name", "kernel", "analytic", "lower_bound"), [
    ("solve", lambda a, b: jnp_linalg().solve(a, b), 2 * N**3 / 3 + 2 * N * N * RHS, False),  # LU, two trsm
    ("cholesky", lambda a, b: jnp_linalg().cholesky(a), N**3 / 3, False),
    ("qr", lambda a, b: jnp_linalg().qr(a), 2 * (2 * N**3 - 2 * N**3 / 3), False),  # geqrf and forming Q
    ("eigh", lambda a, b: jnp_linalg().eigh(a), 4 * N**3 / 3, True),  # its tridiagonal reduction: a lower bound
    ("svd", lambda a, b: jnp_linalg().svd(a), 4 * N**3 - 4 * N**3 / 3, True),
])
def test_dense_linear_algebra_is_counted_from_its_shapes(name: str, kernel: Any, analytic: float,
                                                          lower_bound: bool) -> None:
    jax = pytest.importorskip("jax")
    from helpers import compile_counts

    a = jax.numpy.eye(N) * 2.0 + 0.01
    counts, _, compiled = compile_counts(kernel, a, jax.numpy.ones((N, RHS)))
    # The elementwise work around the call (symmetrizing, masking) adds a few percent at this size.
    assert counts.flops == pytest.approx(analytic, rel=0.1), (name, counts.flops / analytic)
    assert counts.source == "hlo" and counts.lower_bound == lower_bound
    assert all("its reduction counted, not its iterations" in u for u in counts.uncounted)
    assert not counts.matrix_flops  # vector FLOPs: a solver's panels do not run at a matrix unit's peak
    # The top of the range a lower bound states: eigh 9 n^3, an SVD with U and V 4 m^2 n + 22 n^3 (m = n here).
    top = {"eigh": 9 * N**3, "svd": 26 * N**3}.get(name)
    assert counts.flops_top_extra == pytest.approx(top - analytic if top else 0.0, rel=1e-6)


def jnp_linalg() -> Any:
    import jax.numpy as jnp

    return jnp.linalg
