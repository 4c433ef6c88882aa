"""Roofline math, including the figures of the scaling book."""

from __future__ import annotations

import pytest

from pytest_roofline.analysis.model.roofline import RooflineEstimate, critical_intensity, estimate, utilization
from pytest_roofline.analysis.program.counts import hlo_counts
from pytest_roofline.analysis.program.hlo_reader import parse_hlo
from pytest_roofline.hardware.table import load_shipped_table


def test_h100_critical_intensity_matches_the_book() -> None:
    h100 = load_shipped_table()["H100 SXM"]
    value = critical_intensity(h100.peaks["bf16"].value, h100.memory_bandwidth.value)
    assert 295 <= value <= 298  # 9.89e14 / 3.35e12


def test_tpu_v5e_critical_intensity_matches_the_book() -> None:
    v5e = load_shipped_table()["TPU v5e"]
    assert critical_intensity(v5e.peaks["bf16"].value, v5e.memory_bandwidth.value) == pytest.approx(240, abs=1)


def test_tpu_v2_ffw_up_projection_time() -> None:
    # Scaling book part 9: 8 TPU v2 cores, B=32*1024 tokens, D=8192, F=32768, bf16.
    v2 = load_shipped_table()["TPU v2"]
    flops = 2 * 32 * 1024 * 8192 * 32768
    per_core = flops / 8
    roof = estimate({"bf16": (per_core, v2.peaks["bf16"].value)}, 0.0, v2.memory_bandwidth.value)
    assert roof.compute_time_s == pytest.approx(0.0956, abs=0.0001)
    assert roof.bound == "compute"


def test_matmul_intensity_is_about_batch_when_batch_is_small() -> None:
    # The book's rule: a bf16 [B, D] x [D, F] matmul with B << D, F has an intensity of about B FLOP/byte.
    # The counts come from the package's HLO counter on a written-out dot (no compiler involved).
    b, d, f = 64, 8192, 8192
    module = parse_hlo(
        "HloModule m\n\nENTRY e {\n"
        f"  x = bf16[{b},{d}]{{1,0}} parameter(0)\n  w = bf16[{d},{f}]{{1,0}} parameter(1)\n"
        f"  ROOT y = bf16[{b},{f}]{{1,0}} dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n}}\n")
    counts = hlo_counts(module)
    assert counts.flops == 2 * b * d * f
    assert counts.bytes_accessed == 2 * (b * d + d * f + b * f)
    assert counts.flops / counts.bytes_accessed == pytest.approx(b, rel=0.02)


def test_bound_and_roofline_time() -> None:
    roof = estimate({"bf16": (1e12, 1e12)}, 4e9, 2e9)  # 1 s of compute, 2 s of memory
    assert roof.bound == "memory"
    assert roof.roofline_time_s == 2.0
    assert roof.critical_intensity == 500
    roof = estimate({"bf16": (3e12, 1e12), "vector": (1e9, 1e9)}, 1e9, 1e9)  # 3 s + 1 s of compute
    assert roof.compute_time_s == 4.0
    assert roof.bound == "compute"
    assert roof.effective_peak_flops == pytest.approx((3e12 + 1e9) / 4.0)


def test_zero_flops_is_memory_bound() -> None:
    roof = estimate({"vector": (0.0, 1e12)}, 1e9, 1e9)
    assert roof.bound == "memory" and roof.roofline_time_s == 1.0


def test_utilization_above_one_is_reported_not_clipped() -> None:
    # A kernel faster than its roofline is a finding (a wrong count or ceiling): the figure must show it.
    assert utilization(2e-3, 1e-3) == 2.0
    assert utilization(1e-3, 4e-3) == 0.25


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_bad_inputs_raise(bad: float) -> None:
    with pytest.raises(ValueError):
        estimate({"x": (1.0, 1.0)}, 1.0, bad)
    with pytest.raises(ValueError):
        utilization(1.0, bad)


def test_interconnect_bound() -> None:
    # The book's example: a ReduceScatter of 134 MB per shard over one 1.2e11 B/s hop, about 1.1 ms.
    roof = estimate({"bf16": (1e6, 1e14)}, 1e3, 1e12, collective_bytes=134e6, interconnect=1.2e11)
    assert roof.bound == "interconnect" and roof.roofline_time_s == pytest.approx(1.12e-3, rel=0.01)
    assert estimate({"bf16": (1e6, 1e14)}, 1e3, 1e12, collective_bytes=134e6).comms_time_s == 0.0


def test_reduce_window_counts_as_xla_does() -> None:
    # XLA's cost analysis: window size - 1 reductions per output element (older XLA:CPU splits a row sum into
    # such a reduce-window and a reduce). A written-out reduce-window of 1024 rows in 16 windows of 64.
    module = parse_hlo(
        "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
        "ENTRY e {\n  x = f32[1024,1024]{1,0} parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[1024,16]{1,0} reduce-window(x, z), window={size=1x64 stride=1x64}, to_apply=add\n}\n")
    assert hlo_counts(module).flops == 63 * 1024 * 16


def test_the_utilization_at_the_top_of_a_range_of_counts_scales_the_compute_term_alone() -> None:
    """A made-up roofline: compute 2 ms, memory 3 ms, first touch 1 ms (4 ms in all) at 50%. With 4x the FLOPs the
    compute term is 8 ms: 9 ms in all, 112.5%; with 1.2x it stays under the memory term, 50%; no top, no figure."""
    roof = RooflineEstimate(0.002, 0.003, 1e11, 1e10, first_touch_time_s=0.001)
    assert roof.utilization_at_top(0.5, 1e8, 4e8) == pytest.approx(0.5 * 9 / 4)
    assert roof.utilization_at_top(0.5, 1e8, 1.2e8) == pytest.approx(0.5)
    assert roof.utilization_at_top(0.5, 1e8, None) is None and roof.utilization_at_top(0.5, 0.0, 1e8) is None
