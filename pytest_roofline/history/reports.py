"""The JSON reports as the history reads them: loading one into a typed :class:`Run` (a foreign or broken
file is a :class:`ReportError` naming it), whether its run was complete, and the history directory's file
names. Pure but for reading and writing files."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any

from ..analysis.verdict.survey_book import SurveyBook
from ..base.files import read_text, write_text_new
from ..records.kernel_record import KernelRecord, Unmeasured

__all__ = ["ReportError", "SessionEnd", "Run", "load_report", "load_run", "run_from_document", "load_history",
           "history_name", "add_to_history", "HISTORY_GLOB"]

HISTORY_GLOB = "roofline-*.json"


class ReportError(ValueError):
    """A file that is not a pytest-roofline report (or not a readable one); the message names it."""


@dataclass(frozen=True)
class SessionEnd:
    """How the pytest run of a report ended (the report's ``session`` block)."""

    exit_status: int
    exit_name: str
    tests_run: int
    tests_collected: int
    complete: bool
    why_incomplete: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionEnd:
        return cls(int(data["exit_status"]), str(data["exit_name"]), int(data["tests_run"]),
                   int(data["tests_collected"]), bool(data["complete"]), str(data.get("why_incomplete") or ""))


@dataclass(frozen=True)
class Run:
    """One report, read: where it came from, when, which commit, how its run ended, and its records."""

    path: str
    created: str
    commit: str | None
    dirty: bool
    session: SessionEnd | None  # None: a report from before the session block (assumed complete)
    versions: Mapping[str, str]
    _: KW_ONLY  # fields from the seventh on are given by keyword
    records: tuple[KernelRecord, ...]
    unmeasured: tuple[Unmeasured, ...] = ()
    survey: SurveyBook | None = None  # --roofline-survey: every program the tests ran

    @property
    def complete(self) -> bool:
        return self.session is None or self.session.complete

    @property
    def why_incomplete(self) -> str:
        return self.session.why_incomplete if self.session is not None else ""

    @property
    def short(self) -> str:
        return f"{self.created[:16].replace('T', ' ')}" + (f" {self.commit[:8]}" if self.commit else "")


def load_report(path: str | Path) -> dict[str, Any]:
    """Read and check a report written by ``--roofline-report`` (schema version 1)."""
    where = f"{path}"
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise ReportError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise ReportError(f"{where}: is a directory, expected a report file") from None
    except (OSError, ValueError) as exc:
        raise ReportError(f"{where}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"{where}: not a pytest-roofline report (not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}))"
        ) from None
    if not isinstance(data, dict) or "schema_version" not in data or not isinstance(data.get("results"), list):
        raise ReportError(f"{where}: not a pytest-roofline report (no schema_version and results)")
    if data["schema_version"] != 1:
        raise ReportError(f"{where}: report schema version {data['schema_version']!r}; this version reads 1")
    return data


def _records(data: Mapping[str, Any], where: str) -> tuple[tuple[KernelRecord, ...], tuple[Unmeasured, ...]]:
    """The report's records, typed; a malformed one is a :class:`ReportError` naming it."""
    records = []
    for i, record in enumerate(data["results"]):
        try:
            records.append(KernelRecord.from_dict(record))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ReportError(f"{where}: result {i} is malformed (missing or bad {exc})") from None
    try:
        unmeasured = tuple(Unmeasured.from_dict(u) for u in data.get("unmeasured") or ())
    except (KeyError, TypeError, AttributeError) as exc:
        raise ReportError(f"{where}: its unmeasured list is malformed (missing or bad {exc})") from None
    return tuple(records), unmeasured


def load_run(path: str | Path) -> Run:
    """Read a report file into a :class:`Run` (a file that is not a readable report: :class:`ReportError`)."""
    return run_from_document(load_report(path), str(path))


def run_from_document(data: Mapping[str, Any], where: str) -> Run:
    """A report document (a file's JSON) as a :class:`Run`; ``where`` names it in errors and in the run's line."""
    records, unmeasured = _records(data, where)
    return run_of(records, unmeasured, data, where)


def run_of(records: Iterable[KernelRecord], unmeasured: Iterable[Unmeasured], document: Mapping[str, Any],
           where: str) -> Run:
    """A run from its typed records, with when, which commit and how it ended read from its report ``document``
    (the records of the session about to write it, or those a file held)."""
    try:
        session = SessionEnd.from_dict(document["session"]) if document.get("session") else None
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"{where}: its session block is malformed (missing or bad {exc})") from None
    git = document.get("git") or {}
    versions = {str(k): str(v) for k, v in (document.get("versions") or {}).items() if v}
    try:
        survey = SurveyBook.from_dict(document["survey"]) if document.get("survey") else None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReportError(f"{where}: its survey is malformed (missing or bad {exc})") from None
    return Run(where, str(document.get("created", "")), git.get("commit"), bool(git.get("dirty")), session, versions,
               records=tuple(records), unmeasured=tuple(unmeasured), survey=survey)


def _warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=3)


def load_history(directory: str | Path, warn: Callable[[str], None] | None = None) -> list[Run]:
    """Every report in a history directory, oldest first (by the time each was created). A file that is not a
    readable report (foreign, truncated) is left out, and ``warn`` (default: a ``UserWarning``) gets a message
    naming it and why."""
    warn = warn or _warn
    root = Path(directory)
    if not root.is_dir():
        raise ReportError(f"{directory}: " + ("is not a directory" if root.exists() else "no such directory"))
    runs, order = [], {}
    for path in sorted(root.glob(HISTORY_GLOB)):
        try:
            runs.append(load_run(path))
            order[str(path)] = path.stat().st_mtime  # runs made within one second: by when each was written
        except (ReportError, OSError) as exc:
            warn(f"{exc if isinstance(exc, ReportError) else f'{path}: {exc.strerror or exc}'}; left out of the "
                 f"history")
    return sorted(runs, key=lambda run: (run.created, order[run.path], run.path))


def history_name(report: Mapping[str, Any]) -> str:
    """``roofline-<UTC time>-<commit>.json``: sorts by time, names the commit (``nogit`` outside a checkout;
    ``+dirty`` with uncommitted changes)."""
    stamp = re.sub(r"[^0-9T]", "", str(report.get("created", "")).split("+")[0])[:15] + "Z"
    git = report.get("git") or {}
    commit = str(git.get("commit", ""))[:12] or "nogit"
    if git.get("dirty"):
        commit += "+dirty"
    return f"roofline-{stamp}-{commit}.json"


def add_to_history(directory: str | Path, report: Mapping[str, Any], text: str) -> Path:
    """Write ``text`` (the report) into the history directory under :func:`history_name`, whole, never over an
    existing run: two runs ending in the same second, side by side, get ``-2`` and so on."""
    root = Path(directory)
    name = history_name(report)
    for n in range(1, 1000):
        try:
            return write_text_new(root / (name if n == 1 else name.replace(".json", f"-{n}.json")), text)
        except FileExistsError:
            continue
    raise FileExistsError(f"{root}: 999 runs named {name} already")
