"""Saving what a person needs to look at a kernel again: the trace (Perfetto and TensorBoard/XProf) and HLO
(imports JAX to convert the trace)."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

from ..base.files import write_directory_atomic
from ..result.result import Result

__all__ = ["save_artifacts"]


# A test id whose name stays readable and apart from every other without a digest: a file path and test names, and
# a parametrization of letters, digits and ``_ . -`` (where ``t[a/b]``, ``t[a:b]`` and ``t[a[b]`` would read as
# ``t[a_b]`` does).
_PLAIN_ID = re.compile(r"[A-Za-z0-9_./-]+(::[A-Za-z0-9_]+)*(\[[A-Za-z0-9_.-]*\])?")
_PLAIN_LABEL = re.compile(r"[A-Za-z0-9_.-]+")


def _safe(nodeid: str, label: str) -> str:
    """A folder name for a test id and a kernel's label: each run of other characters than letters, digits, ``_``,
    ``.`` and ``-`` made ``_``, and a digest of the whole where the id's parametrization or the label lost characters
    that would make two kernels read alike (test ids ``t[a/b]``, ``t[a_b]``, ``t[a:b]``, ``t[a[b]``; labels ``k/1``,
    ``k_1``, ``k[1]``), or where the name is cut. The same kernel always gets the same folder, so its trace
    replaces its last one."""
    text = f"{nodeid}__{label}"
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")
    if _PLAIN_ID.fullmatch(nodeid) and _PLAIN_LABEL.fullmatch(label) and len(safe) <= 150:
        return safe or "kernel"
    return f"{safe[-140:]}-{hashlib.sha256(text.encode()).hexdigest()[:8]}".lstrip("-_")


def save_artifacts(result: Result, root: str | Path, nodeid: str, label: str) -> dict[str, str]:
    """Write under ``root/<test>__<label>/``: ``hlo.txt`` (optimized HLO), and when the profiler ran,
    ``plugins/profile/<ts>/<host>.xplane.pb`` + ``.trace.json.gz`` (open the directory in TensorBoard or
    XProf) and ``perfetto_trace.json.gz`` (open at ui.perfetto.dev). The directory appears whole or not at
    all. Returns the paths."""
    folder = _safe(nodeid, label)
    final = write_directory_atomic(Path(root) / folder, lambda d: _write(result, d))
    paths = {"trace_dir": str(final), "hlo": str(final / "hlo.txt"), "perfetto": "", "xplane": ""}
    for name, pattern in (("perfetto", "perfetto_trace.json.gz"), ("xplane", "plugins/profile/*/*.xplane.pb"),
                          ("xplane", "trace.xplane.pb")):
        found = sorted(final.glob(pattern))
        if found:
            paths[name] = str(found[-1])
    return paths


def _write(result: Result, directory: Path) -> None:
    from .profiler import ProfilerUnavailable, export_xspace

    (directory / "hlo.txt").write_text(result.hlo_text, encoding="utf-8")
    if not result.xspace:
        return
    try:
        export_xspace(result.xspace, str(directory))
    except ProfilerUnavailable:  # another profiler session is active: keep the raw trace
        (directory / "trace.xplane.pb").write_bytes(result.xspace)
        return
    traces = sorted(directory.glob("plugins/profile/*/*.trace.json.gz"))
    if traces:
        # Perfetto rejects the trace's "metadata" field (jax.profiler does the same conversion).
        with gzip.open(traces[-1], "rt", encoding="utf-8") as fh:
            text = fh.read()
        with gzip.open(directory / "perfetto_trace.json.gz", "wt", encoding="utf-8", compresslevel=1) as fh:
            fh.write(without_metadata(text))


def without_metadata(text: str) -> str:
    """The JSON object ``text`` without its top-level "metadata" member, cut out of the text: the members before
    it are parsed, not the rest (parsing and writing again a trace of 500k events took seconds, for one small
    field that comes before the events). Text that is not an object is returned as it is."""
    decoder, at = json.JSONDecoder(), _space(text, 0)
    if not text.startswith("{", at):
        return text
    at = _space(text, at + 1)
    while at < len(text) and text[at] != "}":
        start = at
        key, at = decoder.raw_decode(text, at)
        at = _space(text, _space(text, at) + 1)  # past the colon
        _, at = decoder.raw_decode(text, at)
        at = _space(text, at)
        comma = text.startswith(",", at)
        if key == "metadata":
            if comma:
                return text[:start] + text[_space(text, at + 1):]
            before = text[:start].rstrip()
            return (before[:-1] if before.endswith(",") else before) + text[at:]
        at = _space(text, at + 1) if comma else at
    return text


def _space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at
