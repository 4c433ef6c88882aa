"""Fakes for the fast tests: a constructed Result (no JAX, no measurement) and a fake measure() that hands out
results of chosen utilizations. Every test that uses them is about logic, never about measured numbers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from pytest_roofline.analysis.model.per_op import OpsModel
from pytest_roofline.analysis.model.roofline import RooflineEstimate
from pytest_roofline.analysis.model.work_shares import CeilingUse
from pytest_roofline.analysis.program.counts import Work
from pytest_roofline.analysis.program.memory import MemoryFootprint
from pytest_roofline.analysis.runs.run_stats import Timing
from pytest_roofline.base.calls import KernelCall
from pytest_roofline.base.errors import MeasureError
from pytest_roofline.base.kinds import Bound, CeilingsUsed, Verdict
from pytest_roofline.hardware.spec import Ceiling, HardwareSpec
from pytest_roofline.history.paired import Comparison, KernelRounds, Observation, judge_kernel
from pytest_roofline.measurement.options import MeasureOptions
from pytest_roofline.records.kernel_record import KernelRecord
from pytest_roofline.result.recorded_result import RecordedResult
from pytest_roofline.result.result import ProgramInfo, Result

FAKE_CPU = HardwareSpec("fake CPU", "cpu", {"f32": Ceiling(1e11, "calibration", "fake", "2026-11-22")},
                        Ceiling(1e10, "calibration", "fake", "2026-11-22"),
                        memory_capacity=Ceiling(1e9, "measured", "fake", "2026-11-23"))
# A fake program footprint: 2 MB of arguments, 1 MB of output, 4 MB of temporaries, nothing aliased (7 MB).
FAKE_FOOTPRINT = MemoryFootprint(arguments=2_000_000, outputs=1_000_000, temporaries=4_000_000, aliased=0)


def fake_result(utilization: float, *, bound: Bound = "memory", name: str = "kernel",
                ceilings: CeilingsUsed = "calibrated", notes: tuple[str, ...] = (),
                footprint: MemoryFootprint | None = FAKE_FOOTPRINT, hardware: HardwareSpec = FAKE_CPU,
                waiting: float | None = None, compile_s: float = 0.01) -> Result:
    """A Result whose program-level utilization is ``utilization`` (device time 1 ms); ``waiting``: the made-up
    share of their ready time its threads waited for a CPU in every run."""
    device = 1e-3
    roof = utilization * device
    compute, memory = (roof, roof / 10) if bound == "compute" else (roof / 10, roof)
    flops, nbytes = compute * 1e11, memory * 1e10
    return Result(
        name=name, hardware=hardware, ceilings=ceilings,
        ceilings_used=(CeilingUse("f32 matrix FLOPs", flops, "f32", FAKE_CPU.peaks["f32"]),
                       CeilingUse("bytes", nbytes, "memory", FAKE_CPU.memory_bandwidth)),
        work=Work(flops, 0.0, nbytes, "compiler", "compiler", {"f32": flops}, counts_lower_bound=False, loops=()),
        roofline=RooflineEstimate(compute, memory, 1e11, 1e10),
        timing=Timing((device,) * 5, (device * 1.1,) * 5, "profiler", "", "run_id stat",
                      waiting_per_run=() if waiting is None else (waiting,) * 5),
        program=ProgramInfo("jit_kernel", "cpu", compile_s, {"jax": "fake"}),
        ops_model=OpsModel(), notes=notes, memory=footprint,
    )


def record_of(nodeid: str, label: str, result: Result, verdict: Verdict, threshold: float | None = None,
              origin: str = "", **fields: Any) -> KernelRecord:
    """The record the plugin keeps for ``result`` (any other :class:`KernelRecord` field by keyword)."""
    return KernelRecord(nodeid, label, RecordedResult.from_dict(result.to_dict()), verdict, threshold, origin,
                        **fields)


class FakeMeasure:
    """Stands in for pytest_roofline.measure(): returns the next of ``utilizations`` and records each call."""

    def __init__(self, *utilizations: float, bound: Bound = "memory", ceilings: CeilingsUsed = "calibrated",
                 hardware: HardwareSpec = FAKE_CPU, waiting: float | None = None) -> None:
        self._next: Iterator[float] = iter(utilizations)
        self.waiting = waiting
        self.hardware = hardware
        self.bound = bound
        self.ceilings = ceilings
        self.calls: list[MeasureOptions] = []  # the options of each call
        self.kernel_calls: list[KernelCall] = []
        self.keepers: list[Any] = []  # where each call's program was to be kept (None: nowhere)

    def __call__(self, call: KernelCall, options: MeasureOptions, keep: Any = None) -> Result:
        self.calls.append(options)
        self.kernel_calls.append(call)
        self.keepers.append(keep)
        if getattr(call.fn, "__name__", "") == "broken":  # a made-up failure, for kernels named "broken"
            raise MeasureError("broken: running it failed: RuntimeError: made up for the test")
        picked, aim = options.threshold_on(self.hardware)  # as the measurement picks it
        result = fake_result(next(self._next), bound=self.bound, name=options.name or "kernel",
                             ceilings=self.ceilings, hardware=self.hardware, waiting=self.waiting)
        return replace(result, threshold=aim, picked=picked)


# A conftest that swaps the session's measurement and hardware detection for fakes (tests/support/fakes.py): the
# plugin's hooks run for real, in process, without JAX.
FAKE_SESSION_CONFTEST = """
import pytest
from fakes import FAKE_CPU, FakeMeasure
from pytest_roofline.plugin.hooks import activate, plugin_run
from pytest_roofline.plugin.session import RooflineSession

@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    old = activate(config)
    plugin_run(config).session = RooflineSession(old.settings, old.trace_root, measure=FakeMeasure({utils}),
                                                hardware=lambda settings, recalibrate: (FAKE_CPU, "calibrated"),
                                                save=lambda result, root, nodeid, label: {{
                                                    "trace_dir": "t", "perfetto": "p", "hlo": "h", "xplane": "x"}},
                                                baseline=old.baseline, mode=old.mode, hooks=old.hooks)
"""


def obs(utilization: float, drop: float | None = None, origin: str = "", nbytes: float = 1e6) -> Observation:
    """A made-up observation of one kernel on one side of a round (ab)."""
    return Observation(utilization, nbytes / 1e9 / utilization, 0.0, nbytes, drop, origin)


def comparison(kernels: list[KernelRounds], max_drop: float | None = None) -> Comparison:
    """A made-up comparison of ``kernels`` after 6 rounds (ab)."""
    judged = tuple(judge_kernel(k, max_drop) for k in kernels)
    return Comparison("origin/main", "a" * 40, "b" * 40, True, 6, 20, stopped="every verdict settled after 6 rounds",
                      kernels=judged, seconds=61.5, side_seconds=(30.1, 29.4), hardware="fake CPU")


# The note a GPU result carries where XLA ran its kernels as command buffers.
HIDDEN = ("per-op kernel times are hidden: XLA ran this program's kernels as command buffers (CUDA graphs); the "
          "program's time is kept. To see each op, run with XLA_FLAGS=--xla_gpu_enable_command_buffer=")
