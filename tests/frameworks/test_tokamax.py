"""A Pallas kernel library's XLA implementations as its users call them: a string keyword chooses the
implementation, a ragged dot XLA:CPU runs dense (said, with the factor; judged on its useful work with
counts="source"), an attention whose layout changes are copies to max_ops. Real tokamax on this machine's CPU,
skipped where it is not installed (``pip install -e '.[frameworks]'``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline
from pytest_roofline.analysis.verdict.census import check_ops, parse_max_ops
from pytest_roofline.base.errors import MeasureError, origin_frames

tokamax = library("tokamax")

KEY = jax.random.PRNGKey(0)
flags = library("absl.flags")


def test_a_library_that_parses_its_flags_from_pytests_command_line_shows_where(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """tokamax reads its config from absl flags, parsing sys.argv the first time: under pytest that holds pytest's
    own options. The error names the frames that raised it (tokamax's config), not only its text."""
    flags.FLAGS.unparse_flags()
    monkeypatch.setattr(sys, "argv", ["pytest", "--tb=long"])
    x = jnp.ones((8, 128))
    with pytest.raises(MeasureError, match="UnrecognizedFlagError: Unknown command line flag 'tb'") as info:
        pytest_roofline.measure(tokamax.layer_norm, x, jnp.ones(128), jnp.zeros(128), implementation="xla", **FAST)
    frames = origin_frames(info.value.__cause__, "long")
    assert "tokamax" in frames and "config.py" in frames and "flags.FLAGS(sys.argv)" in frames


@pytest.fixture(autouse=True)
def _flags_parsed() -> Iterator[None]:
    """What tokamax's own conftest does: parse absl flags from the program name alone."""
    if not flags.FLAGS.is_parsed():
        flags.FLAGS(sys.argv[:1])
    yield


def test_layer_norm_with_a_string_keyword_needs_no_pre_jitting() -> None:
    # At this size XLA:CPU normalizes in one pass over x (at 2048 x 1024 it reads x three times, by its own choice).
    x, scale, offset = jax.random.normal(KEY, (4096, 2048)), jnp.ones(2048), jnp.zeros(2048)
    result = pytest_roofline.measure(tokamax.layer_norm, x, scale, offset, implementation="xla", **FAST)
    assert result.program.static == ("implementation='xla'",)
    assert result.bytes_accessed == pytest.approx(2 * x.size * 4, rel=0.01)  # x read once, written once


def test_a_ragged_dot_run_dense_says_so_and_counts_source_judges_its_useful_work() -> None:
    m, k, n, groups = 1024, 256, 256, 8
    lhs, rhs = jax.random.normal(KEY, (m, k)), jax.random.normal(KEY, (groups, k, n))
    sizes = jnp.full((groups,), m // groups, jnp.int32)
    result = pytest_roofline.measure(tokamax.ragged_dot, lhs, rhs, sizes, implementation="xla", counts="source",
                                     **FAST)
    assert result.source_flops == 2 * m * k * n and result.flops == 2 * m * k * n
    factor = result.compiled_over_source
    assert factor is not None and factor == pytest.approx(groups, rel=0.05)  # every group over every row
    assert f"{factor:.1f}x the FLOPs the source asks for" in " ".join(result.notes)


def test_attention_layout_changes_are_copies_that_max_ops_sees() -> None:
    q = jax.random.normal(KEY, (2, 512, 4, 64))
    result = pytest_roofline.measure(tokamax.dot_product_attention, q, q, q, implementation="xla", **FAST)
    copies = [op for op in result.ops if op.family == "copy"]
    # The copies are fusions that only transpose or copy: what the census called "XLA fusion" before.
    assert copies and all(op.kind.startswith("copy: fusion") or op.opcode in ("copy", "transpose") for op in copies)
    assert any(op.opcode == "fusion" for op in copies)
    over = check_ops(list(result.ops), parse_max_ops({"copy": 0}, "here", "max_ops= in a test"))
    assert not over.ok and copies[0].name in over.reason
    attention = 2 * 2 * (2 * 4 * 512 * 512 * 64)  # two matmuls of (batch x heads) 512 x 512 x 64
    assert attention <= result.flops <= 1.1 * attention
