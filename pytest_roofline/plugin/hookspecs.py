"""Hooks a test suite can implement in its conftest.py (docs/hooks.md shows each with an example)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..records.kernel_record import KernelRecord


@pytest.hookspec
def pytest_roofline_report(config: pytest.Config, report: dict[str, Any]) -> None:
    """Called with the JSON report (a dict) before it is written; add or change fields in place,
    e.g. ``report["build"] = {"pipeline": os.environ["CI_PIPELINE_ID"]}``."""


@pytest.hookspec(firstresult=True)
def pytest_roofline_mode(config: pytest.Config) -> Any:
    """For a tool that drives pytest: a :class:`pytest_roofline.plugin.mode.Mode` that changes how this process
    serves its ``roofline(...)`` calls (``pytest-roofline ab``'s processes measure each kernel once, or only compile
    them); None for the plain mode. Asked once, when the plugin starts; a plugin that implements it starts it."""


@pytest.hookspec
def pytest_roofline_hardware(config: pytest.Config) -> Mapping[str, Mapping[str, Any]] | None:
    """Hardware entries to add, or to change figure by figure, each as an entry of ``roofline.yaml``'s ``devices:``
    section, by name: ``{"Lab CPU": {"platform": "cpu", "device_kinds": ["cpu"], "peak_tflops": {"f32": 1.2},
    "memory_gbps": 80, "read": "2026-11-27"}}``. Called once, when the plugin starts; every implementation's entries
    apply, over the config's devices, in the order pytest calls them. A bad entry stops the run naming the hook."""


@pytest.hookspec(firstresult=True)
def pytest_roofline_threshold(config: pytest.Config, nodeid: str, label: str,
                              threshold: float | Mapping[str, float] | None) -> float | Mapping[str, float] | None:
    """The threshold of one ``roofline(...)`` call from the suite's own table: a fraction in (0, 1], or a mapping by
    platform and hardware name (picked on the device measured, as a marker's ``min=``); None keeps ``threshold``,
    the one the call, the marker, the config or the command line gives (None where none does). Called before the
    kernel is measured; the first implementation that returns a value decides."""


@pytest.hookspec
def pytest_roofline_record(config: pytest.Config, record: KernelRecord) -> None:
    """Called with each kernel's record as soon as it is made, in the process that measured it (under xdist, the
    worker): ``record.nodeid``, ``.label``, ``.verdict``, ``.utilization``, ``.result`` (its figures);
    ``record.to_dict()`` is its entry in the JSON report."""


@pytest.hookspec
def pytest_roofline_ab(config: pytest.Config, comparison: dict[str, Any]) -> None:
    """Called once a ``pytest-roofline ab`` comparison has its verdicts, with the comparison as ``--json`` writes it
    (``comparison["kernels"]``: each kernel's verdict, ratio and interval), in a pytest process of the head that ab
    starts for it (its conftest files loaded; no test is collected or run)."""
