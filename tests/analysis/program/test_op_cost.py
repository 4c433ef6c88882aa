"""The facts of an op's operands a cost reads (analysis/program/op_cost.py): the compute class of a dot, the dtype a
value had before XLA's converts and views, and the operand bytes (each operand once). HLO text as XLA:CPU prints a
bf16 dot (written here)."""

from __future__ import annotations

from pytest_roofline.analysis.program.hlo_reader import parse_hlo
from pytest_roofline.analysis.program.op_cost import compute_class, operand_bytes, source_dtype

# XLA:CPU's bf16 matmul: both operands converted to f32 (one through a transpose), an f32 dot, converted back
BF16_DOT = """HloModule m

ENTRY e {
  a = bf16[64,32]{1,0} parameter(0)
  b = bf16[32,16]{1,0} parameter(1)
  a32 = f32[64,32]{1,0} convert(a)
  b32 = f32[32,16]{1,0} convert(b)
  bt = f32[16,32]{1,0} transpose(b32), dimensions={1,0}
  d = f32[64,16]{1,0} dot(a32, b32), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[64,32]{1,0} add(a32, a32)
  ROOT r = bf16[64,16]{1,0} convert(d)
}
"""


def test_the_widest_operand_sets_a_dots_class() -> None:
    assert compute_class(["bf16", "s8"]) == "bf16" and compute_class(["f32", "bf16"]) == "f32"
    assert compute_class(["s8", "s8"]) == "int8" and compute_class(["f8e4m3fn", "bf16"]) == "bf16"
    assert compute_class(["f8e5m2", "f8e4m3fn"]) == "fp8" and compute_class(["c64"]) == "f32"
    assert compute_class([]) == "f32"


def test_a_value_converted_by_the_compiler_keeps_its_source_dtype() -> None:
    module = parse_hlo(BF16_DOT)
    entry = module.entry
    assert source_dtype(module, entry, "a32") == "bf16"  # convert of a bf16 parameter
    assert source_dtype(module, entry, "bt") == "bf16"  # a view of a convert
    assert source_dtype(module, entry, "d") == "f32"  # computed in f32: its own dtype
    assert source_dtype(module, entry, "a32", param_sources=("f32", "f32")) == "f32"  # its caller passed f32


def test_operand_bytes_count_each_operand_once() -> None:
    entry = parse_hlo(BF16_DOT).entry
    dot, add = entry.by_name["d"], entry.by_name["s"]
    assert operand_bytes(entry, dot) == 64 * 32 * 4 + 32 * 16 * 4
    assert operand_bytes(entry, add) == 64 * 32 * 4  # the same operand twice is read once
