"""The reference kernels of live ceilings: which of a reference's runs count. The run times and fault counts here
are made up (the pattern seen on a 2-core CPU VM: a fresh-output reference that now and then reuses mapped
pages, faults nothing and runs 4x fast); the references are the real ones, compiled for this CPU."""

from __future__ import annotations

import pytest
from fakes import FAKE_CPU

pytest.importorskip("jax")

from pytest_roofline.analysis.model.roofline import RooflineEstimate  # noqa: E402
from pytest_roofline.analysis.runs.run_stats import Timing  # noqa: E402
from pytest_roofline.hardware.cpu import page_size  # noqa: E402
from pytest_roofline.measurement.machine.reference_kernels import reference  # noqa: E402
from pytest_roofline.measurement.machine.reference_runs import LivePlan, live_ceilings  # noqa: E402
from pytest_roofline.measurement.timing import Timed  # noqa: E402


def made_up_timed(reference_s: list[float], faults: list[int]) -> Timed:
    runs = len(reference_s) - 1
    timing = Timing((0.04,) * runs, (0.04,) * runs, "profiler")
    return Timed(timing, reference_s=tuple(reference_s), reference_timer="profiler", reference_faults=tuple(faults))


# A made-up roofline of 20 ms for the made-up 40 ms kernel runs: 50%, far from the line a live scaling is checked at.
ROOF = RooflineEstimate(0.002, 0.020, 1e11, 1e10)


def test_the_fresh_reference_must_fault_its_output_the_donated_stream_nothing() -> None:
    fresh = reference("cpu", "stream-fresh")
    assert fresh.fresh_pages == 48 * 2**20 // page_size()
    assert fresh.usable([fresh.fresh_pages, 5, fresh.fresh_pages // 2], 3) == [True, False, True]
    stream = reference("cpu", "stream")
    assert stream.fresh_pages == 0 and stream.usable([0, 0], 2) == [True, True]


def test_reference_runs_without_fresh_pages_leave_the_live_ceiling_and_are_counted() -> None:
    fresh = reference("cpu", "stream-fresh")
    rate = fresh.work / 0.016  # made up: the reference ran 16 ms at calibration
    full, none = fresh.fresh_pages, 3
    timed = made_up_timed([0.016, 0.004, 0.016, 0.004, 0.016, 0.016], [full, none, full, none, full, full])
    live, why = live_ceilings(LivePlan(fresh, rate), timed, FAKE_CPU, ROOF, None)
    assert why == "" and live is not None
    assert live.left_out == 2 and live.drift == pytest.approx(1.0)  # the 4 ms runs moved nothing
    assert "2 of its 6 runs left out (they reused mapped pages" in live.describe()
    assert live.to_dict()["reference_runs_left_out"] == 2
    # Counted but never faulting: no live ceiling, and the result says why.
    timed = made_up_timed([0.004] * 4, [none] * 4)
    live, why = live_ceilings(LivePlan(fresh, rate), timed, FAKE_CPU, ROOF, None)
    assert live is None and "no run of the reference (f32 scale over 48 MiB into a fresh output) faulted" in why
    # Faults not counted (an OS without the count): every run counts.
    live, _ = live_ceilings(LivePlan(fresh, rate), made_up_timed([0.016, 0.004, 0.016], []), FAKE_CPU, ROOF, None)
    assert live is not None and live.left_out == 0


def test_reference_runs_that_do_not_bracket_the_kernel_runs_leave_the_live_ceiling() -> None:
    """Made-up runs: too few references for the kernel's runs, and slots whose first reference came after a kernel
    run: no live ceiling, said so, never an exception out of the measurement."""
    fresh = reference("cpu", "stream-fresh")
    rate = fresh.work / 0.016
    short = Timed(Timing((0.04,) * 5, (0.04,) * 5, "profiler"), reference_s=(0.016, 0.016),
                  reference_timer="profiler")
    late = Timed(Timing((0.04,) * 3, (0.04,) * 3, "profiler"), reference_s=(0.016, 0.016),
                 reference_timer="profiler", reference_slots=(1, 3))
    for timed, count in ((short, "2 for 5"), (late, "2 for 3")):
        live, why = live_ceilings(LivePlan(fresh, rate), timed, FAKE_CPU, ROOF, None)
        assert live is None and why == (f"the reference kernel's runs could not be read ({count} kernel runs): "
                                        "calibrated ceilings used")
    good = Timed(Timing((0.04,) * 3, (0.04,) * 3, "profiler"), reference_s=(0.016, 0.016),
                 reference_timer="profiler", reference_slots=(0, 3))
    assert live_ceilings(LivePlan(fresh, rate), good, FAKE_CPU, ROOF, None)[0] is not None


def test_inputs_filled_on_the_host_or_the_device_hold_the_value_asked_for() -> None:
    """A reference's inputs: filled on the host and copied (small, on a CPU) or on the device (large, or any
    accelerator, here a CPU standing in for one): the same values and dtype either way."""
    import jax.numpy as jnp
    import numpy as np

    from pytest_roofline.measurement.machine.reference_kernels import filled

    for shape, dtype, platform in (((64, 64), jnp.bfloat16, "cpu"), ((2**24 + 1,), jnp.float32, "cpu"),
                                   ((64,), jnp.float32, "gpu")):
        x = filled(shape, 0.5, dtype, platform)
        assert x.shape == shape and x.dtype == dtype
        assert np.all(np.asarray(x, np.float32) == 0.5)


def test_a_reference_slowed_beside_neighbours_does_not_lift_the_kernel() -> None:
    """Made-up runs (fakes): the reference ran at half its calibrated rate while the kernel's threads waited 40% of
    their ready time for CPUs other processes held. Scaling by it would double the kernel's utilization while the
    kernel ran slower; it is set aside and said so. Quiet, the same drift (a machine slowed by its clock) is kept,
    and beside neighbours a drift that lowers the utilization is kept."""
    fresh = reference("cpu", "stream-fresh")
    rate = fresh.work / 0.016
    runs = 5

    def timed(reference_s: float, waiting: float, others: float) -> Timed:
        timing = Timing((0.04,) * runs, (0.04,) * runs, "profiler", waiting_per_run=(waiting,) * runs,
                        others_cpu_share=others)
        return Timed(timing, reference_s=(reference_s,) * (runs + 1), reference_timer="profiler")

    live, why = live_ceilings(LivePlan(fresh, rate), timed(0.032, 0.40, 0.5), FAKE_CPU, ROOF, None)
    assert live is None and why.startswith("the reference ran at 50% of its calibrated rate beside other processes")
    assert "waited for a CPU held by another process during 40%" in why and why.endswith("calibrated ceilings used")
    quiet, _ = live_ceilings(LivePlan(fresh, rate), timed(0.032, 0.01, 0.01), FAKE_CPU, ROOF, None)
    assert quiet is not None and quiet.drift == pytest.approx(0.5)
    faster, _ = live_ceilings(LivePlan(fresh, rate), timed(0.0145, 0.40, 0.5), FAKE_CPU, ROOF, None)
    assert faster is not None and faster.drift > 1.0
