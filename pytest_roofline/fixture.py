"""What the ``roofline`` fixture does, without importing pytest: measure, decide, record.

:class:`RooflineSession` lives for one pytest process; it serializes measurements across processes (an
exclusive file lock per device, so xdist workers never time two kernels at once) and keeps the records.
:class:`RooflineFixture` is what a test receives; pytest's ``fail`` and a warning function are handed in.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, NoReturn

from .config import Settings, Threshold
from .marker import MarkerSpec
from .report import failure_message, make_record
from .result import Result, format_fraction

__all__ = ["RooflineSession", "RooflineFixture", "device_lock", "lock_path"]


def lock_path() -> str:
    """One lock file per device a process would use: same visible accelerators, same lock."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("TPU_VISIBLE_CHIPS") or "all"
    platforms = os.environ.get("JAX_PLATFORMS") or "default"
    safe = "".join(ch if ch.isalnum() else "_" for ch in f"{platforms}-{visible}")
    return os.path.join(tempfile.gettempdir(), f"pytest-roofline-{os.getuid() if hasattr(os, 'getuid') else 0}-{safe}.lock")


@contextmanager
def device_lock() -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # Windows: no cross-process lock; run measurements without xdist there
        yield
        return
    with open(lock_path(), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class RooflineSession:
    def __init__(self, settings: Settings, trace_root: Callable[[], str] | None = None) -> None:
        self.settings = settings
        # Where trace artifacts go; a callable so that the directory is made only when something is saved.
        self.trace_root = trace_root or (lambda: settings.trace_dir or tempfile.mkdtemp(prefix="roofline-traces-"))
        self.records: list[dict[str, Any]] = []
        self._recalibrate = settings.calibrate  # --roofline-calibrate: once per process
        self._rechecked = False  # an impossible result re-calibrates once per process

    def measure(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Result:
        from .engine import measure

        def run(recalibrate: bool | str) -> Result:
            with device_lock():
                return measure(fn, *args, hardware=self.settings.hardware, hardware_file=self.settings.hardware_file,
                               ceilings=self.settings.ceilings, recalibrate=recalibrate, **kwargs)

        result = run(self._recalibrate)
        self._recalibrate = False
        if result.impossible and result.ceilings == "calibrated" and not self._rechecked:
            # A kernel beat a calibrated ceiling: the calibration is stale (on a shared machine the memory
            # bandwidth changes with the neighbours). Calibrate again now, keep the best, measure again.
            self._rechecked = True
            first = result.utilization
            result = run("best")
            result = replace(result, notes=result.notes + (
                f"first measured at {first:.1%} of a stale calibration: re-calibrated (best kept) and measured "
                f"again",))
        return result

    def hardware(self) -> dict[str, Any]:
        """The detected hardware's ceilings (imports JAX; calibrates a CPU unless cached)."""
        import jax

        from .engine import resolve_hardware

        device = jax.devices()[0]
        with device_lock():
            spec, _ = resolve_hardware(device.platform, device.device_kind, self.settings.hardware,
                                       self.settings.hardware_file, self.settings.ceilings, self._recalibrate)
        self._recalibrate = False
        return spec.to_dict()


class RooflineFixture:
    """``roofline(fn, *args, **kwargs)`` measures and asserts; ``roofline.measure(...)`` only records."""

    def __init__(self, session: RooflineSession, nodeid: str, marker: MarkerSpec | None,
                 fail: Callable[[str], NoReturn], warn: Callable[[str], None],
                 add_property: Callable[[str, Any], None]) -> None:
        self._session = session
        self._nodeid = nodeid
        self._marker = marker
        self._fail = fail
        self._warn = warn
        self._add_property = add_property
        self._labels: dict[str, int] = {}
        self.results: list[Result] = []

    def _label(self, fn: Callable[..., Any], name: str | None) -> str:
        base = name or getattr(fn, "__name__", None) or type(fn).__name__
        count = self._labels.get(base, 0) + 1
        self._labels[base] = count
        return base if count == 1 else f"{base}#{count}"

    def _kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        merged = dict(self._marker.measure_kwargs) if self._marker else {}
        merged.update(kwargs)
        return merged

    def _record(self, label: str, result: Result, threshold: Threshold | None, verdict: str,
                expected_bound: str | None = None, first_utilization: float | None = None,
                model: str = "program") -> dict[str, Any]:
        record = make_record(self._nodeid, label, result, threshold.value if threshold else None,
                             threshold.origin if threshold else "", verdict, expected_bound, first_utilization,
                             self._session.settings.warn_only)
        record["model"] = model
        failing = verdict in ("fail", "wrong-bound", "impossible") and threshold is not None
        if failing or self._session.settings.trace_all:
            from .artifacts import save_artifacts

            record.update(save_artifacts(result, self._session.trace_root(), self._nodeid, label))
        self._session.records.append(record)
        self.results.append(result)
        prefix = f"roofline[{label}]"
        for key in ("utilization", "device_time_s", "roofline_time_s", "bound", "flops", "bytes_accessed"):
            self._add_property(f"{prefix}.{key}", getattr(result, key))
        self._add_property(f"{prefix}.verdict", verdict)
        self._add_property(f"{prefix}.hardware", result.hardware.name)
        return record

    def measure(self, fn: Callable[..., Any], *args: Any, name: str | None = None, **kwargs: Any) -> Result:
        """Measure and record, never fail."""
        label = self._label(fn, name)
        result = self._session.measure(fn, args, {**self._kwargs(kwargs), "name": label})
        self._record(label, result, None, result.verdict(None))
        return result

    def _model(self, model: str | None) -> str:
        if model is not None:
            from .config import parse_model

            return parse_model(model, f"roofline(..., model={model!r}) in {self._nodeid}")
        if self._marker is not None and self._marker.model is not None:
            return self._marker.model
        return self._session.settings.model

    def __call__(self, fn: Callable[..., Any], *args: Any, name: str | None = None, min: float | None = None,  # noqa: A002
                 bound: str | None = None, model: str | None = None, **kwargs: Any) -> Result:
        """Measure, record, and fail the test when the kernel is below its threshold or of the wrong bound."""
        label = self._label(fn, name)
        threshold_here = None
        if min is not None:
            from .config import parse_threshold

            threshold_here = Threshold(parse_threshold(min, f"roofline(..., min={min!r}) in {self._nodeid}"),
                                       f"min= in the roofline() call of {self._nodeid}")
        threshold = self._session.settings.threshold_for(
            self._nodeid, threshold_here or (self._marker.min if self._marker else None))
        expected_bound = bound or (self._marker.bound if self._marker else None)
        if expected_bound not in (None, "compute", "memory"):
            raise ValueError(f"bound= must be 'compute' or 'memory', got {expected_bound!r}")
        model = self._model(model)
        kwargs = {**self._kwargs(kwargs), "name": label}
        result = self._session.measure(fn, args, kwargs)
        first_utilization = None
        value = threshold.value if threshold else None
        if result.verdict(value, model) == "fail":
            # Confirm before failing: noisy machines must not make tests flaky.
            first_utilization = result.utilization_for(model)
            result = self._session.measure(fn, args, kwargs)
        verdict = result.verdict(value, model)
        util = result.utilization_for(model)
        reason = ""
        if verdict == "fail" and value is not None and first_utilization is not None:
            which = "" if model == "program" else " (per-op model)"
            reason = (f"utilization{which} {util:.1%} is below its threshold {format_fraction(value)} "
                      f"(measured twice: {first_utilization:.1%}, then {util:.1%})")
        elif verdict == "impossible" and threshold is not None:
            reason = (f"utilization {result.utilization:.1%} is impossible (above 105%): a peak or a count is "
                      f"wrong, so this cannot pass")
        if expected_bound and result.bound != expected_bound and verdict != "impossible":
            verdict = "wrong-bound"
            reason = (reason + "; " if reason else "") + (
                f"expected {expected_bound}-bound, but it is {result.bound}-bound (intensity "
                f"{result.intensity:.3g} vs critical {result.critical_intensity:.3g} FLOP/B)")
        record = self._record(label, result, threshold, verdict, expected_bound, first_utilization, model)
        if reason:
            message = failure_message(record, reason)
            if self._session.settings.warn_only:
                self._warn(message)
            else:
                self._fail(message)
        return result
