"""The walk of ``pytest-roofline ab`` from its command line to its verdict, as a reader following the code meets it:
a comparison of bench/ab_demo.py's repository (its second commit, ``total`` made slower, against its first),
with every function of the package traced in the driver and in each side's processes.

Read off the trace, for the driver and, across the process boundary, for the sides' processes:

- the walk: each function of the package in the order it is first called, as the module it lies in;
- rooms: the modules the walk enters (module-level code aside), read in the layers that make up ab's structure (the
  driver: cli, history, report; the sides: plugin, history), and for the driver in every layer too; stays: the walk's
  runs in one module (entering a module again is a new stay);
- climbs back: the calls from a module into one that is already below it on the call stack (a callback, a lambda
  handed down, a helper of the caller's module called from below), each pair of modules once;
- the module list of each side, and for the driver the modules it enters most often.

Run it on a tree to measure that tree's code (its package first on the path, so that the sides' processes run it
too)::

    PYTHONPATH=/path/to/tree python bench/ab_walk.py [--rounds N]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from ab_demo import build

PACKAGE = "pytest_roofline"
TRACER = '''
import atexit, json, os, sys, threading
_out = os.environ.get("AB_WALK_OUT")
if _out:
    _seen, _walk, _climbs, _stack = set(), [], set(), []
    def _module(frame):
        name = frame.f_globals.get("__name__", "")
        return name if name.startswith("pytest_roofline") or frame.f_code.co_filename.endswith("ab/child.py") else ""
    def _tracer(frame, event, arg):
        if event == "call":
            module = _module(frame) if frame.f_code.co_name != "<module>" else ""
            if module:
                if _stack and module != _stack[-1] and module in _stack[:-1]:
                    _climbs.add((_stack[-1], module))
                key = (frame.f_code.co_filename, frame.f_code.co_firstlineno)
                if key not in _seen:
                    _seen.add(key)
                    _walk.append(module)
            _stack.append(module or (_stack[-1] if _stack else ""))
        elif event == "return" and _stack:
            _stack.pop()
    def _write():
        sys.setprofile(None)
        path = f"{_out}.{os.getpid()}.json"
        with open(path, "w") as f:
            json.dump({"argv": sys.argv, "walk": _walk, "climbs": sorted(_climbs)}, f)
    atexit.register(_write)
    sys.setprofile(_tracer)
'''


def _stays(walk: list[str]) -> list[str]:
    return [m for i, m in enumerate(walk) if i == 0 or walk[i - 1] != m]


# The layers whose modules make up ab's structure on each side (the others hold data types, the model and the
# measurement, which both versions share): the walk is read in these; "every layer" reads them all.
DRIVER_LAYERS = ("cli", "history", "report")
SIDE_LAYERS = ("plugin", "history")


def _summary(name: str, walks: list[dict[str, Any]], layers: tuple[str, ...]) -> list[str]:
    keep = tuple(f"{PACKAGE}.{layer}" for layer in layers)
    walk = [m for w in walks for m in w["walk"] if m and (not keep or m.startswith(keep) or "child" in m)]
    stays = _stays(walk)
    climbs = sorted({tuple(c) for w in walks for c in w["climbs"]
                     if not keep or all(m.startswith(keep) or "child" in m for m in c)})
    entered = collections.Counter(stays)
    rooms = sorted(set(walk))
    each = sorted(len(_stays([m for m in w["walk"] if m in set(rooms)])) for w in walks)
    per = f"; stays per process {each[0]}-{each[-1]}, median {each[len(each) // 2]}" if len(walks) > 1 else ""
    lines = [f"{name}: {len(rooms)} rooms, {len(stays)} stays, {len(climbs)} climbs back "
             f"({len(walks)} process{'es' if len(walks) != 1 else ''}{per})",
             "  most entered: " + ", ".join(f"{m.removeprefix(PACKAGE + '.')} {n}" for m, n in entered.most_common(6)),
             "  climbs back: " + ("; ".join(f"{a.removeprefix(PACKAGE + '.')} -> {b.removeprefix(PACKAGE + '.')}"
                                           for a, b in climbs) or "none"),
             "  modules: " + ", ".join(m.removeprefix(PACKAGE + ".") for m in rooms)]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ab-walk-"))
    repo = work / "repo"
    build(repo)
    hooks = work / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(TRACER)
    out = work / "walk"
    os.environ["PYTHONPATH"] = os.pathsep.join([str(hooks), *filter(None, [os.environ.get("PYTHONPATH", "")])])
    os.environ["AB_WALK_OUT"] = str(out)
    sys.path.insert(0, str(hooks))
    import sitecustomize  # noqa: F401 - the tracer, in this process too

    from pytest_roofline.cli.main import main as cli

    os.chdir(repo)
    try:
        status = cli(["ab", "--base", "HEAD~1", "--rounds", str(args.rounds)])
    finally:
        threading.settrace(None)
    sys.setprofile(None)
    sitecustomize._write()  # type: ignore[attr-defined]
    found = [json.loads(p.read_text()) for p in sorted(work.glob("walk.*.json"))]
    driver = [f for f in found if f["argv"][0].endswith("ab_walk.py")]
    sides = [f for f in found if f not in driver]  # a side's script sets its argv to pytest's
    print(f"ab exit status {status}; {len(sides)} side processes traced")
    for line in (_summary("driver", driver, DRIVER_LAYERS) + _summary("driver, every layer", driver, ())
                 + _summary("side processes", sides, SIDE_LAYERS)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
