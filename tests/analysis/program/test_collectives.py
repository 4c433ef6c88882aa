"""Bytes a collective sends per device in the ring model (analysis/program/collectives.py): each kind against its
formula, on HLO text as XLA prints it (written here, for four devices unless its replica groups say otherwise)."""

from __future__ import annotations

import pytest

from pytest_roofline.analysis.program.collectives import collective_bytes, collective_kind
from pytest_roofline.analysis.program.hlo_reader import parse_hlo

N = 1024  # f32 elements of the operand: 4 KiB
OPERAND = 4 * N


def _bytes(line: str, devices: int = 4) -> float:
    hlo = (f"HloModule m\n\nENTRY e {{\n  p = f32[{N}]{{0}} parameter(0)\n  {line}\n}}\n")
    entry = parse_hlo(hlo).entry
    return collective_bytes(entry, entry.instructions[-1], devices)


@pytest.mark.parametrize(("line", "expected"), [
    # all-reduce: 2(n-1)/n of its buffer, n from the replica groups where they are written
    (f"r = f32[{N}]{{0}} all-reduce(p), replica_groups={{}}, to_apply=add", 2 * 3 / 4 * OPERAND),
    (f"r = f32[{N}]{{0}} all-reduce(p), replica_groups={{{{0,1}},{{2,3}}}}, to_apply=add", 2 * 1 / 2 * OPERAND),
    (f"r = f32[{N}]{{0}} all-reduce(p), replica_groups=[1,8]<=[8], to_apply=add", 2 * 7 / 8 * OPERAND),
    # all-gather: (n-1)/n of the gathered result
    (f"r = f32[{4 * N}]{{0}} all-gather(p), replica_groups={{}}, dimensions={{0}}", 3 / 4 * 4 * OPERAND),
    # reduce-scatter and all-to-all: (n-1)/n of the operand
    (f"r = f32[{N // 4}]{{0}} reduce-scatter(p), replica_groups={{}}, dimensions={{0}}, to_apply=add",
     3 / 4 * OPERAND),
    (f"r = f32[{N}]{{0}} all-to-all(p), replica_groups={{}}, dimensions={{0}}", 3 / 4 * OPERAND),
    # collective-permute: the buffer, whatever the group
    (f"r = f32[{N}]{{0}} collective-permute(p), source_target_pairs={{{{0,1}},{{1,0}}}}", OPERAND),
    # not a collective
    (f"r = f32[{N}]{{0}} add(p, p)", 0.0),
])
def test_each_collective_sends_its_ring_share(line: str, expected: float) -> None:
    assert _bytes(line) == pytest.approx(expected)


def test_a_group_of_one_sends_nothing_and_async_halves_name_their_collective() -> None:
    assert _bytes(f"r = f32[{N}]{{0}} all-reduce(p), replica_groups={{}}, to_apply=add", devices=1) == 0.0
    assert collective_kind("all-reduce-start") == collective_kind("all-reduce-done") == "all-reduce"
    assert collective_kind("collective-permute-done") == "collective-permute" and collective_kind("fusion") is None
