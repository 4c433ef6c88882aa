"""GPU clocks and throttling through NVML, on a FAKE NVML module (FakeNvml below: no GPU, no driver): readings
around the runs, a throttled run measured again, the roofline at the clocks the runs met, a clock drop beside a
regression, and the one-line reasons where nothing can be read (a CPU, a TPU, NVML missing)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from fakes import fake_result, record_of

from pytest_roofline.hardware.nvml import ClockReading, Clocks, clock_drop, nvml_clocks
from pytest_roofline.measurement.machine.clock_readings import ClockWatch, nvml_index
from pytest_roofline.report.failure import failure_message
from pytest_roofline.report.text import summary_lines


class FakeNvml:
    """A FAKE of pynvml's calls we use: each reading pops the next (SM MHz, memory MHz, throttle bits)."""

    def __init__(self, readings: list[tuple[float, float, int]], fail_init: bool = False) -> None:
        self.readings = list(readings)
        self.current = readings[0]
        self.fail_init = fail_init
        self.handles: list[Any] = []

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        self.handles.append(("index", index))
        return f"gpu{index}"

    def nvmlDeviceGetHandleByPciBusId(self, bus: str) -> str:
        self.handles.append(("pci", bus))
        return bus

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: str) -> int:
        self.current = self.readings.pop(0)  # the first call of a reading
        return self.current[2]

    def nvmlDeviceGetClockInfo(self, handle: str, kind: int) -> float:
        return self.current[0] if kind == 1 else self.current[1]

    def nvmlDeviceGetMaxClockInfo(self, handle: str, kind: int) -> float:
        return 1980.0 if kind == 1 else 2619.0

    def nvmlDeviceGetTemperature(self, handle: str, kind: int) -> float:
        return 71.0

    def nvmlDeviceGetPowerUsage(self, handle: str) -> float:
        return 650_000.0  # milliwatts


GPU = SimpleNamespace(platform="gpu", device_kind="NVIDIA H100 80GB HBM3", id=0, local_hardware_id=0)
SW_POWER_CAP, HW_THERMAL, GPU_IDLE = 0x4, 0x40, 0x1


def test_readings_around_runs_that_did_not_throttle() -> None:
    fake = FakeNvml([(1980, 2619, GPU_IDLE), (1980, 2619, 0)])  # idle before the runs is not throttling
    runs: list[int] = []

    def run() -> str:
        runs.append(1)
        return "timed"

    result, clocks = ClockWatch(GPU, fake).around(run)
    assert result == "timed" and runs == [1] and not clocks.remeasured and clocks.throttled == ()
    assert clocks.after == ClockReading(1980, 2619, 1980, 2619, (), 71.0, power_w=650.0)
    assert clocks.text() == ("before the runs SM 1980/1980 MHz, memory 2619/2619 MHz, 71 C, 650 W, not throttled; "
                             "after SM 1980/1980 MHz, memory 2619/2619 MHz, 71 C, 650 W, not throttled")
    assert clocks.roofline_at_clocks(1.0, 0.5) is None  # at its maximum clocks: one roofline
    # Memory below its maximum with the SM clock above it (boost): memory's term follows the memory clock.
    boosted = Clocks(None, ClockReading(2000, 1309.5, 1980, 2619))
    assert boosted.roofline_at_clocks(1e-3, 1e-3) == pytest.approx(2e-3)


def test_a_throttled_run_is_measured_again_and_says_so_when_it_throttles_again() -> None:
    fake = FakeNvml([(1980, 2619, 0), (1580, 2619, SW_POWER_CAP), (1580, 2619, SW_POWER_CAP | HW_THERMAL)])
    runs: list[int] = []

    def run() -> int:
        runs.append(1)
        return len(runs)

    result, clocks = ClockWatch(GPU, fake).around(run)
    assert runs == [1, 1] and result == 2 and clocks.remeasured
    assert clocks.throttled == ("sw_power_cap", "hw_thermal")
    assert clocks.text().endswith("throttled: sw_power_cap, hw_thermal; the first runs throttled: measured again")
    # Compute-bound: 1 ms of compute at 1980 MHz is 1980/1580 ms at the clock the runs met.
    assert clocks.roofline_at_clocks(1e-3, 2e-4) == pytest.approx(1e-3 * 1980 / 1580)
    # A throttled first measurement whose second is clean: the clean one is kept, not marked.
    fake = FakeNvml([(1980, 2619, 0), (1580, 2619, SW_POWER_CAP), (1965, 2619, 0)])
    _, clocks = ClockWatch(GPU, fake).around(lambda: None)
    assert clocks.remeasured and clocks.throttled == ()


