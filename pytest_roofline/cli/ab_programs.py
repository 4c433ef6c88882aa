"""``pytest-roofline ab``'s programs pass: both sides run the selected tests once, at the same time, each kernel
compiled and fingerprinted and nothing timed; the tests whose kernels compile to the same programs on both sides
are then left out of the timed rounds (:mod:`..history.programs`). Nothing is measured, so the two processes may
share the machine. By default the pass is the first round's pair of processes preparing every selected test
(``plugin/ab_server.py``; :func:`first_pair_programs`), which then measure the tests left to time; processes of
their own run it (:func:`programs_pass`, ``plugin/session.py``'s ProgramsPassWriter) where the rounds do not
serve requests (xdist, ``--long-lived``) or cannot.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from ..history.paired import PairedKernel, one_side, same_program
from ..history.programs import PROGRAMS_PASS_VARIABLE, ProgramDiff, ProgramsOfTest, ProgramsPass, compare_programs
from .ab_long_lived import EXIT_NAMES, Server, problem_line
from .analyze import CliError

__all__ = ["programs_pass", "untimed_kernels", "programs_line", "first_pair_programs"]


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


def programs_pass(sides: Sequence[tuple[str, str, Path]], command: Callable[[str], list[str]],
                  env: dict[str, str], tmp: Path) -> tuple[ProgramDiff, str, float]:
    """Run the pass of both sides at once (``sides``: name, label, working directory; ``command``: a side's pytest
    command by name); the diff, the device and the seconds it took."""
    start = time.perf_counter()
    running = []
    try:
        for name, label, cwd in sides:
            out = tmp / f"programs-{name}.json"
            log = (tmp / f"programs-{name}.log").open("w", encoding="utf-8")
            process = subprocess.Popen(command(name), cwd=cwd, env={**env, PROGRAMS_PASS_VARIABLE: str(out)},
                                       stdout=log, stderr=subprocess.STDOUT)
            running.append((name, label, process, out, log))
        passes = {name: _finished(name, label, process, out, log, tmp) for name, label, process, out, log in running}
    finally:  # an error or Ctrl-C on one side: the other is not left running on a worktree about to go
        for _, _, process, _, log in running:
            if process.poll() is None:
                process.kill()
                process.wait()
            log.close()
    device = passes["head"].device or passes["base"].device
    return compare_programs(passes["base"], passes["head"]), device, time.perf_counter() - start


def _finished(name: str, label: str, process: subprocess.Popen[bytes], out: Path, log: IO[str],
              tmp: Path) -> ProgramsPass:
    """A side's pass once its process ended (a CliError where pytest could not run its tests)."""
    code = process.wait()
    log.close()
    if code not in (0, 1):
        why = EXIT_NAMES.get(code, "stopped")
        text = (tmp / f"programs-{name}.log").read_text(encoding="utf-8", errors="replace")
        raise CliError(f"pytest cannot run the tests of {label}: exit status {code} ({why}): {problem_line(text)}")
    return _read(out, label)


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
    selected test) compared, and the hardware it found (else the device). A process started with ``--first`` always
    says it; one whose plugin cannot does not start (the comparison then runs the pass in processes of its own)."""
    if base.programs is None or head.programs is None:
        raise CliError(f"the first pair's processes did not say what they compiled ({base.label}: "
                       f"{'yes' if base.programs is not None else 'no'}, {head.label}: "
                       f"{'yes' if head.programs is not None else 'no'})")
    try:
        at_base, at_head = ProgramsPass.from_dict(base.programs), ProgramsPass.from_dict(head.programs)
    except (ValueError, KeyError, TypeError) as exc:
        raise CliError(f"the programs pass of {base.label} or {head.label} cannot be read: {exc}") from None
    return compare_programs(at_base, at_head), head.found or base.found or at_head.device or at_base.device
