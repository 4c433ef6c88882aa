"""The report's parts no other test reads: the charts of the HTML report (real plotly), the full failure block of
``--roofline-verbose-failures`` and the HTML details, and a report's provenance (a real git repository). Made-up
records of a FAKE CPU (tests/support/fakes.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fakes import FAKE_CPU, fake_result, record_of
from git_repos import commit, make_repo, needs_git

from pytest_roofline.records.kernel_record import KernelRecord
from pytest_roofline.report import provenance
from pytest_roofline.report.full_failure import figure_lines, full_block


def _records() -> list[KernelRecord]:
    return [record_of("t.py::test_a", "slow", fake_result(0.25, name="slow"), "fail", threshold=0.5),
            record_of("t.py::test_b", "fast", fake_result(0.9, bound="compute", name="fast"), "pass", threshold=0.5)]


def test_the_roofline_chart_puts_each_kernel_at_its_intensity_and_rate_under_its_roofs() -> None:
    go = pytest.importorskip("plotly.graph_objects")
    from pytest_roofline.report.charts import VERDICT_COLOURS, roofline_figure

    records = _records()
    fig = roofline_figure(go, FAKE_CPU, records)
    traces = {t.name: t for t in fig.data}
    memory = traces["memory 10 GB/s"]
    bandwidth, peak = FAKE_CPU.memory_bandwidth.value, FAKE_CPU.peaks["f32"].value
    assert list(memory.y) == pytest.approx([bandwidth * memory.x[0], peak])  # the slope meets the roof at the ridge
    assert memory.x[1] == pytest.approx(peak / bandwidth)
    assert list(traces["f32 peak 100 GFLOP/s"].y) == [peak, peak]
    for record in records:
        point = traces[f"kernels: {record.verdict}"]
        r = record.result
        assert point.x == pytest.approx((r.flops / r.bytes_accessed,))
        assert point.y == pytest.approx((r.flops / r.device_time_s,))
        assert point.y[0] <= min(peak, bandwidth * point.x[0]) * (1 + 1e-9)  # under both roofs: below 100%
        assert point.marker.color == VERDICT_COLOURS[record.verdict]
        assert f"utilization {r.utilization:.1%} ({record.verdict})" in point.text[0]
    # the roofs span a decade either side of every point and the ridge
    spread = [r.result.flops / r.result.bytes_accessed for r in records] + [peak / bandwidth]
    assert memory.x[0] == pytest.approx(min(spread) / 10)
    assert traces["f32 peak 100 GFLOP/s"].x[1] == pytest.approx(max(spread) * 10)
    assert fig.layout.xaxis.type == "log" and fig.layout.title.text == "fake CPU: kernels on the roofline"


def test_a_kernel_without_flops_is_not_plotted() -> None:
    go = pytest.importorskip("plotly.graph_objects")
    from dataclasses import replace

    from pytest_roofline.report.charts import roofline_figure

    record = _records()[0]
    no_flops = replace(record, result=replace(record.result, flops=0.0))
    fig = roofline_figure(go, FAKE_CPU, [no_flops])
    assert not [t for t in fig.data if t.name.startswith("kernels:")]


def test_the_full_failure_block_states_every_figure_of_the_record() -> None:
    record = _records()[0]
    r = record.result
    text = full_block(record, "utilization 25.0% below the threshold 50%")
    lines = text.splitlines()
    assert lines[0] == "roofline: kernel 'slow' of t.py::test_a: utilization 25.0% below the threshold 50%"
    # each figure as the record holds it: 1 ms measured, a quarter of it the roofline, memory-bound at 1 FLOP/B
    assert "  roofline      250 us (compute 25 us, memory 250 us)" in lines
    assert any(line.startswith("  measured      1 ms median") and "5 runs (profiler)" in line for line in lines)
    assert f"intensity     {r.flops / r.bytes_accessed:.0f} FLOP/B vs critical 10 FLOP/B -> memory-bound" in text
    assert "    f32 peak       100 GFLOP/s     calibration: fake (2026-11-22)" in lines
    assert "  memory        7 MB peak (arguments 2 MB + outputs 1 MB + temporaries 4 MB - aliased 0 B)" in lines
    assert math.isclose(r.roofline_time_s / r.device_time_s, 0.25)
    # the verdict's line gave the utilization: the block names where the threshold came from instead of repeating it
    assert "  threshold     50% ()" in lines and not any(line.startswith("  utilization") for line in lines)
    assert figure_lines(record, "utilization 25.0% below the threshold 50%") == lines[1:]
    # the HTML report's details (no verdict's line above them) state the utilization with its interval
    html = figure_lines(record)
    assert "  utilization   25.0%, 95% interval 25.0%-25.0% vs threshold 50% ()" in html
    assert [line for line in html if not line.startswith(("  utilization", "  threshold"))] == \
        [line for line in lines[1:] if not line.startswith(("  utilization", "  threshold"))]


@needs_git
def test_provenance_names_the_commit_and_whether_the_tree_changed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, {"a.txt": "one\n"})
    found = provenance.git_commit(str(repo))
    assert found is not None and len(found["commit"]) == 40 and found["dirty"] is False
    (repo / "a.txt").write_text("two\n")
    changed = provenance.git_commit(str(repo))
    assert changed is not None and changed["commit"] == found["commit"] and changed["dirty"] is True
    commit(repo, {"a.txt": "two\n"}, "second")
    after = provenance.git_commit(str(repo))
    assert after is not None and after["commit"] != found["commit"] and after["dirty"] is False
    assert provenance.git_commit(str(tmp_path)) is None  # not a repository


def test_provenance_names_the_machine_and_the_versions() -> None:
    import platform

    import pytest_roofline

    assert provenance.machine()["python"] == platform.python_version()
    found = provenance.versions()
    assert found["pytest_roofline"] == pytest_roofline.__version__ and found["pytest"] == pytest.__version__
