"""pytest-roofline: measure jitted JAX kernels against the roofline of the hardware they run on.

``measure(fn, *args, **kwargs)`` is the public entry point. Importing this package does not import JAX:
JAX is imported the first time something is measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .hardware import Ceiling, HardwareError, HardwareSpec, UnknownDeviceError
from .result import Result

if TYPE_CHECKING:
    from .runner import MeasureError

__all__ = ["measure", "Result", "HardwareSpec", "Ceiling", "HardwareError", "UnknownDeviceError", "MeasureError"]
__version__ = "0.1.0"


def measure(fn: Any, *args: Any, **kwargs: Any) -> Result:
    """Measure a JAX kernel against its roofline; see :func:`pytest_roofline.engine.measure`."""
    from .engine import measure as _measure

    return _measure(fn, *args, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "MeasureError":
        from .runner import MeasureError

        return MeasureError
    raise AttributeError(f"module 'pytest_roofline' has no attribute {name!r}")
