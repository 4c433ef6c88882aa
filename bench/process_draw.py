"""Does a process keep its own offset? The same kernel measured round after round in several processes.

Run: python bench/process_draw.py [--paired] [--processes 6] [--rounds 6] [--kernel attention|rms norm|row sum|softmax]
[--redraw none|inputs|heap|compile]   (prints a table; nothing here is asserted)

``pytest-roofline ab --long-lived`` measures each kernel again and again in long-lived processes, one per side; a
round is only an independent sample of the difference between two revisions if nothing a process keeps tilts it.
Each process here compiles the kernel once and measures it ``--rounds`` times as the long-lived schedule does (a
short measurement, calibrated ceilings). The table gives each process's median and range, and an analysis of
variance of log utilization: the spread of rounds within a process, and the spread of the processes' own offsets.

``--paired`` is the measure that counts: pairs of processes alive at once and measured in turn (ABBA), as ``ab``
runs them, and the ratio of one to the other. Without it the processes run one after the other, minutes apart, and
their offsets mix the host's drift with what each process keeps.

``--redraw`` is what changes between rounds: "none" (the same input buffers), "inputs" (new copies of the inputs,
as the long-lived schedule makes), "heap" (new copies placed after a spacer of a random size held on the device,
so the inputs and the program's temporaries land on other pages) or "compile" (the program compiled again, its
code placed anew).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _kernel(name: str) -> tuple[Any, tuple[Any, ...]]:
    import jax
    import jax.numpy as jnp

    key = jax.random.key(0)
    if name == "attention":
        shape = (4, 512, 8, 64)
        q, k, v = (jax.random.normal(jax.random.fold_in(key, i), shape) for i in range(3))
        return jax.nn.dot_product_attention, (q, k, v)
    if name == "row sum":
        return (lambda x: jnp.sum(x, axis=1)), (jax.random.normal(key, (8192, 8192)),)
    if name == "softmax":
        return (lambda x: jax.nn.softmax(x, axis=-1)), (jax.random.normal(key, (8192, 4096)),)
    if name == "rms norm":  # writes a fresh 128 MiB output each run: its pages are faulted in inside the op
        def rms_norm(x: Any, scale: Any) -> Any:
            return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * scale

        return rms_norm, (jax.random.normal(key, (8192, 4096)), jnp.ones((4096,)))
    raise SystemExit(f"unknown --kernel {name!r}: attention, row sum, softmax or rms norm")


def child(kernel: str, rounds: int, redraw: str) -> None:
    """Measure the kernel ``rounds`` + 1 times and print the utilizations after the first (or, with ``rounds`` 0,
    once per line read from stdin, each answered at once)."""
    import jax

    fn, args = _kernel(kernel)
    state = {"jitted": jax.jit(fn)}
    utilizations = []
    for _ in range(rounds + 1) if rounds else iter(sys.stdin.readline, ""):
        utilizations.append(_one_round(fn, args, redraw, state))
        if not rounds:
            print(json.dumps(utilizations[-1]), flush=True)
    if rounds:
        print(json.dumps(utilizations[1:]))  # the first round compiles and faults its pages in: left out


def _one_round(fn: Any, args: tuple[Any, ...], redraw: str, state: dict[str, Any]) -> float:
    """One measurement as the long-lived schedule makes it (short, calibrated ceilings), after ``redraw``."""
    import jax
    import jax.numpy as jnp

    from pytest_roofline.measurement.pipeline import measure

    spacer = None  # held on the device for this round only: the next round draws again
    if redraw == "heap":
        spacer = jnp.ones((random.randint(1, 4096) * 1024,), jnp.float32).block_until_ready()
    inputs = tuple(jax.block_until_ready(a.copy()) for a in args) if redraw in ("inputs", "heap") else args
    if redraw == "compile":  # a new function object: traced and compiled again, its code placed anew
        state["jitted"] = jax.jit(lambda *xs: fn(*xs))
    result = measure(state["jitted"], args=inputs, warmup=1, min_time_s=0.05, budget_s=0.25, ceilings="calibrated")
    del spacer
    return float(result.utilization)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--kernel", default="attention")
    parser.add_argument("--redraw", choices=("none", "inputs", "heap", "compile"), default="inputs")
    parser.add_argument(
        "--paired",
        action="store_true",
        help="two processes alive at once, measured in turn (ABBA): the ratio of the second to the first",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.child:
        child(a.kernel, a.rounds, a.redraw)
        return
    if a.paired:
        _paired(a)
        return
    per_process: list[list[float]] = []
    for _ in range(a.processes):
        out = subprocess.run([sys.executable, __file__, "--child", "--kernel", a.kernel, "--rounds", str(a.rounds),
                              "--redraw", a.redraw], cwd=ROOT, check=True, capture_output=True, text=True).stdout
        per_process.append(json.loads(out.strip().splitlines()[-1]))
    print(f"kernel {a.kernel}, redraw {a.redraw}: {a.processes} processes x {a.rounds} rounds, utilization")
    print(f"{'process':>8} {'median':>8} {'min':>8} {'max':>8} {'range':>8}")
    medians, ranges = [], []
    for n, values in enumerate(per_process, 1):
        m = statistics.median(values)
        medians.append(m)
        ranges.append((max(values) - min(values)) / m)
        print(f"{n:>8} {m:>8.1%} {min(values):>8.1%} {max(values):>8.1%} {ranges[-1]:>8.1%}")
    within = statistics.median(ranges)
    between = (max(medians) - min(medians)) / statistics.median(medians)
    print(f"within a process (median of ranges): {within:.1%}; between processes (range of medians): {between:.1%}")
    sd_within, sd_between = _components(per_process)
    print(f"standard deviations of log utilization: within a process {sd_within:.1%}, of the processes' own "
          f"offsets {sd_between:.1%}")


def _paired(a: argparse.Namespace) -> None:
    """Pairs of processes of the same code, as ``ab --long-lived`` runs them: per pair, the ratio of one to the
    other in each ABBA round."""
    command = [sys.executable, __file__, "--child", "--kernel", a.kernel, "--rounds", "0", "--redraw", a.redraw]
    per_pair: list[list[float]] = []
    for _ in range(a.processes):
        pair = [subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                for _ in range(2)]

        def ask(p: subprocess.Popen[str]) -> float:
            assert p.stdin is not None and p.stdout is not None
            p.stdin.write("go\n")
            p.stdin.flush()
            return float(json.loads(p.stdout.readline()))

        for p in pair:
            ask(p)  # compiles and faults its pages in: left out
        ratios = []
        for r in range(a.rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            seen = {i: ask(pair[i]) for i in order}
            ratios.append(seen[1] / seen[0])
        for p in pair:
            assert p.stdin is not None
            p.stdin.close()
            p.wait()
        per_pair.append(ratios)
    print(f"kernel {a.kernel}, redraw {a.redraw}: {a.processes} pairs of processes x {a.rounds} ABBA rounds, "
          f"ratio of one process's utilization to the other's")
    print(f"{'pair':>8} {'median':>8} {'min':>8} {'max':>8}")
    for n, ratios in enumerate(per_pair, 1):
        print(f"{n:>8} {statistics.median(ratios):>8.3f} {min(ratios):>8.3f} {max(ratios):>8.3f}")
    sd_within, sd_between = _components(per_pair)
    print(f"standard deviations of the log ratio: within a pair {sd_within:.1%}, of the pairs' own offsets "
          f"{sd_between:.1%}")


def _components(per_process: list[list[float]]) -> tuple[float, float]:
    """One-way analysis of variance of log utilization: the spread of rounds around their process's mean, and the
    spread of the processes' true means (their variance less what the rounds' spread alone would give)."""
    logs = [[math.log(v) for v in values] for values in per_process]
    means = [statistics.fmean(values) for values in logs]
    within = statistics.fmean(statistics.variance(values) for values in logs)
    rounds = statistics.fmean(len(values) for values in logs)
    between = max(0.0, statistics.variance(means) - within / rounds)
    return math.sqrt(within), math.sqrt(between)


if __name__ == "__main__":
    main()
