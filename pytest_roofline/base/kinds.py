"""Every enumeration of the package, defined once: a ``Literal`` type and the tuple of its values.

Settings, the marker, the fixture call and ``measure()`` all check their choices with :func:`choose`, so
a value has one spelling and one error message everywhere.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar, get_args

__all__ = [
    "Timer",
    "TIMERS",
    "TimerUsed",
    "Bound",
    "BOUNDS",
    "ExpectedBound",
    "EXPECTED_BOUNDS",
    "Model",
    "MODELS",
    "FirstTouchMode",
    "FIRST_TOUCH_MODES",
    "CeilingsMode",
    "CEILINGS_MODES",
    "CacheMode",
    "CACHE_MODES",
    "CacheState",
    "CACHE_STATES",
    "CeilingsUsed",
    "Verdict",
    "VERDICTS",
    "FAILING_VERDICTS",
    "Platform",
    "PLATFORMS",
    "CountSource",
    "CountsFrom",
    "COUNTS_FROM",
    "choose",
]

Timer = Literal["auto", "profiler", "wallclock"]
"""How a program is timed: the profiler with the wall clock as fallback, the profiler only, the wall clock."""
TIMERS: tuple[Timer, ...] = get_args(Timer)

TimerUsed = Literal["profiler", "wallclock"]

Bound = Literal["compute", "memory", "interconnect", "transcendental"]
"""Which roofline term is the largest."""
BOUNDS: tuple[Bound, ...] = get_args(Bound)

ExpectedBound = Literal["compute", "memory"]
"""What a test may expect with ``bound=``."""
EXPECTED_BOUNDS: tuple[ExpectedBound, ...] = get_args(ExpectedBound)

Model = Literal["program", "ops"]
"""Which roofline a threshold is checked against: one max() over the program, or the sum over its ops."""
MODELS: tuple[Model, ...] = get_args(Model)

FirstTouchMode = Literal["include", "exclude"]
"""Whether the roofline a threshold is checked against includes the first touch of the program's fresh pages
(a CPU's page faults on new output buffers; no term on accelerators): "include" holds a kernel to what the
machine can do with the buffers it allocates, "exclude" to main memory and compute alone."""
FIRST_TOUCH_MODES: tuple[FirstTouchMode, ...] = get_args(FirstTouchMode)

CeilingsMode = Literal["auto", "datasheet", "calibrated", "live"]
"""Which ceilings to ask for: "auto" is live on a CPU and the datasheet on accelerators."""
CEILINGS_MODES: tuple[CeilingsMode, ...] = get_args(CeilingsMode)

CacheMode = Literal["auto", "cold", "warm"]
"""The cache state a kernel is measured in: "cold" evicts the last-level cache before every timed run (outside
the timing), "warm" runs back to back; "auto" is cold where the program's working set fits the last-level cache
(where the two differ) and warm where it does not (each run evicts its own data) or on a TPU."""
CACHE_MODES: tuple[CacheMode, ...] = get_args(CacheMode)

CacheState = Literal["cold", "warm"]
"""The cache state a result was measured in."""
CACHE_STATES: tuple[CacheState, ...] = get_args(CacheState)

CeilingsUsed = Literal["datasheet", "calibrated", "live", "given"]
"""Which ceilings a result was measured against."""

Verdict = Literal["measured", "pass", "fail", "wrong-bound", "impossible", "regression", "over-memory", "over-ops",
                  "exposed", "contended", "no-work", "lower-bound", "unjudged"]
"""regression: utilization dropped from the --roofline-baseline beyond its gate; over-memory: the program needs
more device memory than its max_memory=; over-ops: one run executes more device ops than its max_ops=; exposed: its
collectives leave more of a run exposed (overlapped by no compute) than its max_exposed=; no-work: the compiled program
computes nothing (the kernel returns None or a constant), so there is no roofline to judge it against; lower-bound:
below its threshold, but its counts are a
lower bound (a loop whose iterations no trace showed, work nobody counted), so it is not judged (a warning); unjudged:
above its roofline, but against figures known to be unsure (ceilings calibrated beside other work, a conditional
counted at its dearest branch), so neither impossible nor passed (a warning)."""
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
FAILING_VERDICTS: frozenset[Verdict] = frozenset({"fail", "wrong-bound", "impossible", "regression", "over-memory",
                                                   "over-ops", "exposed", "no-work"})

Platform = Literal["cpu", "gpu", "tpu"]
PLATFORMS: tuple[Platform, ...] = get_args(Platform)

# hlo: counted by pytest-roofline from the optimized HLO; cost_estimate: the Pallas kernels' stated work alone;
# kernel_io: interpret-mode Pallas kernels without a cost_estimate, their operand and result bytes alone
# kernel_body: Pallas kernels without a cost_estimate, counted from their bodies (jaxpr x grid, blocks as bytes)
CountSource = Literal["compiler", "user", "hlo", "cost_estimate", "kernel_io", "kernel_body", "source"]
# source: the FLOPs the program as written asks for (its jaxpr), by counts="source"

CountsFrom = Literal["compiled", "source"]
"""Which FLOPs a kernel is judged on: the compiled program's (default), or its source's (model-FLOPs utilization)."""
COUNTS_FROM: tuple[CountsFrom, ...] = get_args(CountsFrom)

T = TypeVar("T", bound=str)


def choose(raw: Any, allowed: tuple[T, ...], where: str, error: type[Exception] = ValueError) -> T:
    """``raw`` as one of ``allowed`` (case-insensitive, surrounding blanks ignored), else ``error`` naming
    ``where``, the value and the choices."""
    text = raw.strip().lower() if isinstance(raw, str) else raw
    for value in allowed:
        if text == value:
            return value
    choices = ", ".join(repr(v) for v in allowed)
    raise error(f"{where}: must be one of {choices}, got {raw!r}")
