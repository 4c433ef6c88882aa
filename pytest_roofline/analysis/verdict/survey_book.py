"""Every jitted program a test suite runs (``--roofline-survey``). Pure.

A *sighting* is one compiled program seen in one test's profile: its runs' device times, its counts as they ran
(loops and branches as the trace shows them) and its roofline. The *book* keeps each program once, by its
fingerprint (the optimized HLO less names and source locations, on one platform), with the tests that ran it and
how often; its utilization is that of its median run, and its time lost (device time minus roofline time, summed
over every run) orders the table, worst first. A program whose median run is under :data:`SMALL_S` is too small to
judge (a launch or a copy's worth of time, in which dispatch and the profiler's own resolution dominate): it is
counted apart, never judged.

A threshold for a program comes from the YAML config's ``programs:`` section (patterns on the program's name,
matched as ``fnmatch`` does) or from the suite's ``--roofline-min``; :func:`below` says whether a test's runs of a
program fall under it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from statistics import median
from typing import Any

__all__ = ["SMALL_S", "Sighting", "SurveyedProgram", "SurveyBook", "Below", "program_setting", "below", "merged",
           "by_test"]

SMALL_S = 20e-6  # a program whose median run is shorter is too small to judge
# A test is profiled in full for this long; one that runs longer is then profiled in windows (survey/watch.py)
FULL_PROFILE_S = 2.0
_KEPT_RUNS = 2048  # per program: the run times kept for its median (every run is summed)


@dataclass(frozen=True)
class Sighting:
    """One program seen in one test: ``per_run_s`` the device time of each run (slowest device), ``roofline_s`` the
    roofline time of one run with the counts as they ran there (None where the hardware or the counts are unknown)."""

    fingerprint: str
    module: str  # the HLO module's name: jit_<function>
    nodeid: str
    per_run_s: tuple[float, ...]
    roofline_s: float | None
    platform: str = ""
    _: KW_ONLY
    flops: float = 0.0
    bytes_accessed: float = 0.0
    transcendentals: float = 0.0
    bound: str | None = None
    top_op: str = ""  # the op that lost the most time, in words
    notes: tuple[str, ...] = ()
    contended: bool = False  # the test's threads waited for a CPU that other processes held: not judged
    touch_s: float = 0.0  # a CPU's first touch of the result's pages, where fresh: not in the roofline

    @property
    def median_s(self) -> float:
        return median(self.per_run_s)

    @property
    def small(self) -> bool:
        return self.median_s < SMALL_S

    @property
    def utilization(self) -> float | None:
        if self.roofline_s is None or self.median_s <= 0:
            return None
        return self.roofline_s / self.median_s


def merged(a: Sighting, b: Sighting) -> Sighting:
    """Two sightings of one program in one test (the profile is read in parts where a measurement paused it)."""
    runs = len(a.per_run_s) + len(b.per_run_s)
    roof = None if a.roofline_s is None or b.roofline_s is None else (
        (a.roofline_s * len(a.per_run_s) + b.roofline_s * len(b.per_run_s)) / runs)
    notes = tuple(dict.fromkeys(a.notes + b.notes))
    return replace(b, per_run_s=a.per_run_s + b.per_run_s, roofline_s=roof, notes=notes, top_op=b.top_op or a.top_op)


@dataclass
class SurveyedProgram:
    """One compiled program over the whole run."""

    fingerprint: str
    module: str
    platform: str
    tests: dict[str, int] = field(default_factory=dict)  # nodeid -> runs in that test
    per_run_s: list[float] = field(default_factory=list)  # the first runs, up to _KEPT_RUNS
    device_s: float = 0.0  # every run's device time, summed
    _: KW_ONLY
    roofline_total_s: float | None = 0.0  # every run's roofline time, summed (None: unknown)
    flops: float = 0.0  # per run, as it ran in the last test that ran it
    bytes_accessed: float = 0.0
    transcendentals: float = 0.0
    counts_vary: bool = False  # the counts as they ran differ from test to test (loops, branches)
    bound: str | None = None
    top_op: str = ""
    notes: list[str] = field(default_factory=list)
    contended_runs: int = 0  # runs made while other processes held the CPUs
    touch_s: float = 0.0  # what the first touch of its result's fresh pages can take per run (a CPU), at most

    @property
    def utilization_with_touch(self) -> float | None:
        """Utilization had every run faulted its result's pages in (an upper end: the allocator may reuse them)."""
        roof = self.roofline_s
        return None if roof is None or not self.touch_s or self.median_s <= 0 else (roof + self.touch_s) / self.median_s

    @property
    def runs(self) -> int:
        return sum(self.tests.values())

    @property
    def median_s(self) -> float:
        return median(self.per_run_s) if self.per_run_s else 0.0

    @property
    def small(self) -> bool:
        return self.median_s < SMALL_S

    @property
    def roofline_s(self) -> float | None:
        """One run's roofline time (the mean over the runs, whose counts may differ where loops do)."""
        return None if self.roofline_total_s is None or not self.runs else self.roofline_total_s / self.runs

    @property
    def utilization(self) -> float | None:
        roof = self.roofline_s
        return None if roof is None or self.median_s <= 0 else roof / self.median_s

    @property
    def time_lost_s(self) -> float:
        return max(0.0, self.device_s - (self.roofline_total_s or 0.0)) if self.roofline_total_s is not None else 0.0

    def add(self, s: Sighting) -> None:
        if self.tests and (s.flops, s.bytes_accessed) != (self.flops, self.bytes_accessed):
            self.counts_vary = True
        self.tests[s.nodeid] = self.tests.get(s.nodeid, 0) + len(s.per_run_s)
        self.contended_runs += len(s.per_run_s) if s.contended else 0
        self.touch_s = max(self.touch_s, s.touch_s)
        self.per_run_s.extend(s.per_run_s[: max(0, _KEPT_RUNS - len(self.per_run_s))])
        self.device_s += sum(s.per_run_s)
        self.roofline_total_s = (None if s.roofline_s is None or self.roofline_total_s is None
                                 else self.roofline_total_s + s.roofline_s * len(s.per_run_s))
        self.flops, self.bytes_accessed, self.transcendentals = s.flops, s.bytes_accessed, s.transcendentals
        self.bound, self.top_op = s.bound, s.top_op or self.top_op
        self.notes.extend(n for n in s.notes if n not in self.notes)

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "module": self.module, "platform": self.platform,
                "tests": dict(self.tests), "runs": self.runs, "median_s": self.median_s, "device_s": self.device_s,
                "roofline_s": self.roofline_s, "roofline_total_s": self.roofline_total_s,
                "utilization": self.utilization, "time_lost_s": self.time_lost_s, "small": self.small,
                "flops": self.flops, "bytes_accessed": self.bytes_accessed, "transcendentals": self.transcendentals,
                "counts_vary": self.counts_vary, "bound": self.bound, "top_op": self.top_op, "notes": self.notes,
                "contended_runs": self.contended_runs, "first_touch_s": self.touch_s,
                "utilization_with_first_touch": self.utilization_with_touch,
                "per_run_s": list(self.per_run_s)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SurveyedProgram:
        return cls(str(d["fingerprint"]), str(d["module"]), str(d.get("platform", "")),
                   {str(k): int(v) for k, v in dict(d.get("tests") or {}).items()},
                   [float(x) for x in d.get("per_run_s") or ()], float(d.get("device_s") or 0.0),
                   roofline_total_s=None if d.get("roofline_total_s") is None else float(d["roofline_total_s"]),
                   flops=float(d.get("flops") or 0.0), bytes_accessed=float(d.get("bytes_accessed") or 0.0),
                   transcendentals=float(d.get("transcendentals") or 0.0), counts_vary=bool(d.get("counts_vary")),
                   bound=d.get("bound"), top_op=str(d.get("top_op") or ""), notes=list(d.get("notes") or ()),
                   contended_runs=int(d.get("contended_runs") or 0), touch_s=float(d.get("first_touch_s") or 0.0))


