"""A program's counts: the compiler's ``cost_analysis()`` normalized in one place, with what it does not give
read from the optimized HLO. Pure: the inputs are the dict (or list of dicts) and the parsed HLO.

* the compute dtype of every dot / convolution, so that matrix FLOPs meet the right peak;
* while loops: XLA counts a loop body once. When the HLO states ``known_trip_count`` the counts are
  corrected by the extra ``n - 1`` iterations as estimated by :func:`~.xla_costs.instruction_cost`; when it
  does not, the counts are marked as a lower bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any

from ...base.kinds import CountSource
from .control_ran import Branches, Ran, branches_of, with_control_ran
from .hlo_reader import HloModule, Instruction, as_compiled
from .library_calls import LINALG_TOP, PARTLY_COUNTED
from .pallas_costs import PALLAS_REMEDY
from .xla_costs import OpCost, computation_cost

__all__ = ["CostAnalysisError", "Counts", "Work", "normalize_cost_analysis", "program_counts", "hlo_counts",
           "compiled_counts", "AsRan", "read_as_ran",
           "work_of", "incomplete_reasons", "loop_text", "RAN_FROM_TRACE"]


class CostAnalysisError(ValueError):
    """The compiler's cost analysis returned something that is not a set of counts."""


def normalize_cost_analysis(raw: Any) -> dict[str, float]:
    """Turn what ``compiled.cost_analysis()`` returned into ``{flops, transcendentals, bytes_accessed}``.

    Accepts a dict (jax >= 0.4.30) or a list holding one dict (older versions). Missing keys mean zero
    (XLA leaves out zero-valued keys). A negative, non-numeric or missing analysis is an error that shows
    what the compiler returned.
    """
    what = repr(raw)[:300]
    if isinstance(raw, (list, tuple)):
        if len(raw) != 1 or not isinstance(raw[0], Mapping):
            raise CostAnalysisError(f"expected one cost-analysis dict, the compiler returned {what}")
        raw = raw[0]
    if raw is None or not isinstance(raw, Mapping):
        raise CostAnalysisError(f"the compiler returned no cost analysis ({what})")
    out: dict[str, float] = {}
    for key, name in (("flops", "flops"), ("transcendentals", "transcendentals"),
                      ("bytes accessed", "bytes_accessed")):
        value = raw.get(key, 0.0)
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise CostAnalysisError(f"cost analysis key {key!r} is not a number: {what}") from None
        if value < 0 or value != value:
            raise CostAnalysisError(
                f"cost analysis key {key!r} is {value} (negative or NaN: a known XLA failure); "
                f"the compiler returned {what}. Pass flops=/bytes= to measure() to count analytically."
            )
        out[name] = value
    return out


@dataclass(frozen=True)
class Counts:
    """What the roofline needs to know about a program's work."""

    flops: float
    transcendentals: float
    bytes_accessed: float
    # Matrix (dot / convolution) FLOPs by compute class; the rest of ``flops`` is vector work.
    matrix_flops: Mapping[str, float]
    lower_bound: bool  # a while loop without a known trip count (body counted once), or uncounted custom calls
    loops: tuple[str, ...]  # one line per while loop: its name and trip count (or "unknown")
    _: KW_ONLY  # fields from the seventh on are given by keyword
    dot_precisions: tuple[str, ...]  # operand_precision values seen on dots ("default" when unset)
    source: CountSource = "compiler"  # "hlo": counted from the HLO here (no usable compiler analysis)
    uncounted: tuple[str, ...] = ()  # custom calls whose work is not in the counts: "name (target)"
    estimated: tuple[str, ...] = ()  # Pallas kernels counted from their cost_estimate: "name (backend)"
    lower_bound_why: tuple[str, ...] = ()  # other reasons for lower_bound (work outside interpreted kernels)
    compiled_flops: float | None = None  # where ``flops`` are the source's (counts="source"): the compiled program's
    branches: Branches = Branches()  # the conditionals: which branch ran how often, or counted at the dearest
    int_ops: float = 0.0  # elementwise integer and boolean ops (RNG bit mixing, indices), apart from ``flops``
    flops_top_extra: float = 0.0  # what library calls counted in part (eigh, SVD) may do beyond ``flops``, at most

    @property
    def vector_flops(self) -> float:
        return max(self.flops - sum(self.matrix_flops.values()), 0.0)

    def of_source(self, source_flops: float) -> Counts:
        """These counts judged on the FLOPs the source asks for (model-FLOPs utilization): the matrix FLOPs scaled
        alike, bytes and transcendentals as compiled."""
        scale = source_flops / self.flops if self.flops > 0 else 0.0
        return replace(self, flops=source_flops, matrix_flops={k: v * scale for k, v in self.matrix_flops.items()},
                       compiled_flops=self.flops)


