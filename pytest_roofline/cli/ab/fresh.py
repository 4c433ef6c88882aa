"""The schedule of processes that run to their end: each side of a round is a fresh pytest process that runs the
tests not yet settled, measuring each kernel once (``--once``), and writes a JSON report that is read back here.
Under xdist's ``-n``, where a side's process cannot serve, and for the tests whose inputs did not fit in device
memory beside the other side's process."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from ...ab.same_programs import deselect_args
from ...ab.side_task import SideTask
from ...history.paired import (
    MIN_ROUNDS,
    PairedKernel,
    RoundReport,
    collect,
    judge_kernel,
    schedule,
    settled,
    settled_tests,
)
from ...history.reports import ReportError, Run, load_run
from ..errors import CliError
from .job import EMPTY_RUN, NOTHING_MEASURED, Found, Job, Selection, round_line
from .sides import EXIT_NAMES, SideProcess, command, problem_line

__all__ = ["FreshRounds", "run_side"]


class FreshRounds:
    """Rounds in fresh processes, each running the tests not yet settled, until every verdict settles, the rounds
    run out or the next round would overrun the budget."""

    name = "fresh processes"
    unit = "rounds"

    def run(self, job: Job, selection: Selection) -> Found:
        pairs: list[tuple[RoundReport, RoundReport]] = []
        spent = {"base": 0.0, "head": 0.0}
        kernels: list[PairedKernel] = []
        last_head = EMPTY_RUN
        stopped = f"{job.options.rounds} rounds run"
        done: list[str] = []  # tests whose kernels are all settled: left out of the later rounds
        last_round = 0.0
        for index, order in enumerate(schedule(job.options.rounds)):
            if index and (why := job.over_budget(last_round, index)):
                stopped = why
                break
            if job.on_round is not None:
                job.on_round(index)
            runs: dict[str, Run] = {}
            round_start = time.perf_counter()
            for name in order:
                args = (*selection.args, *deselect_args(done))
                runs[name], seconds = run_side(job, job.side(name), args, job.tmp / f"{index}-{name}.json")
                spent[name] += seconds
            last_round = time.perf_counter() - round_start
            last_head = runs["head"]
            pairs.append((RoundReport.of(runs["base"].records, runs["base"].unmeasured),
                          RoundReport.of(runs["head"].records, runs["head"].unmeasured)))
            kernels = [judge_kernel(k, job.options.max_drop) for k in collect(pairs)]
            if index == 0 and not kernels:
                raise CliError(NOTHING_MEASURED)
            done = settled_tests(kernels)
            job.log(round_line(index, job.options.rounds, last_round, kernels))
            if index + 1 >= MIN_ROUNDS and settled(kernels):
                stopped = f"every verdict settled after {index + 1} rounds"
                break
        return Found(kernels, len(pairs), stopped, (spent["base"], spent["head"]), last_head, self.unit)


def run_side(job: Job, side: SideProcess, args: tuple[str, ...], report: Path) -> tuple[Run, float]:
    """One pytest process; its report (an empty run where it measured nothing: the plugin then writes none)."""
    start = time.perf_counter()
    done = subprocess.run(command(side, job.root, args, report=report, once=True), cwd=side.cwd,
                          env={**job.env, **SideTask("once").environment()},
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        why = EXIT_NAMES.get(done.returncode, "stopped")
        raise CliError(f"pytest cannot run the tests of {side.label}: exit status {done.returncode} ({why}): "
                       f"{problem_line(done.stdout + done.stderr)}")
    if not report.exists():
        return EMPTY_RUN, seconds
    try:
        return load_run(report), seconds
    except ReportError as exc:
        raise CliError(f"the roofline report of {side.label} cannot be read: {exc}") from None
