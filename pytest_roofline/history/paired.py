"""Two revisions measured in the same job, in alternating pytest processes (``pytest-roofline ab``): the ABBA
schedule, and per kernel the ratio of head to base utilization in each round, their median, a distribution-free
95% interval of that median, and the verdict. Pure.

Pairing is what makes the comparison sharp on a shared runner: the two processes of a round run seconds apart,
so a neighbour that slows the machine slows both, and their ratio keeps what the revisions changed. The order
alternates (base first in even rounds, head first in odd ones) so that neither side always runs on a cache or a
CPU frequency the other one warmed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from statistics import geometric_mean, median
from typing import Literal

from ..analysis.model.contention import waited_text
from ..analysis.model.live import median_interval
from ..analysis.model.per_op import OpRow
from ..analysis.verdict.op_diff import OpDiff, diff_ops
from ..records.kernel_record import KernelRecord, Unmeasured
from ..result.recorded_result import ops_note

__all__ = [
    "Side",
    "schedule",
    "PairedVerdict",
    "Observation",
    "KernelRounds",
    "PairedKernel",
    "collect",
    "judge_kernel",
    "judge_pairs",
    "settled",
    "settled_tests",
    "same_program",
    "one_side",
    "MIN_ROUNDS",
    "DEFAULT_ROUNDS",
    "DEFAULT_MAX_DROP",
    "CONFIDENCE",
]

Side = Literal["base", "head"]
# "same": the same compiled program on both sides (ab/same_programs.py), not timed
PairedVerdict = Literal["regression", "improvement", "unchanged", "added", "removed", "error", "same"]

CONFIDENCE = 0.95
# The interval is [r_(k), r_(n+1-k)] of the sorted ratios with P(Binomial(n, 1/2) < k) <= 2.5%: with fewer than
# six rounds even the full range covers less than 95% (five: 93.8%), so no verdict is called before six.
MIN_ROUNDS = 6
DEFAULT_ROUNDS = 20
# The floor when neither --max-drop nor a setting (marker max_drop=, YAML, --roofline-max-drop) gives one. It is
# the size of a drop worth failing a pull request for, not the noise: the noise is what the interval is for (two
# processes of the same code differed by up to 20% on a 2-core VM, docs/measurements.md).
DEFAULT_MAX_DROP = 0.05


def schedule(rounds: int) -> list[tuple[Side, Side]]:
    """The order of the two processes in each round: AB, BA, AB, BA, ..."""
    return [("base", "head") if r % 2 == 0 else ("head", "base") for r in range(rounds)]


@dataclass(frozen=True)
class Observation:
    """One kernel on one side in one round."""

    utilization: float
    device_time_s: float
    flops: float
    bytes_accessed: float
    max_drop: float | None = None  # the kernel's max_drop setting in that run, where one was set
    max_drop_origin: str = ""
    _: KW_ONLY  # fields from the seventh on are given by keyword
    ops: tuple[OpRow, ...] = ()  # the per-op rows with their measured times (none where the trace had no ops)
    ops_note: str = ""  # where the ops' times come from (a second pass), or why there are none (command buffers)
    waiting: float | None = None  # measured while contended: the share of their ready time its threads waited

    @classmethod
    def of(cls, record: KernelRecord) -> Observation:
        r = record.result
        return cls(record.utilization, r.device_time_s, r.flops, r.bytes_accessed, record.max_drop,
                   record.max_drop_origin, ops=r.ops, ops_note=ops_note(r),
                   waiting=r.cpu_waiting if r.contended else None)


Key = tuple[str, str]  # (nodeid, label)


@dataclass(frozen=True)
class RoundReport:
    """What one pytest process reported: its measured kernels and those it could not measure."""

    records: Mapping[Key, Observation]
    unmeasured: Mapping[Key, str]

    @classmethod
    def of(cls, records: Sequence[KernelRecord], unmeasured: Sequence[Unmeasured] = ()) -> RoundReport:
        return cls({(r.nodeid, r.label): Observation.of(r) for r in records},
                   {(u.nodeid, u.label): u.error for u in unmeasured})


@dataclass(frozen=True)
class KernelRounds:
    """One kernel's observations, round by round (None: not measured on that side in that round)."""

    nodeid: str
    label: str
    base: tuple[Observation | None, ...]
    head: tuple[Observation | None, ...]
    base_error: str = ""
    head_error: str = ""

    @property
    def ratios(self) -> tuple[float, ...]:
        """head / base utilization in every round that measured both sides uncontended (a base of 0, or a side
        measured while other processes held the CPUs, leaves its round out: the waiting slowed that side alone)."""
        return tuple(h.utilization / b.utilization for b, h in zip(self.base, self.head, strict=True)
                     if b is not None and h is not None and b.utilization > 0
                     and b.waiting is None and h.waiting is None)


