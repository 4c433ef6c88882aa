"""Argument parsing and dispatch of ``pytest-roofline``. A bad file or argument is one line on stderr and exit
code 2, never a traceback."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .analyze import CliError, analyze_hlo, analyze_profile

__all__ = ["main"]


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
    analyze.add_argument("--top", type=int, default=10, metavar="N", help="ops shown with --program (default 10)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
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
    except CliError as exc:
        print(f"pytest-roofline {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 2
