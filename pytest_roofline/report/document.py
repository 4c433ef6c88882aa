"""The JSON report of a session: schema version, when and where it was made, the settings, the hardware and
every record. The document is pure; :func:`build_report` asks :mod:`~.provenance` for the machine and git."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from typing import Any

from ..records.kernel_record import KernelRecord, Unmeasured
from .provenance import git_commit, machine, versions

__all__ = ["SCHEMA_VERSION", "build_report", "report_document", "session_block"]

SCHEMA_VERSION = 1


EXIT_NAMES = {0: "OK", 1: "TESTS_FAILED", 2: "INTERRUPTED", 3: "INTERNAL_ERROR", 4: "USAGE_ERROR",
              5: "NO_TESTS_COLLECTED"}


def session_block(exit_status: int, collected: int, ran: int, stopped: str = "") -> dict[str, Any]:
    """How the pytest run ended: its exit status, and whether every collected test ran. An interrupted run
    (Ctrl-C) or one stopped early (``-x``, ``--maxfail``) is incomplete, and the history leaves it out."""
    why = ""
    if exit_status in (2, 3):
        why = f"{EXIT_NAMES[exit_status].lower().replace('_', ' ')} (exit status {exit_status})"
    if ran < collected:
        why += ("; " if why else "") + f"{ran} of {collected} tests ran" + (f" ({stopped})" if stopped else "")
    return {"exit_status": exit_status, "exit_name": EXIT_NAMES.get(exit_status, str(exit_status)),
            "tests_collected": collected, "tests_run": ran, "complete": not why, "why_incomplete": why}


def report_document(records: Iterable[KernelRecord], settings: Mapping[str, Any], created: str,
                    provenance: Mapping[str, Any], unmeasured: Iterable[Unmeasured] = ()) -> dict[str, Any]:
    """The report from its parts, as JSON-able values (pure): the file boundary of every record."""
    results = [rec.to_dict() for rec in records]
    hardware: dict[str, Any] = {}
    for rec in results:
        hw = rec["result"]["hardware"]
        hardware.setdefault(f"{hw['name']} [{rec['result']['ceilings']}]", hw)
    return {"schema_version": SCHEMA_VERSION, "created": created, **provenance, "settings": dict(settings),
            "hardware": hardware, "results": results, "unmeasured": [u.to_dict() for u in unmeasured]}


def build_report(records: Iterable[KernelRecord], settings: Mapping[str, Any], rootdir: str,
                 session: Mapping[str, Any] | None = None, unmeasured: Iterable[Unmeasured] = ()) -> dict[str, Any]:
    """The report of this session on this machine, now; ``session``: see :func:`session_block`; ``unmeasured``:
    the kernels that could not be measured."""
    created = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    provenance = {"machine": machine(), "git": git_commit(rootdir), "versions": versions(),
                  **({"session": dict(session)} if session is not None else {})}
    return report_document(records, settings, created, provenance, unmeasured)
