"""The JSON report of a session: schema version, when and where it was made, the settings, the hardware and
every record. The document is pure; :func:`build_report` asks :mod:`~.provenance` for the machine and git."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from typing import Any

from .provenance import git_commit, machine, versions

__all__ = ["SCHEMA_VERSION", "build_report", "report_document"]

SCHEMA_VERSION = 1


def report_document(records: Iterable[Mapping[str, Any]], settings: Mapping[str, Any], created: str,
                    provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The report from its parts (pure)."""
    records = list(records)
    hardware: dict[str, Any] = {}
    for rec in records:
        hw = rec["result"]["hardware"]
        hardware.setdefault(f"{hw['name']} [{rec['result']['ceilings']}]", hw)
    return {"schema_version": SCHEMA_VERSION, "created": created, **provenance, "settings": dict(settings),
            "hardware": hardware, "results": records}


def build_report(records: Iterable[Mapping[str, Any]], settings: Mapping[str, Any], rootdir: str) -> dict[str, Any]:
    """The report of this session on this machine, now."""
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    provenance = {"machine": machine(), "git": git_commit(rootdir), "versions": versions()}
    return report_document(records, settings, created, provenance)
