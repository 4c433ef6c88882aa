"""The kernel census: each op's family from its HLO (library calls, Triton, Pallas, collectives, copies), device ops
per run counted against the trip counts of a real compiled loop, max_ops= parsing and checking, a failure that
names what appeared, and the change between two censuses."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import fakes
import pytest
from harness import Failed, Harness

from pytest_roofline.analysis.model.op_family import op_family
from pytest_roofline.analysis.model.per_op import OpRow, OpsModel, op_rows
from pytest_roofline.analysis.program.hlo_reader import parse_hlo
from pytest_roofline.analysis.verdict.census import Census, CensusCheck, census, census_change, check_ops, parse_max_ops
from pytest_roofline.analysis.verdict.decide import decide

# What XLA's CPU backend makes of these programs: compiled for the CPU device wherever the tests run.
pytestmark = pytest.mark.cpu_backend

HLO = """HloModule families

fused {
  a = f32[8,8]{1,0} parameter(0)
  ROOT n = f32[8,8]{1,0} negate(a)
}

ENTRY main {
  p0 = f32[8,8]{1,0} parameter(0)
  gemm = (f32[8,8]{1,0}, s8[64]{0}) custom-call(p0, p0), custom_call_target="__cublas$lt$matmul"
  conv = (f32[8,8]{1,0}, u8[0]{0}) custom-call(p0, p0), custom_call_target="__cudnn$convForward"
  tri = f32[8,8]{1,0} fusion(p0), kind=kCustom, calls=fused, backend_config={"fusion_backend_config":{"kind":"__triton_gemm"}}
  pal = f32[8,8]{1,0} custom-call(p0), custom_call_target="tpu_custom_call"
  ar = f32[8,8]{1,0} all-reduce(p0), replica_groups={}, to_apply=fused
  cp = f32[8,8]{0,1} copy(p0)
  f = f32[8,8]{1,0} fusion(p0), kind=kLoop, calls=fused
  ROOT add = f32[8,8]{1,0} add(f, cp)
}
"""  # noqa: E501 (HLO text as XLA prints it)


def test_each_op_is_of_its_family() -> None:
    entry = parse_hlo(HLO).entry
    families = {i.name: op_family(i) for i in entry.instructions if i.opcode != "parameter"}
    assert families == {"gemm": "cuBLAS", "conv": "cuDNN", "tri": "Triton", "pal": "Pallas", "ar": "collective",
                        "cp": "copy", "f": "XLA fusion", "add": "XLA op"}


# The fusions of the attention in the trace (XLA:CPU), written out: they only copy and transpose, and a
# kCustom fusion around a dot (XLA:CPU's ynn_fusion) is a matmul.
NAMED = """HloModule named

copy_body {
  a = f32[8,16]{1,0} parameter(0)
  b = f32[16,8]{1,0} bitcast(a)
  ROOT c = f32[16,8]{0,1} copy(b)
}

transpose_body {
  a = f32[8,16]{1,0} parameter(0)
  t = f32[16,8]{1,0} transpose(a), dimensions={1,0}
  ROOT c = f32[16,8]{0,1} copy(t)
}

dot_body {
  a = f32[8,16]{1,0} parameter(0)
  b = f32[16,8]{1,0} parameter(1)
  d = f32[8,8]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT e = f32[8,8]{1,0} exponential(d)
}

