"""Alert rates of the regression detection (pytest_roofline.analysis.verdict.regressions) on synthetic nightly series.

A series is a utilization of 60% with Gaussian noise of 2% or 5% (relative). Pure noise: 7 or 30 nights.
An outlier: 30 nights, night 15 is 30% slow. A step: 20 steady nights, then the level lowered by 10/20/30%
for the last 1, 3 or 5 nights; the rate is how often the latest night's verdict is "regression".

    python bench/detection_rates.py [series per cell, default 1000]
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable

from pytest_roofline.analysis.verdict.regressions import judge_series


def series(rng: random.Random, before: int, after: int, step: float, noise: float) -> list[float]:
    return ([0.6 * (1 + rng.gauss(0, noise)) for _ in range(before)]
            + [0.6 * (1 - step) * (1 + rng.gauss(0, noise)) for _ in range(after)])


def rate(make: Callable[[random.Random], list[float]], n: int, seed: int) -> float:
    rng = random.Random(seed)
    return sum(judge_series(make(rng)).regression for _ in range(n)) / n


def table(n: int) -> list[str]:
    """The table docs/ci.md shows ("Regression detection"), one line per case; tests/analysis/verdict/test_detect.py
    checks that the guide's copy is exactly what this prints with 1000 series per cell."""
    lines = [f"{'case':<34}{'noise 2%':>10}{'noise 5%':>10}   ({n} series each)"]
    rows: list[tuple[str, Callable[[float], Callable[[random.Random], list[float]]]]] = [
        ("pure noise, 7 nights", lambda s: lambda r: series(r, 7, 0, 0, s)),
        ("pure noise, 30 nights", lambda s: lambda r: series(r, 30, 0, 0, s)),
        ("one night 30% slow, 15 nights ago", lambda s: lambda r: _outlier(series(r, 30, 0, 0, s))),
    ]
    for step in (0.1, 0.2, 0.3):
        for after in (1, 3, 5):
            rows.append((f"step -{step:.0%}, {after} night(s) after",
                         lambda s, step=step, after=after: lambda r: series(r, 20, after, step, s)))
    for i, (name, make) in enumerate(rows):
        cells = [rate(make(noise), n, seed=i) for noise in (0.02, 0.05)]
        lines.append(f"{name:<34}" + "".join(f"{c:>10.1%}" for c in cells))
    return lines


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    print("\n".join(table(n)))


def _outlier(values: list[float]) -> list[float]:
    values[15] *= 0.7
    return values


if __name__ == "__main__":
    main()
