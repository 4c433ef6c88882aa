"""The roofline of every program in a profile someone recorded: its runs from the trace, its counts from the
HLO the profile embeds, and (with hardware known) its utilization and per-op rows. Pure: the caller reads the
file (:mod:`..runs.xspace`), turns the embedded HLO protos into text, and picks the hardware.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from statistics import median
from typing import Any

from ...hardware.spec import HardwareSpec
from ..program.counts import Counts, hlo_counts, incomplete_reasons, read_as_ran
from ..program.hlo_reader import HloModule
from ..program.interpreted import estimated_note
from ..program.pallas_costs import PALLAS_REMEDY
from ..runs.program_runs import run_times
from ..runs.trace_events import ProgramKey, RunTimes, TraceEvent, TraceIndex
from .per_op import OpRow, attach_tally, op_rows, tally_events
from .program_model import program_model

__all__ = ["ProgramSummary", "summarize_program", "counts_summary", "hlo_key", "Work"]

Work = tuple[float, float, float]  # FLOPs, bytes, transcendentals per run

_TIME_KEYS = ("compute_time_s", "memory_time_s", "comms_time_s", "roofline_time_s", "bound", "utilization",
              "time_lost_s")


def hlo_key(key: ProgramKey) -> str:
    """The name the metadata plane gives a program's HLO: ``<module>(<program_id>)``."""
    return f"{key.module}({key.program_id})"


@dataclass(frozen=True)
class ProgramSummary:
    module: str
    program_id: int | None
    devices: int
    per_run_s: tuple[float, ...]  # per run in time order, slowest device
    method: str = ""
    counts: Counts | None = None
    _: KW_ONLY  # fields from the seventh on are given by keyword
    hardware: str | None = None
    roofline_time_s: float | None = None
    bound: str | None = None
    ops: tuple[OpRow, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return str(ProgramKey(self.module, self.program_id))

    @property
    def median_s(self) -> float | None:
        return median(self.per_run_s) if self.per_run_s else None

    @property
    def utilization(self) -> float | None:
        if self.roofline_time_s is None or not self.per_run_s:
            return None
        return self.roofline_time_s / median(self.per_run_s)

    def to_dict(self) -> dict[str, Any]:
        c = self.counts
        timed = self.roofline_time_s is not None
        ops = []
        for row in self.ops:
            d = row.to_dict()
            if not timed:
                for k in _TIME_KEYS:
                    d.pop(k, None)
            ops.append(d)
        return {
            "module": self.module, "program_id": self.program_id, "devices": self.devices,
            "runs": len(self.per_run_s), "per_run_s": list(self.per_run_s),
            "median_s": self.median_s, "min_s": min(self.per_run_s) if self.per_run_s else None,
            "flops": c.flops if c else None, "transcendentals": c.transcendentals if c else None,
            "matrix_flops": dict(c.matrix_flops) if c else None,
            "bytes_accessed": c.bytes_accessed if c else None,
            "counts_incomplete": list(c.uncounted) if c else None,
            "counts_from_cost_estimate": list(c.estimated) if c else None,
            "hardware": self.hardware, "roofline_time_s": self.roofline_time_s, "bound": self.bound,
            "utilization": self.utilization, "trace_method": self.method, "notes": list(self.notes), "ops": ops,
        }


def _rows_without_hardware(module: HloModule, devices: int) -> list[OpRow]:
    """Per-op counts with no ceilings: the rows' times are zero and left out of the JSON."""
    return op_rows(module, lambda _cls: math.inf, math.inf, math.inf, None, devices)


def counts_summary(module: HloModule, spec: HardwareSpec | None, name: str = "") -> ProgramSummary:
    """Counts (and the roofline time, with hardware) of an HLO module that has no runs: an HLO dump."""
    counts = hlo_counts(module)
    notes = _count_notes(counts)
    if spec is None:
        return ProgramSummary(name or module.name, None, 1, (), "", counts, hardware=None, roofline_time_s=None,
                              bound=None,
                              ops=tuple(_rows_without_hardware(module, 1)), notes=tuple(notes))
    model = program_model(spec, counts, module, 1)
    return ProgramSummary(name or module.name, None, 1, (), "", counts, hardware=spec.name,
                          roofline_time_s=model.estimate.roofline_time_s,
                          bound=model.estimate.bound, ops=tuple(model.rows), notes=tuple(notes))


def _count_notes(counts: Counts) -> list[str]:
    pallas = any("Pallas kernel" in u for u in counts.uncounted)
    notes = incomplete_reasons(counts.uncounted, counts.loops, PALLAS_REMEDY if pallas else "")
    if counts.estimated:
        notes.append(estimated_note(counts.estimated))
    return notes


def summarize_program(events: Sequence[TraceEvent], platform: str, key: ProgramKey,
                      module: HloModule | None, spec: HardwareSpec | None, *,
                      working_set: float | None = None, index: TraceIndex | None = None,
                      stated: Work | None = None, told: RunTimes | None = None) -> ProgramSummary:
    """One program of a profile: per-run device times (slowest device), counts from its HLO when the profile
    embeds it, and with ``spec`` its roofline, utilization (median run) and per-op rows with measured times.
    ``working_set``: the bytes of its buffers, where its runs ran back to back with the cache as they left it (a
    working set that fits the last-level cache meets the cache's bandwidth). ``index``: the events grouped once,
    where several programs are read from one trace. ``stated``: the work to judge it on (FLOPs, bytes,
    transcendentals per run), where someone stated it, in place of the counts as it ran. ``told``: its runs, where
    the caller has told them apart already."""
    found = told if told is not None else run_times(events, key.module, platform, program_id=key.program_id,
                                                     index=index)
    runs = len(found.per_run_s)
    notes = list(found.notes)
    if module is None:
        notes.append("the profile embeds no HLO for this program: no counts")
        return ProgramSummary(key.module, found.program_id, found.devices, found.per_run_s, found.method,
                              notes=tuple(notes))
    # Counted as it ran, as a live measurement counts: the loops' iterations and the branches the trace shows.
    tally = tally_events(found.op_events, found.run_of_event, runs)  # read once: what ran, and the rows' times
    as_ran = read_as_ran(module, tally.events_per_run, None)
    module, counts = as_ran.module, as_ran.counts
    notes += _count_notes(counts)
    if spec is None:
        rows = attach_tally(_rows_without_hardware(module, found.devices), tally)
        return ProgramSummary(key.module, found.program_id, found.devices, found.per_run_s, found.method, counts,
                              hardware=None, roofline_time_s=None, bound=None, ops=tuple(rows), notes=tuple(notes))
    flops, nbytes, trans = stated if stated is not None else (None, None, None)
    model = program_model(spec, counts, module, found.devices, flops, nbytes, transcendentals=trans,
                          working_set=working_set)
    rows = attach_tally(model.rows, tally)
    return ProgramSummary(key.module, found.program_id, found.devices, found.per_run_s, found.method, counts,
                          hardware=spec.name, roofline_time_s=model.estimate.roofline_time_s,
                          bound=model.estimate.bound, ops=tuple(rows),
                          notes=tuple(notes + ([model.memory.note] if model.memory.note else [])))

