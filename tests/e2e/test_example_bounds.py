"""Every test of the example suite, on every accelerator of the hardware table (NVIDIA, AMD, TPU), declares the
bound the roofline model gives there: the suite runs under tests/support/bound_check_plugin.py, which sizes each kernel
for the entry (``roofline.hardware``), compiles it on this CPU and models the compiled program on the entry's
ceilings, timing nothing. The devices are the table's entries, standing in for hardware this machine does not
have.

Where the counts could differ on the device (pytest_roofline/measurement/predict.py): XLA:CPU runs bf16 dots
through f32 converts, so a bf16 matmul compiled here holds f32 FLOPs (held to the TF32 peak on a GPU, half the
bf16 peak) and about 3x the bytes of the operation; the example's compute-bound matmul gives the operation's bytes
(bytes=) for that reason, and its FLOPs at the TF32 peak only make it look more compute-bound than on the device.
Each backend fuses, and so counts bytes, its own way: the memory-bound kernels here are far below every ridge
point (under 50 FLOP/B against 65-560)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from paths import ROOT, SUPPORT

from pytest_roofline.hardware.table import load_shipped_table

ACCELERATORS = [name for name, spec in load_shipped_table().items() if spec.platform in ("gpu", "tpu")]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = tmp_path_factory.mktemp("bounds") / "rows.jsonl"
    env = {**os.environ, "BOUND_CHECK_OUT": str(out), "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join(p for p in (str(SUPPORT), os.environ.get("PYTHONPATH", "")) if p)}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "example_suite",
            "-p",
            "no:roofline",
            "-p",
            "bound_check_plugin",
            "-p",
            "no:cacheprovider",
            "-q",
            "-x",
            "-p",
            "no:randomly",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_every_example_test_ran_on_every_accelerator(rows: list[dict[str, Any]]) -> None:
    tests = {str(r["test"]) for r in rows}
    assert len(tests) >= 15, sorted(tests)
    for test in tests:
        assert {r["hardware"] for r in rows if r["test"] == test} == set(ACCELERATORS), test


def test_declared_bounds_are_the_model_s_on_every_accelerator(rows: list[dict[str, Any]]) -> None:
    declared = [r for r in rows if r["declared"] is not None]
    wrong = [f"{r['test']} [{r['label']}] on {r['hardware']}: declared {r['declared']}-bound, the model gives "
             f"{r['model']}-bound (intensity {r['intensity']:.3g} vs critical {r['critical']:.3g})"
             for r in declared if r["declared"] != ("compute" if r["model"] == "transcendental" else r["model"])]
    assert not wrong, "\n".join(wrong)
    assert {r["declared"] for r in declared} == {"compute", "memory"}  # both kinds are checked
