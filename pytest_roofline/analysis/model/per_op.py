"""Per-op roofline: every executed HLO op's cost, its own roofline time, and its measured time from the trace.

Rows are the ops a run executes (:mod:`~..program.walk`): a fusion is one row with the work of its fused computation,
ops in a loop body count ``known_trip_count`` times. Each row's FLOPs, transcendentals and bytes come from
:func:`~..program.xla_costs.instruction_cost`, its collective bytes from :mod:`~..program.collectives`, and its measured
time is the sum of its trace events (matched by the ``hlo_op`` stat) per run, slowest device, median over runs. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from statistics import median
from typing import Any

from ...base.kinds import Bound
from ..program.collectives import collective_bytes
from ..program.counts import Counts
from ..program.hlo_reader import HloModule
from ..program.walk import executed
from ..program.xla_costs import compute_class, instruction_cost, source_dtype
from ..runs.trace_events import TraceEvent, device_of
from .compiler_agreement import OpsCheck
from .op_family import NAMED_BY_WORK, op_family

__all__ = ["OpRow", "OpsModel", "OpTally", "op_rows", "tally_events", "attach_tally", "rows_as_seen",
           "counts_as_seen"]


@dataclass(frozen=True)
class OpRow:
    name: str
    opcode: str
    fusion_kind: str | None
    computation: str  # where the op lives ("main" or a loop body)
    shape: str  # result shape, e.g. "f32[1024,1024]"
    operand_shapes: tuple[str, ...]
    _: KW_ONLY  # fields from the seventh on are given by keyword
    dtype: str  # compute class of the op's dots ("bf16", "f32") or "vector"
    executions: int  # per run (trip count for ops in a loop body)
    flops: float
    transcendentals: float
    bytes: float
    collective_bytes: float
    compute_time_s: float
    memory_time_s: float
    comms_time_s: float
    measured_s: float | None = None  # median over runs of the summed event time per run
    events_per_run: float = 0.0
    family: str = ""  # its kernel census family (census.op_family): "XLA fusion", "cuBLAS", "copy" ...

    @property
    def kind(self) -> str:
        """What the op is: its opcode and fusion kind, led by what it computes where its family names that and
        its opcode does not (``matmul: fusion:kCustom``, ``copy: fusion:kLoop``)."""
        kind = self.opcode + (f":{self.fusion_kind}" if self.fusion_kind else "")
        named = self.family in NAMED_BY_WORK and self.opcode not in ("dot", "convolution", "copy")
        return f"{self.family}: {kind}" if named else kind

    @property
    def roofline_time_s(self) -> float:
        return max(self.compute_time_s, self.memory_time_s, self.comms_time_s)

    @property
    def bound(self) -> Bound:
        times: dict[Bound, float] = {"compute": self.compute_time_s, "memory": self.memory_time_s,
                                     "interconnect": self.comms_time_s}
        return max(times, key=lambda k: times[k])

    @property
    def utilization(self) -> float | None:
        if not self.measured_s:
            return None
        return self.roofline_time_s / self.measured_s

    @property
    def time_lost_s(self) -> float:
        return max((self.measured_s or 0.0) - self.roofline_time_s, 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "opcode": self.opcode, "fusion_kind": self.fusion_kind,
            "computation": self.computation, "shape": self.shape, "operand_shapes": list(self.operand_shapes),
            "dtype": self.dtype, "executions": self.executions, "flops": self.flops,
            "transcendentals": self.transcendentals, "bytes": self.bytes, "collective_bytes": self.collective_bytes,
            "compute_time_s": self.compute_time_s, "memory_time_s": self.memory_time_s,
            "comms_time_s": self.comms_time_s, "roofline_time_s": self.roofline_time_s, "bound": self.bound,
            "measured_s": self.measured_s, "events_per_run": self.events_per_run,
            "utilization": self.utilization, "time_lost_s": self.time_lost_s, "family": self.family,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OpRow:
        measured = data.get("measured_s")
        return cls(
            name=str(data["name"]), opcode=str(data["opcode"]), fusion_kind=data.get("fusion_kind"),
            computation=str(data["computation"]), shape=str(data["shape"]),
            operand_shapes=tuple(str(s) for s in data["operand_shapes"]), dtype=str(data["dtype"]),
            executions=int(data["executions"]), flops=float(data["flops"]),
            transcendentals=float(data["transcendentals"]), bytes=float(data["bytes"]),
            collective_bytes=float(data["collective_bytes"]), compute_time_s=float(data["compute_time_s"]),
            memory_time_s=float(data["memory_time_s"]), comms_time_s=float(data["comms_time_s"]),
            measured_s=float(measured) if measured is not None else None,
            events_per_run=float(data.get("events_per_run") or 0.0), family=str(data.get("family") or ""))


def op_rows(module: HloModule, peak_for: Callable[[str], float], vector_peak: float, bandwidth: float,
            interconnect: float | None = None, devices: int = 1) -> list[OpRow]:
    """One row per executed op, with its own roofline (no times yet)."""
    rows: list[OpRow] = []
    for comp, inst, times in executed(module):
        cost = instruction_cost(module, comp, inst, multiply_loops=True)
        matrix = sum(cost.matrix_flops.values())
        vector = max(cost.flops - matrix, 0.0)
        compute = sum(v / peak_for(k) for k, v in cost.matrix_flops.items() if v > 0) + vector / vector_peak
        comm = collective_bytes(comp, inst, devices)
        comms_time = comm / interconnect if (comm and interconnect) else 0.0
        if cost.matrix_flops:
            dtype = max(cost.matrix_flops, key=lambda k: cost.matrix_flops[k])
        elif inst.opcode in ("dot", "convolution"):
            dtype = compute_class([source_dtype(module, comp, o) for o in inst.operands[:2]])
        else:
            dtype = "vector"
        operand_shapes = tuple(str(comp.by_name[o].shape) for o in inst.operands if o in comp.by_name)
        rows.append(OpRow(
            name=inst.name, opcode=inst.opcode, fusion_kind=inst.fusion_kind,
            computation="main" if comp.is_entry else comp.name, shape=str(inst.shape),
            operand_shapes=operand_shapes, dtype=dtype, executions=times,
            flops=cost.flops * times, transcendentals=cost.transcendentals * times, bytes=cost.bytes * times,
            collective_bytes=comm * times, compute_time_s=compute * times, memory_time_s=cost.bytes / bandwidth * times,
            comms_time_s=comms_time * times, family=op_family(inst, module),
        ))
    return rows


@dataclass(frozen=True)
class OpTally:
    """One pass over a program's op events in its first ``runs`` runs, read by the rows' times and by what ran of its
    control flow alike: (op, run, device) -> seconds, and each op's events per run on its busiest device."""

    seconds: Mapping[tuple[str, int, Any], float]
    events_per_run: Mapping[str, float]  # every op the trace shows, whether or not it has a row
    runs: int


