"""False alarms and power of ``pytest-roofline ab`` on this machine, with a neighbour process during half of the
rounds (chosen at random per comparison; a busy loop in even comparisons, a 256 MiB memory copy in odd ones).

1. Identical revisions (bench/ab_demo.py's repository, commit 3 against commit 2: the same code), RUNS
   comparisons of the whole suite: how many kernels are called regressions (each one a false alarm).
2. A 20% drop: the same kernel, the head's test stating 0.8x the useful bytes (``bytes=0.8 * x.nbytes``), so that
   the head's utilization is 0.8x the base's with the noise of real runs in alternating processes (a kernel
   slowed by exactly 1.25x is hard to make on XLA:CPU: a second pass over a quarter of the array materializes a
   copy whose page faults dominate). DROP_RUNS comparisons of that test alone: in how many it is called a
   regression, and after how many rounds (the first prefix of its ratios whose interval lies below
   1 - max_drop).

Prints one line per comparison and a table at the end.

    python bench/ab_false_alarms.py [RUNS] [DROP_RUNS] [--long-lived] [--time-all]   # default 20 and 5

ab's programs pass leaves out every kernel whose compiled program is the same on both sides, so identical
revisions time nothing and cannot raise a false alarm: ``--time-all`` times them anyway, which is what tests the
statistics. The 20% drop changes the work the test states, which is part of the fingerprint: it is timed either way.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from ab_demo import TESTS, build, git
from neighbours import neighbour

from pytest_roofline.analysis.model.live import median_interval
from pytest_roofline.cli.ab.driver import AbOptions, run_ab
from pytest_roofline.history.paired import CONFIDENCE, DEFAULT_ROUNDS, MIN_ROUNDS, Comparison


def called_after(ratios: tuple[float, ...], drop: float) -> int | None:
    """The first number of rounds whose ratios' interval lies below 1 - drop (None: never)."""
    for n in range(MIN_ROUNDS, len(ratios) + 1):
        if median_interval(ratios[:n], CONFIDENCE)[1] < 1 - drop:
            return n
    return None


def mid(values: list[float] | list[int]) -> float:
    return sorted(values)[len(values) // 2] if values else float("nan")


LONG_LIVED = "--long-lived" in sys.argv  # ab's --long-lived schedule instead of fresh processes per round
TIME_ALL = "--time-all" in sys.argv  # time kernels whose program is the same on both sides too
UNITS = "pairs of processes" if LONG_LIVED else "rounds"  # the units of the interval: each pair's mean, or each round


def compare(repo: Path, base: str, index: int, args: tuple[str, ...]) -> tuple[Comparison, list[int]]:
    """One comparison of ``base`` with the working tree, a neighbour during a random half of its rounds."""
    busy_rounds = sorted(random.Random(index).sample(range(DEFAULT_ROUNDS), DEFAULT_ROUNDS // 2))
    kind = "busy" if index % 2 == 0 else "memcopy"
    stack = contextlib.ExitStack()

    def on_round(r: int) -> None:
        stack.close()  # the previous round's neighbour, if any
        if r in busy_rounds:
            stack.enter_context(neighbour(kind, seconds=120))

    try:
        options = AbOptions(base, DEFAULT_ROUNDS, None, args, long_lived=LONG_LIVED, time_all=TIME_ALL)
        comparison, _ = run_ab(options, repo, lambda line: None, on_round)
    finally:
        stack.close()
    return comparison, busy_rounds


def main() -> int:
    numbers = [a for a in sys.argv[1:] if not a.startswith("--")]
    runs = int(numbers[0]) if numbers else 20
    drop_runs = int(numbers[1]) if len(numbers) > 1 else 5
    work = Path(tempfile.mkdtemp(prefix="roofline-ab-alarms-"))
    repo = work / "repo"
    build(repo)
    (repo / "README.md").write_text("demo, again\n")
    git(repo, "commit", "-qam", "README only")  # HEAD~1 and HEAD: the same code
    os.chdir(repo)
    false_alarms, kernels_judged, seconds, rounds, untimed = 0, 0, [], [], 0
    for i in range(runs):
        c, busy = compare(repo, "HEAD~1", i, ("tests", "-q"))
        alarms = [k.kernel for k in c.kernels if k.verdict == "regression"]
        false_alarms += len(alarms)
        kernels_judged += sum(k.verdict != "same" for k in c.kernels)
        untimed += sum(k.verdict == "same" for k in c.kernels)
        seconds.append(c.seconds)
        rounds.append(c.rounds)
        ratios = "; ".join(f"{k.label} {k.median:.2f} [{k.low:.2f}, {k.high:.2f}]" for k in c.kernels
                           if k.median is not None and k.low is not None and k.high is not None)
        print(f"identical {i + 1}/{runs}: neighbour ({'busy' if i % 2 == 0 else 'memcopy'}) in rounds "
              f"{[r + 1 for r in busy]}; {c.rounds} rounds, {c.seconds:.0f} s; {ratios}; "
              f"false alarms: {alarms or 'none'}", flush=True)
    tests = repo / "tests" / "test_kernels.py"
    tests.write_text(TESTS.replace("bytes=x.nbytes)", "bytes=0.8 * x.nbytes)"))  # uncommitted: the head
    called, after, drop_seconds, drop_rounds = 0, [], [], []
    for i in range(drop_runs):
        c, busy = compare(repo, "HEAD", 1000 + i, ("tests", "-q", "-k", "test_total"))
        (k,) = c.kernels
        n = called_after(k.ratios, k.max_drop)
        called += k.verdict == "regression"
        after.append(n)
        drop_seconds.append(c.seconds)
        drop_rounds.append(c.rounds)
        print(
            f"20% drop {i + 1}/{drop_runs}: neighbour in rounds {[r + 1 for r in busy]}; ratio {k.median:.2f} "
            f"[{k.low}, {k.high}]; {k.verdict} after {n} {UNITS} ({c.rounds} rounds run, {c.seconds:.0f} s)",
            flush=True,
        )
    max_drop = f"{k.max_drop:g}" if drop_runs else "as ab's default"  # no drop run: no kernel of its own to ask
    print(f"\nmachine: {os.uname().nodename}; {time.strftime('%Y-%m-%d')}; max_drop {max_drop}; "
          f"rounds at most {DEFAULT_ROUNDS}, verdicts from the {MIN_ROUNDS}th of the {UNITS}; "
          f"{'long-lived processes' if LONG_LIVED else 'fresh processes per round'}; "
          f"{'every kernel timed (--time-all)' if TIME_ALL else 'kernels with the same program not timed'}")
    print("| case | comparisons | kernels judged (not timed: same program) | regressions called | rounds run (median) "
          "| seconds each (median) |")
    print("|---|---|---|---|---|---|")
    print(f"| identical revisions | {runs} | {kernels_judged} ({untimed}) | {false_alarms} (false alarms) | "
          f"{mid(rounds)} | {mid(seconds):.0f} |")
    shown = ", ".join(str(n) if n is not None else "never" for n in after)
    print(f"| 20% drop (total alone) | {drop_runs} | {drop_runs} (0) | {called}, called after {shown} {UNITS} | "
          f"{mid(drop_rounds)} | {mid(drop_seconds):.0f} |")
    git(repo, "checkout", "-q", "--", "tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
