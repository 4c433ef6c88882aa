"""CPU contention during a measurement, from the operating system's scheduler statistics. Pure.

While a kernel runs, its threads are either on a CPU or ready and waiting for one that another process holds
(Linux counts both per thread). The share of the ready time spent waiting is the direct measure of contention:
on a quiet 2-core VM it stays below 2%, beside one busy neighbour process it reads 28-55%. No reference kernel
tracks every kernel under such a neighbour (kernels slow by 1.2x-2x beside the same neighbour, depending on how
their work splits between threads and memory), so a measurement taken under contention says so, and a kernel
below its threshold then is not failed. It also says what it would read had its threads never waited: the run time
with the waiting share taken out, ``t * (1 - waiting)``. For work limited by the cores that is about the quiet
time (within 10% on the 2-core VM); for work limited by memory or by how it splits between threads it is
shorter (a row sum read +43-51%); and for threads that spin while they wait for each other (a library's own pool,
OpenBLAS's under jaxlib's LAPACK calls) the neighbour costs far more than the waiting shows, so even a kernel below
its threshold with the waiting taken out is not failed: the figure is said, not judged.

A thread also waits while another thread of the same process holds the CPU: a kernel that runs more threads than
there are cores waited 9-13% of its ready time on the quiet VM with nothing else running. So waiting alone does not
make a measurement contended: other processes must also have used a share of the machine's CPUs meanwhile (the
OS's CPU statistics, other VMs' steal time included; 0-1.2% quiet, about 50% beside one busy process on 2 cores).
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

__all__ = ["waiting_share", "CONTENDED_ABOVE", "OTHERS_ABOVE", "contended", "on_cpu_utilization", "plausible",
           "describe", "waited_text", "ABOVE_ROOFLINE", "BEYOND_WAITING"]

# Quiet, the threads of a measuring process wait for a CPU during 0-1.5% of their ready time (a 2-core AMD EPYC
# VM); beside a busy or memory-copying neighbour process 28-55%. Between the two, well clear of both.
CONTENDED_ABOVE = 0.10
# Quiet, other processes use 0-1.2% of the 2-core VM's CPUs while a kernel is measured; one busy neighbour about 50%.
OTHERS_ABOVE = 0.10


def waiting_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of the time a process's threads were ready to run between two readings of their times (on a CPU,
    waiting for one: :func:`~pytest_roofline.hardware.cpu.thread_times_ns`) that they spent waiting for a CPU
    (other processes had it); None where the system does not say."""
    if before is None or after is None:
        return None
    on_cpu, waiting = max(after[0] - before[0], 0), max(after[1] - before[1], 0)
    return waiting / (on_cpu + waiting) if on_cpu + waiting > 0 else 0.0


def contended(waiting: float | None, others: float | None = None) -> bool:
    """Whether the kernel's threads waited for a CPU (median waiting share) because other processes held the
    CPUs: they did, if others used more than ``OTHERS_ABOVE`` of the machine's CPU time meanwhile (``others``
    None: not known, the waiting alone decides)."""
    return waiting is not None and waiting > CONTENDED_ABOVE and (others is None or others > OTHERS_ABOVE)


def on_cpu_utilization(roofline_s: float, per_run_s: Sequence[float], waiting_per_run: Sequence[float]) -> float | None:
    """The median utilization over runs had the kernel's threads never waited for a CPU: roofline time /
    (run time * (1 - waiting share)). None without a waiting share for every run."""
    if not per_run_s or len(waiting_per_run) != len(per_run_s):
        return None
    return median(roofline_s / (t * max(1.0 - w, 1e-9)) for t, w in zip(per_run_s, waiting_per_run, strict=True))


def plausible(on_cpu: float, interval: tuple[float, float]) -> bool:
    """Whether a utilization with the waiting taken out can be true: at most 100% plus the width of the measured
    utilization's own interval. Above it the waiting share overstates what the neighbour cost (the threads waited
    while the work was held up elsewhere, on memory or on each other), and the figure is no utilization."""
    return on_cpu <= 1.0 + (interval[1] - interval[0])


# Why a contended kernel below its threshold even with the waiting taken out is still not failed.
BEYOND_WAITING = ("threads that spin while they wait for each other run on a CPU without making progress while a "
                  "neighbour holds their partner's: a library's own thread pool does, OpenBLAS's under jaxlib's CPU "
                  "LAPACK calls; OPENBLAS_NUM_THREADS=1, set before JAX is imported, keeps it to one thread")
ABOVE_ROOFLINE = ("taking that waiting out would put it above the roofline (beyond 100% plus its interval's width), "
                  "so the waiting does not say what the neighbour cost")


def waited_text(waiting: float) -> str:
    """How long a contended measurement's threads waited, in the words every report uses."""
    return (f"the kernel's threads waited for a CPU held by another process during {waiting:.0%} of the time they "
            f"were ready to run")


def describe(waiting: float, on_cpu: float | None, others: float | None = None, rejected: bool = False) -> str:
    """One line for a contended measurement."""
    used = f"; other processes used {others:.0%} of the CPUs meanwhile" if others is not None else ""
    text = (f"contended: {waited_text(waiting)} (scheduler statistics{used}), so this utilization may be off by "
            f"tens of percent")
    if on_cpu is not None:
        text += f"; without the waiting {on_cpu:.1%} against the calibrated ceilings"
    elif rejected:
        text += f"; {ABOVE_ROOFLINE}"
    return text
