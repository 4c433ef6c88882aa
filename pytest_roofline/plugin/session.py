"""The plugin's state for one pytest process: the settings, the records of every measured kernel, and how to
measure (the JAX pipeline, or a fake handed in by a test). No pytest; JAX only through the measure callable."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, Protocol

from ..base.calls import KernelCall
from ..hardware.spec import HardwareSpec
from ..history.baseline import Baseline
from ..records.kernel_record import KernelRecord, Unmeasured
from ..result.result import Result
from .lock import device_lock
from .settings import Settings

__all__ = ["RooflineSession", "Measure", "default_trace_root", "ONCE_TIMING"]

# The timing of a measurement made once (a round of `pytest-roofline ab`), where the test sets none: one warm-up run
# and a shorter least sampling time and budget; the rounds, each pairing the two sides seconds apart, are the sample.
ONCE_TIMING = {"warmup": 1, "min_time_s": 0.05, "budget_s": 0.25}


class Measure(Protocol):
    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Result: ...


def _jax_measure(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Result:
    from ..measurement.pipeline import measure

    return measure(fn, *args, **kwargs)


def _jax_measure_keeping(key: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Result:
    from ..measurement.pipeline import measure_keeping

    return measure_keeping(key, fn, *args, **kwargs)


def _jax_hardware(settings: Settings, recalibrate: bool) -> tuple[HardwareSpec, str]:
    from ..measurement.machine.device import detect_device, resolve_hardware

    platform, device_kind = detect_device()
    return resolve_hardware(platform, device_kind, settings.hardware, settings.hardware_file,
                            settings.ceilings, "replace" if recalibrate else "cached")


def _jax_save(result: Result, root: str, nodeid: str, label: str) -> dict[str, str]:
    from ..measurement.artifacts import save_artifacts

    return save_artifacts(result, root, nodeid, label)


def default_trace_root() -> str:
    """Where traces go without --roofline-trace-dir and without pytest's cache: one fixed directory per user,
    in which each test's kernel replaces its previous trace, so nothing piles up from run to run."""
    user = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), f"pytest-roofline-{user}", "traces")


class RooflineSession:
    """Measures under the device lock, re-calibrates when asked (once per process), and keeps the records.

    A kernel that beats a calibrated ceiling never re-calibrates it: its result is "impossible" and says which
    ceiling or count to distrust (a cache-resident working set, a stale calibration)."""

    def __init__(self, settings: Settings, trace_root: Callable[[], str] | None = None,
                 measure: Measure = _jax_measure,
                 hardware: Callable[[Settings, bool], tuple[HardwareSpec, str]] = _jax_hardware,
                 save: Callable[[Result, str, str, str], dict[str, str]] = _jax_save,
                 baseline: Baseline | None = None) -> None:
        self.settings = settings
        self.baseline = baseline  # --roofline-baseline, loaded at start-up
        # Where trace artifacts go; a callable so that the directory is made only when something is saved.
        self.trace_root = trace_root or (lambda: settings.trace_dir or default_trace_root())
        self.records: list[KernelRecord] = []
        self.unmeasured: list[Unmeasured] = []  # kernels that could not be measured, with their error
        self._measure = measure
        self._hardware = hardware
        self._save = save
        self._recalibrate = settings.calibrate  # --roofline-calibrate: once per process
        # Measure each kernel once, with no threshold to sample for: no second measurement of a shortfall and no
        # trace saved for a failure (a side of `pytest-roofline ab`, which judges ratios, not verdicts).
        self.once = False
        # In that mode each kernel's call and settings, by "nodeid::label", to measure it again (remeasure) on the
        # compiled program and inputs its first measurement kept.
        self.kept: dict[str, tuple[KernelCall, dict[str, Any]]] = {}
        self._measure_keeping = _jax_measure_keeping
        self._once_mode: str | None = None  # the ceilings mode the session's hardware uses, once asked

    def measure(self, call: KernelCall, settings: dict[str, Any], key: str = "") -> Result:
        """Measure ``call`` with the session's hardware settings, overridden by ``settings`` (measure()'s
        keywords); the kernel's arguments go in the explicit form, so none is taken for a setting. ``key``
        ("nodeid::label"): in the measure-once mode, keep the compiled program for :meth:`remeasure`."""
        recalibrate, self._recalibrate = self._recalibrate, False
        options = {"hardware": self.settings.hardware, "hardware_file": self.settings.hardware_file,
                   "ceilings": self.settings.ceilings, "first_touch": self.settings.first_touch, "cache": self.settings.cache,
                   "recalibrate": recalibrate, **(ONCE_TIMING if self.once else {}), **settings}
        # The processes of one multi-controller program own different devices and measure in lockstep: one
        # waiting for another's lock would never reach the step the other waits for.
        keeping = self.once and bool(key)
        if keeping:
            options.update(self._once_ceilings(settings))
            self.kept[key] = (call, settings)
        with nullcontext() if _spans_processes() else device_lock():
            if keeping:
                return self._measure_keeping(key, call.fn, args=call.args, kwargs=dict(call.kwargs), **options)
            return self._measure(call.fn, args=call.args, kwargs=dict(call.kwargs), **options)

    def _once_ceilings(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Calibrated ceilings where live ones would be used and the test sets none: a live reference kernel
        keeps its buffers' placement in a long-lived process, an offset that would tilt every round of one side;
        the two sides measured seconds apart cancel the machine's drift instead."""
        if "ceilings" in settings or self.settings.ceilings not in ("auto", "live"):
            return {}
        if self._once_mode is None:
            self._once_mode = self.hardware()[1]
        return {"ceilings": "calibrated"} if self._once_mode == "live" else {}

    def remeasure(self, key: str) -> Result:
        """Measure a kernel of this process again (the measure-once mode): its compiled program, on the inputs its
        first measurement kept, with the same settings."""
        call, settings = self.kept[key]
        return self.measure(call, settings, key)

    def agree(self, label: str, verdict: str) -> str:
        """Every process's verdict for ``label`` (a program that spans processes): "" when they agree, else the
        message that says which process decided what."""
        from ..measurement.processes.peers import agree_verdict

        return agree_verdict(label, verdict)

    def hardware(self) -> tuple[HardwareSpec, str]:
        """The detected hardware's ceilings and the ceilings mode in use (imports JAX; calibrates a CPU unless
        cached)."""
        recalibrate, self._recalibrate = self._recalibrate, False
        with device_lock():
            spec, mode = self._hardware(self.settings, recalibrate)
        return spec, mode

    def save(self, result: Result, nodeid: str, label: str) -> dict[str, str]:
        """Save the kernel's trace and HLO; returns the paths for the record."""
        return self._save(result, self.trace_root(), nodeid, label)


def _spans_processes() -> bool:
    """Whether JAX runs as one of several processes (``jax.distributed.initialize``); False where JAX is not yet
    imported (then it is not initialized either)."""
    jax = sys.modules.get("jax")
    return jax is not None and jax.process_count() > 1
