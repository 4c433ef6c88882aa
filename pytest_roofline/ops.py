"""Per-op roofline: every executed HLO op's cost, its own roofline time, its measured time from the trace.

Rows are the ops a run executes: the entry computation's ops, and the ops of while bodies and conditions
(counted ``known_trip_count`` times; a fusion is one row with the work of its fused computation). Each
row's FLOPs, transcendentals and bytes come from :func:`pytest_roofline.cost.instruction_cost`, its
collective bytes from a ring model, and its measured time is the sum of its trace events (matched by the
``hlo_op`` stat) per run, median over runs. Pure: no JAX.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from statistics import median
from typing import Any

from .cost import FREE_OPS, computation_cost, compute_class, instruction_cost, normalize_cost_analysis, source_dtype
from .hlo import Computation, HloModule, Instruction
from .trace import TraceEvent

__all__ = ["OpRow", "OpsCheck", "COLLECTIVE_OPS", "op_rows", "attach_times", "ops_check", "hints", "busy_time",
           "collective_bytes"]

COLLECTIVE_OPS = frozenset({
    "all-reduce", "all-reduce-start", "all-gather", "all-gather-start", "reduce-scatter", "all-to-all",
    "collective-permute", "collective-permute-start",
})
_LAYOUT_OPS = frozenset({"copy", "transpose", "copy-start"})


@dataclass(frozen=True)
class OpRow:
    name: str
    opcode: str
    fusion_kind: str | None
    computation: str  # where the op lives ("main" or a loop body)
    shape: str  # result shape, e.g. "f32[1024,1024]"
    operand_shapes: tuple[str, ...]
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

    @property
    def roofline_time_s(self) -> float:
        return max(self.compute_time_s, self.memory_time_s, self.comms_time_s)

    @property
    def bound(self) -> str:
        times = {"compute": self.compute_time_s, "memory": self.memory_time_s, "interconnect": self.comms_time_s}
        return max(times, key=lambda k: times[k])

    @property
    def utilization(self) -> float | None:
        if not self.measured_s:
            return None
        return self.roofline_time_s / self.measured_s

    @property
    def time_lost_s(self) -> float:
        return max((self.measured_s or 0.0) - self.roofline_time_s, 0.0)

    @property
    def kind(self) -> str:
        return f"{self.opcode}:{self.fusion_kind}" if self.fusion_kind else self.opcode

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "opcode": self.opcode, "fusion_kind": self.fusion_kind,
            "computation": self.computation, "shape": self.shape, "operand_shapes": list(self.operand_shapes),
            "dtype": self.dtype, "executions": self.executions, "flops": self.flops,
            "transcendentals": self.transcendentals, "bytes": self.bytes, "collective_bytes": self.collective_bytes,
            "compute_time_s": self.compute_time_s, "memory_time_s": self.memory_time_s,
            "comms_time_s": self.comms_time_s, "roofline_time_s": self.roofline_time_s, "bound": self.bound,
            "measured_s": self.measured_s, "events_per_run": self.events_per_run,
            "utilization": self.utilization, "time_lost_s": self.time_lost_s,
        }


def _group_size(inst: Instruction, default: int) -> int:
    raw = inst.attrs.get("replica_groups", "").strip()
    if not raw or raw == "{}":
        return default
    if raw.startswith("["):  # iota form: [groups,size]<=[...]
        try:
            return int(raw[1:raw.index("]")].split(",")[-1])
        except (ValueError, IndexError):
            return default
    first = raw.strip("{}").split("},{")[0]
    return max(len([x for x in first.split(",") if x.strip()]), 1)


def collective_bytes(comp: Computation, inst: Instruction, devices: int = 1) -> float:
    """Bytes one device sends over the interconnect, ring model: all-reduce 2(n-1)/n of its buffer,
    all-gather / reduce-scatter / all-to-all (n-1)/n of the full buffer, collective-permute the buffer."""
    op = inst.opcode.removesuffix("-start")
    if op not in {c.removesuffix("-start") for c in COLLECTIVE_OPS}:
        return 0.0
    n = _group_size(inst, devices)
    first = comp.by_name.get(inst.operands[0]) if inst.operands else None
    operand = first.shape.bytes if first is not None else 0
    result = inst.shape.bytes if not inst.shape.is_tuple else max((s.bytes for s in inst.shape.leaves()), default=0)
    if op == "collective-permute":
        return float(operand)
    if n <= 1:
        return 0.0
    if op == "all-reduce":
        return 2.0 * (n - 1) / n * operand
    if op == "all-gather":
        return (n - 1) / n * result
    if op == "reduce-scatter":
        return (n - 1) / n * operand
    return (n - 1) / n * operand  # all-to-all


def _executed(module: HloModule, comp: Computation, times: int, depth: int = 0) -> Iterable[tuple[Computation, Instruction, int]]:
    for inst in comp.instructions:
        if inst.opcode in FREE_OPS:
            continue
        if inst.opcode in ("while", "call", "conditional") and depth < 16:
            # A loop's body and condition run trip-count times; a call's or a branch's computation once.
            repeat = (inst.known_trip_count or 1) if inst.opcode == "while" else 1
            for name in inst.called:
                sub = module.computations.get(name)
                if sub is not None:
                    yield from _executed(module, sub, times * repeat, depth + 1)
        else:
            yield comp, inst, times


def op_rows(module: HloModule, peak_for: Callable[[str], float], vector_peak: float, bandwidth: float,
            interconnect: float | None = None, devices: int = 1) -> list[OpRow]:
    """One row per executed op, with its own roofline (no times yet)."""
    rows: list[OpRow] = []
    for comp, inst, times in _executed(module, module.entry, 1):
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
            comms_time_s=comms_time * times,
        ))
    return rows


def attach_times(rows: Sequence[OpRow], events: Sequence[TraceEvent], run_of_event: Mapping[int, int],
                 runs: int) -> list[OpRow]:
    """Each row's measured time: its events' durations (matched by ``hlo_op``) summed per run and device,
    the slowest device of each run, median over runs. ``events_per_run`` counts one device's events."""
    # (op, run, device) -> seconds, and (op, device) -> event count
    per_device: dict[tuple[str, int, Any], float] = {}
    counts: dict[tuple[str, Any], int] = {}
    for index, ev in enumerate(events):
        op = ev.stats.get("hlo_op")
        run = run_of_event.get(index)
        if op is None or run is None or run >= runs:
            continue
        device = ev.stats.get("device_ordinal", ev.plane)
        key = (str(op), run, device)
        per_device[key] = per_device.get(key, 0.0) + (ev.end_ns - ev.start_ns) / 1e9
        counts[(str(op), device)] = counts.get((str(op), device), 0) + 1
    per_op: dict[str, list[float]] = {}
    for (op, run, _device), seconds in per_device.items():
        slowest = per_op.setdefault(op, [0.0] * runs)
        slowest[run] = max(slowest[run], seconds)
    events_per_run: dict[str, float] = {}
    for (op, _device), count in counts.items():
        events_per_run[op] = max(events_per_run.get(op, 0.0), count / max(runs, 1))
    out = []
    for row in rows:
        found = per_op.get(row.name)
        if found is None:
            out.append(row)
            continue
        out.append(replace(row, measured_s=median(found), events_per_run=events_per_run[row.name]))
    return out