def tally_events(events: Sequence[TraceEvent], run_of_event: Mapping[int, int], runs: int) -> OpTally:
    """Sum each op's events (matched by ``hlo_op``) per run and device, and count them per device."""
    seconds: dict[tuple[str, int, Any], float] = {}
    counts: dict[tuple[str, Any], int] = {}
    for index, ev in enumerate(events):
        op = ev.stats.get("hlo_op")
        run = run_of_event.get(index)
        if op is None or run is None or run >= runs:
            continue
        device = device_of(ev)
        key = (str(op), run, device)
        seconds[key] = seconds.get(key, 0.0) + (ev.end_ns - ev.start_ns) / 1e9
        counts[(str(op), device)] = counts.get((str(op), device), 0) + 1
    events_per_run: dict[str, float] = {}
    for (name, _device), count in counts.items():
        events_per_run[name] = max(events_per_run.get(name, 0.0), count / max(runs, 1))
    return OpTally(seconds, events_per_run, runs)


def attach_tally(rows: Sequence[OpRow], tally: OpTally) -> list[OpRow]:
    """Each row's measured time: its events' durations summed per run and device, the slowest device of each run,
    median over runs. ``events_per_run`` counts one device's events."""
    per_op: dict[str, list[float]] = {}
    for (op, run, _device), seconds in tally.seconds.items():
        slowest = per_op.setdefault(op, [0.0] * tally.runs)
        slowest[run] = max(slowest[run], seconds)
    out = []
    for row in rows:
        found = per_op.get(row.name)
        if found is None:
            out.append(row)
            continue
        out.append(replace(row, measured_s=median(found), events_per_run=tally.events_per_run[row.name]))
    return out


@dataclass(frozen=True)
class OpsModel:
    """The per-op roofline of a program: its rows and the check of their sum against the compiler."""

    rows: tuple[OpRow, ...] = ()
    check: OpsCheck | None = None
    times_from: str = ""  # where the rows' measured times come from, where not the timed runs themselves

    @property
    def roofline_time_s(self) -> float:
        """Sum of per-op roofline times: a tighter bound for ops that run one after another."""
        return sum(r.roofline_time_s for r in self.rows)


def _seen_factor(row: OpRow) -> float:
    """How many times the trace showed an op inside a loop or conditional per time the walk counted it (1.0: as
    counted, or not shown, or at the top level, whose ops run once)."""
    seen = row.events_per_run
    if seen <= 0 or row.executions <= 0 or row.computation == "main" or abs(seen - row.executions) < 0.5:
        return 1.0
    return seen / row.executions


def rows_as_seen(rows: Sequence[OpRow]) -> list[OpRow]:
    """The rows of ops inside loops and conditionals at the executions their events show, where the walk counted
    them otherwise (a loop run twice, 3 and then 4 iterations, is read as 3 or 4 a time: the events say 7)."""
    out = []
    for row in rows:
        factor = _seen_factor(row)
        if factor != 1.0:
            row = replace(row, executions=round(row.events_per_run), flops=row.flops * factor,
                          transcendentals=row.transcendentals * factor, bytes=row.bytes * factor,
                          collective_bytes=row.collective_bytes * factor, compute_time_s=row.compute_time_s * factor,
                          memory_time_s=row.memory_time_s * factor, comms_time_s=row.comms_time_s * factor)
        out.append(row)
    return out


def counts_as_seen(counts: Counts, rows: Sequence[OpRow]) -> Counts:
    """``counts`` with the work of the ops the trace showed run more or less often than the walk counted them (see
    :func:`rows_as_seen`) added or taken out: where the trace shows an op, its events are its count."""
    flops = transcendentals = nbytes = 0.0
    matrix = dict(counts.matrix_flops)
    for row in rows:
        extra = _seen_factor(row) - 1.0
        if extra == 0.0:
            continue
        flops += row.flops * extra
        transcendentals += row.transcendentals * extra
        nbytes += row.bytes * extra
        if row.dtype != "vector" and row.dtype in matrix:
            matrix[row.dtype] = max(matrix[row.dtype] + row.flops * extra, 0.0)
    if not (flops or transcendentals or nbytes):
        return counts
    return replace(counts, flops=max(counts.flops + flops, 0.0), matrix_flops=matrix,
                   transcendentals=max(counts.transcendentals + transcendentals, 0.0),
                   bytes_accessed=max(counts.bytes_accessed + nbytes, 0.0))