def collect(rounds: Sequence[tuple[RoundReport, RoundReport]]) -> list[KernelRounds]:
    """Every kernel seen on either side, with its observations per round and the first error of each side."""
    keys: dict[Key, None] = {}
    for base, head in rounds:
        for report in (base, head):
            keys.update(dict.fromkeys(report.records))
            keys.update(dict.fromkeys(report.unmeasured))
    out = []
    for key in sorted(keys):
        errors = {side: next((r[i].unmeasured[key] for r in rounds if key in r[i].unmeasured), "")
                  for i, side in enumerate(("base", "head"))}
        out.append(KernelRounds(key[0], key[1], tuple(b.records.get(key) for b, _ in rounds),
                                tuple(h.records.get(key) for _, h in rounds), errors["base"], errors["head"]))
    return out


@dataclass(frozen=True)
class PairedKernel:
    """A kernel's verdict: ratios per round, their median and interval, the floor it was judged with."""

    nodeid: str
    label: str
    verdict: PairedVerdict
    ratios: tuple[float, ...]
    max_drop: float
    max_drop_origin: str
    _: KW_ONLY  # fields from the seventh on are given by keyword
    median: float | None = None
    low: float | None = None
    high: float | None = None
    settled: bool = False  # the interval lies wholly on one side of the gate 1 - max_drop: more rounds cannot move it
    base_utilization: float | None = None  # medians over the rounds
    head_utilization: float | None = None
    flops_ratio: float | None = None  # head / base counted FLOPs: the work changed when it is not 1
    bytes_ratio: float | None = None  # head / base counted bytes
    time_ratio: float | None = None  # head / base device time
    error: str = ""
    ops_diff: OpDiff | None = None  # what the head's program does differently, op by op (both sides had op times)
    ops_note: str = ""  # where the op times come from (a second pass), or why there is no op diff
    contended: str = ""  # which measurements were made while contended (their rounds are left out of the ratios)

    @property
    def open(self) -> bool:
        """Judged on ratios (not added, removed, failing or the same program) and not settled: more rounds could
        change its verdict."""
        return self.verdict in ("regression", "improvement", "unchanged") and not self.settled

    @property
    def undecided(self) -> bool:
        """Measured on both sides and not settled when the rounds ended (the interval still reaches past the gate,
        or too few rounds ran for one): neither a regression nor unchanged."""
        return self.verdict == "unchanged" and not self.settled

    @property
    def kernel(self) -> str:
        return f"{self.nodeid} [{self.label}]"


def _median_of(observations: Sequence[Observation | None], attr: str) -> float | None:
    values = [getattr(o, attr) for o in observations if o is not None]
    return median(values) if values else None


def _ratio_of(kernel: KernelRounds, attr: str) -> float | None:
    """head / base of the medians of ``attr`` (None where a side has none or a zero)."""
    base, head = _median_of(kernel.base, attr), _median_of(kernel.head, attr)
    return head / base if base and head is not None else None


