"""A stand-in for the roofline plugin that counts instead of timing (loaded with ``-p bound_check_plugin -p
no:roofline`` by tests/e2e/test_example_bounds.py): every test that uses the ``roofline`` fixture runs once per
accelerator of the hardware table, with ``roofline.hardware`` that entry, so that it sizes its kernels for it;
each ``roofline(...)`` call compiles the kernel here (this CPU's backend), models the program on the entry's
ceilings (pytest_roofline.measurement.predict.model_on) and writes the bound the model gives beside the bound
the test declares for that entry (the marker's or the call's, picked from a mapping as the plugin picks it) to the
JSON-lines file named by $BOUND_CHECK_OUT. Nothing is timed; the entries are the real table's, the devices fakes.

Only the inputs' shapes and dtypes reach the compiler, so ``jax.random.normal`` is replaced by a fake that returns
zeros of the asked shape and dtype (the example suite makes its inputs with it): drawing gigabytes of random numbers
for kernels sized for an accelerator was most of this check's time."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_roofline.base.calls import split_call
from pytest_roofline.base.labels import kernel_name
from pytest_roofline.hardware.spec import HardwareSpec
from pytest_roofline.hardware.table import load_shipped_table
from pytest_roofline.measurement.options import MEASURE_OPTIONS, GivenCounts, GivenSettings
from pytest_roofline.plugin.fixture import FIXTURE_SETTINGS
from pytest_roofline.plugin.marker import parse_bound_setting, parse_marker, pick_bound

ACCELERATORS = {name: spec for name, spec in load_shipped_table().items() if spec.platform in ("gpu", "tpu")}


def pytest_addoption(parser: pytest.Parser) -> None:
    # The example suite's xfail reads this option: verdicts are never failures here (nothing is judged).
    parser.addoption("--roofline-warn-only", action="store_true", default=True, dest="roofline_warn_only")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "roofline: read by the bound check, which counts instead of timing")
    import jax
    import jax.numpy as jnp

    def zeros_not_random(key: Any, shape: Any = (), dtype: Any = jnp.float32, *args: Any, **kwargs: Any) -> Any:
        return jnp.zeros(shape, dtype)  # a fake: the compiler sees the same shapes and dtypes

    jax.random.normal = zeros_not_random


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "roofline" in metafunc.fixturenames:
        metafunc.parametrize("roofline", list(ACCELERATORS), indirect=True)


class CountingFixture:
    def __init__(self, item: pytest.Item, hardware: HardwareSpec) -> None:
        self.hardware = hardware
        self._item = item
        marker = item.get_closest_marker("roofline")
        self._marker = parse_marker(marker.args, marker.kwargs, item.nodeid, lambda: tuple(load_shipped_table())) \
            if marker is not None else None

    def __call__(self, fn: Any, *args: Any, **keywords: Any) -> Any:
        from pytest_roofline.measurement.predict import model_on

        call, kwargs = split_call(fn, args, keywords, FIXTURE_SETTINGS, "roofline(...)")
        given = GivenSettings.read({k: v for k, v in kwargs.items() if k in MEASURE_OPTIONS}, lambda k, v: f"{k}=")
        given = given.over(self._marker.given if self._marker else GivenSettings())
        counts = GivenCounts(given.flops, given.bytes, given.transcendentals)
        label = kwargs.get("name") or kernel_name(fn)
        model, footprint = model_on(call, self.hardware, counts, label)
        origin = "the call's bound="
        setting = None
        if kwargs.get("bound") is not None:
            setting = parse_bound_setting(kwargs["bound"], origin, origin, lambda: tuple(load_shipped_table()))
        elif self._marker is not None:
            setting, origin = self._marker.bound, "the marker's bound="
        picked = pick_bound(setting, origin, self.hardware.name, self.hardware.platform)
        roof = model.estimate
        row = {"test": self._item.nodeid.split("[")[0], "label": label, "hardware": self.hardware.name,
               "declared": picked.value if picked else None, "model": roof.bound,
               "intensity": model.work.flops / max(model.work.bytes_accessed, 1.0),
               "critical": roof.critical_intensity, "compute_s": roof.compute_time_s, "memory_s": roof.memory_time_s}
        with open(os.environ["BOUND_CHECK_OUT"], "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")
        # nothing ran, so nothing ran beside other work
        return SimpleNamespace(flops=model.work.flops, bytes_accessed=model.work.bytes_accessed,
                               flops_source=model.work.flops_source, memory=footprint, contended=False)

    def measure(self, fn: Any, *args: Any, **keywords: Any) -> Any:
        return self(fn, *args, **keywords)


@pytest.fixture
def roofline(request: pytest.FixtureRequest) -> CountingFixture:
    return CountingFixture(request.node, ACCELERATORS[request.param])
