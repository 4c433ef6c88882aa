"""The programs pass, the first step of a comparison: both sides run the selected tests once, at the same time, each
kernel compiled and fingerprinted and nothing timed; the tests whose kernels compile to the same programs on both
sides are then left out of the rounds (:mod:`pytest_roofline.ab.same_programs`), their kernels' verdicts given as
"same program".
Nothing is measured, so the two processes may share the machine.

Where the rounds are run by serving pairs (the default), the first pair's processes run the pass (started with
``first``) and then prepare the tests it leaves to time, which that pair measures in the first round
(:func:`in_first_pair`); elsewhere (xdist, ``--long-lived``, or a side that cannot serve) processes of their own
run it (:func:`in_own_processes`). ``--time-all`` skips it.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ...ab.same_programs import (
    ProgramDiff,
    ProgramsOfTest,
    ProgramsPass,
    compare_programs,
    deselect_args,
)
from ...ab.side_task import SideTask
from ...history.paired import PairedKernel, one_side, same_program
from ..errors import CliError
from .job import NOTHING_MEASURED, Job, Selection
from .served import Server
from .sides import EXIT_NAMES, SideProcess, command, problem_line

__all__ = ["ProgramsFound", "in_first_pair", "in_own_processes", "skipped", "untimed_kernels", "programs_line",
           "first_pair_programs"]


@dataclass(frozen=True)
class ProgramsFound:
    """What the pass found: the tests to time (``selection``; none where ``to_time`` is false), the verdicts of the
    kernels it leaves out, and the device it compiled for."""

    selection: Selection
    untimed: tuple[PairedKernel, ...] = ()
    device: str = ""
    to_time: bool = True
    listening: bool = True  # False where the head's first process said no pytest_roofline_ab hook wants the verdicts


def skipped(job: Job) -> ProgramsFound:
    """``--time-all``: no pass; every test is timed."""
    return ProgramsFound(Selection(job.options.pytest_args))


def in_first_pair(job: Job, pair: tuple[Server, Server]) -> ProgramsFound:
    """The first pair's pass (its processes started with ``first``): the diff of what each said it compiled; both
    processes then prepare the tests left to time, at once, and the pair is handed to the rounds (stopped where no
    test is left)."""
    try:
        diff, hardware = first_pair_programs(*pair)
        if not diff.kernels and not diff.timed:
            raise CliError(NOTHING_MEASURED)
    except CliError:
        for server in pair:
            server.stop()
        raise
    timed = list(diff.timed)
    for server in pair:
        if timed:
            server.prepare(timed)
        else:
            server.stop()
    for server in pair if timed else ():
        server.prepared()
    job.log(programs_line(diff, time.perf_counter() - job.start, first_pair=True))
    base, head = pair
    left_out = [n for n in dict.fromkeys([*head.items, *base.items]) if n not in set(timed)]
    selection = Selection((*job.options.pytest_args, *deselect_args(left_out)), frozenset(timed),
                          pair if timed else None)
    return ProgramsFound(selection, tuple(untimed_kernels(diff)), hardware, bool(timed), head.listening)


def in_own_processes(job: Job) -> ProgramsFound:
    """Both sides' pass in processes of their own, at once (they fill JAX's compilation cache, from which the rounds
    then load their programs)."""
    start = time.perf_counter()
    running = []
    try:
        for side in job.sides:
            out = job.tmp / f"programs-{side.name}.json"
            log = (job.tmp / f"programs-{side.name}.log").open("w", encoding="utf-8")
            report = job.tmp / f"programs-{side.name}-report.json"
            process = subprocess.Popen(command(side, job.root, job.options.pytest_args, report=report), cwd=side.cwd,
                                       env={**job.env, **SideTask("programs", str(out)).environment()}, stdout=log,
                                       stderr=subprocess.STDOUT)
            running.append((side, process, out, log))
        passes = {side.name: _finished(side, process, out, log, job.tmp) for side, process, out, log in running}
    finally:  # an error or Ctrl-C on one side: the other is not left running on a worktree about to go
        for _, process, _, log in running:
            if process.poll() is None:
                process.kill()
                process.wait()
            log.close()
    diff = compare_programs(passes["base"], passes["head"])
    if not diff.kernels and not diff.timed:
        raise CliError(NOTHING_MEASURED)
    job.log(programs_line(diff, time.perf_counter() - start))
    selection = Selection((*job.options.pytest_args, *deselect_args(diff.untimed)))
    return ProgramsFound(selection, tuple(untimed_kernels(diff)), passes["head"].device or passes["base"].device,
                         bool(diff.timed))


def _finished(side: SideProcess, process: subprocess.Popen[bytes], out: Path, log: IO[str], tmp: Path) -> ProgramsPass:
    """A side's pass once its process ended (a CliError where pytest could not run its tests)."""
    code = process.wait()
    log.close()
    if code not in (0, 1):
        why = EXIT_NAMES.get(code, "stopped")
        text = (tmp / f"programs-{side.name}.log").read_text(encoding="utf-8", errors="replace")
        raise CliError(f"pytest cannot run the tests of {side.label}: exit status {code} ({why}): "
                       f"{problem_line(text)}")
    return _read(out, side.label)


def _read(path: Path, label: str) -> ProgramsPass:
    """One side's pass, with its xdist workers' files (``PATH.gw0``, ...) merged in."""
    tests: dict[str, ProgramsOfTest] = {}
    device = ""
    found = [p for p in (path, *sorted(path.parent.glob(path.name + ".*"))) if p.exists()]
    if not found:
        raise CliError(f"the programs pass of {label} wrote nothing: is pytest-roofline's plugin active there?")
    for file in found:
        try:
            one = ProgramsPass.from_dict(json.loads(file.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CliError(f"the programs pass of {label} cannot be read ({file}): {exc}") from None
        tests.update(one.tests)
        device = device or one.device
    return ProgramsPass(tests, device)


def untimed_kernels(diff: ProgramDiff) -> list[PairedKernel]:
    """The verdicts of the kernels of tests that are not timed: the same program, or on one side only."""
    left_out = set(diff.untimed)
    out = []
    for (nodeid, label), change in diff.kernels.items():
        if nodeid not in left_out:
            continue
        if change == "same":
            out.append(same_program(nodeid, label))
        elif change in ("added", "removed"):
            out.append(one_side(nodeid, label, change))
    return out


def programs_line(diff: ProgramDiff, seconds: float, *, first_pair: bool = False) -> str:
    """One progress line: what the pass found and what will be timed (``first_pair``: by the first round's pair,
    which then times them)."""
    counts = {change: len(diff.of(change)) for change in ("same", "changed", "added", "removed")}
    found = ", ".join(f"{n} {change}" for change, n in counts.items() if n)
    where = "the first round's processes" if first_pair else "both sides"
    return (f"programs pass ({seconds:.1f} s, {where} compiled, nothing timed): kernels {found or 'none'}; "
            f"{len(diff.timed)} test{'s' if len(diff.timed) != 1 else ''} to time")


def first_pair_programs(base: Server, head: Server) -> tuple[ProgramDiff, str]:
    """What the first pair of a comparison's rounds found while preparing (each side a programs pass of every
    selected test) compared, and the hardware it found (else the device)."""
    if base.programs is None or head.programs is None:
        raise CliError(f"the first pair's processes did not say what they compiled ({base.label}: "
                       f"{'yes' if base.programs is not None else 'no'}, {head.label}: "
                       f"{'yes' if head.programs is not None else 'no'})")
    at_base, at_head = base.programs, head.programs
    return compare_programs(at_base, at_head), head.found or base.found or at_head.device or at_base.device
