"""pytest-roofline show / compare / history / export / html on constructed reports (records of fake results,
tests/support/fakes.py), run in process through the console script's main()."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fakes import fake_result, record_of
from paths import ROOT

from pytest_roofline.analysis.model.per_op import OpRow, OpsModel
from pytest_roofline.cli.main import main
from pytest_roofline.hardware.nvml import ClockReading, Clocks
from pytest_roofline.report.document import report_document, session_block


def _report(utils: dict[str, float], day: int, complete: bool = True, commit: str = "c0ffee",
            compile_s: dict[str, float] | None = None, sm_mhz: float | None = None,
            waiting: dict[str, float] | None = None) -> dict[str, Any]:
    """A report of fake results: ``utils`` per test, ``compile_s`` their made-up compile times (default 10 ms),
    ``sm_mhz`` a made-up SM clock read after their runs (none by default), ``waiting`` the made-up share of their
    ready time the kernels' threads waited for a CPU (none by default: quiet)."""
    clocks = Clocks(None, ClockReading(sm_mhz, 2619, 1980, 2619)) if sm_mhz else None
    records = [record_of(f"test_k.py::{name}", "kernel",
                         replace(fake_result(u, name="kernel", compile_s=(compile_s or {}).get(name, 0.01),
                                             waiting=(waiting or {}).get(name)), clocks=clocks), "measured")
               for name, u in utils.items()]
    session = session_block(0 if complete else 2, len(utils), len(utils) if complete else 1)
    provenance = {"git": {"commit": f"{commit}{day:02d}" + "0" * 30, "dirty": False}, "versions": {"jax": "fake"},
                  "session": session}
    return report_document(records, {}, f"2026-11-{day:02d}T03:17:00+00:00", provenance)


def _write(path: Path, report: dict[str, Any]) -> Path:
    path.write_text(json.dumps(report))
    return path


def _history(tmp_path: Path, nights: list[dict[str, float]], partial: dict[str, float] | None = None,
             compile_s: list[dict[str, float]] | None = None) -> Path:
    directory = tmp_path / "hist"
    directory.mkdir()
    for day, utils in enumerate(nights, start=1):
        made_up = compile_s[day - 1] if compile_s else None
        _write(directory / f"roofline-202611{day:02d}T031700Z-c0ffee.json", _report(utils, day, compile_s=made_up))
    if partial is not None:
        _write(directory / "roofline-20261130T031700Z-partial.json", _report(partial, 30, complete=False))
    return directory


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


STEADY = [{"test_a": 0.60 + 0.01 * (i % 3), "test_b": 0.40 + 0.005 * (i % 2)} for i in range(6)]


def test_history_flags_the_slower_kernel_and_no_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = _history(tmp_path, [*STEADY, {"test_a": 0.30, "test_b": 0.40}], partial={"test_a": 0.1, "test_b": 0.1})
    status, out, _ = _cli(capsys, "history", str(directory))
    assert status == 1
    lines = out.splitlines()
    assert lines[0] == f"history {directory}: 8 runs, 7 complete"
    assert (
        "left out (incomplete)" in lines[1]
        and "partial.json: interrupted (exit status 2); 1 of 2 tests ran" in lines[1]
    )
    (a_row,) = [line for line in lines if line.startswith("test_k.py::test_a [kernel]") and "7" in line]
    (b_row,) = [line for line in lines if line.startswith("test_k.py::test_b [kernel]")]
    assert a_row.endswith("regression") and "30.0%" in a_row
    assert b_row.endswith("ok")
    assert any("test_a [kernel] (fake CPU [calibrated], model program, jax fake): REGRESSION: latest run 30.0%" in line
               for line in lines)


def test_history_of_a_steady_suite_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _cli(capsys, "history", str(_history(tmp_path, STEADY)))
    assert status == 0 and "regression" not in out.replace("REGRESSION", "")


