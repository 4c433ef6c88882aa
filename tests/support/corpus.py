"""The recorded GPU programs of tests/data/corpus (bench/record_corpus.py made them; the README there says where and
how), read and counted as a live measurement reads and counts its own runs: the trace parsed by jax.profiler, the
runs found inside the host annotations a measurement puts around them, the op events tallied, and, where XLA's command
buffers hid the kernels of the timed runs, the events of the same program recorded with command buffers off (the
live measurement's second pass) telling what ran of the loops and conditionals; then the counts of the program with
what ran stated, from the compiler's cost analysis recorded with it where there is one, else from its HLO."""

from __future__ import annotations

import functools
import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paths import DATA

from pytest_roofline.analysis.model.per_op import OpTally, tally_events
from pytest_roofline.analysis.program.counts import AsRan, read_as_ran
from pytest_roofline.analysis.program.hlo_reader import HloModule, parse_hlo
from pytest_roofline.analysis.runs.program_runs import ops_hidden, run_times
from pytest_roofline.analysis.runs.trace_events import KERNEL_RUN_MARKER, RunTimes, TraceIndex, flatten

CORPUS = DATA / "corpus"


@dataclass(frozen=True)
class Recording:
    """One program recorded on one machine: its entry (analytic counts, facts, variants) and where its files are."""

    folder: Path
    name: str
    entry: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.folder.name}/{self.name}"

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(json.loads((self.folder / "provenance.json").read_text()))

    @property
    def facts(self) -> dict[str, Any]:
        return dict(self.entry.get("facts") or {})

    def has(self, variant: str) -> bool:
        return "xplane" in self.entry["variants"].get(variant, {})

    def module(self, variant: str = "default") -> HloModule:
        return _module(self.folder / self.entry["variants"][variant]["hlo"])

    def runs(self, variant: str = "default") -> RunTimes:
        found = self.entry["variants"][variant]
        return _runs(self.folder / found["xplane"], found["module"], int(self.entry["runs"]))

    def index(self, variant: str = "default") -> TraceIndex:
        return _index(self.folder / self.entry["variants"][variant]["xplane"])

    def cost_analysis(self, variant: str = "default") -> Any:
        """The compiler's cost analysis recorded with the program (None where the recording has none)."""
        found = self.entry["variants"][variant].get("cost_analysis")
        return None if not found or "error" in found else found


def recordings() -> list[Recording]:
    """Every recorded program of every machine in the corpus."""
    found = []
    for folder in sorted(p for p in CORPUS.iterdir() if (p / "provenance.json").exists()):
        for path in sorted(folder.glob("*.json")):
            if path.name != "provenance.json":
                found.append(Recording(folder, path.stem, json.loads(path.read_text())))
    return found


@functools.cache
def _module(path: Path) -> HloModule:
    return parse_hlo(gzip.decompress(path.read_bytes()).decode())


@functools.cache
def _index(path: Path) -> TraceIndex:
    """A recorded profile parsed by jax.profiler, as a live measurement parses its own, once a session."""
    from jax.profiler import ProfileData

    return TraceIndex.of(flatten(ProfileData.from_serialized_xspace(gzip.decompress(path.read_bytes()))), "gpu")


@functools.cache
def _runs(path: Path, module_name: str, runs: int) -> RunTimes:
    index = _index(path)
    return run_times(index.events, module_name, "gpu", runs, KERNEL_RUN_MARKER, index=index)


def tally(found: RunTimes, runs: int) -> OpTally:
    return tally_events(found.op_events, found.run_of_event, runs)


def counted(recording: Recording, variant: str) -> AsRan:
    """One variant of a recording counted from its own events alone (no second pass)."""
    found = tally(recording.runs(variant), int(recording.entry["runs"]))
    return read_as_ran(recording.module(variant), found.events_per_run, recording.cost_analysis(variant))


@dataclass(frozen=True)
class Replayed:
    """A recording counted as a live measurement counts: the program as it ran, and whether the second pass (the
    recording with command buffers off) told what ran."""

    as_ran: AsRan
    second_pass: bool
    runs: RunTimes


_REPLAYED: dict[str, Replayed] = {}


def replay(recording: Recording) -> Replayed:
    """Count ``recording`` as a live GPU measurement of it counts (the module docstring says how); once a session."""
    if recording.id not in _REPLAYED:
        _REPLAYED[recording.id] = _replayed(recording)
    return _REPLAYED[recording.id]


def _replayed(recording: Recording) -> Replayed:
    runs = int(recording.entry["runs"])
    timed = recording.runs("default")
    told = tally(timed, runs)
    hidden = bool(ops_hidden(timed.notes))
    if hidden and recording.has("nocb"):
        told = tally(recording.runs("nocb"), runs)
    as_ran = read_as_ran(recording.module("default"), told.events_per_run, recording.cost_analysis("default"))
    return Replayed(as_ran, hidden and recording.has("nocb"), timed)