def _while_loops(module: HloModule) -> list[Instruction]:
    return [i for c in module.computations.values() for i in c.instructions if i.opcode == "while"]


# How a loop counted by the iterations the trace showed ends its line (``while.7: 5 iterations ran ...``).
RAN_FROM_TRACE = " iterations ran (from the trace)"


def loop_text(loop: Instruction) -> str:
    """A while loop's trip count in words: the compiler's, the iterations that ran (from the trace), or unknown."""
    if loop.known_trip_count is None:
        return f"{loop.name}: trip count unknown (body counted once)"
    if loop.trip_count_source == "trace":
        return f"{loop.name}: {loop.known_trip_count}{RAN_FROM_TRACE}"
    return f"{loop.name}: trip count {loop.known_trip_count}"


def _dot_precisions(module: HloModule) -> tuple[str, ...]:
    seen: list[str] = []
    for comp in module.computations.values():
        for inst in comp.instructions:
            if inst.opcode in ("dot", "convolution"):
                raw = inst.attrs.get("operand_precision", "").strip("{}")
                values = {p.strip().lower() for p in raw.split(",") if p.strip()} or {"default"}
                for p in sorted(values):
                    if p not in seen:
                        seen.append(p)
    return tuple(seen)


def compiled_counts(raw_cost_analysis: Any, module: HloModule) -> Counts:
    """The counts of a compiled program read from ``module`` (its HLO, with what ran of its control flow stated):
    the compiler's analysis where it gave one (:func:`program_counts`), else the HLO alone (XLA:GPU gives -1 for
    programs with cuBLAS calls; an exception in place of the analysis is a compiler that gave none)."""
    try:
        if isinstance(raw_cost_analysis, Exception):
            raise CostAnalysisError(f"the compiler gave no cost analysis ({raw_cost_analysis})")
        return program_counts(raw_cost_analysis, module)
    except CostAnalysisError:
        return hlo_counts(module)


@dataclass(frozen=True)
class AsRan:
    """A program with what ran of its control flow stated, what the trace showed of it, and its counts."""

    module: HloModule
    control: Ran
    counts: Counts


def read_as_ran(module: HloModule, events_per_run: Mapping[str, float], raw_cost_analysis: Any) -> AsRan:
    """``module`` with the loops and conditionals its op events show (``events_per_run``: op name -> events of one
    device per run) stated as they ran, and its counts: the compiler's analysis (``raw_cost_analysis``; None where
    there is none) adjusted to what ran, else the HLO. What ``pytest-roofline analyze`` and the replay of recorded
    GPU programs count through; a live measurement counts so too (:mod:`...measurement.as_ran`), where the second
    pass's events tell what ran if the timed runs' trace hid the kernels (command buffers)."""
    ran, control = with_control_ran(module, events_per_run)
    analysis = raw_cost_analysis if raw_cost_analysis is not None else CostAnalysisError("none recorded")
    return AsRan(ran, control, compiled_counts(analysis, ran))


def _control_flow(module: HloModule) -> bool:
    return any(i.opcode in ("while", "conditional") for c in module.computations.values() for i in c.instructions)


