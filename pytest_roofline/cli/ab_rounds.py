"""``pytest-roofline ab --base REV``: the selected tests of two revisions measured on this machine in one job, in
alternating order (ABBA), and a paired verdict per kernel (:mod:`..history.paired`).

The head is the working tree as it is (uncommitted changes included); the base is REV checked out in a temporary
git worktree. Each process runs ``plugin/ab_child.py``, which makes the base import its own tree. By default each
round is a fresh pair of processes, one per side, that compile the tests left to time at the same time and then
measure each kernel once in turn (:mod:`.ab_long_lived` with one round per pair); the first pair compiles every
selected test, and what it compiled is the programs pass that chooses the tests to time; with ``long_lived`` each pair
measures each test not yet settled for two rounds. Under xdist's ``-n``, and for tests whose inputs do not fit in
device memory beside the other process, each side of a round is a fresh process that runs the selection to its
end, measuring each kernel once (``--once``), and writes a JSON report that is read back here. Exit status: 1 on
a regression, 0 otherwise, 2 for a usage error.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from ..base.files import check_writable, json_text, write_text_atomic
from ..history.paired import (
    MIN_ROUNDS,
    Comparison,
    PairedKernel,
    RoundReport,
    Side,
    collect,
    judge_kernel,
    schedule,
    settled,
    settled_tests,
)
from ..history.programs import deselect_args
from ..history.reports import ReportError, Run, load_run
from ..report.ab_report import ab_document, ab_lines
from ..report.html import html_report, plotly_missing
from ..report.summary_md import ab_markdown
from .ab_long_lived import (
    EXIT_NAMES,
    PAIR_ROUNDS,
    Server,
    ServeUnavailable,
    child_env,
    problem_line,
    round_line,
    served_kernels,
    start_servers,
)
from .ab_programs import first_pair_programs, programs_line, programs_pass, untimed_kernels
from .analyze import CliError
from .report_commands import check_summary, publish_summary
from .worktree import commit_of, is_dirty, remove_leftovers, toplevel, worktree

__all__ = ["AbOptions", "run_ab", "ab_command", "CHILD"]

CHILD = Path(__file__).resolve().parent.parent / "plugin" / "ab_child.py"
# Outputs a project may have configured (in the environment or its ini file) that a comparison must not write to;
# the report is set again on the command line, last, to the comparison's own file.
QUIET_OUTPUTS = ("history", "html", "baseline")
NOTHING_MEASURED = ("the selected tests measured no kernel on either side (no roofline(...) call ran, or the "
                    "pytest-roofline plugin is not active there)")


@dataclass(frozen=True)
class AbOptions:
    base: str
    rounds: int
    max_drop: float | None = None
    pytest_args: tuple[str, ...] = ()
    long_lived: bool = False  # one long-lived process per side, each test in its own rounds
    strict: bool = False  # exit 1 for an undecided kernel too
    _: KW_ONLY  # fields from the seventh on are given by keyword
    time_all: bool = False  # time every kernel, also those that compile to the same program on both sides
    budget_s: float | None = None  # no round starts that would end past this many seconds from the start


@dataclass(frozen=True)
class _Side:
    name: Side
    cwd: Path
    base_root: str  # "" for the head: its imports are left alone
    label: str  # e.g. "the base (1a2b3c4d5e6f)"


def _child_env() -> dict[str, str]:
    """The pytest processes' environment: the user's, less our outputs, and no bytecode written (with ``-p
    no:cacheprovider``, ab leaves the head's working tree as it found it, ignored files included)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    for name in (*QUIET_OUTPUTS, "report"):
        env[f"PYTEST_ROOFLINE_{name.upper()}"] = ""  # empty: not set
    return env


def _command(side: _Side, root: Path, args: Sequence[str], report: Path, once: bool = False) -> list[str]:
    """A side's pytest process; ``once``: a round's, each kernel measured once (the rounds are the sample)."""
    return [sys.executable, str(CHILD), str(root), side.base_root, *(["--once"] if once else []), *args,
            "-p", "no:cacheprovider",
            *(arg for name in QUIET_OUTPUTS for arg in ("-o", f"roofline_{name}=")), f"--roofline-report={report}"]


def _run_side(side: _Side, root: Path, args: Sequence[str], report: Path) -> tuple[Run, float]:
    """One pytest process; its report (an empty run where it measured nothing: the plugin then writes none)."""
    command = _command(side, root, args, report, once=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=side.cwd, env=_child_env(), capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        why = EXIT_NAMES.get(done.returncode, "stopped")
        raise CliError(f"pytest cannot run the tests of {side.label}: exit status {done.returncode} ({why}): "
                       f"{problem_line(done.stdout + done.stderr)}")
    if not report.exists():
        return Run(str(report), "", None, False, None, {}, records=()), seconds
    try:
        return load_run(report), seconds
    except ReportError as exc:
        raise CliError(f"the roofline report of {side.label} cannot be read: {exc}") from None


def _sides(root: Path, cwd: Path, base_root: Path, commit: str, dirty: bool, head_commit: str) -> tuple[_Side, _Side]:
    relative = cwd.resolve().relative_to(root)
    base_cwd = base_root / relative
    if not base_cwd.is_dir():
        raise CliError(f"{relative} does not exist at the base ({commit[:12]}): run ab from a folder both have")
    head_label = f"the head ({head_commit[:12]}{' + uncommitted changes' if dirty else ''})"
    return (_Side("base", base_cwd, str(base_root), f"the base ({commit[:12]})"),
            _Side("head", cwd.resolve(), "", head_label))


def run_ab(options: AbOptions, cwd: Path, log: Callable[[str], None] = print,
           on_round: Callable[[int], None] | None = None) -> tuple[Comparison, Run]:
    """Compare; returns the comparison and the head's last report. ``log``: progress lines; ``on_round``: called
    with each round's index before it starts (the false-alarm study starts and stops a neighbour there)."""
    if options.rounds < MIN_ROUNDS:
        raise CliError(f"--rounds {options.rounds}: at least {MIN_ROUNDS} (a 95% interval of a median needs six "
                       "pairs)")
    if options.long_lived and options.rounds < MIN_ROUNDS * PAIR_ROUNDS:
        raise CliError(f"--rounds {options.rounds} with --long-lived: at least {MIN_ROUNDS * PAIR_ROUNDS} (a 95% "
                       f"interval needs six pairs of processes, {PAIR_ROUNDS} rounds each)")
    start = time.perf_counter()
    root = toplevel(cwd)
    commit = commit_of(root, options.base)
    head_commit, dirty = commit_of(root, "HEAD"), is_dirty(root)
    remove_leftovers(root, log)
    with worktree(root, commit) as base_root:
        tmp = Path(base_root.parent / "work")
        sides = _sides(root, cwd, base_root, commit, dirty, head_commit)
        # By default the first round's pair, preparing every selected test, is the programs pass (in _served).
        served = not options.time_all and not options.long_lived and not _xdist(options.pytest_args)
        found = _nothing_timed([], "")
        if options.time_all or served:
            found = _timed(options, root, sides, tmp, log, on_round, start=start, programs=served)
        elif (left := _left_to_time(options, root, sides, tmp, log))[3]:
            found = _timed(left[0], root, sides, tmp, log, on_round, start=start)
            found.kernels += left[1]
        else:
            found = _nothing_timed(left[1], left[2])
    hardware = next((r.result.hardware.name for r in found.last_head.records), "") or found.device
    comparison = Comparison(options.base, commit, head_commit, dirty, found.rounds, options.rounds,
                            stopped=found.stopped, kernels=tuple(found.kernels), seconds=time.perf_counter() - start,
                            side_seconds=found.spent, hardware=hardware, schedule=found.schedule)
    return comparison, found.last_head


def _nothing_timed(untimed: list[PairedKernel], device: str) -> _Found:
    return _Found(untimed, 0, "every kernel compiles to the same program on both sides", (0.0, 0.0),
                  Run("", "", None, False, None, {}, records=()), device=device)


def _left_to_time(options: AbOptions, root: Path, sides: tuple[_Side, _Side], tmp: Path,
                  log: Callable[[str], None]) -> tuple[AbOptions, list[PairedKernel], str, bool]:
    """The programs pass: the options with the tests whose programs are the same left out, those tests' kernels'
    verdicts, the device, and whether any test is left to time."""
    diff, device, seconds = programs_pass(
        [(s.name, s.label, s.cwd) for s in sides],
        lambda name: _command(sides[name == "head"], root, options.pytest_args, tmp / f"programs-{name}-report.json"),
        child_env(_child_env(), tmp / "jax-cache"), tmp)  # the rounds then load their programs from JAX's cache
    if not diff.kernels and not diff.timed:
        raise CliError(NOTHING_MEASURED)
    log(programs_line(diff, seconds))
    options = dataclasses.replace(options, pytest_args=(*options.pytest_args, *deselect_args(diff.untimed)))
    return options, untimed_kernels(diff), device, bool(diff.timed)


def _timed(options: AbOptions, root: Path, sides: tuple[_Side, _Side], tmp: Path, log: Callable[[str], None],
           on_round: Callable[[int], None] | None, *, start: float, programs: bool = False) -> _Found:
    """The timed rounds of the tests left to time, in the schedule asked for (``programs``: the first pair's
    preparation is the programs pass that chooses them)."""
    found = None
    if not _xdist(options.pytest_args):  # xdist's workers cannot serve: fresh processes that run to their end
        found = _served(options, root, sides, tmp, log, on_round, start=start, programs=programs)
    if found is None and programs:  # no pair could serve: the programs pass in processes of its own first
        options, untimed, device, to_time = _left_to_time(options, root, sides, tmp, log)
        if not to_time:
            return _nothing_timed(untimed, device)
        found = _rounds(options, root, sides, tmp, log, on_round, start=start)
        found.kernels += untimed
        return found
    if found is None or found.fallback:
        args = options.pytest_args if found is None else (*options.pytest_args, *found.deselect)
        rounds = _rounds(dataclasses.replace(options, pytest_args=args), root, sides, tmp, log, on_round, start=start)
        found = rounds if found is None else _merged(found, rounds)
    return found


@dataclass
class _Found:
    """What either schedule found: the kernels' verdicts, the rounds, why they stopped, the seconds spent per
    side, the head's last records (for the HTML report), the tests left to per-round processes."""

    kernels: list[PairedKernel]
    rounds: int
    stopped: str
    spent: tuple[float, float]
    last_head: Run
    schedule: str = "rounds"
    _: KW_ONLY  # fields from the seventh on are given by keyword
    fallback: tuple[str, ...] = ()
    deselect: tuple[str, ...] = ()  # for the per-round processes: every collected test but the fallback's
    device: str = ""  # the programs pass's, where nothing was timed


def _merged(served: _Found, rounds: _Found) -> _Found:
    return _Found([*served.kernels, *rounds.kernels], max(served.rounds, rounds.rounds),
                  f"{served.stopped}; {len(served.fallback)} in per-round processes: {rounds.stopped}",
                  (served.spent[0] + rounds.spent[0], served.spent[1] + rounds.spent[1]), served.last_head,
                  served.schedule, device=served.device)


def _served(options: AbOptions, root: Path, sides: tuple[_Side, _Side], tmp: Path, log: Callable[[str], None],
            on_round: Callable[[int], None] | None, *, start: float, programs: bool = False) -> _Found | None:
    """The rounds in pairs of processes that serve requests (one round per pair, or two with ``long_lived``); None
    where a side cannot serve (then processes that run to their end time it, said in the log). ``programs``: the
    first pair's preparation is the programs pass; only the tests it leaves to time are timed."""
    extra = ["-p", "no:cacheprovider", *(arg for name in QUIET_OUTPUTS for arg in ("-o", f"roofline_{name}="))]
    if importlib.util.find_spec("xdist") is not None and "no:xdist" not in options.pytest_args:
        extra += ["-n", "0"]  # over an ini file's -n: a serving process runs its tests itself
    described = [(s.name, s.label, s.cwd, s.base_root) for s in sides]
    env = child_env(_child_env(), tmp / "jax-cache")
    # The default: each round a fresh pair of processes that compile at the same time and then measure in turn.
    prepare, pair_rounds, unit = (False, PAIR_ROUNDS, "pairs") if options.long_lived else (True, 1, "rounds")
    args = list(options.pytest_args)  # later pairs: without the tests the programs pass leaves out

    def start_pair(first: bool = False) -> tuple[Server, Server]:
        return start_servers(described, root, args, extra, env, tmp, child=CHILD, prepare=prepare, hardware_alone=first,
                             first=first and programs)

    try:
        first = start_pair(first=True)
    except ServeUnavailable as exc:
        log(f"processes that serve a round unavailable ({exc}): each round in processes that run to their end")
        return None
    base, head = first
    if options.long_lived:
        log(f"kernel by kernel in pairs of long-lived processes: {len(head.items)} tests collected at the head, "
            f"{len(base.items)} at the base")
    untimed, device, timed = _chosen(first, start, log) if programs else ([], "", None)
    if timed is not None:  # the first pair's programs pass chose them
        args += deselect_args([n for n in dict.fromkeys([*head.items, *base.items]) if n not in timed])
        if not timed:
            base.stop()
            head.stop()
            return _nothing_timed(untimed, device)
    try:
        outcome = served_kernels(first, start_pair, options.rounds, options.max_drop, log, on_round,
                                 over_budget=lambda last, pairs: _over_budget(options.budget_s, start, last, pairs,
                                                                              unit),
                                 pair_rounds=pair_rounds, timed=timed)
    except ServeUnavailable as exc:
        raise CliError(f"a pytest process of a round stopped: {exc}") from None
    if not outcome.kernels and not outcome.fallback and not untimed:
        raise CliError(NOTHING_MEASURED)
    last = Run("the head's long-lived process", "", None, False, None, {}, records=tuple(outcome.last_head))
    others = [n for n in dict.fromkeys([*head.items, *base.items]) if n not in outcome.fallback]
    return _Found([*outcome.kernels, *untimed], outcome.rounds, outcome.stopped, outcome.seconds, last,
                  "kernels" if options.long_lived else "rounds", device=device,
                  fallback=tuple(outcome.fallback), deselect=tuple(a for n in others for a in ("--deselect", n)))


def _chosen(first: tuple[Server, Server], start: float,
            log: Callable[[str], None]) -> tuple[list[PairedKernel], str, list[str]]:
    """The first pair's programs pass: the verdicts of the kernels not timed, the hardware, the tests to time. Both
    processes then prepare those tests, at once (where there are none, the caller stops the pair)."""
    try:
        diff, hardware = first_pair_programs(*first)
    except CliError:
        for server in first:
            server.stop()
        raise
    timed = list(diff.timed)
    if not diff.kernels and not timed:
        for server in first:
            server.stop()
        raise CliError(NOTHING_MEASURED)
    if timed:
        for server in first:
            server.prepare(timed)
        for server in first:
            server.prepared()
    log(programs_line(diff, time.perf_counter() - start, first_pair=True))
    return untimed_kernels(diff), hardware, timed


def _xdist(pytest_args: Sequence[str]) -> bool:
    """Whether the pytest arguments ask for xdist's workers (``-n``, ``--numprocesses``, ``--dist``)."""
    return any(a.startswith(("-n", "--numprocesses", "--dist")) for a in pytest_args)


def _rounds(options: AbOptions, root: Path, sides: tuple[_Side, _Side], tmp: Path, log: Callable[[str], None],
            on_round: Callable[[int], None] | None, *, start: float) -> _Found:
    """Rounds in fresh processes, each running the tests not yet settled, until every verdict settles, the rounds
    run out or the next round would overrun the budget."""
    base, head = sides
    pairs: list[tuple[RoundReport, RoundReport]] = []
    spent = {"base": 0.0, "head": 0.0}
    kernels: list[PairedKernel] = []
    last_head: Run | None = None
    stopped = f"{options.rounds} rounds run"
    done: list[str] = []  # tests whose kernels are all settled: left out of the later rounds
    last_round = 0.0
    for index, order in enumerate(schedule(options.rounds)):
        if index and (why := _over_budget(options.budget_s, start, last_round, index)):
            stopped = why
            break
        if on_round is not None:
            on_round(index)
        runs: dict[str, Run] = {}
        round_start = time.perf_counter()
        for name in order:
            side = base if name == "base" else head
            args = (*options.pytest_args, *deselect_args(done))
            runs[name], seconds = _run_side(side, root, args, tmp / f"{index}-{name}.json")
            spent[name] += seconds
        last_round = time.perf_counter() - round_start
        last_head = runs["head"]
        pairs.append((RoundReport.of(runs["base"].records, runs["base"].unmeasured),
                      RoundReport.of(runs["head"].records, runs["head"].unmeasured)))
        kernels = [judge_kernel(k, options.max_drop) for k in collect(pairs)]
        if index == 0 and not kernels:
            raise CliError(NOTHING_MEASURED)
        done = settled_tests(kernels)
        log(round_line(index, options.rounds, last_round, kernels))
        if index + 1 >= MIN_ROUNDS and settled(kernels):
            stopped = f"every verdict settled after {index + 1} rounds"
            break
    assert last_head is not None
    return _Found(kernels, len(pairs), stopped, (spent["base"], spent["head"]), last_head)


def _over_budget(budget_s: float | None, start: float, last: float, done: int, unit: str = "rounds") -> str:
    """Why no round (or pair of processes) starts now ("" where one may): the next, as long as the last, would
    end past the budget."""
    if budget_s is None:
        return ""
    elapsed = time.perf_counter() - start
    if elapsed + last <= budget_s:
        return ""
    return (f"the budget of {budget_s:.0f} s ran out after {done} {unit} ({elapsed:.0f} s spent, the last took "
            f"{last:.0f} s)")


def ab_command(options: AbOptions, json_path: str | None, html_path: str | None,
               summary_md: str | None = None) -> tuple[str, int]:
    """Run the comparison, write ``--json``, ``--html`` and ``--summary-md``; the table and the exit status."""
    if html_path is not None and (missing := plotly_missing()) is not None:
        raise CliError(f"--html {html_path}: {missing}")
    for option, path in (("--json", json_path), ("--html", html_path)):
        if path is not None and (why := check_writable(path)) is not None:
            raise CliError(f"{option} {path}: cannot write it: {why}")
    check_summary(summary_md)
    comparison, head = run_ab(options, Path.cwd(), lambda line: print(line, file=sys.stderr, flush=True))
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
