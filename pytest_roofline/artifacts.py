"""Saving what a person needs to look at a kernel again: the trace (Perfetto and TensorBoard/XProf) and HLO."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import tempfile
from pathlib import Path

from .result import Result

__all__ = ["save_artifacts"]


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[-150:] or "kernel"


def save_artifacts(result: Result, root: str | Path, nodeid: str, label: str) -> dict[str, str]:
    """Write under ``root/<test>__<label>/``: ``hlo.txt`` (optimized HLO), and when the profiler ran,
    ``plugins/profile/<ts>/<host>.xplane.pb`` + ``.trace.json.gz`` (open the directory in TensorBoard or
    XProf) and ``perfetto_trace.json.gz`` (open at ui.perfetto.dev). Returns the paths."""
    final = Path(root) / _safe(f"{nodeid}__{label}")
    final.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the target and renamed at the end: a failed export leaves no half-written directory.
    directory = Path(tempfile.mkdtemp(prefix=f".{final.name[:60]}.", dir=final.parent))
    try:
        _write(result, directory)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    if final.exists():
        shutil.rmtree(final)
    directory.rename(final)
    paths = {"trace_dir": str(final), "hlo": str(final / "hlo.txt"), "perfetto": "", "xplane": ""}
    if not result.xspace:
        paths["trace_dir"] += " (no profiler trace: the wall clock was used)"
    for name, pattern in (("perfetto", "perfetto_trace.json.gz"), ("xplane", "plugins/profile/*/*.xplane.pb"),
                          ("xplane", "trace.xplane.pb")):
        found = sorted(final.glob(pattern))
        if found:
            paths[name] = str(found[-1])
    return paths


def _write(result: Result, directory: Path) -> None:
    (directory / "hlo.txt").write_text(result.hlo_text, encoding="utf-8")
    if not result.xspace:
        return
    if result.exporter is None:
        (directory / "trace.xplane.pb").write_bytes(result.xspace)
        return
    result.exporter(result.xspace, str(directory))
    traces = sorted(directory.glob("plugins/profile/*/*.trace.json.gz"))
    if traces:
        # Perfetto rejects the trace's "metadata" field (jax.profiler does the same conversion).
        with gzip.open(traces[-1], "rb") as fh:
            trace = json.load(fh)
        trace.pop("metadata", None)
        with gzip.open(directory / "perfetto_trace.json.gz", "wt", encoding="utf-8") as fh:
            json.dump(trace, fh)
