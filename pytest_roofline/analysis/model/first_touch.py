"""The CPU's fourth roofline term: first touch of fresh pages. Pure.

XLA:CPU gets fresh pages from the operating system for every output and temporary buffer a program allocates
(a 128 MiB output costs 32,768 minor page faults per call, whatever glibc's malloc settings say), and the
kernel zeroes each page on its first write. That cost stalls the core that takes the fault, so it adds to
the roofline's max() rather than overlapping with it:

    roofline time = max(compute, memory, transcendental, interconnect) + fresh bytes / first-touch rate

``fresh bytes`` are the program's outputs and temporaries that are neither aliased nor donated (from the
compiled program's memory analysis), capped by what the operating system counted: a buffer the allocator
reused costs no fault, so the charged bytes are ``min(fresh bytes, counted faults x bytes per fault)``. The
first-touch rate and the bytes one fault maps (4 KiB, or more with transparent huge pages) are calibrated on
the machine with a stream that writes a fresh output, against the same stream donated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...base.units import format_quantity, format_seconds
from ...hardware.spec import Ceiling

__all__ = ["FirstTouch", "first_touch", "AGREES_WITHIN", "FAULTS_CHEAPER", "FAULT_COST_MOVES"]

# A utilization above 100% only because of the first-touch term, in the words every report uses.
FAULTS_CHEAPER = "above 100% only with the first-touch term: the page faults cost less than calibrated"
FAULT_COST_MOVES = "the cost of a fault moves with the host (--roofline-calibrate re-measures it)"

# Counted faults within this factor of the expected ones agree with the model (the process's own Python work
# and the profiler take a few faults of their own; the allocator may reuse part of a buffer).
AGREES_WITHIN = 0.25


@dataclass(frozen=True)
class FirstTouch:
    """The first-touch term of one program on one machine."""

    fresh_bytes: int  # outputs + temporaries - aliased (the memory analysis)
    donatable_bytes: int  # the fresh outputs alone: what donating inputs (or reusing the buffer) would save
    rate: Ceiling  # bytes per second of first touch (calibrated)
    bytes_per_fault: float  # what one fault maps on this machine (calibrated)
    counted_faults: float | None = None  # median minor faults per timed run (None: not counted)

    @property
    def expected_faults(self) -> float:
        return self.fresh_bytes / self.bytes_per_fault

    @property
    def charged_bytes(self) -> float:
        """The fresh bytes that really were faulted in: the model's, capped by the counted faults."""
        if self.counted_faults is None:
            return float(self.fresh_bytes)
        return min(float(self.fresh_bytes), self.counted_faults * self.bytes_per_fault)

    @property
    def time_s(self) -> float:
        return self.charged_bytes / self.rate.value

    def per_run(self, faults_per_run: Sequence[int], runs: int) -> list[float] | None:
        """Each run's own first-touch time: the pages it faulted, at most the fresh ones; None where the faults were
        not counted for every one of the ``runs`` runs."""
        if len(faults_per_run) != runs:
            return None
        return [min(float(self.fresh_bytes), f * self.bytes_per_fault) / self.rate.value for f in faults_per_run]

    @property
    def saving_s(self) -> float:
        """What donating (or reusing) the output buffers would save."""
        return min(float(self.donatable_bytes), self.charged_bytes) / self.rate.value

    @property
    def agrees(self) -> bool | None:
        """Whether the counted faults match the expected ones (None: nothing counted or nothing expected)."""
        if self.counted_faults is None or self.expected_faults < 1:
            return None
        return abs(self.counted_faults - self.expected_faults) <= AGREES_WITHIN * self.expected_faults

    def faults_text(self) -> str:
        expected = f"{self.expected_faults:,.0f} faults expected ({format_quantity(self.fresh_bytes, 'B')} fresh)"
        if self.counted_faults is None:
            return f"{expected}, none counted (the operating system does not count them here)"
        if self.agrees is None:
            verdict = ""
        elif self.agrees:
            verdict = "as expected"
        elif self.counted_faults < self.expected_faults:
            verdict = "the allocator reused the rest: only counted faults are charged"
        else:
            verdict = "more than the program's buffers: only the expected ones are charged"
        return f"{expected}, {self.counted_faults:,.0f} counted per run" + (f" ({verdict})" if verdict else "")

    def split(self, measured_s: float, roofline_s: float) -> str:
        """How the measured time divides: the roofline's terms, first touch, and the rest."""
        rest = measured_s - roofline_s - self.time_s
        return (f"of {format_seconds(measured_s)}: roofline terms {format_seconds(roofline_s)}, first touch "
                f"{format_seconds(self.time_s)}, the rest {format_seconds(max(rest, 0.0))}")

    def saving_text(self) -> str:
        if self.saving_s <= 0:
            return ""
        return (f"donating an input the output can reuse (donate_argnums) would save about "
                f"{format_seconds(self.saving_s)} per call ({format_quantity(self.donatable_bytes, 'B')} of fresh "
                f"output)")

    def to_dict(self) -> dict[str, Any]:
        return {"fresh_bytes": self.fresh_bytes, "donatable_bytes": self.donatable_bytes,
                "rate_bytes_per_s": self.rate.to_dict(), "bytes_per_fault": self.bytes_per_fault,
                "expected_faults": self.expected_faults, "counted_faults": self.counted_faults,
                "charged_bytes": self.charged_bytes, "time_s": self.time_s, "saving_s": self.saving_s,
                "agrees": self.agrees}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FirstTouch:
        counted = data.get("counted_faults")
        return cls(int(data["fresh_bytes"]), int(data["donatable_bytes"]), Ceiling.from_dict(data["rate_bytes_per_s"]),
                   float(data["bytes_per_fault"]), float(counted) if counted is not None else None)


def first_touch(outputs: int, temporaries: int, aliased: int, rate: Ceiling | None, bytes_per_fault: float | None,
                counted_faults: float | None) -> FirstTouch | None:
    """The term for a program with these buffer sizes (memory analysis, bytes) on a machine with a calibrated
    first-touch ``rate``; None where the machine has none (accelerators, or no measurable cost)."""
    if rate is None or not bytes_per_fault or rate.value <= 0:
        return None
    fresh_outputs = max(outputs - aliased, 0)
    return FirstTouch(fresh_outputs + max(temporaries, 0), fresh_outputs, rate, bytes_per_fault, counted_faults)