def test_compare_exits_1_on_a_regression_and_0_otherwise(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _write(tmp_path / "base.json", _report({"test_a": 0.6, "test_b": 0.4}, 1))
    worse = _write(tmp_path / "worse.json", _report({"test_a": 0.3, "test_b": 0.39, "test_new": 0.5}, 2))
    same = _write(tmp_path / "same.json", _report({"test_a": 0.58, "test_b": 0.4}, 2))
    status, out, _ = _cli(capsys, "compare", str(base), str(worse))
    assert status == 1
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("test_k.py")}
    assert rows["test_k.py::test_a"].split()[-1] == "REGRESSION" and "-50.0%" in rows["test_k.py::test_a"]
    assert rows["test_k.py::test_b"].split()[-1] == "ok" and rows["test_k.py::test_new"].endswith("new")
    assert _cli(capsys, "compare", str(base), str(same))[0] == 0
    assert _cli(capsys, "compare", "--max-drop", "0.6", str(base), str(worse))[0] == 0


def test_a_drop_measured_while_contended_cannot_be_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Fake results: a night beside other work (its threads waited 38% of the time) reads 38% below a quiet
    baseline: compare and history say it cannot be judged, with the waiting share; --strict fails it."""
    base = _write(tmp_path / "base.json", _report({"test_a": 0.5, "test_b": 0.4}, 1))
    busy = _write(tmp_path / "busy.json", _report({"test_a": 0.31, "test_b": 0.4}, 2, waiting={"test_a": 0.38}))
    status, out, _ = _cli(capsys, "compare", str(base), str(busy))
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("test_k.py")}
    assert status == 0 and rows["test_k.py::test_a"].split()[-1] == "contended", out
    assert "REGRESSION" not in out and "cannot judge: the current run was measured while contended (the kernel's " \
        "threads waited for a CPU held by another process during 38% of the time they were ready to run)" in out
    assert out.splitlines()[-1].startswith("0 regressed, 1 contended (cannot judge)")
    assert _cli(capsys, "compare", "--strict", str(base), str(busy))[0] == 1
    # A drop against a baseline report measured beside other work: the baseline's figure cannot judge it either.
    busy_base = _write(tmp_path / "busy_base.json", _report({"test_a": 0.5}, 1, waiting={"test_a": 0.3}))
    quiet = _write(tmp_path / "quiet.json", _report({"test_a": 0.3}, 2))
    status, out, _ = _cli(capsys, "compare", str(busy_base), str(quiet))
    assert status == 0 and "the baseline run was measured while contended (the kernel's threads waited for a CPU " \
        "held by another process during 30%" in out
    directory = _history(tmp_path, STEADY)
    _write(directory / "roofline-20261129T031700Z-c0ffee.json", _report({"test_a": 0.31, "test_b": 0.4}, 29,
                                                                        waiting={"test_a": 0.38}))
    status, out, _ = _cli(capsys, "history", str(directory))
    assert status == 0 and "cannot judge: the latest run was measured while contended" in out, out
    assert "REGRESSION" not in out and _cli(capsys, "history", "--strict", str(directory))[0] == 1


@pytest.mark.parametrize("current", ["other", "empty"])
def test_a_comparison_of_nothing_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str], current: str) -> None:
    base = _write(tmp_path / "base.json", _report({"test_a": 0.5}, 1))
    utils = {"test_other": 0.5} if current == "other" else {}
    path = _write(tmp_path / "current.json", _report(utils, 2))
    status, out, _ = _cli(capsys, "compare", str(base), str(path))
    said = "no kernel of" if current == "other" else "holds no measured kernel"
    assert status == 0 and "nothing compared: " in out and said in out, out
    assert _cli(capsys, "compare", "--strict", str(base), str(path))[0] == 1


def test_compare_against_a_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = _history(tmp_path, STEADY)
    worse = _write(tmp_path / "worse.json", _report({"test_a": 0.3, "test_b": 0.4}, 9))
    status, out, _ = _cli(capsys, "compare", str(directory), str(worse))
    assert status == 1 and "(6 runs in " in out


def _made(folder: Path) -> Path:
    folder.mkdir()
    return folder


# Made-up nights whose utilization swings by more than a factor of two: a gate of 4 x their noise is wider than
# the baseline itself, and no drop can fire it.
WILD = [{"test_a": u, "test_b": 0.40 + 0.005 * (i % 2)} for i, u in enumerate((0.30, 0.95, 0.42, 1.0, 0.25, 0.8))]
# Made-up nights as noisy as a shared 2-core machine's: a 4 x noise gate of about 36%, wider than the floor.
NOISY = [{"test_a": u, "test_b": 0.40 + 0.005 * (i % 2)} for i, u in enumerate((0.60, 0.70, 0.55, 0.66, 0.50, 0.62))]


def test_a_gate_that_cannot_fire_is_too_noisy_to_judge_not_ok(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    directory = _history(tmp_path, WILD)
    worse = _write(tmp_path / "worse.json", _report({"test_a": 0.1, "test_b": 0.4}, 9))
    for command in (["compare", str(directory), str(worse)], ["history", str(_history(_made(tmp_path / "h"), [*WILD, {
            "test_a": 0.1, "test_b": 0.4}]))]):
        status, out, _ = _cli(capsys, *command)
        assert status == 0, out
        (row,) = [line for line in out.splitlines() if line.startswith("test_k.py::test_a [kernel]") and "%" in line]
        assert row.endswith("too noisy"), row
        assert "too noisy to judge (gate " in out and "4 x noise " in out
        assert (
            out.splitlines()[-1] == "0 regressed, 1 too noisy to judge (neither passed nor failed; --strict fails them)"
        )
        assert _cli(capsys, *command[:1], "--strict", *command[1:])[0] == 1


def test_a_drop_the_noise_hides_is_undecided_with_both_figures(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A 30% drop on noisy nights: beyond the 5% floor, inside a gate of about 36%. It is neither ok nor a
    regression, and compare and history say so alike."""
    directory = _history(tmp_path, NOISY)
    drop = _write(tmp_path / "drop.json", _report({"test_a": 0.42, "test_b": 0.4}, 9))
    status, out, _ = _cli(capsys, "compare", str(directory), str(drop))
    assert status == 0
    (detail,) = [line for line in out.splitlines() if line.startswith("  test_k.py::test_a [kernel]: undecided")]
    assert "undecided: dropped 31.1%, beyond the 5% floor, inside its gate " in detail
    assert out.splitlines()[-1].startswith("0 regressed, 1 undecided")
    status, out, _ = _cli(
        capsys, "history", str(_history(_made(tmp_path / "h"), [*NOISY, {"test_a": 0.42, "test_b": 0.4}]))
    )
    assert (
        status == 0
        and "undecided: dropped 31.1%" in out
        and out.splitlines()[-1].startswith("0 regressed, 1 undecided")
    )
    assert _cli(capsys, "compare", "--strict", str(directory), str(drop))[0] == 1


