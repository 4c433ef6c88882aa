"""Saved artifacts: the Perfetto copy of a saved trace (the exported trace's text with its top-level "metadata"
member cut out, which Perfetto rejects, without parsing the events), and one folder per kernel."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_roofline.measurement.artifacts import save_artifacts, without_metadata

TRACES = [
    {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True, "x": [1, {"y": "}"}]},
     "traceEvents": [{"name": "metadata", "args": {"metadata": "kept"}}]},
    {"metadata": {"only": 1}},
    {"traceEvents": [], "metadata": {}},
    {"traceEvents": [{"args": {"metadata": "inside an event: kept"}}]},
    {},
]


@pytest.mark.parametrize("trace", TRACES)
@pytest.mark.parametrize("layout", [{}, {"indent": 1}, {"separators": (",", ":")}])
def test_only_the_top_level_metadata_member_goes(trace: dict[str, object], layout: dict[str, object]) -> None:
    expected = {k: v for k, v in trace.items() if k != "metadata"}
    assert json.loads(without_metadata(json.dumps(trace, **layout))) == expected  # type: ignore[arg-type]


def test_text_that_is_not_an_object_is_left_alone() -> None:
    assert without_metadata("[1, 2]") == "[1, 2]"
    assert without_metadata("") == ""


def test_labels_that_reduce_to_one_folder_name_keep_their_own_folders(tmp_path: Path) -> None:
    """Fake results (no profile): two kernels of one test labelled α and β each keep their own HLO, and the same
    kernel saved again replaces its own folder."""
    from fakes import fake_result

    paths = {}
    for label in ("α", "β", "α"):
        result = replace(fake_result(0.5), hlo_text=f"HloModule {label}")
        paths[label] = save_artifacts(result, tmp_path, "tests/test_k.py::test_two", label)
    assert paths["α"]["trace_dir"] != paths["β"]["trace_dir"]
    assert Path(paths["α"]["hlo"]).read_text(encoding="utf-8") == "HloModule α"
    assert Path(paths["β"]["hlo"]).read_text(encoding="utf-8") == "HloModule β"
    assert len(list(tmp_path.iterdir())) == 2  # no leftovers
    plain = save_artifacts(fake_result(0.5), tmp_path, "tests/test_k.py::test_one[4-8]", "matmul")
    assert Path(plain["trace_dir"]).name == "tests_test_k.py_test_one_4-8___matmul"  # readable where nothing is lost


def test_labels_that_read_alike_keep_their_own_folders(tmp_path: Path) -> None:
    """Fake results: labels k/1, k_1, k[1] and k::1 of one test each keep their own trace folder and HLO."""
    from fakes import fake_result

    labels = ("k/1", "k_1", "k[1]", "k::1")
    folders = {label: save_artifacts(replace(fake_result(0.5), hlo_text=f"HloModule {label}"), tmp_path,
                                     "tests/test_k.py::test_one", label)["trace_dir"] for label in labels}
    assert len(set(folders.values())) == 4 and len(list(tmp_path.iterdir())) == 4
    for label, folder in folders.items():
        assert (Path(folder) / "hlo.txt").read_text(encoding="utf-8") == f"HloModule {label}"
    assert Path(folders["k_1"]).name == "tests_test_k.py_test_one__k_1"  # a plain label keeps its plain name


def test_parametrized_ids_that_read_alike_keep_their_own_folders(tmp_path: Path) -> None:
    """Fake results: one label in tests whose ids differ only in characters a folder name cannot keep (before, the
    digest was added for labels only, and these four shared one folder)."""
    from fakes import fake_result

    ids = ("t.py::test[a/b]", "t.py::test[a_b]", "t.py::test[a:b]", "t.py::test[a[b]")
    folders = {nodeid: save_artifacts(replace(fake_result(0.5), hlo_text=f"HloModule {nodeid}"), tmp_path, nodeid,
                                      "k")["trace_dir"] for nodeid in ids}
    assert len(set(folders.values())) == 4 and len(list(tmp_path.iterdir())) == 4
    for nodeid, folder in folders.items():
        assert (Path(folder) / "hlo.txt").read_text(encoding="utf-8") == f"HloModule {nodeid}"


def test_temporary_folders_a_killed_run_left_are_removed_by_the_next(tmp_path: Path) -> None:
    """Real folders named as a process killed while saving (SIGKILL) leaves them: its pid no longer runs."""
    import os
    import subprocess
    import sys

    from fakes import fake_result

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead = int(gone.stdout)
    stale = tmp_path / f".tests_test_k.py_test_one__k.tmp-{dead}-abc123"
    (stale / "plugins").mkdir(parents=True)
    (stale / "plugins" / "big.xplane.pb").write_bytes(b"x" * 1000)
    fresh = tmp_path / f".tests_test_k.py_test_two__k.tmp-{dead}-def456"  # just made: its writer may be elsewhere
    fresh.mkdir()
    mine = tmp_path / f".tests_test_k.py_test_three__k.tmp-{os.getpid()}-ghi789"  # a writer still running
    mine.mkdir()
    for folder in (stale, mine):
        os.utime(folder, (1e9, 1e9))  # untouched for years
    save_artifacts(fake_result(0.5), tmp_path, "tests/test_k.py::test_one", "k")
    assert not stale.exists() and fresh.exists() and mine.exists()