def _side_ops(observations: Sequence[Observation | None]) -> tuple[list[OpRow], float] | None:
    """One side's ops with each op's median time over the rounds, and its median device time per run."""
    seen = [o for o in observations if o is not None and any(r.measured_s for r in o.ops)]
    if not seen:
        return None
    times: dict[str, list[float]] = {}
    for o in seen:
        for row in o.ops:
            if row.measured_s is not None:
                times.setdefault(row.name, []).append(row.measured_s)
    rows = [replace(row, measured_s=median(times[row.name]) if row.name in times else None) for row in seen[-1].ops]
    return rows, median(o.device_time_s for o in seen)


def _ops_diff(kernel: KernelRounds) -> OpDiff | None:
    base, head = _side_ops(kernel.base), _side_ops(kernel.head)
    if base is None or head is None:
        return None
    return diff_ops(base[0], head[0], base[1], head[1])


def _drop_for(kernel: KernelRounds, override: float | None) -> tuple[float, str]:
    """--max-drop, else the head's setting for this kernel (marker, YAML, option), else the default."""
    if override is not None:
        return override, f"--max-drop={override:g}"
    found = next((o for o in kernel.head if o is not None and o.max_drop is not None), None)
    if found is not None and found.max_drop is not None:
        return found.max_drop, found.max_drop_origin
    return DEFAULT_MAX_DROP, f"the default of ab ({DEFAULT_MAX_DROP:g})"


def judge_kernel(kernel: KernelRounds, max_drop: float | None = None,
                 units: Sequence[float] | None = None) -> PairedKernel:
    """The verdict of one kernel; ``max_drop``: --max-drop, over every setting; ``units``: the ratios the interval
    is drawn from where they are not the rounds' own (one per process pair: :func:`judge_pairs`)."""
    drop, origin = _drop_for(kernel, max_drop)
    base_u, head_u = _median_of(kernel.base, "utilization"), _median_of(kernel.head, "utilization")
    blank = PairedKernel(kernel.nodeid, kernel.label, "unchanged", (), drop, origin, base_utilization=base_u,
                         head_utilization=head_u)
    ratios = kernel.ratios if units is None else tuple(units)
    if kernel.base_error or kernel.head_error:
        error = "; ".join(f"{side}: {e}" for side, e in (("base", kernel.base_error), ("head", kernel.head_error))
                          if e)
        return replace(blank, verdict="error", ratios=ratios, error=error)
    if base_u is None or head_u is None:
        return replace(blank, verdict="added" if base_u is None else "removed")
    blank = replace(
        blank,
        ratios=ratios,
        median=median(ratios) if ratios else None,
        flops_ratio=_ratio_of(kernel, "flops"),
        bytes_ratio=_ratio_of(kernel, "bytes_accessed"),
        time_ratio=_ratio_of(kernel, "device_time_s"),
        ops_diff=_ops_diff(kernel),
        ops_note=next((o.ops_note for o in (*kernel.head, *kernel.base) if o is not None and o.ops_note), ""),
    )
    if len(ratios) < MIN_ROUNDS:
        return _contended(blank, kernel)
    low, high = median_interval(ratios, CONFIDENCE)
    verdict: PairedVerdict = ("regression" if high < 1 - drop else "improvement" if low > 1 + drop
                              else "unchanged")
    # Settled once the interval lies wholly on one side of the gate: below it a regression, above it none (an
    # improvement where it also clears 1 + max_drop).
    judged = replace(blank, verdict=verdict, low=low, high=high, settled=verdict != "unchanged" or low >= 1 - drop)
    return _contended(judged, kernel)


def _contended(judged: PairedKernel, kernel: KernelRounds) -> PairedKernel:
    """Says which measurements were made while contended (their threads waited for a CPU that other processes
    held). Their rounds are already out of the ratios: the verdict stands on the others, and where too few are
    left for one the kernel cannot be judged yet; more rounds may still settle it."""
    waited = [o.waiting for o in (*kernel.base, *kernel.head) if o is not None and o.waiting is not None]
    if not waited:
        return judged
    made = sum(o is not None for o in (*kernel.base, *kernel.head))
    said = (f"{len(waited)} of {made} measurements were made while contended (at most, {waited_text(max(waited))});"
            f" their rounds are left out")
    return replace(judged, contended=said)