def test_compile_time_is_judged_only_when_a_ratio_is_asked_for(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Made-up compile times: test_a's grows from 10 ms to 30 ms at the same utilization."""
    base = _write(tmp_path / "base.json", _report({"test_a": 0.6, "test_b": 0.4}, 1))
    slow = _write(tmp_path / "slow.json", _report({"test_a": 0.6, "test_b": 0.4}, 2, compile_s={"test_a": 0.03}))
    assert _cli(capsys, "compare", str(base), str(slow))[0] == 0
    status, out, _ = _cli(capsys, "compare", "--max-compile", "2", str(base), str(slow))
    assert status == 1
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("test_k.py")}
    assert rows["test_k.py::test_a"].endswith("COMPILE REGRESSION") and "30 ms (3.00x)" in rows["test_k.py::test_a"]
    assert rows["test_k.py::test_b"].endswith("ok") and "(1.00x)" in rows["test_k.py::test_b"]
    assert ("compile-time regression: compile time 30 ms is 3.00x the baseline's 10 ms (1 run), beyond "
            "--max-compile 2x") in out
    assert _cli(capsys, "compare", "--max-compile", "4", str(base), str(slow))[0] == 0

    times = [{"test_a": 0.01 + 0.001 * (i % 2), "test_b": 0.02} for i in range(6)] + [{"test_a": 0.05, "test_b": 0.02}]
    directory = _history(tmp_path, [*STEADY, STEADY[0]], compile_s=times)
    status, out, _ = _cli(capsys, "history", str(directory))
    assert status == 0 and "compile" in out.splitlines()[1] and "50 ms" in out
    status, out, _ = _cli(capsys, "history", "--max-compile", "1.5", str(directory))
    assert status == 1
    (a_row,) = [line for line in out.splitlines() if line.startswith("test_k.py::test_a")]
    assert a_row.endswith("compile regression") and "50 ms (4.76x)" in a_row
    assert "COMPILE-TIME REGRESSION: compile time 50 ms is 4.76x the baseline's 10.5 ms (median of 6 runs)" in out
    for bad in ("1", "0.5", "x"):
        with pytest.raises(SystemExit) as stop:
            main(["history", "--max-compile", bad, str(directory)])
        assert stop.value.code == 2 and f"must be a ratio above 1, e.g. 1.5, got '{bad}'" in capsys.readouterr().err


