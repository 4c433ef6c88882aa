"""The statistics of live ceilings and of the verdict's uncertainty, on synthetic series (no JAX, no timing)."""

from __future__ import annotations

import math
import random
from statistics import median

import pytest

from pytest_roofline.analysis.model.live import (
    bracketing_times,
    drifts,
    median_interval,
    pair_utilizations,
    scaled_roofline_time,
    settled,
    uncertainty,
    usable_references,
)
from pytest_roofline.analysis.model.roofline import estimate


def _coverage(n: int, k: int) -> float:
    """P(x_(k) <= median <= x_(n+1-k)) for continuous i.i.d. samples: 1 - 2 P(Bin(n, 1/2) < k)."""
    return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2.0**n


@pytest.mark.parametrize("n", [6, 9, 10, 20, 50, 101])
def test_median_interval_is_the_order_statistics_with_95_percent_coverage(n: int) -> None:
    values = [float(i) for i in range(1, n + 1)]  # x_(i) = i
    low, high = median_interval(values)
    k = int(low)
    assert high == n + 1 - k  # symmetric order statistics
    assert _coverage(n, k) >= 0.95  # covers at least what it says
    assert _coverage(n, k + 1) < 0.95 or k + 1 > n // 2  # and is the narrowest that does


def test_median_interval_with_too_few_samples_is_the_full_range() -> None:
    assert median_interval([3.0, 1.0, 2.0]) == (1.0, 3.0)
    assert median_interval([2.0]) == (2.0, 2.0)
    with pytest.raises(ValueError):
        median_interval([])


def test_interval_covers_the_true_median_about_95_percent_of_the_time() -> None:
    rng = random.Random(1)
    hits = 0
    trials = 2000
    for _ in range(trials):
        sample = [rng.lognormvariate(0.0, 0.3) for _ in range(25)]  # skewed noise, true median 1.0
        low, high = median_interval(sample)
        hits += low <= 1.0 <= high
    assert 0.93 <= hits / trials <= 0.995


def test_outliers_move_neither_the_median_nor_its_interval_much() -> None:
    rng = random.Random(2)
    clean = [0.8 + rng.uniform(-0.01, 0.01) for _ in range(40)]
    dirty = clean[:34] + [0.1, 0.05, 0.2, 5.0, 0.3, 0.02]  # six runs hit by a neighbour (or a fluke)
    a, b = uncertainty(clean), uncertainty(dirty)
    assert abs(a.utilization - b.utilization) < 0.02
    assert b.low > 0.75 and b.high < 0.85


def test_bracketing_times_take_the_median_of_the_nearest_references() -> None:
    assert bracketing_times([1.0, 3.0, 5.0], 2, width=1) == [2.0, 4.0]  # the one before and the one after
    # Width 2: the four nearest; one slow reference run (9.0) moves no pair.
    assert bracketing_times([1.0, 1.0, 9.0, 1.0, 1.0, 1.0], 5) == [1.0, 1.0, 1.0, 1.0, 1.0]
    # A step from 1 to 2 is followed within a pair.
    assert bracketing_times([1.0, 1.0, 1.0, 2.0, 2.0, 2.0], 5) == [1.0, 1.0, 1.5, 2.0, 2.0]
    with pytest.raises(ValueError, match="before the first and after the last of 2 kernel runs"):
        bracketing_times([1.0, 2.0], 2)