def test_the_message_summary_and_json_carry_the_readings() -> None:
    throttled = Clocks(ClockReading(1580, 2619, 1980, 2619, ("sw_power_cap",)),
                       ClockReading(1580, 2619, 1980, 2619, ("sw_power_cap",)), remeasured=True)
    result = replace(fake_result(0.6, bound="compute"), clocks=throttled)
    record = record_of("t.py::test_gemm", "gemm", result, "measured")
    assert record.result.clocks == throttled  # through the JSON
    assert record.result.utilization_at_clocks == pytest.approx(0.6 * 1980 / 1580)
    message = failure_message(record, "below", full=True)
    (line,) = [x for x in message.splitlines() if x.startswith("  clocks")]
    assert line.endswith(f"measured again; utilization {0.6 * 1980 / 1580:.1%} against the roofline at these clocks")
    assert "[throttled]" in "\n".join(summary_lines([record]))


def test_a_regression_with_a_clock_drop_says_so() -> None:
    then = Clocks(None, ClockReading(1965, 2619, 1980, 2619))
    now = Clocks(None, ClockReading(1580, 2619, 1980, 2619, ("hw_thermal",)))
    assert clock_drop(now, then) == "with a clock drop: SM 1965 -> 1580 MHz"
    assert clock_drop(then, then) == "" and clock_drop(now, None) == ""
    assert clock_drop(Clocks(None, ClockReading(1900, 2619, 1980, 2619)), then) == ""  # within 5%


def test_where_nothing_can_be_read_the_record_says_why_in_one_line() -> None:
    cpu = SimpleNamespace(platform="cpu", device_kind="cpu", id=0)
    assert (
        ClockWatch(cpu).around(lambda: 1)[1].text() == "no reading: clocks are read on NVIDIA GPUs only (this is a CPU)"
    )
    tpu = SimpleNamespace(platform="tpu", device_kind="TPU v6 lite", id=0)
    assert ClockWatch(tpu).unavailable == "clocks are read on NVIDIA GPUs only (this is a TPU)"
    missing = nvml_clocks("gpu", "NVIDIA H100 80GB HBM3", 0)  # this machine has no pynvml installed
    try:
        import pynvml  # noqa: F401
    except ImportError:
        assert missing == "NVML is not installed (pip install 'pytest-roofline[nvml]' installs nvidia-ml-py)"
    broken = nvml_clocks("gpu", "NVIDIA H100 80GB HBM3", 0, module=FakeNvml([(1, 1, 0)], fail_init=True))
    assert broken == "NVML could not be used: NVML Shared Library Not Found"
    rocm = nvml_clocks("gpu", "AMD Instinct MI300X", 0)
    assert rocm == "clocks are read on NVIDIA GPUs only (this is 'AMD Instinct MI300X')"
    assert Clocks.from_dict(Clocks(unavailable="x").to_dict()) == Clocks(unavailable="x")


def test_the_nvml_device_follows_cuda_visible_devices_or_the_pci_bus() -> None:
    second = SimpleNamespace(platform="gpu", device_kind="NVIDIA H100", id=1, local_hardware_id=1)
    assert nvml_index(second, "") == 1 and nvml_index(second, "4,6") == 6 and nvml_index(second, "GPU-uuid,x") == 1
    fake = FakeNvml([(1, 1, 0)])
    nvml_clocks("gpu", "NVIDIA H100", 6, "0000:3B:00.0", module=fake)
    assert fake.handles == [("pci", "0000:3B:00.0")]


def test_the_html_row_carries_the_clocks_cache_and_compile_time() -> None:
    from pytest_roofline.analysis.model.cache_state import plan_cache
    from pytest_roofline.report.html import _summary

    clocks = Clocks(None, ClockReading(1580, 2619, 1980, 2619, ("sw_power_cap",)))
    cache = plan_cache("auto", "gpu", 16 * 2**20, 50 * 2**20, "L2, from the CUDA runtime")[0]
    record = record_of("t.py::test_gemm", "gemm", replace(fake_result(0.6), clocks=clocks, cache=cache), "measured")
    html = _summary([record])
    assert f'title="clocks: {clocks.text()}"' in html and ">cold</td>" in html and "[throttled]" in html
    assert "<th class=\"sortable\" title=\"click to sort\">compile time</th>" in html and ">10 ms</td>" in html
