"""pytest-roofline: measure jitted JAX kernels against the roofline of the hardware they run on.

``measure(fn, *args, **kwargs)`` is the public entry point. Importing this package does not import JAX:
JAX is imported the first time something is measured.

Layout: each folder is a layer with one rule about what it may import (checked by ``tests/project/test_layers.py``).

- ``base/``: kinds, errors, files, units, quantiles, labels, call checks, dependency floors; shared by all.
- ``hardware/``: the hardware table, peaks, the CPU's description, the calibration cache, NVML.
- ``analysis/``: pure analysis, four folders in order, each importing only those before it. ``program/`` counts
  a compiled program from its HLO; ``runs/`` reads traces into runs (per process, idle time); ``model/`` is the
  roofline model (ceilings, live and first-touch terms, cache state, per op, exposed time); ``verdict/`` holds the
  pass/fail rule, hints, the census, the op diff, regression tests.
- ``result/``: the Result of one measurement and its paragraph in words.
- ``records/``: the current run's records (a kernel's record, a result as a report records it, a baseline check).
- ``history/``: runs over time, baselines, paired revisions. ``report/``: text, JSON and HTML.
- ``measurement/``: the only JAX (``machine/``: device, calibration, references, eviction, clocks;
  ``processes/``: programs that span processes). ``plugin/``: the only pytest. ``cli/``: ``pytest-roofline``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base.errors import MeasureError
    from .hardware.spec import Ceiling, HardwareError, HardwareSpec, UnknownDeviceError
    from .result.result import Result

__all__ = ["measure", "Result", "HardwareSpec", "Ceiling", "HardwareError", "UnknownDeviceError", "MeasureError"]
__version__ = "0.1.0"

# The public names, imported on first use: pytest imports this package with the plugin's entry point in every run,
# also in a suite that never measures, which pays nothing for the rest of it.
_LAZY = {"MeasureError": ".base.errors", "Ceiling": ".hardware.spec", "HardwareError": ".hardware.spec",
         "HardwareSpec": ".hardware.spec", "UnknownDeviceError": ".hardware.spec", "Result": ".result.result"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def measure(fn: Any, *args: Any, **kwargs: Any) -> Result:
    """Measure a JAX kernel against its roofline; see :func:`pytest_roofline.measurement.pipeline.measure`."""
    from .base.dependencies import too_old
    from .base.errors import MeasureError

    if problem := too_old(need=("jax", "jaxlib", "numpy")):
        raise MeasureError(problem)
    from .measurement.pipeline import measure as _measure

    return _measure(fn, *args, **kwargs)