@dataclass(frozen=True)
class OpsCheck:
    """The sum over ops (loops counted once, as XLA does) against the compiler's cost analysis."""

    model: Mapping[str, float]
    compiler: Mapping[str, float]
    tolerance: float = 0.02
    mismatches: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def to_dict(self) -> dict[str, Any]:
        return {"model": dict(self.model), "compiler": dict(self.compiler), "tolerance": self.tolerance,
                "ok": self.ok, "mismatches": list(self.mismatches)}


def ops_check(module: HloModule, raw_cost_analysis: Any, tolerance: float = 0.02) -> OpsCheck:
    once = computation_cost(module, module.entry_name, multiply_loops=False)
    model = {"flops": once.flops, "transcendentals": once.transcendentals, "bytes_accessed": once.bytes}
    try:
        compiler = normalize_cost_analysis(raw_cost_analysis)
    except ValueError as exc:
        return OpsCheck(model, {}, tolerance, (f"no compiler analysis to compare with: {exc}",))
    mismatches = []
    for key, ours in model.items():
        theirs = compiler[key]
        scale = max(abs(theirs), abs(ours), 1.0)
        if abs(ours - theirs) / scale > tolerance:
            mismatches.append(f"{key}: sum over ops {ours:.6g} vs compiler {theirs:.6g}")
    return OpsCheck(model, compiler, tolerance, tuple(mismatches))


