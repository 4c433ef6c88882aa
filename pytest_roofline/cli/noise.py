"""``pytest-roofline noise``: A/A rounds on the user's own runner. Each round runs the selected tests twice, in two
fresh pytest processes of the same working tree (in alternating order, as ``ab`` runs a base and a head), each
kernel measured once per process; then :mod:`~pytest_roofline.history.noise` draws ab's comparisons from the rounds:
per kernel how often the gate would have called a regression, and the smallest drop it can call here."""

from __future__ import annotations

import functools
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..base.files import check_writable, json_text, write_text_atomic
from ..base.units import format_seconds
from ..history.noise import KernelNoise, study_kernel
from ..history.paired import MIN_ROUNDS, RoundReport, collect, schedule
from ..history.reports import Run
from ..report.text import wrap_lines
from .ab.fresh import run_side
from .ab.job import NOTHING_MEASURED, AbOptions, Job
from .ab.sides import SideProcess
from .ab.worktree import toplevel
from .errors import CliError

__all__ = ["noise_command", "run_noise"]


def _sides(cwd: Path) -> tuple[SideProcess, SideProcess]:
    """Both sides the working tree as it is: side A stands where ab's base does, side B where its head does."""
    here = cwd.resolve()
    return (SideProcess("base", here, "", "side A (the working tree)"),
            SideProcess("head", here, "", "side B (the same working tree)"))


def run_noise(rounds: int, pytest_args: Sequence[str], cwd: Path,
              log: Callable[[str], None]) -> tuple[list[tuple[RoundReport, RoundReport]], float]:
    """The A/A rounds and the seconds they took."""
    if rounds < MIN_ROUNDS:
        raise CliError(f"--rounds {rounds}: at least {MIN_ROUNDS} (a 95% interval of a median needs six pairs)")
    start = time.perf_counter()
    root = toplevel(cwd)
    pairs: list[tuple[RoundReport, RoundReport]] = []
    with tempfile.TemporaryDirectory(prefix="pytest-roofline-noise-") as tmp:
        job = Job(AbOptions("(the same)", rounds, pytest_args=tuple(pytest_args)), root, _sides(cwd), Path(tmp), log)
        for index, order in enumerate(schedule(rounds)):
            begun = time.perf_counter()
            runs: dict[str, Run] = {}
            for name in order:
                runs[name], _ = run_side(job, job.side(name), tuple(pytest_args), job.tmp / f"{index}-{name}.json")
            pairs.append((RoundReport.of(runs["base"].records, runs["base"].unmeasured),
                          RoundReport.of(runs["head"].records, runs["head"].unmeasured)))
            if index == 0 and not (pairs[0][0].records or pairs[0][1].records):
                raise CliError(NOTHING_MEASURED)
            log(f"round {index + 1}/{rounds} ({' then '.join('A' if n == 'base' else 'B' for n in order)}, "
                f"{time.perf_counter() - begun:.0f} s)")
    return pairs, time.perf_counter() - start


def _cell(value: float | None, form: str = "{:.1%}") -> str:
    return form.format(value) if value is not None else "-"


def noise_lines(studies: Sequence[KernelNoise], rounds: int, comparisons: int, seconds: float) -> list[str]:
    """The table: per kernel, its A/A ratios, the false alarms of its comparisons, what the gate can detect."""
    head = [f"{rounds} A/A rounds (the same code on both sides, {2 * rounds} pytest processes) in "
            f"{format_seconds(seconds)}; {comparisons} comparisons per kernel, each judged as ab judges one (6 or more "
            f"of these rounds in a random order, stopped where its verdict settles)",
            f"{'test [kernel]':<50} {'B/A median [95%]':>20} {'false alarms':>12} {'undecided':>9} "
            f"{'detectable':>10} {'quiet above':>11}"]
    rows = []
    for s in sorted(studies, key=lambda s: -(s.detectable_drop or 0.0)):
        name = s.kernel if len(s.kernel) <= 50 else s.kernel[:23] + "..." + s.kernel[-24:]
        if s.error or not s.comparisons:
            rows.append(f"{name:<50} cannot judge: {s.error or f'{len(s.ratios)} quiet rounds'}")
            continue
        ratio = f"{s.median:.3f} [{_cell(s.low, '{:.3f}')}, {_cell(s.high, '{:.3f}')}]"
        rows.append(f"{name:<50} {ratio:>20} {f'{s.false_alarms}/{s.comparisons}':>12} {s.undecided:>9} "
                    f"{_cell(s.detectable_drop):>10} {_cell(s.quiet_above, '{:.0%}'):>11}")
    drops = {f"{s.max_drop:g}, from {s.max_drop_origin}" for s in studies if s.comparisons}
    foot = [f"judged with max_drop {'; '.join(sorted(drops))}" if drops else "",
            "false alarms: regressions called with nothing changed; detectable: the smallest drop the gate calls from "
            "all the rounds at that max_drop; quiet above: the smallest max_drop at which no comparison here called "
            "a regression (set max_drop at or above it for this runner)"]
    return wrap_lines(head[:1]) + head[1:] + rows + wrap_lines([line for line in foot if line])


def noise_command(rounds: int, comparisons: int, max_drop: float | None, pytest_args: Sequence[str],
                  json_path: str | None) -> tuple[str, int]:
    if json_path is not None and (why := check_writable(json_path)) is not None:
        raise CliError(f"--json {json_path}: cannot write it: {why}")
    pairs, seconds = run_noise(rounds, pytest_args, Path.cwd(), functools.partial(print, file=sys.stderr, flush=True))
    studies = [study_kernel(k, comparisons, max_drop) for k in collect(pairs)]
    lines = noise_lines(studies, rounds, comparisons, seconds)
    if json_path is not None:
        write_text_atomic(json_path, json_text({"rounds": rounds, "comparisons": comparisons, "seconds": seconds,
                                                "kernels": [s.to_dict() for s in studies]}) + "\n")
        lines.append(f"wrote {json_path}")
    return "\n".join(lines), 0
