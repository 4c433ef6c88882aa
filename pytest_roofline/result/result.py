"""The immutable result of one measurement: its figures (:class:`~.figures.Measured`), its JSON form and its
paragraph in words (:mod:`.text`). Pure: no JAX."""

from __future__ import annotations

from typing import Any

from ..analysis.model.work_shares import CeilingUse
from ..analysis.program.info import ProgramInfo
from .figures import Measured
from .text import describe, first_touch_text

__all__ = ["ProgramInfo", "Result", "CeilingUse", "FLATTENED", "RENAMED", "NOT_WRITTEN"]

# How the fields of :class:`~.figures.Measured` reach the JSON form (tests/records/test_figures_agree.py checks that
# each does, one of these ways or under its own name): parts whose own JSON is flattened into it, parts written under
# another key, and what is never written (the program's text and trace are saved as files; the threshold's origin
# and the first-touch mode are the record's and the settings').
FLATTENED = ("program", "work", "roofline", "timing")
RENAMED = {"ops_model": "ops_times_from", "source": "source_work"}
NOT_WRITTEN = frozenset({"hlo_text", "xspace", "picked", "first_touch_mode"})


class Result(Measured):
    """One measurement: the hardware and the ceilings each share of the work met, the work counted, the roofline
    estimate, the timed runs, the program's facts and the per-op model (see :class:`~.figures.Measured`)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: the parts' fields, flattened, with the derived figures."""
        return {
            "name": self.name,
            "hardware": self.hardware.to_dict(),
            "ceilings": self.ceilings,
            "ceilings_used": [u.to_dict() for u in self.ceilings_used],
            **self.program.to_dict(),
            **self.work.to_dict(),
            **self.roofline.to_dict(),
            **self.timing.to_dict(),
            "utilization": self.utilization,
            "utilization_calibrated": self.utilization_calibrated,
            "utilization_interval": list(self.utilization_interval),
            "drift": self.drift,
            "live": self.live.to_dict() if self.live else None,
            "threshold": self.threshold,
            "marginal": self.marginal,
            "impossible": self.impossible,
            "suspect": self.suspect,
            "notes": list(self.notes),
            "ops_roofline_time_s": self.ops_roofline_time_s,
            "ops_utilization": self.ops_utilization,
            "ops_check": self.ops_check.to_dict() if self.ops_check else None,
            "ops_times_from": self.ops_model.times_from,
            "hints": list(self.hints),
            "ops": [r.to_dict() for r in self.ops],
            "census": self.census.to_dict(),
            "peak_memory_bytes": self.peak_memory_bytes,
            "memory": self.memory.to_dict() if self.memory is not None else None,
            "first_touch": ({**self.first_touch.to_dict(), "text": self.first_touch_text()}
                            if self.first_touch is not None else None),
            "first_touch_charged": self.first_touch_charged,
            "utilization_with_first_touch": self.utilization_with_first_touch,
            "utilization_without_first_touch": self.utilization_without_first_touch,
            "first_touch_beaten": self.first_touch_beaten,
            "cpu_waiting": self.cpu_waiting,
            "others_cpu_share": self.timing.others_cpu_share if self.cpu_waiting is not None else None,
            "contended": self.contended,
            "utilization_on_cpu": self.utilization_on_cpu,
            "on_cpu_rejected": self.on_cpu_rejected,
            "no_work": self.no_work,
            **{k: v.to_dict() if v is not None else None
               for k, v in (("cache", self.cache), ("processes", self.processes), ("clocks", self.clocks),
                            ("idle", self.idle), ("exposure", self.exposure))},
            "utilization_at_clocks": self.utilization_at_clocks,
            "source_work": self.source.to_dict() if self.source is not None else None,
            "source_flops": self.source_flops,
            "compiled_over_source": self.compiled_over_source,
        }

    def first_touch_text(self) -> str:  # faults expected and counted, the split of the time, both utilizations
        return first_touch_text(self)

    def __str__(self) -> str:
        return describe(self)