def same_program(nodeid: str, label: str) -> PairedKernel:
    """A kernel compiled to the same program on both sides: not timed."""
    return PairedKernel(nodeid, label, "same", (), 0.0, "", settled=True)


def one_side(nodeid: str, label: str, verdict: Literal["added", "removed"]) -> PairedKernel:
    """A kernel the programs pass found on one side only."""
    return PairedKernel(nodeid, label, verdict, (), 0.0, "", settled=True)


def judge_pairs(pairs: Sequence[Sequence[tuple[RoundReport, RoundReport]]],
                max_drop: float | None = None) -> list[PairedKernel]:
    """The verdicts of rounds made by several pairs of processes (``pairs``: each pair's rounds). Two processes
    keep offsets of their own for as long as they live (bench/process_draw.py, docs/measurements.md), so the
    rounds of one pair are not independent samples of the difference between the revisions; the pairs
    are. Each pair's geometric mean ratio is one unit of the interval (six pairs for a verdict); the medians of
    utilization, FLOPs, bytes and time are over every round."""
    per_pair = [{(k.nodeid, k.label): k.ratios for k in collect(rounds)} for rounds in pairs]
    out = []
    for kernel in collect([r for rounds in pairs for r in rounds]):
        key = (kernel.nodeid, kernel.label)
        units = [_geometric_mean(found[key]) for found in per_pair if found.get(key)]
        out.append(judge_kernel(kernel, max_drop, units))
    return out


def _geometric_mean(values: Sequence[float]) -> float:
    if min(values) <= 0:
        return 0.0  # a head that measured nothing in a round of this pair (statistics.geometric_mean would raise)
    return geometric_mean(values)


def settled(kernels: Sequence[PairedKernel]) -> bool:
    """Whether more rounds can change no verdict: every kernel measured on both sides is settled (a kernel on
    one side only, one that fails to measure, or one with the same program on both sides stays what it is)."""
    return not any(k.open for k in kernels)


def settled_tests(kernels: Sequence[PairedKernel]) -> list[str]:
    """The tests whose every kernel is settled (or on one side only, or failing to measure): more rounds of them
    can change no verdict."""
    still = {k.nodeid for k in kernels if k.open}
    return [nodeid for nodeid in dict.fromkeys(k.nodeid for k in kernels) if nodeid not in still]


@dataclass(frozen=True)
class Comparison:
    """The outcome of ``pytest-roofline ab``: what was compared, how many rounds ran and why they stopped, how
    long it took, and each kernel's verdict."""

    base_rev: str
    base_commit: str
    head_commit: str
    head_dirty: bool  # the head is the working tree: its HEAD commit and uncommitted changes
    rounds: int
    max_rounds: int
    _: KW_ONLY  # fields from the seventh on are given by keyword
    stopped: str  # why the rounds ended
    kernels: tuple[PairedKernel, ...]
    seconds: float  # the whole comparison, worktree included
    side_seconds: tuple[float, float] = (0.0, 0.0)  # the pytest processes of the base, of the head
    hardware: str = ""
    # "kernels": one long-lived process per side, each test in its own ABBA rounds; "rounds": each round the whole
    # selection in fresh processes
    schedule: str = "rounds"

    @property
    def regressed(self) -> bool:
        return any(k.verdict == "regression" for k in self.kernels)

    @property
    def undecided(self) -> int:
        """Kernels measured on both sides whose interval still reaches past the gate after the last round."""
        return sum(k.undecided for k in self.kernels)

    @property
    def exit_status(self) -> int:
        return 1 if self.regressed else 0
