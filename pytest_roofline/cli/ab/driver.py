"""``pytest-roofline ab --base REV``: the selected tests of two revisions measured on this machine in one job, in
alternating order (ABBA), and a paired verdict per kernel (:mod:`...history.paired`).

The head is the working tree as it is (uncommitted changes included); the base is REV checked out in a temporary
git worktree. :func:`run_ab` reads as the steps its output shows: the base checked out; the programs pass, which
leaves out the tests whose programs are the same on both sides (:mod:`.programs`); the rounds of the tests left, in
the schedule the options choose (:func:`choose`: serving pairs, :mod:`.pairs`, or processes that run to their end,
:mod:`.fresh`), with the tests a pair could not hold in device memory and the sides that cannot serve measured the
second way; the comparison, handed to the head's ``pytest_roofline_ab`` hooks where one wants it. Exit status: 1 on
a regression, 0 otherwise, 2 for a usage error.
"""

from __future__ import annotations

import dataclasses
import functools
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ...ab.side_task import SideTask
from ...base.files import check_writable, json_text, write_text_atomic
from ...history.paired import MIN_ROUNDS, Comparison
from ...history.reports import Run
from ...report.ab_report import ab_document, ab_lines
from ...report.html import html_report, plotly_missing
from ...report.summary_md import ab_markdown
from ..errors import CliError
from ..report_commands import check_summary, publish_summary
from .fresh import FreshRounds
from .job import EMPTY_RUN, NOTHING_MEASURED, AbOptions, Found, Job, Schedule, uses_xdist
from .pairs import LONG_LIVED, PAIR_ROUNDS, ROUND_PER_PAIR
from .programs import ProgramsFound, in_first_pair, in_own_processes, skipped
from .served import ServeUnavailable, serve_args, start_pair
from .sides import command, problem_line, sides_of
from .worktree import commit_of, is_dirty, remove_leftovers, toplevel, worktree

__all__ = ["AbOptions", "run_ab", "ab_command", "choose"]

FRESH = FreshRounds()
UNAVAILABLE = "processes that serve a round unavailable ({}): each round in processes that run to their end"


def run_ab(options: AbOptions, cwd: Path, log: Callable[[str], None] = print,
           on_round: Callable[[int], None] | None = None) -> tuple[Comparison, Run]:
    """Compare; returns the comparison and the head's last report. ``log``: progress lines; ``on_round``: called
    with each round's index before it starts (the false-alarm study starts and stops a neighbour there)."""
    _check(options)
    start = time.perf_counter()
    root = toplevel(cwd)
    commit, head = commit_of(root, options.base), (commit_of(root, "HEAD"), is_dirty(root))
    remove_leftovers(root, log)
    with worktree(root, commit) as base_root:
        job = Job(options, root, sides_of(root, cwd, base_root, commit, head), base_root.parent / "work", log,
                  on_round, start=start)
        chosen = choose(options)
        programs = programs_pass(job, chosen)
        found = timed_rounds(job, chosen, programs) if programs.to_time else _nothing_timed()
        comparison = _comparison(job, (commit, *head), programs, found)
        if programs.listening and found.listening:  # else the head's process said no hook wants them
            announce(job, comparison)
    return comparison, found.last_head


def _comparison(job: Job, commits: tuple[str, str, bool], programs: ProgramsFound, found: Found) -> Comparison:
    """The verdicts of the kernels timed and of those the programs pass left out (``commits``: the base's, the
    head's, and whether the head has uncommitted changes)."""
    if not found.kernels and not programs.untimed:
        raise CliError(NOTHING_MEASURED)
    hardware = next((r.result.hardware.name for r in found.last_head.records), "") or programs.device
    options = job.options
    return Comparison(options.base, *commits, found.rounds, options.rounds, stopped=found.stopped,
                      kernels=(*found.kernels, *programs.untimed), seconds=time.perf_counter() - job.start,
                      side_seconds=found.spent, hardware=hardware, schedule=found.schedule)


def _check(options: AbOptions) -> None:
    if options.rounds < MIN_ROUNDS:
        raise CliError(f"--rounds {options.rounds}: at least {MIN_ROUNDS} (a 95% interval of a median needs six "
                       "pairs)")
    if options.long_lived and options.rounds < MIN_ROUNDS * PAIR_ROUNDS:
        raise CliError(f"--rounds {options.rounds} with --long-lived: at least {MIN_ROUNDS * PAIR_ROUNDS} (a 95% "
                       f"interval needs six pairs of processes, {PAIR_ROUNDS} rounds each)")


