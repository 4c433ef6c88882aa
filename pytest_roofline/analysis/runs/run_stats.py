"""The timed runs of one measurement and their statistics: median, minimum and spread. Pure."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from statistics import median

from ...base.kinds import TimerUsed
from ...base.quantiles import relative_iqr

__all__ = ["Timing", "relative_iqr"]


@dataclass(frozen=True)
class Timing:
    """Per-run times: device times from the trace, or the host wall clock when the profiler could not be used
    (``fallback_reason`` says why). The wall clock around each run is always kept beside them."""

    per_run_s: tuple[float, ...]
    wall_per_run_s: tuple[float, ...]
    timer: TimerUsed
    fallback_reason: str = ""
    method: str = ""  # how the trace told the runs apart
    # Minor page faults the process took during each run (the OS's count, all threads); () where none is kept
    faults_per_run: tuple[int, ...] = ()
    _: KW_ONLY  # fields from the seventh on are given by keyword
    # Share of the time the process's threads were ready to run during each run that they waited for a CPU held
    # by another process (the OS's scheduler statistics); () where none is kept
    waiting_per_run: tuple[float, ...] = ()
    # Share of all CPUs' time that other processes (and, through steal time, other VMs) used while the runs went
    # on (the OS's CPU statistics); None where none is kept
    others_cpu_share: float | None = None

    @property
    def median_waiting(self) -> float | None:
        return median(self.waiting_per_run) if self.waiting_per_run else None

    @property
    def median_faults(self) -> float | None:
        return median(self.faults_per_run) if self.faults_per_run else None

    @property
    def runs(self) -> int:
        return len(self.per_run_s)

    @property
    def median_s(self) -> float:
        return median(self.per_run_s)

    @property
    def min_s(self) -> float:
        return min(self.per_run_s)

    @property
    def spread(self) -> float:
        return relative_iqr(self.per_run_s)

    @property
    def wall_min_s(self) -> float:
        return min(self.wall_per_run_s)