def program_counts(raw_cost_analysis: Any, module: HloModule) -> Counts:
    """The program's counts: the compiler's analysis, with loop trip counts applied from the HLO. Where the program
    has loops or conditionals and the compiler's FLOPs are not what the HLO says it counted (XLA:GPU leaves library
    calls inside branches out, so a branch that did not run could not be taken out of its total), the HLO alone."""
    base = normalize_cost_analysis(raw_cost_analysis)
    # XLA counts every loop body once and each conditional at its costliest branch: ``once`` is that, here.
    once = computation_cost(as_compiled(module), module.entry_name, multiply_loops=False)
    full = computation_cost(module, module.entry_name, multiply_loops=True)
    if full.estimated:
        # Pallas kernels' stated work is not in the compiler's totals (their bytes would be the call's operands):
        # count the whole program here, with the kernels' estimates.
        return hlo_counts(module)
    # (2%, and 64 FLOP for a tiny program's scalar bookkeeping: on every CPU program of the corpus the two agree.)
    if abs(base["flops"] - once.flops) > 0.02 * max(once.flops, base["flops"]) + 64 and _control_flow(module):
        return hlo_counts(module)
    loops = _while_loops(module)
    lower_bound = any(loop.known_trip_count is None for loop in loops)
    descriptions = tuple(loop_text(loop) for loop in loops)
    # XLA's totals count every loop body once; add the iterations it left out (and take out the branches that did
    # not run, where the trace told).
    extra = OpCost(full.flops - once.flops, full.transcendentals - once.transcendentals,
                   full.bytes - once.bytes)
    matrix = dict(full.matrix_flops)
    # XLA counts integer and boolean ops as FLOPs: take out those of what it counted (``once``), count them apart.
    total_flops = max(base["flops"] - once.int_ops + extra.flops, 0.0)
    source: CountSource = "compiler"
    if full.custom_call_flops and total_flops < full.flops:
        # The compiler left library calls (cuBLAS gemms, cuDNN convolutions) out of its total: count here.
        total_flops, source = full.flops, "hlo"
    # Matrix FLOPs: from the HLO, scaled so that their sum never exceeds the compiler's FLOP total.
    matrix_sum = sum(matrix.values())
    if matrix_sum > total_flops > 0:
        matrix = {k: v * total_flops / matrix_sum for k, v in matrix.items()}
    return Counts(
        flops=total_flops,
        transcendentals=max(base["transcendentals"] + extra.transcendentals, 0.0),
        bytes_accessed=max(base["bytes_accessed"] + extra.bytes, 0.0),
        matrix_flops=matrix,
        lower_bound=lower_bound or bool(full.uncounted),
        loops=descriptions,
        dot_precisions=_dot_precisions(module),
        source=source,
        uncounted=full.uncounted,
        branches=branches_of(module),
        int_ops=full.int_ops,
        flops_top_extra=full.top_extra,
    )


def hlo_counts(module: HloModule) -> Counts:
    """The program's counts from its optimized HLO alone (no compiler analysis: a profile's embedded HLO, an
    HLO dump, or a compiler whose analysis failed), loop bodies multiplied by their known trip counts."""
    full = computation_cost(module, module.entry_name, multiply_loops=True)
    loops = _while_loops(module)
    return Counts(
        flops=full.flops, transcendentals=full.transcendentals, bytes_accessed=full.bytes,
        matrix_flops=dict(full.matrix_flops),
        lower_bound=any(loop.known_trip_count is None for loop in loops) or bool(full.uncounted),
        loops=tuple(loop_text(loop) for loop in loops),
        dot_precisions=_dot_precisions(module), source="hlo", uncounted=full.uncounted, estimated=full.estimated,
        branches=branches_of(module), int_ops=full.int_ops, flops_top_extra=full.top_extra)




def incomplete_reasons(uncounted: tuple[str, ...], loops: tuple[str, ...], remedy: str = "") -> list[str]:
    """Why counts are a lower bound: custom calls nobody counted (by name), loops of unknown trip count."""
    why = []
    if uncounted:
        named = [u if u.startswith("Pallas kernel") else f"custom call {u}" for u in uncounted]
        shown = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
        why.append(f"counts incomplete: the work of {shown} is unknown to pytest-roofline"
                   + (f"; {remedy}" if remedy else ""))
    if any("unknown" in loop for loop in loops):
        why.append("a while loop with unknown trip count was counted once")
    return why


