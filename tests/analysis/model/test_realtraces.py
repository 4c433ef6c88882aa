"""The trace reader, the per-op model and `pytest-roofline analyze` on real profiles (tests/data/README.md says
where each came from): AMD MI300X (ROCm, JAX 0.8) and a 4-chip TPU v6e. Every per-run time is checked against
a second route through the raw events, read by jax.profiler.ProfileData rather than by our own reader."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from statistics import median
from typing import Any

import pytest
from paths import DATA
from real_profiles import real_events, real_space

from pytest_roofline.analysis.model.recorded_profile import hlo_key, summarize_program
from pytest_roofline.analysis.program.hlo_reader import parse_hlo
from pytest_roofline.analysis.runs.program_runs import run_times
from pytest_roofline.analysis.runs.trace_events import ProgramKey, TraceIndex, flatten, platform_of, programs
from pytest_roofline.analysis.runs.xspace import hlo_module_protos, hlo_protos_wanted, read_xspace
from pytest_roofline.cli.main import main
from pytest_roofline.hardware.spec import UnknownDeviceError
from pytest_roofline.hardware.table import find_spec_for_profile, load_shipped_table

jax = pytest.importorskip("jax")
from jax.profiler import ProfileData  # noqa: E402

from pytest_roofline.measurement.profiler import hlo_text  # noqa: E402

GEMM = DATA / "rocm_mi300x_jax08_gemm.xplane.pb"
ELEMENTWISE = DATA / "rocm_mi300x_jax08_elementwise.xplane.pb"
ATTENTION = DATA / "rocm_mi300x_jax08_attention.xplane.pb"
TPU = DATA / "tpu_v6e_x4_inference.xplane.pb"
JIT_DOT_IDS = (5, 21, 34, 49, 64, 79)


# --- the second route: raw ProfileData events, grouped the way the issue describes -------------------------
@functools.cache
def _raw(path: Path) -> tuple[tuple[str, str, str, float, float, dict[str, Any]], ...]:
    out = []
    for plane in ProfileData.from_file(str(path)).planes:
        for line in plane.lines:
            for e in line.events:
                out.append((plane.name, line.name, e.name, e.start_ns, e.start_ns + e.duration_ns, dict(e.stats)))
    return tuple(out)


def gpu_truth(path: Path, module: str, program_id: int) -> list[float]:
    """Kernels of (module, program_id) grouped by the host GpuExecutable::ExecuteThunks window their launch
    (the host event with the same correlation_id) falls in; per window the span; windows in time order."""
    raw = _raw(path)
    launch = {s["correlation_id"]: start for plane, _l, _n, start, _e, s in raw
              if plane.startswith("/host:") and "correlation_id" in s}
    windows = sorted((start, end) for plane, _l, name, start, end, s in raw
                     if plane.startswith("/host:") and name == "GpuExecutable::ExecuteThunks"
                     and s.get("module_name") == module)
    spans: dict[int, list[float]] = {}
    for plane, _l, _n, start, end, s in raw:
        if not plane.startswith("/device:GPU") or s.get("hlo_module") != module or s.get("program_id") != program_id:
            continue
        t = launch[s["correlation_id"]]
        w = next(i for i, (lo, hi) in enumerate(windows) if lo <= t < hi)
        lo_hi = spans.setdefault(w, [start, end])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], start), max(lo_hi[1], end)
    return [(hi - lo) / 1e9 for _w, (lo, hi) in sorted(spans.items())]


def tpu_truth(path: Path, module: str) -> list[float]:
    """Per run, the slowest chip's "XLA Modules" event (the k-th event of each chip is run k)."""
    per_chip: dict[str, list[tuple[float, float]]] = {}
    for plane, line, name, start, end, _s in _raw(path):
        if line == "XLA Modules" and name.split("(")[0] == module:
            per_chip.setdefault(plane, []).append((start, end - start))
    runs = {len(v) for v in per_chip.values()}
    assert len(runs) == 1
    ordered = [sorted(v) for v in per_chip.values()]
    return [max(chip[k][1] for chip in ordered) / 1e9 for k in range(runs.pop())]