def test_references_after_every_few_short_runs_bracket_each_run_with_the_nearest() -> None:
    """Short kernel runs share their references: one before the first run, then after runs 3 and 6 (of 6). Each
    run takes the reference before it and the one after it (width 1), or the two before and after (width 2)."""
    refs, slots = [1.0, 2.0, 4.0], [0, 3, 6]
    assert bracketing_times(refs, 6, width=1, slots=slots) == [1.5, 1.5, 1.5, 3.0, 3.0, 3.0]
    assert bracketing_times(refs, 6, slots=slots) == [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    # The same as one after every run where the slots are 0..runs.
    assert bracketing_times([1.0, 1.0, 1.0, 2.0, 2.0, 2.0], 5, slots=range(6)) == [1.0, 1.0, 1.5, 2.0, 2.0]
    with pytest.raises(ValueError, match="after the last of 6 kernel runs"):
        bracketing_times(refs, 6, slots=[0, 3, 5])  # the last runs unbracketed


def test_reference_runs_that_faulted_no_fresh_pages_are_left_out_of_the_bracket() -> None:
    # A fresh-output reference must fault 12,288 pages (48 MiB); runs that faulted a handful reused mapped pages
    # and ran 4x fast (the pattern seen on a 2-core CPU VM). They are not usable...
    usable = usable_references([12_290, 12, 12_288, 3, 12_300, 12_289], 6, 12_288)
    assert usable == [True, False, True, False, True, True]
    # ...and the bracket around each kernel run takes the others only: 0.004 s runs move no pair.
    times = [0.016, 0.004, 0.016, 0.004, 0.016, 0.016]
    assert bracketing_times(times, 5, usable=usable) == [0.016] * 5
    assert bracketing_times(times, 5)[1] == pytest.approx(0.010)  # without the flags: pulled halfway down
    # A kernel run with no usable reference around it takes the median of all usable ones.
    assert bracketing_times([0.01, 0.001, 0.001, 0.001, 0.02], 4, width=1,
                            usable=[True, False, False, False, True])[1:3] == [pytest.approx(0.015)] * 2
    # Nothing expected (a donated stream, or faults not counted): every run is usable.
    assert usable_references([0, 0, 0], 3, 0) == [True, True, True]
    assert usable_references([], 3, 12_288) == [True, True, True]
    assert usable_references([12_288, 3], 3, 12_288) == [True, True, True]  # not counted for every run
    with pytest.raises(ValueError, match="at least one"):
        bracketing_times([0.01, 0.01], 1, usable=[False, False])


def test_drift_is_reference_rate_now_over_rate_at_calibration() -> None:
    # 1 GFLOP reference: 10 ms is 100 GFLOP/s, calibrated at 100 -> drift 1; 20 ms -> 0.5.
    assert drifts([0.01, 0.02], 1e9, 1e11) == pytest.approx([1.0, 0.5])


def test_a_slow_drift_of_the_machine_cancels_out_of_the_pair_utilization() -> None:
    # The machine slows from full speed to 40% over the measurement; the kernel (at 80% of the ceiling) and the
    # reference slow together. Against the calibration alone the utilization falls; per pair it stays 0.8.
    roof = estimate({"f32": (1e9, 1e11)}, 1e6, 1e10)  # compute-bound, roofline 10 ms
    speed = [1.0 - 0.6 * i / 29 for i in range(30)]
    kernel = [0.0125 / s for s in speed]
    reference = [0.001 / s for s in [1.0] + speed]  # one more reference than kernel runs
    ref_per_run = bracketing_times(reference, 30)
    drift = drifts(ref_per_run, 1e8, 1e11)  # reference: 0.1 GFLOP at the calibrated 100 GFLOP/s
    live = pair_utilizations(roof, kernel, "compute", drift)
    calibrated = pair_utilizations(roof, kernel, None, None)
    assert median(live) == pytest.approx(0.8, rel=0.03)
    assert median(calibrated) < 0.6
    u = uncertainty(live)  # the bracketing mean lags a moving speed by a little: within 2%
    assert 0.78 <= u.low <= u.high <= 0.82


def test_a_step_in_the_machine_speed_is_tracked_pair_by_pair() -> None:
    roof = estimate({"f32": (1e6, 1e11)}, 1e9, 1e10)  # memory-bound, roofline 0.1 s
    speed = [1.0] * 15 + [0.5] * 15  # a memory-copy neighbour starts halfway
    kernel = [0.1 / 0.9 / s for s in speed]
    drift = list(speed)
    live = pair_utilizations(roof, kernel, "memory", drift)
    assert max(live) == pytest.approx(0.9) and min(live) == pytest.approx(0.9)


def test_only_the_referenced_resource_is_scaled() -> None:
    roof = estimate({"f32": (1e9, 1e11)}, 8e7, 1e10)  # compute 10 ms, memory 8 ms
    assert scaled_roofline_time(roof, "compute", 0.5) == pytest.approx(0.02)
    # A faster memory (drift 2) shrinks the memory term; compute still bounds.
    assert scaled_roofline_time(roof, "memory", 2.0) == pytest.approx(0.01)
    assert scaled_roofline_time(roof, "memory", 0.5) == pytest.approx(0.016)


def test_sequential_rule_stops_once_the_interval_leaves_the_threshold() -> None:
    rng = random.Random(3)
    series = [0.6 + rng.gauss(0, 0.05) for _ in range(200)]
    # Far from the threshold: a handful of samples decide.
    assert settled(series[:8], 0.3, target_width=0.0)
    # Threshold at the median: the interval straddles it however many samples there are.
    assert not settled(series, median(series), target_width=0.0)
    # Without a threshold, sampling stops when the interval is narrow enough.
    assert not settled(series[:6], None, target_width=0.01)
    assert settled(series, None, target_width=0.02)


def test_threshold_inside_the_interval_is_marginal() -> None:
    values = [0.48, 0.49, 0.5, 0.51, 0.52, 0.47, 0.53, 0.5]
    u = uncertainty(values)
    assert u.contains(0.5)
    assert not u.contains(0.3)
    assert "interval" in u.describe() and "8 runs" in u.describe()


def test_a_result_measured_under_contention_says_so_and_carries_the_figure_without_the_waiting() -> None:
    """A made-up measurement: 5 runs of 1 ms whose threads waited for a CPU during 40% of their ready time."""
    from dataclasses import replace

    from fakes import fake_result, record_of

    from pytest_roofline.analysis.model.contention import on_cpu_utilization
    from pytest_roofline.report.text import summary_lines

    quiet = replace(fake_result(0.5), timing=replace(fake_result(0.5).timing, waiting_per_run=(0.01,) * 5))
    assert not quiet.contended and quiet.figures.on_cpu is None and "contended" not in str(quiet)
    busy = replace(quiet, timing=replace(quiet.timing, waiting_per_run=(0.4,) * 5))
    assert busy.contended and busy.cpu_waiting == pytest.approx(0.4)
    assert busy.utilization_on_cpu == pytest.approx(0.5 / 0.6)  # 0.5 ms of roofline over 0.6 ms on the CPUs
    assert busy.figures.on_cpu == pytest.approx(0.5 / 0.6)
    assert "waited for a CPU held by another process during 40%" in str(busy)
    data = busy.to_dict()
    assert (data["contended"], data["cpu_waiting"]) == (True, pytest.approx(0.4))
    lines = summary_lines([record_of("t.py::test_k", "k", busy, "pass", 0.8, "o")])
    assert "[contended]" in lines[1] and any(line.startswith("contended: 1 kernel(s)") for line in lines)
    assert on_cpu_utilization(1.0, [1.0, 2.0], [0.5]) is None  # a waiting share for every run, or no figure
    # A made-up GPU: host threads waiting for a CPU do not stretch device time, so nothing is called contended.
    gpu = replace(busy, hardware=replace(busy.hardware, name="fake GPU", platform="gpu"))
    assert gpu.cpu_waiting is None and not gpu.contended and gpu.utilization_on_cpu is None


def test_waiting_for_the_processes_own_threads_is_not_contention() -> None:
    """Made-up: a kernel running more threads than cores waits 13% of its ready time with nothing else running
    (seen on the quiet VM); only where other processes also used the CPUs is the measurement contended."""
    from dataclasses import replace

    from fakes import fake_result, record_of

    from pytest_roofline.analysis.model.contention import contended
    from pytest_roofline.report.failure import failure_message

    assert contended(0.13, None) and contended(0.13, 0.45) and not contended(0.13, 0.01)
    assert not contended(0.05, 0.45)  # other processes busy, but the kernel's threads hardly waited
    busy = fake_result(0.5, waiting=0.4)
    alone = replace(busy, timing=replace(busy.timing, others_cpu_share=0.01))
    assert not alone.contended and alone.figures.on_cpu is None and "contended" not in str(alone)
    beside = replace(busy, timing=replace(busy.timing, others_cpu_share=0.48))
    assert beside.contended and "other processes used 48% of the CPUs meanwhile" in str(beside)
    assert beside.to_dict()["others_cpu_share"] == pytest.approx(0.48)
    record = record_of("t.py::test_k", "k", beside, "fail", 0.8, "o")
    assert "(other processes used 48% of the CPUs)" in failure_message(record, "below its threshold", full=True)


def test_a_live_correction_that_puts_a_kernel_above_its_roofline_is_not_used() -> None:
    """Made-up runs of a compute-bound kernel at 95% of its calibrated roofline, its reference matmul at 79% of its
    calibrated rate beside it (the bf16 matmul of the example suite on a quiet Zen 4): scaled by that drift the
    kernel would read 120%, so the drift is not the kernel's and the calibration alone is used. A drift that keeps
    it under the roofline stays."""
    from pytest_roofline.analysis.model.live import correction_above_roofline
    from pytest_roofline.analysis.model.roofline import RooflineEstimate

    roof = RooflineEstimate(0.040, 0.004, 1e11, 1e10)
    runs = [0.0421] * 6
    why = correction_above_roofline(roof, runs, "compute", [0.79] * 6)
    assert why.startswith("the live ceilings would put the utilization above the roofline (120.3% against 95.0% on "
                          "the calibration alone: the reference ran at 79%")
    assert why.endswith("calibrated ceilings used")
    assert correction_above_roofline(roof, runs, "compute", [0.97] * 6) == ""  # 98%: kept
    assert correction_above_roofline(roof, runs, "compute", [1.2] * 6) == ""  # a faster machine lowers it: kept


def test_a_live_correction_that_would_make_a_kernel_impossible_is_not_used() -> None:
    """The MLP train step of the example suite on a busy 2-core Zen 4 (CI): 97.8% against the calibration alone,
    its reference matmul at 87% beside it, noisy pairs (made-up drifts of that spread). Scaled, its median read
    114.6% with an interval 110.7%-129.2%: within 100% plus the interval's width, so it was kept, and its whole
    interval above 105% made it impossible, which the calibration alone did not say. Now set aside."""
    from pytest_roofline.analysis.model.live import correction_above_roofline, uncertainty
    from pytest_roofline.analysis.model.roofline import IMPOSSIBLE_ABOVE, RooflineEstimate

    roof = RooflineEstimate(0.00754, 0.000376, 1e11, 1e10)
    runs = [0.00771] * 19
    drifts = [0.87, 0.80, 0.90, 0.85, 0.88, 0.70, 0.86, 0.89, 0.84, 0.87, 0.72, 0.88, 0.86, 0.90, 0.74, 0.87, 0.65,
              0.76, 0.86]  # read 114% [111%-129%]
    live = uncertainty([roof.roofline_time_s / t / d for t, d in zip(runs, drifts, strict=True)])
    assert live.low > IMPOSSIBLE_ABOVE and live.utilization <= 1.0 + (live.high - live.low)  # the case above
    why = correction_above_roofline(roof, runs, "compute", drifts)
    assert why.startswith("the live ceilings would put the utilization above the roofline") and why.endswith(
        "calibrated ceilings used")


def test_a_live_scaling_that_lifts_a_kernel_above_100_percent_from_below_is_set_aside() -> None:
    """Made-up runs of a tokamax ragged dot on a quiet Zen 5 (its shape): 84% against the calibration alone, its
    reference at 79% of its calibrated rate beside it and noisy, so the live median read 106% within an interval of
    89%-119% and was kept (within 100% plus the interval's width). A live scaling that takes a kernel from below its
    roofline to above it is not the kernel's: set aside."""
    from pytest_roofline.analysis.model.live import correction_above_roofline
    from pytest_roofline.analysis.model.roofline import RooflineEstimate

    roof = RooflineEstimate(0.0084, 0.001, 1e11, 1e10)
    runs = [0.010] * 14
    drifts = [0.79, 0.70, 0.85, 0.75, 0.80, 0.72, 0.95, 0.78, 0.82, 0.71, 0.90, 0.76, 0.79, 0.88]
    why = correction_above_roofline(roof, runs, "compute", drifts)
    assert why.startswith("the live ceilings would put the utilization above the roofline (106.3% against 84.0% on the "
                          "calibration alone")
    assert correction_above_roofline(roof, runs, "compute", [1.1] * 14) == ""  # a faster machine lowers it: kept


def test_a_scaling_that_lifts_a_kernel_beside_neighbours_is_set_aside() -> None:
    from pytest_roofline.analysis.model.live import lifted_beside_neighbours

    why = lifted_beside_neighbours(0.39, 0.35, 0.5)  # qwix's int8 MLP beside neighbours: the reference slowed 2.6x
    assert why.startswith("the reference ran at 39% of its calibrated rate beside other processes (the kernel's "
                          "threads waited for a CPU held by another process during 35%")
    assert lifted_beside_neighbours(0.39, 0.01, 0.01) == ""  # quiet: a slower machine, kept
    assert lifted_beside_neighbours(0.39, 0.35, 0.02) == ""  # its own threads, not other processes: kept
    assert lifted_beside_neighbours(1.1, 0.35, 0.5) == ""  # lowers the utilization: kept
    assert lifted_beside_neighbours(0.39, None, None) == ""  # the system does not say: kept
