"""The hooks a test suite implements in its conftest.py (``hookspecs.py``), called for the session: a kernel's
threshold from the suite's own table (:meth:`ConftestHooks.threshold`) and each kernel's record as it is made
(:meth:`ConftestHooks.record_made`). The session sees only :class:`~.session.SessionHooks`."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pytest

from ..hardware.per_device import PerDevice, Threshold, ThresholdSetting
from ..hardware.table import HardwareEntries
from ..records.kernel_record import KernelRecord
from .settings import ConfigError, Settings
from .thresholds import parse_threshold_setting

__all__ = ["ConftestHooks", "hardware_entries", "called", "HookError", "report_made"]

THRESHOLD_HOOK = "the pytest_roofline_threshold hook"
T = TypeVar("T")


class HookError(ConfigError):
    """A suite's own hook raised: the message names the hook, the error and the line of the suite's code."""


def called(hook: str, call: Callable[[], T]) -> T:
    """``call()``, an error it raises as a :class:`HookError` naming ``hook`` and where in the suite's code it was
    raised (the innermost frame), instead of a traceback through the plugin's frames."""
    try:
        return call()
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
        raise HookError(f"{hook} raised {type(exc).__name__}: {exc}{where}") from exc


class ConftestHooks:
    """The session's hooks, called through pytest's hook relay."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self._hook = config.hook
        self._config = config
        self._settings = settings

    def record_made(self, record: KernelRecord) -> None:
        called("the pytest_roofline_record hook",
               lambda: self._hook.pytest_roofline_record(config=self._config, record=record))

    def threshold(self, nodeid: str, label: str, current: ThresholdSetting | None) -> ThresholdSetting | None:
        """The first implementation's threshold for the kernel, parsed as a marker's ``min=`` (a fraction, or a
        mapping by platform and hardware); ``current`` where none returns one. A bad value is a ConfigError naming
        the hook and the kernel."""
        given: float | dict[str, float] | None = None
        if isinstance(current, Threshold):
            given = current.value
        elif isinstance(current, PerDevice):
            given = current.to_dict()
        found = called(THRESHOLD_HOOK, lambda: self._hook.pytest_roofline_threshold(
            config=self._config, nodeid=nodeid, label=label, threshold=given))
        if found is None:
            return current
        origin = f"{THRESHOLD_HOOK} for {nodeid} [{label}]"
        return parse_threshold_setting(found, f"{origin}: returned {found!r}", origin, self._settings.hardware_names)


def hardware_entries(config: pytest.Config) -> HardwareEntries | None:
    """Every ``pytest_roofline_hardware`` implementation's entries, each over the ones before (in the order pytest
    calls them); None where none gives any."""
    devices: dict[str, Mapping[str, Any]] = {}
    given = called("the pytest_roofline_hardware hook", lambda: config.hook.pytest_roofline_hardware(config=config))
    for found in given:
        if not isinstance(found, Mapping):
            raise ConfigError(f"the pytest_roofline_hardware hook returned {type(found).__name__}, not a mapping of "
                              "device names to their figures (as roofline.yaml's devices: section)")
        devices.update({str(name): figures for name, figures in found.items()})
    return HardwareEntries(devices, "the pytest_roofline_hardware hook") if devices else None


def report_made(config: pytest.Config, report: dict[str, Any]) -> str:
    """Hand the report to the suite's ``pytest_roofline_report`` hooks; what one raised, in words ("" if none)."""
    try:
        called("the pytest_roofline_report hook", lambda: config.hook.pytest_roofline_report(config=config,
                                                                                             report=report))
    except HookError as exc:
        return str(exc)
    return ""