def choose(options: AbOptions) -> Schedule:
    """The schedule of the rounds, chosen here only, before anything runs: processes that run to their end under
    xdist (its workers cannot serve), long-lived pairs with ``--long-lived``, else a pair of serving processes each
    round (whose first pair is also the programs pass). Where a side then cannot serve, :func:`timed_rounds` gives way
    to processes that run to their end, and says so."""
    if uses_xdist(options.pytest_args):
        return FRESH
    return LONG_LIVED if options.long_lived else ROUND_PER_PAIR


def programs_pass(job: Job, chosen: Schedule) -> ProgramsFound:
    """Step 1: which tests to time. By the first round's pair where the schedule's first pair prepares (a pair per
    round), else in processes of its own (also where a side cannot serve, said in one line); none with
    ``--time-all``."""
    if job.options.time_all:
        return skipped(job)
    if chosen is ROUND_PER_PAIR:
        try:
            pair = start_pair(job.sides, job.root, job.options.pytest_args, job.env, job.tmp, "programs pass")
        except ServeUnavailable as exc:
            job.log(UNAVAILABLE.format(exc))
            found = in_own_processes(job)
            return dataclasses.replace(found, selection=dataclasses.replace(found.selection, serves=False))
        return in_first_pair(job, pair)
    return in_own_processes(job)


def timed_rounds(job: Job, chosen: Schedule, programs: ProgramsFound) -> Found:
    """Step 2: the rounds of the tests left to time, in the ``chosen`` schedule. Where a side could not serve (in the
    programs pass, or in the first pair of rounds) the rounds run in processes that run to their end (said in one
    line); the tests a pair could not hold are measured so after it."""
    selection = programs.selection
    try:
        found = (chosen if selection.serves else FRESH).run(job, selection)
    except ServeUnavailable as exc:  # before anything was measured
        job.log(UNAVAILABLE.format(exc))
        return FRESH.run(job, selection)
    if found.rest is not None:
        found = found.merged(FRESH.run(job, found.rest))
    return found


def announce(job: Job, comparison: Comparison) -> None:
    """Step 3: the verdicts handed to the suite's ``pytest_roofline_ab`` hooks, in a pytest process of the head
    that collects nothing; a hook that fails is said in one line (the verdicts and the exit status stand)."""
    path = job.tmp / "verdicts.json"
    write_text_atomic(path, json_text(ab_document(comparison)) + "\n")
    head = job.side("head")
    done = subprocess.run(command(head, job.root, serve_args(job.options.pytest_args)), cwd=head.cwd,
                          env={**job.env, **SideTask("verdicts", str(path)).environment()}, capture_output=True,
                          text=True, check=False)
    if done.returncode not in (0, 5):  # 5: no tests collected, as asked
        job.log(f"the head's pytest_roofline_ab hooks could not be called (exit status {done.returncode}): "
                f"{problem_line(done.stdout + done.stderr)}")


def _nothing_timed() -> Found:
    return Found([], 0, "every kernel compiles to the same program on both sides", (0.0, 0.0), EMPTY_RUN)


def ab_command(options: AbOptions, json_path: str | None, html_path: str | None,
               summary_md: str | None = None) -> tuple[str, int]:
    """Run the comparison, write ``--json``, ``--html`` and ``--summary-md``; the table and the exit status."""
    if html_path is not None and (missing := plotly_missing()) is not None:
        raise CliError(f"--html {html_path}: {missing}")
    for option, path in (("--json", json_path), ("--html", html_path)):
        if path is not None and (why := check_writable(path)) is not None:
            raise CliError(f"{option} {path}: cannot write it: {why}")
    check_summary(summary_md)
    comparison, head = run_ab(options, Path.cwd(), functools.partial(print, file=sys.stderr, flush=True))
    lines, failed = [*ab_lines(comparison)], False
    for option, path in (("--json", json_path), ("--html", html_path)):
        if path is None:
            continue
        try:
            if option == "--json":
                write_text_atomic(path, json_text(ab_document(comparison)) + "\n")
            else:
                shown = dataclasses.replace(head, path=f"the head's report of round {comparison.rounds}")
                write_text_atomic(path, html_report(shown, ab=comparison))
            lines.append(f"wrote {path}")
        except OSError as exc:  # the table stands; a regression's exit status is kept
            lines.append(f"pytest-roofline ab: error: {option} {path}: cannot write it: {exc.strerror or exc}")
            failed = True
    published = publish_summary(ab_markdown(comparison), summary_md)
    failed = failed or any("error:" in line for line in published)
    lines += published
    status = comparison.exit_status or (1 if options.strict and comparison.undecided else 0)
    return "\n".join(lines), status or (2 if failed else 0)
