"""Record a fixed set of small programs as the tests replay them: for each, the profile of three runs (XSpace), the
optimized HLO, the analytic counts, what a live measure() counted, and the device, driver, JAX and XLA flags.

    python bench/record_corpus.py OUT_DIR [--only NAME ...]

Made for a GPU (whatever device JAX finds is recorded; a CPU run is how the script itself is tried). Each program is
recorded in up to three ways (variants):

- ``default``: compiled as XLA compiles it by default (on a GPU, small programs run as command buffers: CUDA graphs);
- ``nocb``: compiled again with command buffers off (``xla_gpu_enable_command_buffer`` emptied), as the plugin's
  second profiled pass does;
- ``graph``: the default program profiled with the CUDA-graph activity trace on
  (``gpu_enable_cupti_activity_graph_trace``), which records a graph's kernels one by one.

Each run is inside the host annotation a live measurement puts around its timed runs, so the replay reads the runs
as a live measurement does. OUT_DIR/<device>-jax<version>/ gets ``provenance.json`` (the machine and versions),
``<program>.json`` (analytic counts, the live measurement's counts, each variant's files) and per variant
``<program>.<variant>.xplane.pb.gz`` and ``<program>.<variant>.hlo.txt.gz``. Programs are kept small (a few hundred
kB each, compressed); tests/data/corpus/README.md says how the kept corpus was recorded.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from corpus_programs import Program, names, programs  # noqa: E402

import pytest_roofline  # noqa: E402
from pytest_roofline.analysis.runs.trace_events import KERNEL_RUN_MARKER  # noqa: E402

RUNS = 3


def _machine() -> dict[str, Any]:
    device = jax.devices()[0]
    found: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "device_kind": device.device_kind, "platform": device.platform, "devices": len(jax.devices()),
        "jax": jax.__version__, "jaxlib": jax.lib.__version__, "python": platform.python_version(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""), "platform_version": device.client.platform_version,
        "pytest_roofline_commit": _commit(),
    }
    try:
        query = "--query-gpu=name,driver_version,memory.total"
        found["nvidia_smi"] = subprocess.run(["nvidia-smi", query, "--format=csv,noheader"], capture_output=True,
                                             text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        found["nvidia_smi"] = ""
    return found


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _profiled(compiled: Any, args: tuple[Any, ...], graph_trace: bool) -> bytes:
    """Three runs of ``compiled`` under the profiler, each in the host annotation of a live measurement's runs."""
    from pytest_roofline.measurement.profiler import ProfilerSession

    jax.block_until_ready(compiled(*args))  # warm-up
    session = ProfilerSession(graph_nodes=graph_trace)
    try:
        for k in range(RUNS):
            with jax.profiler.TraceAnnotation(KERNEL_RUN_MARKER, run=k):
                jax.block_until_ready(compiled(*args))
    except BaseException:
        session.discard()
        raise
    xspace = session.stop()
    return xspace


def _live(program: Program, args: tuple[Any, ...]) -> dict[str, Any]:
    """What a live measure() counted here, kept beside the recording (the replay is checked against the analytic
    counts; this says what the plugin of the recording's commit made of the same program)."""
    try:
        r = pytest_roofline.measure(program.fn, *args, warmup=1, min_runs=3, max_runs=5, budget_s=0.3)
    except Exception as exc:  # noqa: BLE001 - the recording goes on; the failure is kept as it was
        return {"error": f"{type(exc).__name__}: {exc}"[:2000]}
    return {"flops": r.flops, "matrix_flops": dict(r.matrix_flops), "transcendentals": r.transcendentals,
            "bytes_accessed": r.bytes_accessed, "loops": list(r.loops), "lower_bound": r.counts_lower_bound,
            "lower_bound_reason": r.work.lower_bound_reason, "median_s": r.timing.median_s,
            "method": r.timing.method, "ops_times_from": r.ops_model.times_from, "utilization": r.utilization,
            "notes": list(r.notes)}


def _write_gz(path: Path, data: bytes) -> None:
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(data)


VARIANTS = ["default", "nocb", "graph"]


def _variants(platform_name: str) -> list[str]:
    return VARIANTS if platform_name == "gpu" else ["default"]


