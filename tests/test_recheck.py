"""A stale calibration (a kernel beats a calibrated ceiling) is re-measured before 'impossible' is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_roofline.hardware import calibration
from pytest_roofline.plugin.session import RooflineSession
from pytest_roofline.plugin.settings import Settings


def test_keep_best_takes_the_higher_figure() -> None:
    old = {"peaks": {"f32": 2.0, "bf16": 1.0}, "memory": 5.0, "date": "then",
           "details": {"f32": "old f32", "bf16": "old bf16", "memory": "old mem"}}
    new = {"peaks": {"f32": 1.0, "bf16": 3.0}, "memory": 4.0, "date": "now",
           "details": {"f32": "new f32", "bf16": "new bf16", "memory": "new mem"}}
    best = calibration.keep_best(old, new)
    assert best["peaks"] == {"f32": 2.0, "bf16": 3.0} and best["memory"] == 5.0
    assert best["details"]["f32"] == "old f32 (kept from then)" and best["details"]["bf16"] == "new bf16"


@pytest.mark.slow
def test_stale_calibration_is_rechecked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jnp = pytest.importorskip("jax").numpy
    from pytest_roofline.measurement.calibrate import machine_key

    monkeypatch.setenv(calibration.CACHE_DIR_ENV, str(tmp_path))
    key = machine_key("cpu", "cpu")
    # Fake stale cache: 1 GFLOP/s and 0.1 GB/s, far below anything this machine does.
    calibration.store_cached(key, {"peaks": {"f32": 1e9, "bf16": 1e9}, "memory": 1e8, "date": "2000-01-01T00:00:00Z",
                                 "details": {"f32": "fake", "bf16": "fake", "memory": "fake"}})
    session = RooflineSession(Settings())
    result = session.measure(lambda v: v * 2.0, (jnp.ones((1 << 22,), jnp.float32),),
                             {"min_runs": 3, "max_runs": 3, "warmup": 1})
    assert not result.impossible
    assert "stale calibration" in result.notes[-1]
    cached = calibration.load_cached(key)
    assert cached is not None and cached["memory"] > 1e9  # the cache now holds the real, higher figure