def test_a_regression_that_comes_with_a_clock_drop_says_so(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Made-up GPU clocks: the baseline ran at 1965 MHz, the slower run at 1580 MHz."""
    base = _write(tmp_path / "base.json", _report({"test_a": 0.6}, 1, sm_mhz=1965))
    slow = _write(tmp_path / "slow.json", _report({"test_a": 0.45}, 2, sm_mhz=1580))
    status, out, _ = _cli(capsys, "compare", str(base), str(slow))
    assert status == 1 and "; with a clock drop: SM 1965 -> 1580 MHz" in out
    nights = [_report({"test_a": 0.6 + 0.01 * (i % 2)}, i + 1, sm_mhz=1965) for i in range(6)]
    directory = tmp_path / "hist"
    directory.mkdir()
    for i, night in enumerate([*nights, _report({"test_a": 0.45}, 7, sm_mhz=1580)]):
        _write(directory / f"roofline-202611{i + 1:02d}T031700Z-c0ffee.json", night)
    status, out, _ = _cli(capsys, "history", str(directory))
    assert status == 1 and "REGRESSION: latest run 45.0%" in out and "; with a clock drop: SM 1965 -> 1580 MHz" in out


def test_show_prints_the_run_and_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "r.json", _report({"test_a": 0.6}, 3, complete=False))
    status, out, _ = _cli(capsys, "show", str(path))
    assert status == 0
    assert out.splitlines()[0] == (f"{path}: created 2026-11-03T03:17:00+00:00, commit c0ffee030000; pytest exit "
                                   "status 2 (INTERRUPTED), 1 of 1 tests ran; INCOMPLETE: interrupted (exit status 2)")
    assert "test_k.py::test_a [kernel]" in out and "60.0%" in out


@pytest.mark.slow  # starts a Python process
def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path: Path) -> None:
    """``pytest-roofline show REPORT | head``: a real pipe whose reader has gone before the command writes (as
    ``head`` leaves it after its lines): no BrokenPipeError traceback, the exit status of a process ended by SIGPIPE."""
    import os
    import subprocess

    path = _write(tmp_path / "r.json", _report({"test_a": 0.6}, 3))
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "pytest_roofline", "show", str(path)], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert done.returncode == 141 and "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def test_export_github_action_benchmark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "r.json", _report({"test_a": 0.6}, 3))
    status, out, _ = _cli(capsys, "export", "--format", "github-action-benchmark", str(path))
    (entry,) = json.loads(out)
    assert status == 0 and entry["name"] == "test_k.py::test_a [kernel]" and entry["unit"] == "% of roofline"
    assert entry["value"] == pytest.approx(60.0) and entry["range"] == "60.0-60.0"
    assert entry["extra"].startswith("memory-bound; fake CPU [calibrated]; verdict measured")


@pytest.mark.parametrize("args", [["show", "{missing}"], ["compare", "{missing}", "{foreign}"],
                                  ["history", "{missing}"], ["export", "--format", "github-action-benchmark",
                                                              "{foreign}"], ["show", "{foreign}"],
                                  ["html", "{foreign}", "-o", "{out}"]])
def test_a_missing_or_foreign_file_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         args: list[str]) -> None:
    (tmp_path / "foreign.json").write_text('{"results": 3}')
    paths = {"missing": str(tmp_path / "missing.json"), "foreign": str(tmp_path / "foreign.json"),
             "out": str(tmp_path / "o.html")}
    status, out, err = _cli(capsys, *[a.format(**paths) for a in args])
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"pytest-roofline {args[0]}: error: ")
    assert "no such" in err or "not a pytest-roofline report" in err


def test_html_is_one_self_contained_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = _history(tmp_path, [*STEADY, {"test_a": 0.30, "test_b": 0.40}])
    report = _report({"test_a": 0.3, "test_b": 0.4}, 9)
    report["results"][0]["verdict"] = "regression"
    path = _write(tmp_path / "r.json", report)
    status, out, _ = _cli(capsys, "html", str(path), "--history", str(directory), "-o", str(tmp_path / "r.html"))
    text = (tmp_path / "r.html").read_text()
    assert status == 0 and out.startswith(f"wrote {tmp_path / 'r.html'}")
    assert "<script src" not in text and "<link" not in text  # nothing to fetch: plotly is inline
    assert text.count('class="plotly-graph-div"') == 1 + 2  # the roofline chart, two sparklines (no op chart:
    # the fake results have no ops, said in its place)
    assert "test_k.py::test_a" in text and "no op with FLOPs to plot" in text and "minimum detectable drop" in text
    # the fake footprint (7 MB, tests/support/fakes.py) in the peak-memory column, its breakdown on hover
    assert "<th class=\"sortable\" title=\"click to sort\">peak memory</th>" in text
    assert 'title="arguments 2 MB + outputs 1 MB + temporaries 4 MB - aliased 0 B">7 MB</td>' in text


def test_html_without_plotly_says_how_to_get_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "plotly", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    path = _write(tmp_path / "r.json", _report({"test_a": 0.6}, 3))
    status, _, err = _cli(capsys, "html", str(path), "-o", str(tmp_path / "r.html"))
    assert status == 2 and "needs plotly: pip install 'pytest-roofline[html]'" in err
    assert not (tmp_path / "r.html").exists()


def test_the_sample_nightly_workflow_uses_real_options_and_commands() -> None:
    import re

    import yaml

    from pytest_roofline.plugin.settings import OPTIONS

    text = (ROOT / "docs" / "nightly-ci.yml").read_text()
    workflow = yaml.safe_load(text)
    runs = " ".join(step.get("run", "") for step in workflow["jobs"]["roofline"]["steps"])
    flags = set(re.findall(r"--roofline-[a-z-]+", runs))
    assert flags and flags <= {opt.flag for opt in OPTIONS}
    assert {"--roofline-history", "--roofline-baseline", "--roofline-html"} <= flags
    for command in re.findall(r"pytest-roofline (\w+)", text):
        assert command in {"history", "export", "show", "compare", "html", "analyze"}
    assert "pytest-roofline history roofline-history" in runs


def test_a_foreign_or_truncated_file_in_a_history_is_left_out_with_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = _history(tmp_path, STEADY)
    (directory / "roofline-20261120T000000Z-foreign.json").write_text('{"a": 1}')
    good = (directory / "roofline-20261101T031700Z-c0ffee.json").read_text()
    (directory / "roofline-20261121T000000Z-cut.json").write_text(good[: len(good) // 2])  # a truncated write
    status, out, err = _cli(capsys, "history", str(directory))
    assert status == 0 and out.startswith(f"history {directory}: 6 runs, 6 complete")
    warnings = err.strip().splitlines()
    assert len(warnings) == 2 and all(w.startswith("pytest-roofline: warning: ") for w in warnings)
    assert "foreign.json: not a pytest-roofline report (no schema_version and results); left out" in warnings[0]
    assert "cut.json: not a pytest-roofline report (not JSON: " in warnings[1] and " at at " not in warnings[1]
    assert " (line 1, column " in warnings[1]
    worse = _write(tmp_path / "worse.json", _report({"test_a": 0.3, "test_b": 0.4}, 9))
    assert _cli(capsys, "compare", str(directory), str(worse))[0] == 1  # the baseline still reads the 6 good runs
    status, _, err = _cli(capsys, "html", str(worse), "--history", str(directory), "-o", str(tmp_path / "h.html"))
    assert status == 0 and "cut.json: not a pytest-roofline report" in err  # the sparklines read the 6 good runs


@pytest.mark.parametrize("args", [["history", "{d}", "--last", "0"], ["history", "{d}", "--last", "-1"],
                                  ["history", "{d}", "--last", "two"], ["analyze", "--hlo", "x", "--top", "0"]])
def test_counts_must_be_whole_numbers_of_one_or_more(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     args: list[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main([a.format(d=str(tmp_path)) for a in args])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "must be a whole number of 1 or more, got" in err


def _op(name: str, opcode: str, ms: float) -> OpRow:
    """A made-up op row: 8 MiB moved, measured ``ms`` per run."""
    return OpRow(name, opcode, "kLoop" if opcode == "fusion" else None, "main", "f32[1024,1024]", ("f32[1024,1024]",),
                 dtype="vector", executions=1, flops=0.0, transcendentals=0.0, bytes=8 * 2**20, collective_bytes=0.0,
                 compute_time_s=0.0, memory_time_s=8 * 2**20 / 1e10, comms_time_s=0.0, measured_s=ms * 1e-3,
                 events_per_run=1.0,
                 family="copy" if opcode == "copy" else "XLA fusion")


def _with_ops(report: dict[str, Any], device_ms: float, *ops: OpRow) -> dict[str, Any]:
    """``report`` with its test_a's result made of ``ops`` (made up) and its device time ``device_ms``."""
    result = replace(fake_result(0.6 / device_ms, name="kernel"), ops_model=OpsModel(ops))
    result = replace(result, timing=replace(result.timing, per_run_s=(device_ms * 1e-3,) * 5))
    entry = next(r for r in report["results"] if r["nodeid"] == "test_k.py::test_a")
    entry["result"] = result.to_dict()
    return report


def test_compare_explains_a_regression_op_by_op(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Made-up per-op times: the current program has a copy the baseline's did not, 1 ms of the 1.1 ms lost."""
    base = _write(tmp_path / "base.json", _with_ops(_report({"test_a": 0.6}, 1), 1.0, _op("fusion.1", "fusion", 0.95)))
    worse = _write(tmp_path / "worse.json", _with_ops(_report({"test_a": 0.3}, 2), 2.1, _op("fusion.4", "fusion", 1.0),
                                                      _op("copy.5", "copy", 1.0)))
    status, out, _ = _cli(capsys, "compare", str(base), str(worse))
    assert status == 1, out
    lines = out.splitlines()
    start = lines.index("    op by op:")
    assert lines[start - 1].startswith("  test_k.py::test_a [kernel]: regression: utilization")
    assert lines[start + 1] == ("      the current program: 1 op added, 1 the same; device time 1 ms -> 2.1 ms per run "
                                "(+1.1 ms)")
    assert lines[start + 2] == "        census: device ops per run 1 -> 2: +1 copy"
    assert lines[start + 3].startswith("        added copy.5, copy f32[1024,1024] -> f32[1024,1024]: 1 ms, 48% of the "
                                       "run, 8 MiB moved")
    assert lines[start + 3].endswith("; 91% of the change")


def test_history_explains_the_latest_regression_op_by_op(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Six steady nights of one made-up fusion, then a night whose program has a copy beside it."""
    directory = tmp_path / "hist"
    directory.mkdir()
    for day in range(1, 8):
        report = _report({"test_a": 0.6}, day)
        if day < 7:
            _with_ops(report, 1.0 + 0.01 * (day % 2), _op("fusion.1", "fusion", 0.95))
        else:
            _with_ops(report, 2.0, _op("fusion.2", "fusion", 0.95), _op("copy.3", "copy", 1.0))
        _write(directory / f"roofline-202611{day:02d}T031700Z-c0ffee.json", report)
    status, out, _ = _cli(capsys, "history", str(directory))
    assert status == 1, out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("    against 2026-11-06"))
    assert "REGRESSION" in lines[start - 1]
    assert lines[start + 1].startswith("      the current program: 1 op added, 1 the same; device time 1 ms -> 2 ms")
    assert lines[start + 3].startswith("        added copy.3, copy")


def test_compare_shows_a_census_change_without_a_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Made-up rows: the current program runs a copy the baseline's did not, at the same utilization."""
    base = _write(tmp_path / "base.json", _with_ops(_report({"test_a": 0.6}, 1), 1.0, _op("fusion.1", "fusion", 0.95)))
    same = _write(tmp_path / "same.json", _with_ops(_report({"test_a": 0.6}, 2), 1.0, _op("fusion.4", "fusion", 0.5),
                                                    _op("copy.5", "copy", 0.45)))
    status, out, _ = _cli(capsys, "compare", str(base), str(same))
    assert status == 0, out
    assert "  test_k.py::test_a [kernel]: census: device ops per run 1 -> 2: +1 copy" in out.splitlines()


def test_compare_writes_its_verdicts_as_markdown_worst_first(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """--summary-md FILE, and the same table appended to $GITHUB_STEP_SUMMARY (as GitHub Actions gives a step)."""
    base = _write(tmp_path / "base.json", _report({"test_a": 0.6, "test_b": 0.4, "test_gone": 0.5}, 1))
    worse = _write(tmp_path / "worse.json", _report({"test_a": 0.3, "test_b": 0.39, "test_new": 0.5}, 2))
    step = tmp_path / "step.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    status, out, _ = _cli(capsys, "compare", str(base), str(worse), "--summary-md", str(tmp_path / "s.md"))
    assert status == 1 and out.splitlines()[-1] == f"wrote {tmp_path / 's.md'}"
    text = (tmp_path / "s.md").read_text()
    assert step.read_text() == "earlier step\n" + text + "\n"
    lines = text.splitlines()
    assert lines[0] == "### pytest-roofline compare: 1 kernel regressed"
    rows = [line for line in lines if line.startswith("| test_k.py")]
    assert rows[0].startswith("| test_k.py::test_a [kernel] | REGRESSION | 60.0% | 30.0% | -50.0% |")
    assert rows[1].startswith("| test_k.py::test_b [kernel] | ok | 40.0% | 39.0% | -2.5% |")
    assert any(line.startswith("- test_k.py::test_new [kernel]: no baseline") for line in lines)
    assert "1 kernel of the baseline not in this run." in lines


def test_an_unwritable_summary_stops_compare_before_it_reads_anything(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a-file").write_text("")
    status, _, err = _cli(capsys, "compare", "missing.json", "missing.json", "--summary-md",
                          str(tmp_path / "a-file" / "s.md"))
    assert status == 2 and err == (f"pytest-roofline compare: error: --summary-md {tmp_path}/a-file/s.md: cannot "
                                   f"write it: {tmp_path}/a-file is not a directory\n")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="a device that is always full")
def test_a_summary_that_cannot_be_written_is_exit_status_2_where_nothing_regressed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/full takes the file's opening and refuses its bytes (no space left): as ab does, compare exits 2 where it
    would have exited 0 (before, 0), and a regression's 1 stands."""
    base = _write(tmp_path / "base.json", _report({"test_a": 0.6}, 1))
    same = _write(tmp_path / "same.json", _report({"test_a": 0.6}, 2))
    status, out, _ = _cli(capsys, "compare", str(base), str(same), "--summary-md", "/dev/full")
    assert status == 2 and "error: --summary-md /dev/full: cannot write it: No space left on device" in out
    worse = _write(tmp_path / "worse.json", _report({"test_a": 0.3}, 2))
    assert _cli(capsys, "compare", str(base), str(worse), "--summary-md", "/dev/full")[0] == 1


def test_budget_takes_seconds_minutes_or_hours(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_roofline.base.values import duration
    from pytest_roofline.cli.main import _parser

    assert [duration(t) for t in ("300", "300s", "5m", "1.5h", " 2M ")] == [300, 300, 300, 5400, 120]
    for bad in ("", "5x", "-1m", "0", "inf"):
        with pytest.raises(ValueError, match="must be a duration"):
            duration(bad)
    assert _parser().parse_args(["ab", "--base", "x", "--budget", "5m", "--time-all"]).budget == 300
    with pytest.raises(SystemExit):
        _parser().parse_args(["ab", "--base", "x", "--budget", "soon"])
    assert "--budget: must be a duration such as 300s, 5m or 1h, got 'soon'" in capsys.readouterr().err


@pytest.mark.parametrize("off", [["-p", "no:roofline"], ["-pno:roofline"], ["-q", "-p", "no:pytest_roofline"]])
def test_ab_with_the_plugin_turned_off_says_so(capsys: pytest.CaptureFixture[str], off: list[str]) -> None:
    status, out, err = _cli(capsys, "ab", "--base", "HEAD", "--", *off)
    assert status == 2 and out == "" and "INTERNALERROR" not in err
    assert err.startswith("pytest-roofline ab: error: the pytest arguments after -- turn pytest-roofline off (-p no:")
