"""Know the runner (``pytest-roofline noise``): A/A rounds, the same code on both sides, judged as ``ab`` judges a
pull request. Pure: the rounds come from the caller.

Each kernel's rounds are drawn into comparisons: a comparison takes the rounds in a random order and judges the
first six, then seven, ... as ab does after each round (:func:`~.paired.judge_kernel`), stopping where its verdict
settles. With nothing changed, every regression or improvement it calls is a false alarm. The comparisons share the
rounds they are drawn from: their false alarms estimate the rate of ab's gate on this runner from these rounds, not
from as many independent runs.

The minimum detectable drop is the smallest drop the gate calls at its confidence from all the rounds: the gate calls
a regression where the interval's high end lies below ``1 - max_drop``, and a drop ``d`` moves every ratio to
``(1 - d)`` of itself, so ``d`` must exceed ``1 - (1 - max_drop) / high``. The smallest quiet ``max_drop`` is the
floor above which none of the comparisons' steps called a regression.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from statistics import median

from .paired import MIN_ROUNDS, KernelRounds, judge_kernel

__all__ = ["KernelNoise", "study_kernel", "DEFAULT_COMPARISONS", "DEFAULT_NOISE_ROUNDS"]

DEFAULT_COMPARISONS = 20
DEFAULT_NOISE_ROUNDS = 12


@dataclass(frozen=True)
class KernelNoise:
    """One kernel's A/A study: its ratios, the verdicts of its comparisons, what the gate can detect."""

    nodeid: str
    label: str
    ratios: tuple[float, ...]  # B / A utilization per round measured quietly on both sides
    comparisons: int
    false_alarms: int  # regressions called
    _: KW_ONLY
    improvements: int = 0  # improvements called (false too)
    undecided: int = 0  # not settled by the last round
    max_drop: float = 0.0
    max_drop_origin: str = ""
    low: float | None = None  # the 95% interval of the median ratio over every round
    high: float | None = None
    quiet_above: float | None = None  # the smallest max_drop at which no step of any comparison called a regression
    error: str = ""

    @property
    def kernel(self) -> str:
        return f"{self.nodeid} [{self.label}]"

    @property
    def median(self) -> float | None:
        return median(self.ratios) if self.ratios else None

    @property
    def detectable_drop(self) -> float | None:
        """The smallest drop the gate calls a regression from all the rounds (None: too few rounds)."""
        if self.high is None or len(self.ratios) < MIN_ROUNDS:
            return None
        return max(0.0, 1.0 - (1.0 - self.max_drop) / self.high)

    @property
    def rate(self) -> float:
        return self.false_alarms / self.comparisons if self.comparisons else 0.0

    def to_dict(self) -> dict[str, object]:
        return {"nodeid": self.nodeid, "label": self.label, "ratios": list(self.ratios), "median": self.median,
                "low": self.low, "high": self.high, "comparisons": self.comparisons,
                "false_alarms": self.false_alarms, "improvements_called": self.improvements,
                "undecided": self.undecided, "max_drop": self.max_drop, "max_drop_origin": self.max_drop_origin,
                "detectable_drop": self.detectable_drop, "quiet_above": self.quiet_above, "error": self.error}


def _rounds(kernel: KernelRounds, order: Sequence[int]) -> KernelRounds:
    return KernelRounds(kernel.nodeid, kernel.label, tuple(kernel.base[i] for i in order),
                        tuple(kernel.head[i] for i in order))


def _comparison(kernel: KernelRounds, order: Sequence[int], max_drop: float | None) -> tuple[str, float]:
    """One comparison's verdict (regression, improvement, unchanged or undecided) and the largest ``1 - high`` of
    its steps (what max_drop would have had to exceed for none of them to call a regression)."""
    worst = -math.inf
    for n in range(MIN_ROUNDS, len(order) + 1):
        judged = judge_kernel(_rounds(kernel, order[:n]), max_drop)
        if judged.high is not None:
            worst = max(worst, 1.0 - judged.high)
        if judged.settled:
            return judged.verdict, worst
    return "undecided", worst


def study_kernel(kernel: KernelRounds, comparisons: int = DEFAULT_COMPARISONS, max_drop: float | None = None,
                 seed: int = 0) -> KernelNoise:
    """The kernel's A/A study over ``comparisons`` drawn from its rounds (``seed``: the draws, for a result one
    can repeat)."""
    whole = judge_kernel(kernel, max_drop)
    blank = KernelNoise(kernel.nodeid, kernel.label, whole.ratios, 0, 0, max_drop=whole.max_drop,
                        max_drop_origin=whole.max_drop_origin, low=whole.low, high=whole.high, error=whole.error)
    usable = [i for i in range(len(kernel.base)) if _rounds(kernel, [i]).ratios]
    if whole.error or len(usable) < MIN_ROUNDS:
        return blank
    draw = random.Random(f"{seed}:{kernel.nodeid}:{kernel.label}")
    verdicts, worst = [], -math.inf
    for _ in range(comparisons):
        verdict, steps = _comparison(kernel, draw.sample(usable, len(usable)), max_drop)
        verdicts.append(verdict)
        worst = max(worst, steps)
    quiet = max(0.0, math.ceil(worst * 100) / 100) if worst > -math.inf else None
    return KernelNoise(kernel.nodeid, kernel.label, whole.ratios, comparisons, verdicts.count("regression"),
                       improvements=verdicts.count("improvement"), undecided=verdicts.count("undecided"),
                       max_drop=whole.max_drop, max_drop_origin=whole.max_drop_origin, low=whole.low,
                       high=whole.high, quiet_above=quiet)
