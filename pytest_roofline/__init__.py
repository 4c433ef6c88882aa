"""pytest-roofline: measure jitted JAX kernels against the roofline of the hardware they run on.

``measure(fn, *args, **kwargs)`` is the public entry point. Importing this package does not import JAX:
JAX is imported the first time something is measured.

Layout (each folder with one rule about what it may import, checked by ``tests/test_layers.py``):
``analysis/`` pure analysis, ``hardware/`` ceilings, ``measurement/`` the only JAX, ``report/`` text and JSON,
``plugin/`` the only pytest; ``kinds``, ``errors``, ``files``, ``units`` and ``dependencies`` are shared by all.
"""

from __future__ import annotations

from typing import Any

from .errors import MeasureError
from .hardware.spec import Ceiling, HardwareError, HardwareSpec, UnknownDeviceError
from .result import Result

__all__ = ["measure", "Result", "HardwareSpec", "Ceiling", "HardwareError", "UnknownDeviceError", "MeasureError"]
__version__ = "0.1.0"


def measure(fn: Any, *args: Any, **kwargs: Any) -> Result:
    """Measure a JAX kernel against its roofline; see :func:`pytest_roofline.measurement.pipeline.measure`."""
    from .dependencies import too_old

    if problem := too_old(need=("jax", "jaxlib", "numpy")):
        raise MeasureError(problem)
    from .measurement.pipeline import measure as _measure

    return _measure(fn, *args, **kwargs)
