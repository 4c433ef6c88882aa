"""Compile time over time: a kernel's compile time against its baseline's, judged only when a ratio is asked
for (``--max-compile``). Compile times move with the machine's load and the compiler's caches, so the check is
off by default, and a baseline is the median of the baseline's compile times. Pure."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..base.units import format_seconds
from ..records.series_judgement import SeriesKey

__all__ = ["CompileCheck", "compile_check"]


@dataclass(frozen=True)
class CompileCheck:
    """A kernel's compile time against the median of its baseline's, and the ratio it may grow by."""

    key: SeriesKey
    current_s: float
    baseline_s: float
    runs: int  # how many baseline compile times the median is of
    max_ratio: float

    @property
    def ratio(self) -> float:
        return self.current_s / self.baseline_s

    @property
    def regressed(self) -> bool:
        return self.ratio > self.max_ratio

    def message(self) -> str:
        verdict = "beyond" if self.regressed else "within"
        of = "1 run" if self.runs == 1 else f"median of {self.runs} runs"
        return (f"compile time {format_seconds(self.current_s)} is {self.ratio:.2f}x the baseline's "
                f"{format_seconds(self.baseline_s)} ({of}), {verdict} --max-compile {self.max_ratio:g}x")


def compile_check(key: SeriesKey, current_s: float, baseline_s: Sequence[float],
                  max_ratio: float) -> CompileCheck | None:
    """The check of ``current_s`` against the compile times ``baseline_s`` (reports from before compile times
    were recorded carry 0 and are left out); None when either side has no compile time."""
    earlier = [s for s in baseline_s if s > 0]
    if current_s <= 0 or not earlier:
        return None
    return CompileCheck(key, current_s, statistics.median(earlier), len(earlier), max_ratio)