@dataclass(frozen=True)
class Work:
    """The counts a roofline is computed from: the compiler's, or the user's analytic ones where given."""

    flops: float
    transcendentals: float
    bytes_accessed: float
    flops_source: CountSource
    bytes_source: CountSource
    matrix_flops: Mapping[str, float]  # by compute class, from the HLO
    _: KW_ONLY  # fields from the seventh on are given by keyword
    counts_lower_bound: bool  # a while loop with unknown trip count was counted once
    loops: tuple[str, ...]
    collective_bytes: float = 0.0  # bytes one device sends over the interconnect (ring model)
    uncounted: tuple[str, ...] = ()  # custom calls whose work is missing from the counts
    estimated: tuple[str, ...] = ()  # Pallas kernels counted from their cost_estimate
    lower_bound_why: tuple[str, ...] = ()  # other reasons the counts are a lower bound (e.g. interpret mode)
    compiled_flops: float | None = None  # where ``flops`` are the source's (counts="source"): the compiled program's
    branches: Branches = Branches()  # the conditionals: which branch ran how often, or counted at the dearest
    int_ops: float = 0.0  # elementwise integer and boolean ops, apart from ``flops`` (never held to a FLOP peak)
    # The FLOPs at the top of the counts' range, where the only work left out is the iterations of library calls
    # counted in part (eigh, SVD; LINALG_TOP): a kernel below its threshold even there fails. None: no such range.
    flops_top: float | None = None

    @property
    def missing_counts(self) -> str:
        """The keywords that would replace the counts the user has not given: "flops=/bytes=", "bytes=", "flops="."""
        return "/".join(f"{k}=" for k, source in (("flops", self.flops_source), ("bytes", self.bytes_source))
                        if source != "user")

    @property
    def bound_unsure(self) -> bool:
        """Whether a custom call's work is missing altogether from the counts: its FLOPs could make a program that
        reads memory-bound compute-bound, so the bound is not known (an uncounted call never sets it)."""
        return self.flops_source != "user" and any(PARTLY_COUNTED not in u for u in self.uncounted)

    @property
    def top_text(self) -> str:
        """How the top of the counts' range counts the library calls counted in part ("" without a top)."""
        if self.flops_top is None:
            return ""
        kinds = [k for k in LINALG_TOP if any(f": {k}, {PARTLY_COUNTED}" in u for u in self.uncounted)]
        return f"{' and '.join(f'{k} at {LINALG_TOP[k]}' for k in kinds)}, the most its iterations can do"

    @property
    def lower_bound_reason(self) -> str:
        """Why the counts are a lower bound ("" when they are not)."""
        if not self.counts_lower_bound:
            return ""
        pallas = any("Pallas kernel" in u for u in self.uncounted)
        remedy = PALLAS_REMEDY if pallas else f"give {self.missing_counts} to the test"
        return "; ".join([*incomplete_reasons(self.uncounted, self.loops, remedy), *self.lower_bound_why]) \
            or "a lower bound"

    @property
    def intensity(self) -> float:
        """FLOPs per byte of memory traffic."""
        return self.flops / self.bytes_accessed if self.bytes_accessed > 0 else float("inf")

    @property
    def cheapest(self) -> dict[str, float] | None:
        """The counts had every conditional counted at its dearest branch taken its cheapest (None: none was)."""
        if not self.branches.unsure:
            return None
        flops, nbytes = self.branches.spare
        return {"flops": max(self.flops - flops, 0.0), "bytes_accessed": max(self.bytes_accessed - nbytes, 0.0)}


def work_of(counts: Counts, flops: float | None, bytes_accessed: float | None, transcendentals: float | None,
            collective_bytes: float = 0.0) -> Work:
    """The work a roofline uses: analytic counts given by the user replace the compiler's."""
    return Work(
        flops=flops if flops is not None else counts.flops,
        transcendentals=transcendentals if transcendentals is not None else counts.transcendentals,
        bytes_accessed=bytes_accessed if bytes_accessed is not None else counts.bytes_accessed,
        flops_source="user" if flops is not None else "source" if counts.compiled_flops is not None else counts.source,
        bytes_source="user" if bytes_accessed is not None else counts.source,
        matrix_flops=dict(counts.matrix_flops),
        counts_lower_bound=counts.lower_bound and (flops is None or bytes_accessed is None),
        loops=counts.loops,
        collective_bytes=collective_bytes,
        uncounted=counts.uncounted if (flops is None or bytes_accessed is None) else (),
        estimated=counts.estimated,
        lower_bound_why=counts.lower_bound_why if (flops is None or bytes_accessed is None) else (),
        compiled_flops=counts.compiled_flops if flops is None else None,
        branches=counts.branches if (flops is None or bytes_accessed is None) else Branches(),
        int_ops=counts.int_ops if flops is None else 0.0,
        flops_top=_flops_top(counts) if flops is None else None,
    )


def _flops_top(counts: Counts) -> float | None:
    """The top of the counts' range, where library calls counted in part are all that make them a lower bound."""
    partly_only = (counts.uncounted and all(PARTLY_COUNTED in u for u in counts.uncounted)
                   and not any("unknown" in loop for loop in counts.loops) and not counts.lower_bound_why)
    return counts.flops + counts.flops_top_extra if partly_only and counts.flops_top_extra > 0 else None