# --- the XSpace reader ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [GEMM, ELEMENTWISE, ATTENTION, pytest.param(TPU, marks=pytest.mark.slow)],
                         ids=lambda p: p.name)  # the TPU profile, the largest (0.8 s), in the full run
def test_our_xspace_reader_reads_what_profile_data_reads(path: Path) -> None:
    ours = real_space(path)
    theirs = ProfileData.from_file(str(path))
    a = [(p.name, ln.name, e.name, e.start_ns, e.duration_ns, dict(e.stats))
         for p in ours.planes for ln in p.lines for e in ln.events]
    b = [(p.name, ln.name, e.name, e.start_ns, e.duration_ns, dict(e.stats))
         for p in theirs.planes for ln in p.lines for e in ln.events]
    assert len(a) == len(b) > 1000
    for x, y in zip(a, b, strict=True):
        assert x[:3] == y[:3]
        assert x[3] == pytest.approx(y[3], abs=1.0) and x[4] == pytest.approx(y[4], abs=1.0)  # ns rounding
        assert all(x[5].get(k) == v for k, v in y[5].items())  # ours adds the metadata's stats


def test_the_hlo_asked_for_is_read_straight_from_the_bytes_as_the_whole_profile_reads_it() -> None:
    """The survey reads only the programs it has not seen from each profile (a real H100 profile here)."""
    everything = hlo_module_protos(real_space(GEMM))
    asked = hlo_protos_wanted(GEMM.read_bytes(), lambda name: name in ("jit_dot(21)", "jit_dot(5)"))
    assert asked == {name: everything[name] for name in ("jit_dot(21)", "jit_dot(5)")}


def test_every_program_carries_its_hlo() -> None:
    protos = hlo_module_protos(real_space(GEMM))
    assert {f"jit_dot({i})" for i in JIT_DOT_IDS} <= set(protos)
    for name in ("jit_dot(21)", "jit_dot(5)"):
        module = parse_hlo(hlo_text(protos[name]))  # names without '%', ENTRY without a signature
        assert module.name == "jit_dot" and module.entry.root.opcode in ("get-tuple-element", "fusion")


def test_not_a_profile_is_a_clear_error() -> None:
    from pytest_roofline.analysis.runs.xspace import XSpaceError

    with pytest.raises(XSpaceError, match="README.md is not a profiler XSpace"):
        read_xspace((DATA / "README.md").read_bytes(), "README.md")


# --- runs and programs --------------------------------------------------------------------------------------
@pytest.mark.parametrize("program_id", JIT_DOT_IDS)
def test_six_jit_dot_programs_are_told_apart_and_timed(program_id: int) -> None:
    found = run_times(real_events(GEMM), "jit_dot", "gpu", program_id=program_id)
    truth = gpu_truth(GEMM, "jit_dot", program_id)
    assert len(truth) == 3
    assert found.per_run_s == pytest.approx(truth, rel=1e-9)
    assert found.program_id == program_id and found.devices == 1 and not found.notes


def test_a_module_name_alone_is_ambiguous() -> None:
    from pytest_roofline.analysis.runs.trace_events import TraceError

    with pytest.raises(
        TraceError, match=r"6 different programs named 'jit_dot' ran \(program ids 5, 21, 34, 49, 64, 79\)"
    ):
        run_times(real_events(GEMM), "jit_dot", "gpu")


@pytest.mark.parametrize("path", [GEMM, ELEMENTWISE, ATTENTION], ids=lambda p: p.name)
def test_every_gpu_program_matches_the_second_route(path: Path) -> None:
    """Each program's runs against ProfileData's own reading; read again from one index of the trace shared by
    every program (as a measurement reads its kernel, its reference and its warm check), the same runs."""
    events = real_events(path)
    keys = programs(events, "gpu")
    assert len(keys) >= 11
    index = TraceIndex.of(events, "gpu")
    for key in keys:
        assert key.program_id is not None
        found = run_times(events, key.module, "gpu", program_id=key.program_id)
        assert found.per_run_s == pytest.approx(gpu_truth(path, key.module, key.program_id), rel=1e-9), key
        shared = run_times(events, key.module, "gpu", program_id=key.program_id, index=index)
        assert (shared.per_run_s, shared.op_events, shared.run_of_event) == (
            found.per_run_s, found.op_events, found.run_of_event), key


