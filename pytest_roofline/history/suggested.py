"""From a survey to a gate (``pytest-roofline suggest``): thresholds for the programs a suite keeps, at its own rule
(a share of the median utilization measured per platform), written as the YAML config's ``programs:`` section with
the reason beside each. Pure: the caller reads the reports and writes the file.

A program is kept by name (its HLO module's, ``jit_<function>``: what stays the same when its code changes, where the
fingerprint does not). Several programs of one name (other shapes, other lambdas) share its threshold: the lowest of
their medians decides, and the comment says how many there were.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass

import yaml

from ..analysis.model.recorded_profile import Work
from ..analysis.verdict.survey_book import SurveyBook, SurveyedProgram
from ..base.units import format_seconds

__all__ = ["Suggestion", "SuggestError", "suggest", "config_text", "with_programs", "DEFAULT_SHARE", "DEFAULT_TOP"]

DEFAULT_SHARE = 0.5  # the example suite's rule: half the median measured
DEFAULT_TOP = 10
_PLAIN = re.compile(r"^[A-Za-z_][\w.\-]*$")


class SuggestError(ValueError):
    """Nothing to suggest from, or a name that matches no program: the message says which."""


@dataclass(frozen=True)
class Suggestion:
    """One program name's threshold on one platform, and what it was measured at."""

    name: str
    platform: str
    threshold: float
    median: float  # the lowest median utilization among the programs of this name
    programs: int  # how many compiled programs have this name
    _: KW_ONLY
    runs: int
    tests: int
    lost_s: float
    hardware: str = ""
    work: Work | None = None  # FLOPs, bytes, transcendentals per run, where one program

    def comment(self, share: float) -> str:
        shared = f", the lowest of {self.programs} programs of this name" if self.programs > 1 else ""
        return (f"{share:.0%} of the median {self.median:.1%}{shared}; {self.runs} runs in {self.tests} tests on "
                f"{self.hardware or self.platform}, {format_seconds(self.lost_s)} lost")


def _judgeable(p: SurveyedProgram) -> bool:
    return not p.small and p.utilization is not None and p.contended_runs < p.runs


def _chosen(book: SurveyBook, top: int | None, names: Sequence[str]) -> set[str]:
    """The names kept from one book: the ``top`` by time lost, and every program matching one of ``names``."""
    judged = [p for p in book.judged() if _judgeable(p)]
    chosen = {p.module for p in judged[: top or 0]}
    for pattern in names:
        chosen |= {p.module for p in judged if fnmatch.fnmatchcase(p.module, pattern)}
    return chosen


def suggest(books: Sequence[SurveyBook], *, top: int | None, names: Sequence[str] = (),
            share: float = DEFAULT_SHARE) -> list[Suggestion]:
    """A threshold per kept program name and platform, from every book (one per platform, or several runs)."""
    if not any(b.programs for b in books):
        raise SuggestError("no program in the survey (was pytest run with --roofline-survey?)")
    chosen = set().union(*(_chosen(b, top, names) for b in books))
    for pattern in names:
        if not any(fnmatch.fnmatchcase(n, pattern) for n in chosen):
            raise SuggestError(f"--program {pattern!r} matches no program large enough to judge (names: "
                               f"{', '.join(sorted({p.module for b in books for p in b.judged()})[:12])} ...)")
    groups: dict[tuple[str, str], list[tuple[SurveyedProgram, str]]] = {}
    for book in books:
        for p in book.judged():
            if p.module in chosen and _judgeable(p):
                groups.setdefault((p.module, p.platform), []).append((p, book.hardware))
    out = []
    for (name, platform), found in sorted(groups.items()):
        low = min(p.utilization or 0.0 for p, _ in found)
        threshold = min(1.0, max(0.01, math.floor(share * low * 100) / 100))
        one = found[0][0]
        work = (one.flops, one.bytes_accessed, one.transcendentals) if len(found) == 1 and not one.counts_vary else None
        out.append(Suggestion(name, platform, threshold, low, len(found), runs=sum(p.runs for p, _ in found),
                              tests=len({t for p, _ in found for t in p.tests}),
                              lost_s=sum(p.time_lost_s for p, _ in found), hardware=found[0][1], work=work))
    return out


def config_text(suggestions: Sequence[Suggestion], share: float, source: str) -> str:
    """The ``programs:`` section, one program name a block, each platform's threshold with its reason."""
    lines = [f"# pytest-roofline suggest {source}: thresholds at {share:.0%} of each program's median utilization",
             "# (run pytest with --roofline-survey and this config: a test that runs one of these programs below",
             "# its threshold fails)", "programs:"]
    by_name: dict[str, list[Suggestion]] = {}
    for s in suggestions:
        by_name.setdefault(s.name, []).append(s)
    for name, found in by_name.items():
        lines += [f"  {name if _PLAIN.match(name) else yaml.safe_dump(name).strip()}:", "    min:"]
        lines += [f"      {s.platform}: {s.threshold:g}  # {s.comment(share)}" for s in found]
        pinned = [s for s in found if s.work is not None]
        if pinned:
            lines.append("    work:  # per run, as surveyed: judged on this work, so that doing more is slower "
                         "(suggest again after a change meant to do more)")
            lines += [f"      {s.platform}: {{flops: {s.work[0]:.0f}, bytes: {s.work[1]:.0f}, transcendentals: "
                      f"{s.work[2]:.0f}}}" for s in pinned if s.work is not None]
    return "\n".join(lines) + "\n"


def with_programs(existing: str, section: str, where: str) -> str:
    """An existing config's text with its ``programs:`` section replaced by ``section`` (added where it has none);
    the rest, comments included, kept as it was."""
    kept: list[str] = []
    skipping = False
    for line in existing.splitlines():
        top_level = bool(line) and not line[0].isspace() and not line.startswith("#")
        if top_level:
            skipping = line.split(":", 1)[0].strip() == "programs"
        if not skipping:
            kept.append(line)
    text = "\n".join(kept).rstrip("\n") + ("\n\n" if kept else "") + section
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SuggestError(f"{where}: not YAML once the programs are added: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, Mapping):
        raise SuggestError(f"{where}: not a YAML mapping (a roofline config)")
    return text
