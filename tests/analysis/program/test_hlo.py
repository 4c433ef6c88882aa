"""The HLO reader on real optimized HLO captured at test time, and on malformed text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_roofline.analysis.program.hlo_reader import HloParseError, parse_hlo, parse_shape

jax = pytest.importorskip("jax")

# What XLA's CPU backend makes of these programs: compiled for the CPU device wherever the tests run.
pytestmark = pytest.mark.cpu_backend
jnp = jax.numpy


def _hlo(fn: Callable[..., Any], *args: Any) -> str:
    return str(jax.jit(fn).lower(*args).compile().as_text())


def test_reads_a_matmul() -> None:
    a = jnp.ones((128, 256), jnp.float32)
    b = jnp.ones((256, 64), jnp.float32)
    module = parse_hlo(_hlo(lambda x, y: x @ y, a, b))
    dots = [i for c in module.computations.values() for i in c.instructions if i.opcode == "dot"]
    assert len(dots) == 1
    dot = dots[0]
    assert dot.shape.dims == (128, 64) and dot.shape.dtype == "f32"
    assert dot.int_list("lhs_contracting_dims") == (1,)
    assert module.entry.root.opcode in ("fusion", "dot")
    params = [i for i in module.entry.instructions if i.opcode == "parameter"]
    assert [p.shape.dims for p in params] == [(128, 256), (256, 64)]


def test_reads_a_loop_with_its_trip_count_and_tuples() -> None:
    x = jnp.ones((32, 32), jnp.float32)
    module = parse_hlo(_hlo(lambda v: jax.lax.fori_loop(0, 7, lambda i, y: y * 2.0, v), x))
    loops = [i for c in module.computations.values() for i in c.instructions if i.opcode == "while"]
    assert len(loops) == 1
    loop = loops[0]
    assert loop.known_trip_count == 7
    assert loop.shape.is_tuple and len(loop.shape.elements_of) == 2
    assert set(loop.called) == {loop.attrs["body"].lstrip("%"), loop.attrs["condition"].lstrip("%")}
    assert all(name in module.computations for name in loop.called)


@pytest.mark.parametrize("kernel", ["softmax", "conv", "reduce", "scan"])
def test_reads_real_programs_of_several_kinds(kernel: str) -> None:
    if kernel == "softmax":
        text = _hlo(lambda v: jax.nn.softmax(v, axis=-1), jnp.ones((64, 128)))
    elif kernel == "conv":
        x = jnp.ones((2, 3, 32, 32))
        w = jnp.ones((8, 3, 3, 3))
        text = _hlo(lambda a, b: jax.lax.conv(a, b, (1, 1), "SAME"), x, w)
    elif kernel == "reduce":
        text = _hlo(lambda v: (v.max(axis=0), v.sum()), jnp.ones((256, 256)))
    else:
        text = _hlo(lambda v: jax.lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(16), v), jnp.ones((10, 16)))
    module = parse_hlo(text)
    assert module.entry.instructions
    called = {n for c in module.computations.values() for i in c.instructions for n in i.called}
    assert called <= set(module.computations)


def test_shapes() -> None:
    assert parse_shape("f32[1024,1024]{1,0}").bytes == 4 * 1024 * 1024
    assert parse_shape("bf16[8]").bytes == 16
    assert parse_shape("pred[]").num_elements == 1
    t = parse_shape("(s32[], f32[4,4]{1,0})")
    assert t.is_tuple and t.bytes == 4 + 64
    with pytest.raises(ValueError):
        parse_shape("q99[3]")


GOOD_HEADER = "HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n\n"


def test_malformed_instruction_names_its_line() -> None:
    text = (
        GOOD_HEADER
        + "ENTRY %main (x: f32[4]) -> f32[4] {\n  %x = f32[4]{0} parameter(0)\n  ROOT %y = f32[4 add(%x, %x)\n}\n"
    )
    with pytest.raises(HloParseError) as info:
        parse_hlo(text)
    assert info.value.line_no == 5
    assert "line 5" in str(info.value) and "ROOT %y" in str(info.value)


def test_unclosed_computation_and_missing_entry() -> None:
    with pytest.raises(HloParseError, match="not closed"):
        parse_hlo(GOOD_HEADER + "ENTRY %main (x: f32[4]) -> f32[4] {\n  %x = f32[4]{0} parameter(0)\n")
    with pytest.raises(HloParseError, match="no ENTRY"):
        parse_hlo(GOOD_HEADER + "%c (x: f32[4]) -> f32[4] {\n  ROOT %x = f32[4]{0} parameter(0)\n}\n")
    with pytest.raises(HloParseError, match="HloModule"):
        parse_hlo("ENTRY %main (x: f32[4]) -> f32[4] {\n  ROOT %x = f32[4]{0} parameter(0)\n}\n")


def test_unknown_element_type_is_an_error_not_a_guess() -> None:
    text = GOOD_HEADER + "ENTRY %main (x: f32[4]) -> f32[4] {\n  ROOT %x = zz9[4]{0} parameter(0)\n}\n"
    with pytest.raises(HloParseError, match="unknown element type"):
        parse_hlo(text)


def test_convolution_window_and_dim_labels() -> None:
    x, w = jnp.ones((1, 3, 16, 16)), jnp.ones((4, 3, 3, 3))
    module = parse_hlo(_hlo(lambda a, b: jax.lax.conv_general_dilated(a, b, (2, 2), ((1, 1), (1, 1))), x, w))
    (conv,) = [i for c in module.computations.values() for i in c.instructions if i.opcode == "convolution"]
    assert "size=3x3" in conv.attrs["window"] and "stride=2x2" in conv.attrs["window"]
    assert "pad=1_1x1_1" in conv.attrs["window"]
    assert "->" in conv.attrs["dim_labels"]
    assert sorted(conv.shape.dims) == [1, 4, 8, 8]  # XLA picks the layout (NHWC on a CPU)


def test_tuples_with_index_comments() -> None:
    # XLA writes /*index=5*/ before every fifth element of a long tuple (shapes and operand lists).
    x = jnp.ones((64, 64), jnp.float32)
    text = _hlo(lambda v: (v + 1, v + 2, v * 3, v - 4, v / 5, v @ v, v.T), x)
    assert "/*index=5*/" in text
    module = parse_hlo(text)
    root = module.entry.root
    assert root.opcode == "tuple" and len(root.shape.elements_of) == 7 and len(root.operands) == 7
    assert all(s.dims == (64, 64) for s in root.shape.elements_of)


def test_comments_inside_quoted_strings_are_kept() -> None:
    from pytest_roofline.analysis.program.hlo_scan import strip_comments

    line = '%c = f32[] custom-call(/*index=0*/%a), custom_call_target="x/*y*/z"'
    assert strip_comments(line) == '%c = f32[] custom-call(%a), custom_call_target="x/*y*/z"'


def test_an_instruction_over_several_lines_is_read_and_an_unclosed_one_is_an_error() -> None:
    # Constructed: a backend_config JSON printed with newlines, as Mosaic TPU custom calls print theirs.
    text = (
        "HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n"
        '  ROOT c = f32[4]{0} custom-call(p), custom_call_target="x", backend_config={"a": {\n"b":1,\n"s":"}{"\n}}\n'
        "}\n"
    )
    call = parse_hlo(text).entry.root
    assert call.backend_config == {"a": {"b": 1, "s": "}{"}} and call.line_no == 5
    broken = text.replace('"s":"}{"\n}}\n}\n', '"s":"}{"\n')
    with pytest.raises(HloParseError, match="cannot read HLO line 5: the instruction's brackets are never closed"):
        parse_hlo(broken)