def test_two_kernels_per_run_make_one_run() -> None:
    events = real_events(ELEMENTWISE)
    key = next(k for k in programs(events, "gpu") if k.module == "jit__mean")
    found = run_times(events, key.module, "gpu", program_id=key.program_id)
    assert len(found.per_run_s) == 5 and len(found.op_events) == 10


def test_tpu_program_on_four_chips_runs_100_times() -> None:
    events = real_events(TPU)
    found = run_times(events, "jit_f", "tpu", expected_runs=100)
    assert found.devices == 4 and set(found.per_device_s) == {f"/device:TPU:{i}" for i in range(4)}
    assert found.per_run_s == pytest.approx(tpu_truth(TPU, "jit_f"), abs=2e-9)  # ProfileData rounds to ns
    # every op event is in a run of its own chip
    assert len(found.run_of_event) == len(found.op_events) == 4 * 100 * 15


def test_tpu_all_reduce_run_is_the_slowest_chips_module_event_not_the_ops_span() -> None:
    found = run_times(real_events(TPU), "jit__psum", "tpu", expected_runs=3)
    assert found.per_run_s == pytest.approx(tpu_truth(TPU, "jit__psum"), abs=2e-9)
    assert [round(t * 1e3) for t in found.per_run_s] == [463, 153, 146]  # the all-reduce op alone: 121.7 ms


# --- counts and per-op rows from the embedded HLO ------------------------------------------------------------
def _summaries(path: Path, spec_from_profile: bool = True) -> dict[ProgramKey, Any]:
    space = real_space(path)
    events = flatten(space)
    platform = platform_of(events)
    plane = next(p for p in space.planes if p.name.startswith("/device:") and p.stats)
    spec, _how = find_spec_for_profile(load_shipped_table(), platform, plane.stats)
    protos = hlo_module_protos(space)
    out = {}
    for key in programs(events, platform):
        module = parse_hlo(hlo_text(protos[hlo_key(key)])) if hlo_key(key) in protos else None
        out[key] = summarize_program(events, platform, key, module, spec if spec_from_profile else None)
    return out


def test_matrix_flops_of_each_jit_dot_are_2mnk() -> None:
    protos = hlo_module_protos(real_space(GEMM))
    summaries = _summaries(GEMM)
    for pid in JIT_DOT_IDS:
        text = hlo_text(protos[f"jit_dot({pid})"])
        # a: bf16[M,K], b: bf16[K,N], as the program's signature states them
        (m, k), (k2, n) = [tuple(map(int, d)) for d in re.findall(r"bf16\[(\d+),(\d+)\]", text.split("->")[0])[:2]]
        assert k == k2
        counts = summaries[ProgramKey("jit_dot", pid)].counts
        assert counts.matrix_flops == {"bf16": 2.0 * m * n * k}, pid
        assert counts.flops == 2.0 * m * n * k and not counts.uncounted


def test_per_op_rows_are_joined_to_the_embedded_hlo() -> None:
    gemm = _summaries(GEMM)[ProgramKey("jit_dot", 49)]
    (row,) = [r for r in gemm.ops if r.measured_s]
    assert row.name == "custom-call.1" and row.dtype == "bf16" and row.events_per_run == 1
    assert row.measured_s == pytest.approx(median(gemm.per_run_s), rel=1e-9)  # the program is this one kernel
    # gemm result plus workspace: the workspace (s8[...]) is scratch, not traffic
    assert row.bytes == 2 * (8192 * 4096 * 2) + 8192 * 8192 * 2
    assert gemm.hardware == "MI300X" and 0.5 < gemm.utilization < 0.8
    tpu = _summaries(TPU)
    f = tpu[next(k for k in tpu if k.module == "jit_f")]
    timed = [r for r in f.ops if r.measured_s]
    assert {r.name for r in timed} >= {"broadcast_add_fusion", "copy-start", "copy-done"}
    psum = tpu[next(k for k in tpu if k.module == "jit__psum")]
    (ar,) = [r for r in psum.ops if r.measured_s]
    assert ar.opcode == "all-reduce" and ar.measured_s == pytest.approx(0.1217, rel=1e-3)


