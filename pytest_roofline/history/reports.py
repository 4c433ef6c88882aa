"""The JSON reports as the history reads them: loading one (a foreign or broken file is a
:class:`ReportError` naming it), the series a record belongs to, its utilization, whether the run was
complete, and the history directory's file names. Pure but for reading and writing files."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files import write_text_atomic

__all__ = ["ReportError", "SeriesKey", "Run", "load_report", "load_run", "load_history", "series_key",
           "record_utilization", "history_name", "add_to_history", "HISTORY_GLOB"]

HISTORY_GLOB = "roofline-*.json"


class ReportError(ValueError):
    """A file that is not a pytest-roofline report (or not a readable one); the message names it."""


@dataclass(frozen=True, order=True)
class SeriesKey:
    """One kernel on one hardware entry, ceilings mode, model and JAX version: a change of any of them
    starts a new series, since utilizations across them are not the same measurement."""

    nodeid: str
    label: str
    hardware: str
    ceilings: str
    model: str
    jax: str

    @property
    def kernel(self) -> str:
        return f"{self.nodeid} [{self.label}]"

    @property
    def context(self) -> str:
        return f"{self.hardware} [{self.ceilings}], model {self.model}, jax {self.jax}"


def series_key(record: Mapping[str, Any]) -> SeriesKey:
    result = record["result"]
    return SeriesKey(record["nodeid"], record["label"], result["hardware"]["name"], result["ceilings"],
                     record.get("model", "program"), (result.get("versions") or {}).get("jax") or "?")


def record_utilization(record: Mapping[str, Any]) -> float:
    """The utilization the record's threshold was checked against (its model's)."""
    result = record["result"]
    value = result["ops_utilization"] if record.get("model") == "ops" else result["utilization"]
    return float(value)


@dataclass(frozen=True)
class Run:
    """One report: where it came from, when, which commit, whether the run was complete."""

    path: str
    created: str
    commit: str | None
    complete: bool
    why_incomplete: str
    report: Mapping[str, Any]

    @property
    def records(self) -> list[Mapping[str, Any]]:
        return list(self.report["results"])

    @property
    def short(self) -> str:
        return f"{self.created[:16].replace('T', ' ')}" + (f" {self.commit[:8]}" if self.commit else "")


def load_report(path: str | Path) -> dict[str, Any]:
    """Read and check a report written by ``--roofline-report`` (schema version 1)."""
    where = f"{path}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise ReportError(f"{where}: is a directory, expected a report file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{where}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{where}: not a pytest-roofline report (not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}))") from None
    if not isinstance(data, dict) or "schema_version" not in data or not isinstance(data.get("results"), list):
        raise ReportError(f"{where}: not a pytest-roofline report (no schema_version and results)")
    if data["schema_version"] != 1:
        raise ReportError(f"{where}: report schema version {data['schema_version']!r}; this version reads 1")
    for i, record in enumerate(data["results"]):
        try:
            series_key(record)
            record_utilization(record)
        except (KeyError, TypeError, ValueError) as exc:
            raise ReportError(f"{where}: result {i} is malformed (missing or bad {exc})") from None
    return data


def load_run(path: str | Path) -> Run:
    data = load_report(path)
    session = data.get("session") or {}
    complete = bool(session.get("complete", True))  # reports before the session block: assumed complete
    git = data.get("git") or {}
    return Run(str(path), str(data.get("created", "")), git.get("commit"), complete,
               str(session.get("why_incomplete", "")), data)


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
    """Write ``text`` (the report) into the history directory under :func:`history_name`, atomically, never
    over an existing run."""
    root = Path(directory)
    name = history_name(report)
    target = root / name
    n = 2
    while target.exists():
        target = root / name.replace(".json", f"-{n}.json")
        n += 1
    return write_text_atomic(target, text)
