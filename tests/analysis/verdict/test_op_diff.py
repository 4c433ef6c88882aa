"""The op-by-op difference of two results of one kernel, on constructed op lists (renamed fusions, a split
fusion, an added copy, a program change that costs no time), and on two real compiled programs. Pure."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_roofline.analysis.model.per_op import OpRow
from pytest_roofline.analysis.verdict.op_diff import diff_ops, match_ops

# What XLA's CPU backend makes of these programs: compiled for the CPU device wherever the tests run.
pytestmark = pytest.mark.cpu_backend

MIB = 2**20


def op(name: str, shape: str = "f32[1024,1024]", operands: tuple[str, ...] = ("f32[1024,1024]",),
       opcode: str = "fusion", kind: str | None = "kLoop", ms: float = 1.0, bytes_: float = 8 * MIB) -> OpRow:
    """A made-up op row: only its identity, bytes and measured time matter here (roofline time = bytes at
    10 GB/s)."""
    family = {"fusion": "XLA fusion", "copy": "copy"}.get(opcode, "XLA op")
    return OpRow(name, opcode, kind, "main", shape, operands, dtype="vector", executions=1, flops=0.0,
                 transcendentals=0.0, bytes=bytes_, collective_bytes=0.0, compute_time_s=0.0,
                 memory_time_s=bytes_ / 1e10, comms_time_s=0.0, measured_s=ms * 1e-3, events_per_run=1.0, family=family)


def test_renumbered_fusions_match_by_structure_and_cost_nothing() -> None:
    base = [op("fusion.3", ms=2.0), op("fusion.4", shape="f32[1024]", ms=1.0)]
    head = [op("fusion.7", ms=2.01), op("fusion.9", shape="f32[1024]", ms=0.99)]
    pairs = match_ops(base, head)
    assert [(b.name if b else None, h.name if h else None, how) for b, h, how in pairs] == [
        ("fusion.3", "fusion.7", "structure"), ("fusion.4", "fusion.9", "structure")]
    diff = diff_ops(base, head, 3e-3, 3e-3)
    assert [c.kind for c in diff.changes] == ["same time", "same time"]
    assert not diff.program_changed
    assert diff.moved == ()
    assert diff.lines()[-1] == "  no op moved by more than its noise"


def test_same_name_same_structure_pairs_by_name_before_order() -> None:
    # two ops of one structure swap places: each pairs with its own name, not with the one in its position
    base = [op("fusion.1", ms=1.0), op("fusion.2", ms=5.0)]
    head = [op("fusion.2", ms=5.0), op("fusion.1", ms=1.0)]
    assert [(b.name, h.name, how) for b, h, how in match_ops(base, head)  # type: ignore[union-attr]
            ] == [("fusion.2", "fusion.2", "name"), ("fusion.1", "fusion.1", "name")]


def test_an_added_copy_is_named_with_its_share_of_the_change() -> None:
    base = [op("fusion.1", ms=4.0), op("reduce.2", shape="f32[1024]", opcode="reduce", kind=None, ms=1.0)]
    head = [op("fusion.5", ms=4.0), op("copy.9", opcode="copy", kind=None, ms=4.8, bytes_=8 * MIB),
            op("reduce.6", shape="f32[1024]", opcode="reduce", kind=None, ms=1.0)]
    diff = diff_ops(base, head, 5.2e-3, 10.0e-3)
    top = diff.changes[0]
    assert (top.kind, top.name, top.base) == ("added", "copy.9", None)
    assert diff.share(top) == pytest.approx(1.0)
    assert diff.between_ops_s == pytest.approx(0.0, abs=1e-12)
    assert diff.program_changed
    lines = diff.lines()
    assert lines[0].startswith("the head's program: 1 op added, 2 the same; device time 5.2 ms -> 10 ms per run")
    assert lines[1] == "  census: device ops per run 2 -> 3: +1 copy"
    assert lines[2] == (
        "  added copy.9, copy f32[1024,1024] -> f32[1024,1024]: 4.8 ms, 48% of the run, 8 MiB moved, roofline "
        "fraction 17%; 100% of the change"
    )
    assert len(lines) == 3  # the renumbered fusion and the reduce took the same time: not listed


def test_a_split_fusion_keeps_the_part_that_writes_the_old_result() -> None:
    # base: one fusion reads x and y and writes z; head: the first part writes a temporary, the second reads it
    # and y and writes z
    base = [op("fusion.2", operands=("f32[1024,1024]", "f32[1024,1024]"), ms=3.0)]
    head = [op("fusion.4", shape="f32[1024,1024]{1,0:T}", operands=("f32[1024,1024]",), ms=2.0),
            op("fusion.5", operands=("f32[1024,1024]{1,0:T}", "f32[1024,1024]"), ms=2.5)]
    pairs = match_ops(base, head)
    assert [(b.name if b else None, h.name if h else None, how) for b, h, how in pairs] == [
        (None, "fusion.4", ""), ("fusion.2", "fusion.5", "result shape")]
    diff = diff_ops(base, head, 3.1e-3, 4.6e-3)
    assert [(c.kind, c.name) for c in diff.changes] == [("added", "fusion.4"), ("faster", "fusion.2 -> fusion.5")]
    assert diff.share(diff.changes[0]) == pytest.approx(2.0 / 1.5)
    assert diff.share(diff.changes[1]) == pytest.approx(-0.5 / 1.5)
    assert "(matched by result shape: other operands)" in diff.lines()[3]
    assert diff.lines()[1] == "  census: device ops per run 1 -> 2: +1 XLA fusion"


def test_a_removed_op_and_an_op_resized_in_place() -> None:
    base = [op("fusion.1", ms=2.0), op("transpose.3", opcode="transpose", kind=None, ms=1.0)]
    head = [op("fusion.1", shape="f32[2048,1024]", ms=4.0)]
    diff = diff_ops(base, head, 3e-3, 4e-3)
    kinds = {c.name: (c.kind, c.matched_by) for c in diff.changes}
    assert kinds == {"fusion.1": ("slower", "name only"), "transpose.3": ("removed", "")}
    assert diff.share(next(c for c in diff.changes if c.kind == "removed")) == pytest.approx(-1.0)
    assert diff.share(next(c for c in diff.changes if c.kind == "slower")) == pytest.approx(2.0)


def test_a_program_change_that_costs_no_time_is_said_to_be_one() -> None:
    # a fusion that now reads another operand layout, at the same time: the program changed, the kernel did not
    base = [op("fusion.1", operands=("f32[1024,1024]",), ms=2.0)]
    head = [op("fusion.8", operands=("f32[1024,1024]{0,1}",), ms=2.01)]
    diff = diff_ops(base, head, 2e-3, 2.01e-3)
    assert diff.program_changed
    assert diff.moved == () and [c.kind for c in diff.free] == ["same time"]
    lines = diff.lines()
    assert (
        lines[1]
        == "  the compiled program changed at no cost in time (under 40.2 us each): rebuilt fusion.1 -> fusion.8"
    )
    assert "regress" not in " ".join(lines)


def test_the_json_form_lists_what_moved_with_its_share() -> None:
    base = [op("fusion.1", ms=4.0)]
    head = [op("fusion.1", ms=4.0), op("copy.2", opcode="copy", kind=None, ms=4.0)]
    document = diff_ops(base, head, 4e-3, 8e-3).to_dict()
    assert document["program_changed"] is True
    assert [(c["kind"], c["name"], c["share"]) for c in document["changes"]] == [("added", "copy.2", 1.0)]
    assert document["changes"][0]["head"]["roofline_fraction"] == pytest.approx((8 * MIB / 1e10) / 4e-3)


def test_an_op_without_a_measured_time_counts_as_zero() -> None:
    base = [replace(op("fusion.1"), measured_s=None)]
    head = [op("fusion.1", ms=1.0)]
    diff = diff_ops(base, head, 1e-3, 1e-3)
    assert diff.changes[0].delta_s == pytest.approx(1e-3)


def test_small_added_ops_are_named_at_no_cost_after_those_that_moved() -> None:
    base = [op("fusion.1", ms=4.0)]
    head = [op("fusion.1", ms=4.0), op("copy.2", opcode="copy", kind=None, ms=4.0),
            op("add.3", shape="f32[]", operands=("f32[]", "f32[]"), opcode="add", kind=None, ms=0.003)]
    lines = diff_ops(base, head, 4e-3, 8.003e-3).lines()
    assert lines[0].startswith("the head's program: 2 ops added, 1 the same")
    assert lines[1] == "  census: device ops per run 1 -> 3: +1 XLA op, +1 copy"
    assert lines[2].startswith("  added copy.2")
    assert lines[3] == "  also changed at no cost in time (under 160 us each): added add.3"


def test_real_programs_a_second_pass_is_the_op_added() -> None:
    """Two compiled programs (CPU): a row sum, and the same sum with a transposed copy of the input returned
    beside it. Every op of the sum is matched to one of the same shape, and what the head adds writes the copy
    (no times: only the matching; how XLA fuses the sum differs between jax versions)."""
    jax = pytest.importorskip("jax")
    from pytest_roofline.analysis.model.per_op import op_rows
    from pytest_roofline.analysis.program.hlo_reader import parse_hlo

    def rows(fn: object) -> list[OpRow]:
        text = jax.jit(fn).lower(jax.numpy.ones((256, 256))).compile().as_text()
        return op_rows(parse_hlo(text), lambda _: 1e11, 1e11, 1e10)

    base = rows(lambda x: jax.numpy.tanh(x).sum(axis=1))
    head = rows(lambda x: (jax.numpy.tanh(x).sum(axis=1), (x * x).T.copy()))
    pairs = match_ops(base, head)
    matched = [(b, h) for b, h, how in pairs if b is not None and h is not None]
    added = [h for b, h, _ in pairs if b is None]
    assert len(matched) == len(base) and all(b.shape == h.shape for b, h in matched)
    assert any(h.shape == "f32[256]" for _, h in matched)  # the sum
    assert added and all(h is not None and h.shape == "f32[256,256]" for h in added)  # the copy


def test_no_census_change_against_rows_without_families() -> None:
    """A report of an older version has no op families: its census cannot be compared, so none is said."""
    base = [replace(op("fusion.1"), family="")]
    head = [op("fusion.1"), op("copy.2", opcode="copy", kind=None)]
    assert diff_ops(base, head, 1e-3, 2e-3).census_change == ""