def _variant(program: Program, lowered: Any, args: tuple[Any, ...], variant: str, out: Path) -> dict[str, Any]:
    """One way of compiling and profiling the program, written to its files; its error where it fails."""
    from pytest_roofline.measurement.compiled import NO_COMMAND_BUFFERS

    begun = time.perf_counter()
    try:
        compiled = lowered.compile(compiler_options=NO_COMMAND_BUFFERS) if variant == "nocb" else lowered.compile()
        xspace = _profiled(compiled, args, graph_trace=variant == "graph")
    except Exception as exc:  # noqa: BLE001 - a variant that fails is kept as failed, the others go on
        return {"error": f"{type(exc).__name__}: {exc}"[:2000]}
    stem = f"{program.name}.{variant}"
    _write_gz(out / f"{stem}.xplane.pb.gz", xspace)
    _write_gz(out / f"{stem}.hlo.txt.gz", compiled.as_text().encode())
    return {"xplane": f"{stem}.xplane.pb.gz", "hlo": f"{stem}.hlo.txt.gz", "module": _module(compiled),
            "cost_analysis": _cost_analysis(compiled), "xspace_bytes": len(xspace),
            "seconds": round(time.perf_counter() - begun, 2)}


def _cost_analysis(compiled: Any) -> Any:
    """The compiler's cost analysis as the live measurement gets it (a dict of numbers), or its error in words."""
    try:
        raw = compiled.cost_analysis()
    except Exception as exc:  # noqa: BLE001 - XLA raises its own runtime error types
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}
    raw = raw[0] if isinstance(raw, (list, tuple)) and raw else raw
    return {str(k): float(v) for k, v in dict(raw or {}).items()}


def record(program: Program, out: Path, platform_name: str) -> dict[str, Any]:
    """Every variant of ``program`` and the live measurement, its entry written after each step (the CUDA-graph
    trace last: where it crashes the process, the parent says so in the entry)."""
    args = program.args()
    lowered = jax.jit(program.fn).lower(*args)
    outputs = jax.jit(program.fn)(*args)
    entry: dict[str, Any] = {"what": program.what, "analytic": program.analytic(outputs),
                             "facts": program.facts(outputs), "runs": RUNS, "variants": {}}
    path = out / f"{program.name}.json"
    steps = [v for v in _variants(platform_name) if v != "graph"] + ["live"]
    steps += ["graph"] if "graph" in _variants(platform_name) else []
    for step in steps:
        if step == "live":
            entry["live"] = _live(program, args)
        else:
            entry["variants"][step] = {"started": True}
            path.write_text(json.dumps(entry, indent=1, default=str) + "\n")
            entry["variants"][step] = _variant(program, lowered, args, step, out)
        path.write_text(json.dumps(entry, indent=1, default=str) + "\n")
    return entry


def _child(out: Path, name: str) -> str:
    """Record one program in a process of its own (a profiler crash loses that program's unfinished variant alone,
    and each profile's metadata holds that program's executables only); a line to print."""
    begun = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, str(out), "--only", name, "--here", "--variants", *VARIANTS],
                          timeout=240, check=False)
    path = out / f"{name}.json"
    if not path.exists():
        return f"{name:18s} no entry (exit {done.returncode})"
    entry = json.loads(path.read_text())
    for variant, found in entry["variants"].items():
        if found.get("started"):
            entry["variants"][variant] = {"error": f"the process died while recording it (exit {done.returncode})"}
    path.write_text(json.dumps(entry, indent=1, default=str) + "\n")
    live = entry.get("live", {})
    failed = {v: f["error"][:120] for v, f in entry["variants"].items() if "error" in f}
    return (f"{name:18s} {time.perf_counter() - begun:5.1f} s  analytic {entry['analytic']}  live flops "
            f"{live.get('flops')} matrix {live.get('matrix_flops')} loops {live.get('loops')} "
            f"{live.get('error', '')} {failed or ''}")


def _module(compiled: Any) -> str:
    found = re.match(r"HloModule (\S+?),", compiled.as_text())
    return found.group(1) if found else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", default=None, help="record these programs alone")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=VARIANTS,
                        help="the variants to record on a GPU (default: all three)")
    parser.add_argument("--here", action="store_true", help=argparse.SUPPRESS)  # in this process (a child)
    opts = parser.parse_args()
    VARIANTS[:] = [v for v in VARIANTS if v in opts.variants]
    if opts.here:
        program = next(p for p in programs(opts.only) if p.name in opts.only)
        record(program, opts.out, jax.devices()[0].platform)
        return 0
    machine = _machine()
    kind = re.sub(r"[^A-Za-z0-9]+", "-", machine["device_kind"]).strip("-")
    out = opts.out / f"{kind}-jax{machine['jax']}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "provenance.json").write_text(json.dumps(machine, indent=1) + "\n")
    for name in names():
        if not opts.only or name in opts.only:
            print(_child(out, name), flush=True)
    print(f"recorded in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
