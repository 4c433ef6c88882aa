"""The roofline's numbers for sizing a test (hardware/sizing.py): the peak a dtype meets, the critical intensity
and the smallest compute-bound matmul, checked against the formulas on several entries of the real hardware
table. Pure: no JAX, no timing."""

from __future__ import annotations

import math

import pytest

from pytest_roofline.hardware.sizing import compute_bound_batch, dtype_key
from pytest_roofline.hardware.table import load_shipped_table

TABLE = load_shipped_table()


def intensity(b: int, d: int, f: int, s: int) -> float:
    """x[b, d] @ w[d, f]: 2bdf FLOPs over s(bd + df + bf) bytes (each operand read once, the output written once)."""
    return 2 * b * d * f / (s * (b * d + d * f + b * f))


@pytest.mark.parametrize("name,dtype,peak_key", [
    ("H100 SXM", "bf16", "bf16"), ("H100 SXM", "float32", "tf32"),  # f32 dots run as TF32 on a GPU
    ("MI300X", "bfloat16", "bf16"), ("TPU v5e", "f32", "bf16"),  # and as one bf16 pass on a TPU
    ("TPU v6e", "bf16", "bf16"), ("A100 40GB SXM", "f16", "f16"),
])
def test_critical_intensity_is_the_dtype_s_peak_over_the_memory_bandwidth(name: str, dtype: str,
                                                                          peak_key: str) -> None:
    spec = TABLE[name]
    expected = spec.peaks[peak_key].value / spec.memory_bandwidth.value
    assert spec.critical_intensity(dtype) == pytest.approx(expected)
    assert spec.peak_flops(dtype) == spec.peaks[peak_key].value


def test_h100_figures() -> None:
    h100 = TABLE["H100 SXM"]  # 989 TFLOP/s bf16, 494.7 TF32, 3.35 TB/s
    assert h100.critical_intensity("bf16") == pytest.approx(989e12 / 3.35e12)
    assert h100.critical_intensity("f32") == pytest.approx(494.7e12 / 3.35e12)


@pytest.mark.parametrize("name", ["H100 SXM", "H200 SXM", "B200", "MI300X", "TPU v4", "TPU v5e", "TPU v6e", "L4"])
@pytest.mark.parametrize("dtype,s", [("bf16", 2), ("f32", 4)])
@pytest.mark.parametrize("margin", [1.0, 2.0])
def test_compute_bound_batch_is_the_smallest_batch_over_the_ridge(name: str, dtype: str, s: int,
                                                                  margin: float) -> None:
    spec, d, f = TABLE[name], 8192, 16384
    target = margin * spec.critical_intensity(dtype)
    b = spec.compute_bound_batch(d, f, dtype, margin)
    assert intensity(b, d, f, s) >= target * (1 - 1e-12)
    assert b == 1 or intensity(b - 1, d, f, s) < target
    assert spec.compute_bound_batch(d, f, dtype, margin, multiple=128) == 128 * math.ceil(b / 128)


def test_while_the_batch_is_small_the_intensity_is_about_the_batch_in_bf16() -> None:
    assert intensity(64, 65536, 65536, 2) == pytest.approx(64, rel=0.01)
    assert intensity(64, 65536, 65536, 4) == pytest.approx(32, rel=0.01)


@pytest.mark.parametrize("name", ["H100 SXM", "MI325X", "TPU v5p", "TPU v6e"])
@pytest.mark.parametrize("dtype,s", [("bf16", 2), ("f32", 4)])
def test_compute_bound_size_is_the_smallest_square_over_the_ridge(name: str, dtype: str, s: int) -> None:
    spec = TABLE[name]
    n = spec.compute_bound_size(dtype, margin=2.0)
    target = 2.0 * spec.critical_intensity(dtype)
    assert intensity(n, n, n, s) >= target * (1 - 1e-12) and intensity(n - 1, n - 1, n - 1, s) < target


def test_narrow_weights_are_memory_bound_at_any_batch() -> None:
    with pytest.raises(ValueError, match=r"x\[B, 256\] @ w\[256, 256\] in bf16 is memory-bound at any batch on "
                                         r"H100 SXM: its intensity approaches 128 FLOP/B as B grows, below 2 x the "
                                         r"critical 295.2 FLOP/B; make d and f larger"):
        compute_bound_batch(TABLE["H100 SXM"], 256, 256, "bf16")


@pytest.mark.parametrize("bad", [{"margin": 0.5}, {"multiple": 0}, {"dtype": "complex64"}])
def test_bad_arguments_say_what_is_wrong(bad: dict[str, object]) -> None:
    kwargs: dict[str, object] = {"d": 4096, "f": 4096, "dtype": "bf16", **bad}
    with pytest.raises(ValueError, match="margin must be|multiple must be|not one the roofline sizes"):
        TABLE["H100 SXM"].compute_bound_batch(**kwargs)  # type: ignore[arg-type]


def test_dtypes_by_name_without_jax() -> None:
    class Fake:  # stands in for np.dtype("bfloat16"): anything with a name
        name = "bfloat16"

    assert (dtype_key(Fake()), dtype_key("float32"), dtype_key("float8_e4m3fn"), dtype_key("s8")) == (
        "bf16", "f32", "fp8", "int8")