def hints(rows: Sequence[OpRow], *, platform: str, device_time_s: float, bound: str, donated: bool,
          output_bytes: float, working_set_bytes: float, has_loops: bool, busy_s: float | None) -> list[str]:
    """Plain-language reasons a kernel may be slow, drawn from what the HLO and the trace show."""
    out: list[str] = []
    measured = [r for r in rows if r.measured_s]
    total = sum(r.measured_s or 0.0 for r in measured) or device_time_s
    layout = [r for r in measured if r.opcode in _LAYOUT_OPS or (r.fusion_kind and "transpose" in r.name)]
    layout_time = sum(r.measured_s or 0.0 for r in layout)
    if layout and layout_time > 0.1 * total:
        names = ", ".join(r.name for r in sorted(layout, key=lambda r: -(r.measured_s or 0))[:3])
        out.append(f"layout changes: copy/transpose ops ({names}) take {layout_time / total:.0%} of the time; "
                   f"a different input layout or einsum order may avoid them")
    executed = sum(r.executions for r in rows)
    if executed >= 100 and total / max(executed, 1) < 20e-6:
        out.append(f"many tiny ops: {executed} ops per run averaging {total / executed * 1e6:.1f} us each; "
                   f"dispatch/launch overhead dominates: batch or vectorize the work (e.g. vmap instead of a loop)")
    if has_loops:
        loops = sorted({r.computation for r in rows if r.computation != "main"})
        trips = max((r.executions for r in rows), default=1)
        out.append(f"a while loop ({', '.join(loops)[:80]}) runs up to {trips} iterations one after another")
    if platform == "cpu" and bound == "memory" and 0 < working_set_bytes < 32 * 2**20:
        out.append(f"the working set ({working_set_bytes / 2**20:.1f} MiB) may fit in the CPU caches: the "
                   f"kernel then measures the cache, not main memory (use larger inputs to test memory)")
    if platform == "cpu" and not donated and output_bytes >= 16 * 2**20:
        out.append(f"a fresh {output_bytes / 2**20:.0f} MiB output buffer is allocated and page-faulted on every "
                   f"call: donate the input (jax.jit(..., donate_argnums=...)) so the output reuses its memory")
    if busy_s is not None and device_time_s > 0 and busy_s < 0.7 * device_time_s:
        out.append(f"gaps between ops: ops are busy {busy_s / device_time_s:.0%} of the run time; the rest is "
                   f"waiting (host dispatch, synchronization, callbacks)")
    return out


def busy_time(events: Sequence[TraceEvent], run_of_event: Mapping[int, int], runs: int,
              containers: frozenset[str] = frozenset()) -> float | None:
    """Median over runs of the time covered by at least one leaf op event (the rest of a run is gaps).

    ``containers`` are ops whose event spans other ops (a while loop's thunk on a CPU): not counted.
    """
    per_run: dict[int, list[tuple[float, float]]] = {}
    for index, ev in enumerate(events):
        run = run_of_event.get(index)
        if run is not None and "hlo_op" in ev.stats and str(ev.stats["hlo_op"]) not in containers:
            per_run.setdefault(run, []).append((ev.start_ns, ev.end_ns))
    if not per_run:
        return None
    covered = []
    for intervals in per_run.values():
        intervals.sort()
        total, cur_start, cur_end = 0.0, intervals[0][0], intervals[0][1]
        for start, end in intervals[1:]:
            if start > cur_end:
                total += cur_end - cur_start
                cur_start, cur_end = start, end
            else:
                cur_end = max(cur_end, end)
        covered.append((total + cur_end - cur_start) / 1e9)
    return median(covered)