def test_the_device_is_found_from_the_profile() -> None:
    table = load_shipped_table()
    for path, name in ((GEMM, "MI300X"), (TPU, "TPU v6e")):
        space = real_space(path)
        plane = next(p for p in space.planes if p.name.startswith("/device:") and p.stats)
        platform = "gpu" if "GPU" in plane.name else "tpu"
        assert find_spec_for_profile(table, platform, plane.stats)[0].name == name


def test_an_h100s_memory_bandwidth_tells_sxm_from_pcie() -> None:
    """Constructed plane stats, copied from the device plane of a profile recorded by pytest-roofline on an
    NVIDIA H100 80GB HBM3 (docs/gpu-runs): capability and size fit both H100 entries; the bandwidth picks one."""
    stats = {"device_vendor": "Nvidia", "gpu_device_name": "NVIDIA H100 80GB HBM3", "clock_rate": 1980000,
             "core_count": 132, "memory_bandwidth": 3352320000000, "memory_size": 85017493504,
             "compute_cap_major": 9, "compute_cap_minor": 0}
    table = load_shipped_table()
    spec, how = find_spec_for_profile(table, "gpu", stats)
    assert spec.name == "H100 SXM" and "3.35 TB/s" in how
    assert find_spec_for_profile(table, "gpu", {**stats, "memory_bandwidth": 2.0e12})[0].name == "H100 PCIe"
    with pytest.raises(UnknownDeviceError, match="H100 SXM, H100 PCIe"):
        find_spec_for_profile(table, "gpu", {k: v for k, v in stats.items() if k != "memory_bandwidth"})


# --- the command --------------------------------------------------------------------------------------------
def test_analyze_lists_every_program_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(GEMM), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    dots = [p for p in data["programs"] if p["module"] == "jit_dot"]
    assert sorted(p["program_id"] for p in dots) == list(JIT_DOT_IDS)
    for p in dots:
        assert p["devices"] == 1 and p["runs"] == 3 and len(p["per_run_s"]) == 3
        assert p["per_run_s"] == pytest.approx(gpu_truth(GEMM, "jit_dot", p["program_id"]), rel=1e-9)
        assert set(p["matrix_flops"]) == {"bf16"} and p["utilization"] is not None and p["ops"]
    assert {"module", "program_id", "devices", "runs", "per_run_s", "flops", "matrix_flops", "bytes_accessed",
            "utilization", "ops"} <= set(dots[0])


def test_analyze_one_program_prints_its_op_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(TPU), "--program", "jit__psum"]) == 0
    out = capsys.readouterr().out
    assert "4 devices, 3 runs" in out and "TPU v6e" in out and "all-reduce" in out and "interconnect-bound" in out


def test_analyze_errors_are_one_line_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        (["analyze", str(DATA / "README.md")], "is not a profiler XSpace"),
        (["analyze", str(GEMM), "--program", "jit_nothing"], "no program 'jit_nothing'"),
        (["analyze", str(GEMM), "--program", "jit_dot"], "name one as jit_dot:<program_id>"),
        (["analyze", str(tmp_path)], "no .xplane.pb file"),
        (["analyze", str(tmp_path / "missing.xplane.pb")], "no such file"),
        (["analyze", str(GEMM), "--hardware", "Z80"], "'Z80' is not in the table"),
    ]
    for argv, expected in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert expected in err and err.count("\n") == 1 and "Traceback" not in err, err