ENTRY main {
  p0 = f32[8,16]{1,0} parameter(0)
  p1 = f32[16,8]{1,0} parameter(1)
  copy_bitcast_fusion = f32[16,8]{0,1} fusion(p0), kind=kLoop, calls=copy_body
  transpose_copy_fusion = f32[16,8]{0,1} fusion(p0), kind=kLoop, calls=transpose_body
  ynn_fusion = f32[8,8]{1,0} fusion(p0, p1), kind=kCustom, calls=dot_body
  ROOT d = f32[8,8]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_a_fusion_is_named_by_what_it_computes() -> None:
    module = parse_hlo(NAMED)
    families = {i.name: op_family(i, module) for i in module.entry.instructions if i.opcode != "parameter"}
    assert families == {"copy_bitcast_fusion": "copy", "transpose_copy_fusion": "copy", "ynn_fusion": "matmul",
                        "d": "matmul"}
    rows = {r.name: r for r in op_rows(module, lambda _: 1e11, 1e11, 1e10)}
    assert rows["ynn_fusion"].kind == "matmul: fusion:kCustom" and rows["d"].kind == "dot"
    assert rows["transpose_copy_fusion"].kind == "copy: fusion:kLoop"
    found = census(list(rows.values()))
    assert found.families == (("copy", 2.0), ("matmul", 2.0))
    assert not check_ops(list(rows.values()), parse_max_ops({"copy": 0}, "here", "max_ops= in a test")).ok


def test_a_real_matmul_and_transpose_are_named_so() -> None:
    """A real compiled program (this machine's CPU): whatever fusion XLA wraps the dot in is a matmul, and a
    transpose written to memory is a copy."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    module = parse_hlo(jax.jit(lambda a, b: (a @ b, a.T + 0.0)).lower(jnp.ones((64, 64)), jnp.ones((64, 64)))
                       .compile().as_text())
    families = [r.family for r in op_rows(module, lambda _: 1e11, 1e11, 1e10)]
    assert "matmul" in families and "copy" in families, families


def test_a_loop_counts_its_body_trip_count_times() -> None:
    """A real compiled fori_loop of 37 trips (CPU): the census from the HLO is the main program's ops plus 37 times
    each body op, the same sum as the rows' executions."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def loop(x: Any) -> Any:
        return jax.lax.fori_loop(0, 37, lambda i, y: jnp.sin(y) * 2.0, x)

    module = parse_hlo(jax.jit(loop).lower(jnp.ones(64)).compile().as_text())
    rows = op_rows(module, lambda _: 1e11, 1e11, 1e10)
    found = census(rows)
    in_body = [r for r in rows if r.computation != "main"]
    assert in_body and all(r.executions == 37 for r in in_body)
    assert found.source == "HLO"
    assert found.ops_per_run == sum(r.executions for r in rows) == 37 * len(in_body) + len(rows) - len(in_body)
    assert Census.from_dict(found.to_dict()) == found


def _row(name: str, family: str, per_run: float = 1.0) -> OpRow:
    return OpRow(name, "fusion", "kLoop", "main", "f32[8]", (), dtype="vector", executions=1, flops=0.0,
                 transcendentals=0.0, bytes=32.0, collective_bytes=0.0, compute_time_s=0.0, memory_time_s=1e-9,
                 comms_time_s=0.0,
                 measured_s=1e-6, events_per_run=per_run, family=family)


ROWS = [_row("fusion.1", "XLA fusion"), _row("copy.2", "copy"), _row("copy.3", "copy", 2.0),
        _row("gemm.4", "cuBLAS")]


def test_census_of_rows_counts_events_per_run() -> None:
    found = census(ROWS)
    assert (found.ops_per_run, found.source) == (5.0, "trace")
    assert found.families == (("copy", 3.0), ("XLA fusion", 1.0), ("cuBLAS", 1.0))
    assert found.text() == "5 device ops per run (trace): 3 copy, 1 XLA fusion, 1 cuBLAS"


@pytest.mark.parametrize("raw", [True, -1, 1.5, "10", {"copies": 1}, {"copy": "0"}, {}])
def test_bad_max_ops_names_where_it_came_from(raw: Any) -> None:
    with pytest.raises(ValueError, match=r"marker of t: max_ops must be a whole number of device ops per run"):
        parse_max_ops(raw, "marker of t", "origin")


def test_check_names_the_ops_of_a_family_over_its_limit() -> None:
    ok = check_ops(ROWS, parse_max_ops(5, "w", "marker"))
    assert ok.ok and ok.census.ops_per_run == 5
    over = check_ops(ROWS, parse_max_ops({"total": 10, "copy": 0}, "w", "max_ops in the marker of t"))
    assert over.reason == "3 copy ops per run, over max_ops 0 (max_ops in the marker of t): copy.3 (x2), copy.2"
    assert CensusCheck.from_dict(over.to_dict()) == over
    decision = decide(fakes.fake_result(0.9).figures, 0.5, ops=over)
    assert decision.verdict == "over-ops" and decision.fails and decision.reason == over.reason


def test_a_census_change_says_which_families_moved() -> None:
    before = census(ROWS)
    after = census([*ROWS, _row("copy.9", "copy"), _row("triton.1", "Triton")])
    assert census_change(before, after) == "device ops per run 5 -> 7: +1 copy, +1 Triton"
    assert census_change(before, before) == ""


def test_the_marker_fails_a_kernel_whose_run_executes_more_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake results (tests/support/fakes.py) given the made-up rows above: max_ops={"copy": 1} in the marker fails with
    "over-ops" and names the copies; a call's max_ops= overrides the marker's."""
    made = fakes.fake_result
    monkeypatch.setattr(fakes, "fake_result", lambda *a, **k: replace(made(*a, **k), ops_model=OpsModel(tuple(ROWS))))
    h = Harness(0.9, 0.9, marker={"min": 0.5, "max_ops": {"copy": 1}})
    with pytest.raises(Failed) as info:
        h.fixture(lambda x: x, 1)
    message = str(info.value)
    assert "3 copy ops per run, over max_ops 1 (max_ops in the marker of test_k.py::test_a): copy.3 (x2)" in message
    assert ("  census        5 device ops per run (trace): 3 copy, 1 XLA fusion, 1 cuBLAS; max_ops copy 1 (max_ops in "
            "the marker of test_k.py::test_a): OVER") in message
    assert h.records[0].verdict == "over-ops"
    h.fixture(lambda x: x, 1, max_ops=5)
    check = h.records[1].max_ops
    assert h.records[1].verdict == "pass" and check is not None and check.ok
