"""CPU contention during a measurement, from the operating system's scheduler statistics. Pure.

While a kernel runs, its threads are either on a CPU or ready and waiting for one that another process holds
(Linux counts both per thread). The share of the ready time spent waiting is the direct measure of contention:
on a quiet 2-core VM it stays below 2%, beside one busy neighbour process it reads 28-55%. No reference kernel
tracks every kernel under such a neighbour (kernels slow by 1.2x-2x beside the same neighbour, depending on how
their work splits between threads and memory), so a measurement taken under contention says so, and a kernel
below its threshold then fails only if it would be below it even had its threads never waited: the run time
with the waiting share taken out, ``t * (1 - waiting)``. For work limited by the cores that is about the quiet
time (within 10% on the 2-core VM); for work limited by memory or by how it splits between threads it is
shorter (a row sum read +43-51%), so the figure only decides whether a neighbour explains a shortfall.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

__all__ = ["CONTENDED_ABOVE", "contended", "on_cpu_utilization", "describe"]

# Quiet, the threads of a measuring process wait for a CPU during 0-1.5% of their ready time (a 2-core AMD EPYC
# VM); beside a busy or memory-copying neighbour process 28-55%. Between the two, well clear of both.
CONTENDED_ABOVE = 0.10


def contended(waiting: float | None) -> bool:
    """Whether a median waiting share means that other processes held the CPUs during the runs."""
    return waiting is not None and waiting > CONTENDED_ABOVE


def on_cpu_utilization(roofline_s: float, per_run_s: Sequence[float], waiting_per_run: Sequence[float]) -> float | None:
    """The median utilization over runs had the kernel's threads never waited for a CPU: roofline time /
    (run time * (1 - waiting share)). None without a waiting share for every run."""
    if not per_run_s or len(waiting_per_run) != len(per_run_s):
        return None
    return median(roofline_s / (t * max(1.0 - w, 1e-9)) for t, w in zip(per_run_s, waiting_per_run, strict=True))


def describe(waiting: float, on_cpu: float | None) -> str:
    """One line for a contended measurement."""
    text = (f"contended: the kernel's threads waited for a CPU held by another process during {waiting:.0%} of the "
            f"time they were ready to run (scheduler statistics), so this utilization may be off by tens of percent")
    if on_cpu is not None:
        text += f"; without the waiting {on_cpu:.1%} against the calibrated ceilings"
    return text
