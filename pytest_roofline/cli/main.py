"""Argument parsing and dispatch of ``pytest-roofline``. A bad file or argument is one line on stderr and exit
code 2, never a traceback."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..base import values
from ..history.paired import DEFAULT_MAX_DROP, DEFAULT_ROUNDS, MIN_ROUNDS
from . import report_commands
from .analyze import analyze_hlo, analyze_profile
from .errors import CliError

__all__ = ["main"]

T = TypeVar("T")


STRICT = ("also exit 1 for a kernel that could not be judged: a gate too noisy to fire, or a drop beyond the floor "
          "that the noise hides (undecided)")


SUMMARY_NOTE = "for a CI job's summary; also appended to $GITHUB_STEP_SUMMARY when that is set"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-roofline", description="Roofline tools that work on files.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    analyze = commands.add_parser(
        "analyze", help="the roofline of the programs in a JAX profile (.xplane.pb) or an HLO dump",
        description="Read a profile written by jax.profiler (an .xplane.pb file, or a directory holding one) and "
                    "list every program in it: devices, runs, device time per run, counts from the HLO the "
                    "profile embeds and, with the hardware known, utilization. --program prints one program's "
                    "per-op roofline table. --hlo FILE counts an optimized HLO text dump instead.")
    analyze.add_argument("profile", nargs="?", help=".xplane.pb file or a directory holding one")
    analyze.add_argument("--program", metavar="MODULE[:PROGRAM_ID]", help="one program's per-op table")
    analyze.add_argument("--hlo", metavar="FILE", help="an optimized HLO text dump (XLA_FLAGS=--xla_dump_to)")
    analyze.add_argument("--hardware", metavar="NAME", help="a hardware table entry (default: from the profile)")
    analyze.add_argument("--hardware-file", metavar="YAML", help="extra hardware entries, as in hardware.yaml")
    analyze.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    analyze.add_argument("--top", type=_positive, default=10, metavar="N", help="ops shown with --program (default 10)")
    show = commands.add_parser("show", help="print a JSON report (--roofline-report) as the summary table",
                               description="Print a report's run (time, commit, pytest exit status, whether "
                                           "complete) and its roofline summary, worst first.")
    show.add_argument("report", help="a JSON report written by --roofline-report or --roofline-history")
    show.add_argument("--all", action="store_true", help="every program of a survey, not only the first 20")
    _add_compare(commands)
    hist = commands.add_parser(
        "history", help="per-kernel series of a history directory, change points, regressions; exit 1 on one",
        description="Read every report of a --roofline-history directory; per kernel (and hardware, ceilings, "
                    "model, jax version) show the series, its change points (E-divisive with a t-test) and its "
                    "minimum detectable drop, and judge the latest run against the runs before it. Incomplete "
                    "runs are listed and left out. Exit status 1 when a series' latest run is a regression.")
    hist.add_argument("directory", help="the --roofline-history directory")
    hist.add_argument("--last", type=_positive, default=30, metavar="N", help="values shown per sparkline (default 30)")
    hist.add_argument("--max-compile", type=_ratio, metavar="RATIO",
                      help="also a regression: a latest compile time above RATIO x the median of the runs before "
                           "it (off unless given)")
    hist.add_argument("--strict", action="store_true", help=STRICT)
    html = commands.add_parser(
        "html", help="a self-contained HTML report with roofline charts (pip install 'pytest-roofline[html]')",
        description="Write one HTML file that opens with no network: the sortable summary, the program-level "
                    "roofline chart, the op-level chart of each failing kernel, the hardware and the sources of "
                    "its ceilings, links to saved traces, and with --history a sparkline per kernel.")
    html.add_argument("report", help="a JSON report")
    html.add_argument("--history", metavar="DIR", help="a --roofline-history directory for the sparklines")
    html.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    export = commands.add_parser("export", help="a report in another tool's format, on stdout",
                                 description="github-action-benchmark: a JSON list of {name, unit, value, range, "
                                             "extra}, utilization in percent (use tool: customBiggerIsBetter).")
    export.add_argument("report", help="a JSON report")
    export.add_argument("--format", required=True, choices=["github-action-benchmark"], help="the output format")
    _add_ab(commands)
    _add_suggest(commands)
    _add_noise(commands)
    return parser


def _add_noise(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noise = commands.add_parser(
        "noise", help="A/A rounds on this runner: how often ab's gate would call a regression with nothing changed, "
                      "and the smallest drop it can call",
        usage="pytest-roofline noise [--rounds N] [--comparisons C] [--max-drop F] [--json FILE] [-- PYTEST_ARGS]",
        description="Run the selected tests (PYTEST_ARGS, after --) in two fresh pytest processes of the same "
                    "working tree per round, in alternating order, as ab runs a base and a head, every kernel "
                    "measured once per process. Then, per kernel, draw COMPARISONS comparisons from the rounds, each "
                    "judged as ab judges one, and print how many called a regression (false alarms: nothing "
                    "changed), the smallest drop the gate can call from all the rounds, and the smallest max_drop "
                    "at which none of the comparisons called one.")
    noise.add_argument("--rounds", type=_positive, default=12, metavar="N",
                       help=f"A/A rounds, two processes each (default 12, at least {MIN_ROUNDS})")
    noise.add_argument("--comparisons", type=_positive, default=20, metavar="C",
                       help="comparisons drawn per kernel (default 20)")
    noise.add_argument("--max-drop", type=_fraction, metavar="F",
                       help=f"the floor to judge with (default: each kernel's max_drop setting, else "
                            f"{DEFAULT_MAX_DROP})")
    noise.add_argument("--json", metavar="FILE", help="also write the study as JSON")


def _add_suggest(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    suggest = commands.add_parser(
        "suggest", help="thresholds for the programs a survey found (--roofline-survey), as the YAML config's "
                        "programs: section",
        description="Read the survey in each REPORT (pytest --roofline-survey --roofline-report=REPORT; one per "
                    "platform) and write a threshold for each program kept: the top N by time lost, and those "
                    "named by --program (patterns on the program's name, e.g. 'jit_attention*'). Each threshold is "
                    "--share of the program's median utilization on its platform, with the reason in a comment. "
                    "The next run with --roofline-survey and that config fails a test that runs one of them below "
                    "it.")
    suggest.add_argument("reports", nargs="+", metavar="REPORT", help="a JSON report holding a survey")
    suggest.add_argument("--top", type=_positive, metavar="N",
                         help="keep the N programs that lost the most time (default 10 where no --program is given)")
    suggest.add_argument("--program", action="append", default=[], metavar="PATTERN",
                         help="keep the programs of these names (repeatable)")
    suggest.add_argument("--share", type=_share, default=0.5, metavar="F",
                         help="the threshold as a share of the measured median, in (0, 1] (default 0.5)")
    suggest.add_argument("-o", "--output", metavar="FILE",
                         help="write into this YAML config (its other settings kept; its programs: section "
                              "replaced) instead of printing")


def _add_compare(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    compare = commands.add_parser(
        "compare", help="compare a report with a baseline; exit 1 on a regression",
        description="Compare each kernel of CURRENT with BASELINE (a report, or a history directory whose recent "
                    "complete runs form the baseline) through the noise-aware gate of --roofline-baseline. "
                    "Exit status 1 when a kernel regressed, 0 otherwise, 2 for a missing or foreign file.")
    compare.add_argument("baseline", help="a report or a history directory")
    compare.add_argument("current", help="a report")
    compare.add_argument("--max-drop", type=_fraction, metavar="FRACTION",
                         help="the gate's floor (default 0.05 against a history, 0.10 against one report)")
    compare.add_argument("--max-compile", type=_ratio, metavar="RATIO",
                         help="also a regression: a kernel's compile time above RATIO x the baseline's median "
                              "(off unless given)")
    compare.add_argument("--strict", action="store_true", help=STRICT)
    compare.add_argument("--summary-md", metavar="FILE",
                         help=f"also write the verdicts as a Markdown table ({SUMMARY_NOTE})")


def _add_ab(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ab = commands.add_parser(
        "ab", help="compare two revisions on this machine: alternating pytest processes, a paired verdict per kernel",
        usage="pytest-roofline ab --base REV [--rounds N] [--max-drop F] [--budget TIME] [--time-all] "
              "[--long-lived] [--json FILE] [--html FILE] [--summary-md FILE] [-- PYTEST_ARGS]",
        description="Check REV out into a temporary git worktree and run the selected tests (PYTEST_ARGS, after --) "
                    "from it and from the working tree. First both sides compile every kernel (nothing timed): a "
                    "kernel whose compiled program is the same on both sides is not timed. The others are timed in "
                    "alternating fresh pytest processes (base-head, head-base, ...), each side importing its own "
                    "code. Per kernel: head/base utilization per round, the median and its 95% interval; a "
                    "regression when the interval lies below 1 - max_drop. A test leaves the rounds once its "
                    "kernels' intervals lie wholly on one side of that gate. Exit status 1 on a regression, 0 "
                    "otherwise, 2 for a usage error.")
    ab.add_argument("--base", required=True, metavar="REV", help="the revision to compare with (e.g. origin/main)")
    ab.add_argument(
        "--rounds",
        type=_positive,
        default=DEFAULT_ROUNDS,
        metavar="N",
        help=f"the most rounds (two processes each) to run (default {DEFAULT_ROUNDS}, at least {MIN_ROUNDS}; "
        f"{2 * MIN_ROUNDS} with --long-lived)",
    )
    ab.add_argument("--max-drop", type=_fraction, metavar="F",
                    help="the floor for every kernel (default: its max_drop setting - marker, YAML, "
                         f"--roofline-max-drop - else {DEFAULT_MAX_DROP})")
    ab.add_argument("--long-lived", action="store_true",
                    help="pairs of long-lived pytest processes, one per side, each running every test not yet "
                         "settled for two rounds (base-head, head-base) before the next pair starts; each pair's "
                         "mean ratio is one unit of the interval, since two processes keep offsets of their own")
    ab.add_argument("--budget", type=_duration, metavar="TIME",
                    help="bound the whole comparison (e.g. 300s, 5m): no round starts that would end past it; "
                         "kernels still open then are undecided")
    ab.add_argument("--time-all", action="store_true",
                    help="time every kernel, also those whose compiled program is the same on both sides")
    ab.add_argument("--strict", action="store_true", help=STRICT)
    ab.add_argument("--summary-md", metavar="FILE",
                    help=f"also write the verdicts as a Markdown table ({SUMMARY_NOTE})")
    ab.add_argument("--json", metavar="FILE", help="also write the comparison as JSON")
    ab.add_argument("--html", metavar="FILE", help="also write the HTML report with the comparison first")


def _argument(check: Callable[[Any], T]) -> Callable[[str], T]:
    """An argparse type from a check of :mod:`pytest_roofline.base.values`."""

    def parse(text: str) -> T:
        try:
            return check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


_positive = _argument(values.whole_number)
_fraction = _argument(values.max_drop)
_ratio = _argument(values.ratio_above_one)
_duration = _argument(values.duration)
_share = _argument(values.threshold)


# The exit status of a command whose reader closed the pipe early (``pytest-roofline show R | head``): a process
# ended by SIGPIPE's, with no traceback.
CLOSED_PIPE = 128 + 13


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; a reader that stops reading early ends it quietly."""
    try:
        status = _main(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # inside the try: a closed pipe shows here, not at the interpreter's exit
        return status
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at /dev/null so that this flush cannot fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return CLOSED_PIPE


def _main(argv: list[str]) -> int:
    passed: list[str] = []
    if "--" in argv:  # what follows goes to pytest untouched
        argv, passed = argv[: argv.index("--")], argv[argv.index("--") + 1:]
    args = _parser().parse_args(argv)
    if passed and args.command not in ("ab", "noise"):
        _parser().error(f"arguments after -- are for ab and noise only: {' '.join(passed)}")
    try:
        if args.command == "analyze":
            if args.hlo and args.profile:
                raise CliError("give a PROFILE or --hlo FILE, not both")
            if args.hlo:
                out = analyze_hlo(args.hlo, args.hardware, args.hardware_file, args.json, args.top)
            elif args.profile:
                out = analyze_profile(args.profile, args.program, args.hardware, args.hardware_file, args.json,
                                      args.top)
            else:
                raise CliError("analyze needs a PROFILE (.xplane.pb or a directory holding one) or --hlo FILE")
            print(out)
            return 0
        if args.command == "show":
            out, status = report_commands.show(args.report, args.all)
        elif args.command == "compare":
            out, status = report_commands.compare(args.baseline, args.current, args.max_drop, args.max_compile,
                                                  args.strict, args.summary_md)
        elif args.command == "history":
            out, status = report_commands.history(args.directory, args.last, args.max_compile, args.strict)
        elif args.command == "ab":
            out, status = _ab(args, passed)
        elif args.command == "export":
            out, status = report_commands.export(args.report, args.format)
        elif args.command == "noise":
            from .noise import noise_command

            if (off := plugin_turned_off(passed)) is not None:
                raise CliError(f"the pytest arguments after -- turn pytest-roofline off ({off}): drop {off}")
            out, status = noise_command(args.rounds, args.comparisons, args.max_drop, passed, args.json)
        elif args.command == "suggest":
            out, status = report_commands.suggest(args.reports, args.top, args.program, args.share, args.output)
        else:  # html
            from .html import html_command

            out, status = html_command(args.report, args.history, args.output)
        if out:
            print(out)
        return status
    except CliError as exc:
        print(f"pytest-roofline {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 2


def plugin_turned_off(pytest_args: Sequence[str]) -> str | None:
    """The pytest arguments that turn pytest-roofline off (``-p no:roofline``, ``-pno:roofline``), or None."""
    for n, arg in enumerate(pytest_args):
        name = pytest_args[n + 1] if arg == "-p" and n + 1 < len(pytest_args) else \
            arg[2:] if arg.startswith("-p") else None
        if name is not None and name.strip() in ("no:roofline", "no:pytest_roofline"):
            return f"-p {name.strip()}"
    return None


def _ab(args: argparse.Namespace, passed: list[str]) -> tuple[str, int]:
    """``ab``, with SIGTERM (a cancelled CI job) handled as Ctrl-C so that its worktree is removed."""
    from .ab.driver import AbOptions, ab_command

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if (off := plugin_turned_off(passed)) is not None:
        raise CliError(f"the pytest arguments after -- turn pytest-roofline off ({off}), and ab measures kernels "
                       f"with it: drop {off}")
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        options = AbOptions(args.base, args.rounds, args.max_drop, tuple(passed), long_lived=args.long_lived,
                            strict=args.strict, time_all=args.time_all, budget_s=args.budget)
        return ab_command(options, args.json, args.html, args.summary_md)
    except KeyboardInterrupt:
        print("pytest-roofline ab: interrupted; its temporary worktree was removed", file=sys.stderr)
        return "", 2
    finally:
        signal.signal(signal.SIGTERM, previous)