@dataclass
class Below:
    """A program whose runs fell below its threshold: in which tests, and its lowest utilization there."""

    fingerprint: str
    module: str
    platform: str
    threshold: float
    where: str  # where the threshold came from
    _: KW_ONLY
    gated: bool  # the tests that ran it failed (the config's programs: section, or strict)
    tests: list[str]
    worst: float

    def add(self, tests: Iterable[str], utilization: float) -> None:
        self.tests.extend(t for t in tests if t not in self.tests)
        self.worst = min(self.worst, utilization)

    def line(self) -> str:
        first = self.tests[0] + (f" and {len(self.tests) - 1} more" if len(self.tests) > 1 else "")
        return (f"{self.module}: {self.worst:.1%} of its roofline at lowest, below {self.threshold:.0%} "
                f"({self.where}), in {first}" + ("; those tests failed" if self.gated else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "module": self.module, "platform": self.platform,
                "threshold": self.threshold, "where": self.where, "gated": self.gated, "tests": list(self.tests),
                "worst_utilization": self.worst}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Below:
        return cls(str(d["fingerprint"]), str(d["module"]), str(d.get("platform", "")), float(d["threshold"]),
                   str(d.get("where", "")), gated=bool(d.get("gated")), tests=[str(t) for t in d.get("tests") or ()],
                   worst=float(d["worst_utilization"]))


@dataclass
class SurveyBook:
    """Every program the run's tests ran, once each; and what could not be read (one line per test)."""

    programs: dict[str, SurveyedProgram] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    hardware: str = ""  # the hardware utilization is against, in words
    tests: int = 0  # the tests surveyed
    _: KW_ONLY
    below: dict[str, Below] = field(default_factory=dict)  # the programs whose runs in a test fell below a threshold
    reading_s: float = 0.0  # the time spent stopping the profiler and reading the profiles
    contended: list[str] = field(default_factory=list)  # the tests that ran while other processes held the CPUs
    # the tests profiled in sampled windows (they ran longer than the sampling's first stretch): seconds profiled, ran
    sampled: dict[str, tuple[float, float]] = field(default_factory=dict)

    def add(self, s: Sighting) -> None:
        key = f"{s.platform}:{s.fingerprint}"
        if key not in self.programs:
            self.programs[key] = SurveyedProgram(s.fingerprint, s.module, s.platform)
        self.programs[key].add(s)

    def note_below(self, s: Sighting, threshold: float, where: str, gated: bool) -> None:
        """A test's runs of a program under its threshold."""
        key = f"{s.platform}:{s.fingerprint}"
        assert s.utilization is not None
        if key in self.below:
            self.below[key].add([s.nodeid], s.utilization)
        else:
            self.below[key] = Below(s.fingerprint, s.module, s.platform, threshold, where, gated=gated,
                                    tests=[s.nodeid], worst=s.utilization)

    def judged(self) -> list[SurveyedProgram]:
        """The programs large enough to judge, worst first: the most time lost, then the longest time."""
        return sorted((p for p in self.programs.values() if not p.small),
                      key=lambda p: (-p.time_lost_s, -p.device_s, p.module))

    def small(self) -> list[SurveyedProgram]:
        return [p for p in self.programs.values() if p.small]

    def merge(self, other: SurveyBook) -> None:
        """Another process's book (an xdist worker's) into this one."""
        for key, theirs in other.programs.items():
            mine = self.programs.get(key)
            if mine is None:
                self.programs[key] = theirs
                continue
            for nodeid, runs in theirs.tests.items():
                mine.tests[nodeid] = mine.tests.get(nodeid, 0) + runs
            mine.per_run_s.extend(theirs.per_run_s[: max(0, _KEPT_RUNS - len(mine.per_run_s))])
            mine.device_s += theirs.device_s
            mine.contended_runs += theirs.contended_runs
            mine.touch_s = max(mine.touch_s, theirs.touch_s)
            mine.roofline_total_s = (None if mine.roofline_total_s is None or theirs.roofline_total_s is None
                                     else mine.roofline_total_s + theirs.roofline_total_s)
            mine.notes.extend(n for n in theirs.notes if n not in mine.notes)
        self.problems.extend(other.problems)
        for key, low in other.below.items():
            if key in self.below:
                self.below[key].add(low.tests, low.worst)
            else:
                self.below[key] = low
        self.hardware = self.hardware or other.hardware
        self.tests += other.tests
        self.reading_s += other.reading_s
        self.contended.extend(other.contended)
        self.sampled.update(other.sampled)

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "tests": self.tests, "small_floor_s": SMALL_S, "reading_s": self.reading_s,
                "programs": [p.to_dict() for p in self.judged() + self.small()], "problems": list(self.problems),
                "below": [b.to_dict() for b in self.below.values()], "contended": list(self.contended),
                "sampled": [{"test": t, "profiled_s": p, "ran_s": r} for t, (p, r) in self.sampled.items()]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SurveyBook:
        book = cls(problems=list(d.get("problems") or ()), hardware=str(d.get("hardware") or ""),
                   tests=int(d.get("tests") or 0),
                   reading_s=float(d.get("reading_s") or 0.0), contended=list(d.get("contended") or ()),
                   sampled={str(t["test"]): (float(t["profiled_s"]), float(t["ran_s"]))
                            for t in d.get("sampled") or ()})
        for b in d.get("below") or ():
            below = Below.from_dict(b)
            book.below[f"{below.platform}:{below.fingerprint}"] = below
        for p in d.get("programs") or ():
            program = SurveyedProgram.from_dict(p)
            book.programs[f"{program.platform}:{program.fingerprint}"] = program
        return book


def program_setting(module: str, patterns: Sequence[tuple[str, Any]], suite: Any) -> tuple[Any, bool]:
    """A program's threshold setting: the first ``programs:`` pattern that matches its name (gated: True), else the
    suite's (False)."""
    for pattern, value in patterns:
        if fnmatch.fnmatchcase(module, pattern):
            return value, True
    return suite, False


def below(s: Sighting, threshold: float | None) -> bool:
    """Whether a test's runs of a program fall under ``threshold``: never for a program too small to judge or one
    whose roofline is unknown."""
    u = s.utilization
    return threshold is not None and not s.small and u is not None and u < threshold


def by_test(sightings: Iterable[Sighting]) -> list[Sighting]:
    """One sighting per program of one test (the parts a paused profile was read in, merged)."""
    out: dict[str, Sighting] = {}
    for s in sightings:
        key = f"{s.platform}:{s.fingerprint}"
        out[key] = merged(out[key], s) if key in out else s
    return list(out.values())
