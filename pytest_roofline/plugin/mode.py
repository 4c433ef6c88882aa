"""How a pytest process serves its ``roofline(...)`` calls. The plain mode measures each call and judges it; a tool
that drives pytest (``pytest-roofline ab``'s processes) installs another through the ``pytest_roofline_mode`` hook.
No pytest, no JAX."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any, NoReturn

from ..base.calls import KernelCall
from ..measurement.options import GivenSettings, MeasureOptions

__all__ = ["Mode", "CallSite", "PLAIN"]


@dataclass(frozen=True)
class CallSite:
    """One ``roofline(...)`` or ``roofline.measure(...)`` call as the fixture read it, before anything is measured."""

    nodeid: str
    label: str
    call: KernelCall
    options: MeasureOptions  # the session's, the marker's and the call's
    _: KW_ONLY
    again: Callable[[], Any]  # the same call, made later (with the same inputs) as the test made it
    restart: Callable[[], None]  # the test's labels forgotten: the calls made again are labelled as at first
    stop: Callable[[str], NoReturn]  # stop the test here (a skip), saying why


class Mode:
    """The plain mode: every call measured and judged; a shortfall measured again before it fails; a failure's
    trace saved. A subclass changes what it needs."""

    # Each kernel measured once: no second measurement of a shortfall, no sampling toward a threshold, no trace
    # saved for a failure (a tool that judges the measurements itself, as ab's rounds judge ratios).
    measure_once: bool = False

    @property
    def stands_in(self) -> str:
        """Where the mode answers calls in place of measurements (:meth:`stand_in`): what the header says instead
        of the hardware; "" where every call is measured."""
        return ""

    def settings(self, base: GivenSettings, given: GivenSettings,
                 ceilings_mode: Callable[[], str]) -> GivenSettings:
        """The session's settings for one measurement (``given``: the marker's and the call's, which go over
        them). ``ceilings_mode``: the ceilings the session's hardware uses ("live", ...), found when asked."""
        return base

    def keeper(self, key: str, call: KernelCall, options: MeasureOptions) -> Any:
        """Where the measurement of ``key`` ("nodeid::label") keeps its compiled program and inputs, to measure them
        again (a :class:`~pytest_roofline.measurement.pipeline.Keeper`, owned by the mode); None: nothing kept."""
        return None

    def stand_in(self, site: CallSite) -> Any:
        """What the call returns in place of a measurement, where the mode ``stands_in``."""
        raise NotImplementedError(f"{type(self).__name__} measures every call")


PLAIN = Mode()
