"""Saving what a person needs to look at a kernel again: the trace (Perfetto and TensorBoard/XProf) and HLO."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

from .result import Result

__all__ = ["save_artifacts"]


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[-150:] or "kernel"


def save_artifacts(result: Result, root: str | Path, nodeid: str, label: str) -> dict[str, str]:
    """Write under ``root/<test>__<label>/``: ``hlo.txt`` (optimized HLO), and when the profiler ran,
    ``plugins/profile/<ts>/<host>.xplane.pb`` + ``.trace.json.gz`` (open the directory in TensorBoard or
    XProf) and ``perfetto_trace.json.gz`` (open at ui.perfetto.dev). Returns the paths."""
    directory = Path(root) / _safe(f"{nodeid}__{label}")
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    paths = {"trace_dir": str(directory), "hlo": str(directory / "hlo.txt"), "perfetto": "", "xplane": ""}
    (directory / "hlo.txt").write_text(result.hlo_text, encoding="utf-8")
    if not result.xspace:
        paths["trace_dir"] += " (no profiler trace: the wall clock was used)"
        return paths
    if result.exporter is not None:
        result.exporter(result.xspace, str(directory))
        traces = sorted(directory.glob("plugins/profile/*/*.trace.json.gz"))
        xplanes = sorted(directory.glob("plugins/profile/*/*.xplane.pb"))
        if xplanes:
            paths["xplane"] = str(xplanes[-1])
        if traces:
            # Perfetto rejects the trace's "metadata" field (jax.profiler does the same conversion).
            with gzip.open(traces[-1], "rb") as fh:
                trace = json.load(fh)
            trace.pop("metadata", None)
            perfetto = directory / "perfetto_trace.json.gz"
            with gzip.open(perfetto, "wt", encoding="utf-8") as fh:
                json.dump(trace, fh)
            paths["perfetto"] = str(perfetto)
    else:
        xplane = directory / "trace.xplane.pb"
        xplane.write_bytes(result.xspace)
        paths["xplane"] = str(xplane)
    return paths
