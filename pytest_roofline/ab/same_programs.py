"""Which kernels two revisions compile to the same program (``pytest-roofline ab``'s programs pass). Pure.

Each side runs the selected tests once with nothing timed: every ``roofline(...)`` call compiles its kernel and
records the program's fingerprint (``measurement/fingerprint.py``). A test whose kernels all have the same
fingerprints on both sides, and which ran to its end on both (so that no kernel after the last one seen could
differ), is not timed. A test that stopped before its end (it read a result, which the pass does not measure, or
it failed) is timed, as are tests with a changed, added or removed kernel beside others; a test on one side only
is listed as added or removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ProgramsOfTest",
    "ProgramsPass",
    "ProgramDiff",
    "KernelChange",
    "compare_programs",
    "deselect_args",
]

KernelChange = Literal["same", "changed", "added", "removed"]


@dataclass(frozen=True)
class ProgramsOfTest:
    """One test in a programs pass: its kernels' fingerprints by label, in call order, and whether it ran to its
    end (``complete``). ``stopped``: why it did not, where it did not."""

    nodeid: str
    kernels: Mapping[str, str] = field(default_factory=dict)
    complete: bool = True
    stopped: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"nodeid": self.nodeid, "kernels": dict(self.kernels), "complete": self.complete,
                "stopped": self.stopped}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProgramsOfTest:
        kernels = data.get("kernels") or {}
        if not isinstance(kernels, Mapping):
            raise TypeError(f"kernels of {data.get('nodeid')!r} is not a mapping")
        return cls(str(data["nodeid"]), {str(k): str(v) for k, v in kernels.items()}, bool(data["complete"]),
                   str(data.get("stopped") or ""))


@dataclass(frozen=True)
class ProgramsPass:
    """One side's programs pass: every test that uses the plugin, by node id; the device it compiled for."""

    tests: Mapping[str, ProgramsOfTest]
    device: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"programs_pass": 1, "device": self.device, "tests": [t.to_dict() for t in self.tests.values()]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProgramsPass:
        if data.get("programs_pass") != 1:
            raise ValueError("not a programs pass (no \"programs_pass\": 1)")
        tests = [ProgramsOfTest.from_dict(t) for t in data.get("tests") or ()]
        return cls({t.nodeid: t for t in tests}, str(data.get("device") or ""))


@dataclass(frozen=True)
class ProgramDiff:
    """What the two passes found: each kernel's change, the tests to time (with why), the tests not to."""

    kernels: Mapping[tuple[str, str], KernelChange]  # (nodeid, label) -> its change
    timed: Mapping[str, str]  # test -> why it is timed
    untimed: tuple[str, ...]  # tests on both sides with the same programs, or on one side only

    def of(self, change: KernelChange) -> list[tuple[str, str]]:
        return [key for key, found in self.kernels.items() if found == change]


def _kernel_changes(nodeid: str, base: Mapping[str, str], head: Mapping[str, str]) -> dict[tuple[str, str],
                                                                                            KernelChange]:
    out: dict[tuple[str, str], KernelChange] = {}
    for label in dict.fromkeys([*base, *head]):
        if label not in head:
            out[(nodeid, label)] = "removed"
        elif label not in base:
            out[(nodeid, label)] = "added"
        else:
            same = base[label] == head[label] and bool(base[label])
            out[(nodeid, label)] = "same" if same else "changed"
    return out


def _why_timed(base: ProgramsOfTest, head: ProgramsOfTest, changes: Mapping[tuple[str, str], KernelChange]) -> str:
    """Why a test on both sides is timed; "" where it need not be."""
    stopped = [f"{side}: {t.stopped or 'stopped before its end'}" for side, t in (("base", base), ("head", head))
               if not t.complete]
    if stopped:
        return "the programs pass could not see all its kernels (" + "; ".join(stopped) + ")"
    moved = [f"{label} {change}" for (_, label), change in changes.items() if change != "same"]
    return "program " + ", ".join(moved) if moved else ""


def compare_programs(base: ProgramsPass, head: ProgramsPass) -> ProgramDiff:
    """Each kernel's change and the tests that need timing."""
    kernels: dict[tuple[str, str], KernelChange] = {}
    timed: dict[str, str] = {}
    untimed: list[str] = []
    for nodeid in dict.fromkeys([*base.tests, *head.tests]):
        b, h = base.tests.get(nodeid), head.tests.get(nodeid)
        if b is None or h is None:
            kept = h if b is None else b
            assert kept is not None
            kernels.update({(nodeid, label): "added" if b is None else "removed" for label in kept.kernels})
            untimed.append(nodeid)
            continue
        changes = _kernel_changes(nodeid, b.kernels, h.kernels)
        kernels.update(changes)
        why = _why_timed(b, h, changes)
        if why:
            timed[nodeid] = why
        else:
            untimed.append(nodeid)
    return ProgramDiff(kernels, timed, tuple(untimed))


def deselect_args(nodeids: Sequence[str]) -> list[str]:
    """pytest's arguments that leave ``nodeids`` out."""
    return [arg for nodeid in nodeids for arg in ("--deselect", nodeid)]
