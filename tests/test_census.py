"""The kernel census: each op's family from its HLO (library calls, Triton, Pallas, collectives, copies), device ops
per run counted against the trip counts of a real compiled loop, max_ops= parsing and checking, a failure that
names what appeared, and the change between two censuses."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import fakes
import pytest
from test_fixture import Failed, Harness

from pytest_roofline.analysis.model.per_op import OpRow, OpsModel, op_rows
from pytest_roofline.analysis.program.hlo_reader import parse_hlo
from pytest_roofline.analysis.verdict.census import Census, CensusCheck, census, census_change, check_ops, parse_max_ops
from pytest_roofline.analysis.verdict.decide import decide
from pytest_roofline.analysis.verdict.op_family import op_family

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
"""


def test_each_op_is_of_its_family() -> None:
    entry = parse_hlo(HLO).entry
    families = {i.name: op_family(i) for i in entry.instructions if i.opcode != "parameter"}
    assert families == {"gemm": "cuBLAS", "conv": "cuDNN", "tri": "Triton", "pal": "Pallas", "ar": "collective",
                        "cp": "copy", "f": "XLA fusion", "add": "XLA op"}


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
    return OpRow(name, "fusion", "kLoop", "main", "f32[8]", (), "vector", 1, 0.0, 0.0, 32.0, 0.0, 0.0, 1e-9, 0.0,
                 1e-6, per_run, family)


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
    """Fake results (tests/fakes.py) given the made-up rows above: max_ops={"copy": 1} in the marker fails with
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
