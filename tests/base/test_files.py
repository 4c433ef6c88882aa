"""The atomic writers and the YAML reader shared by every layer."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

import pytest

from pytest_roofline.base.files import (
    check_writable,
    json_text,
    read_yaml_mapping,
    write_directory_atomic,
    write_text_atomic,
)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_written_files_follow_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        path = write_text_atomic(tmp_path / "sub" / "r.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert path.read_text() == "{}" and sorted(p.name for p in path.parent.iterdir()) == ["r.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")

    def failing_replace(src: str, dst: str) -> None:  # a fake: the rename fails (e.g. interrupted)
        raise OSError("interrupted")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="interrupted"):
        write_text_atomic(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root (CI containers run as root)")
def test_a_character_device_is_written_into_not_replaced(tmp_path: Path) -> None:
    device = tmp_path / "null"  # a real character device: the same major/minor as /dev/null
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    link = tmp_path / "link-to-null"
    link.symlink_to(device)
    for target in (device, link):
        write_text_atomic(target, "x" * 35_000)
        assert stat.S_ISCHR(os.stat(target).st_mode) and device.read_text() == ""
    assert link.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == ["link-to-null", "null"]


def test_a_fifo_is_written_into_whole(tmp_path: Path) -> None:
    """The FIFO's read end is open before the write (a reader thread started just before had not always reached its
    open, and a FIFO no process reads is refused); the text fits the pipe's buffer, so the write does not wait."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_text_atomic(fifo, '{"a": 1}\n')
        got = os.read(reader, 1024)
    finally:
        os.close(reader)
    assert got == b'{"a": 1}\n' and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_json_text_is_strict_json() -> None:
    text = json_text({"intensity": math.inf, "x": [math.nan, -math.inf, 1.5], "t": (1, 2)})
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"not JSON: {c}")) == {
        "intensity": None, "x": [None, None, 1.5], "t": [1, 2]}


def test_directory_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    def fill(d: Path) -> None:
        (d / "a.txt").write_text("a")

    out = write_directory_atomic(tmp_path / "t", fill)
    assert (out / "a.txt").read_text() == "a"

    def broken(d: Path) -> None:
        (d / "half.txt").write_text("h")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_directory_atomic(tmp_path / "u", broken)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]
    def other(d: Path) -> None:
        (d / "b.txt").write_text("b")

    write_directory_atomic(tmp_path / "t", other)  # replaces
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["b.txt"]


def test_check_writable(tmp_path: Path) -> None:
    assert check_writable(tmp_path / "new" / "deeper" / "r.json") is None
    (tmp_path / "f").write_text("x")
    assert check_writable(tmp_path / "f" / "r.json") == f"{tmp_path / 'f'} is not a directory"
    assert check_writable(tmp_path) == f"{tmp_path} is a directory"
    assert list(tmp_path.iterdir()) == [tmp_path / "f"]  # the probe left nothing behind


def test_a_directory_no_file_can_be_created_in_is_refused_even_for_a_superuser() -> None:
    """/proc allows no new file, whatever its permission bits say to root (a report there failed only at the end
    of the run before the check made a file)."""
    if not os.path.isdir("/proc"):
        pytest.skip("no /proc on this system")
    problem = check_writable("/proc/r.json")
    assert problem is not None and problem.startswith("cannot create a file in /proc: ") or \
        problem == "directory /proc is not writable"


@pytest.mark.parametrize("text,fragment", [("[1, 2]", "expected a mapping at the top level, got list"),
                                           ("a: [", "not valid YAML")])
def test_yaml_errors_name_the_file(text: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment) as info:
        read_yaml_mapping(text, "conf.yaml")
    assert str(info.value).startswith("conf.yaml: ")
    assert read_yaml_mapping("", "conf.yaml") == {}


def test_a_yaml_alias_bomb_is_refused_at_once_without_quoting_it() -> None:
    """A 330-byte file of nested aliases (nine lists of nine aliases of the list before: 9**9 values) as ``min:``:
    refused with the file named, before any value is read (before, it loaded, and quoting it in the error took 32-120 s
    and over a GB). A file
    that uses an alias or two as people do is read as before."""
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for k in range(1, 9):
        prev, name = chr(ord("a") + k - 1), chr(ord("a") + k)
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    lines.append("min: *i")
    text = "\n".join(lines)
    assert len(text) < 600
    with pytest.raises(ValueError, match=r"conf\.yaml: its aliases expand it to more than 100,000 values"):
        read_yaml_mapping(text, "conf.yaml")
    assert read_yaml_mapping("base: &b 0.5\nmin: *b\nthresholds: {'t::a': *b}", "conf.yaml")["min"] == 0.5


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="open files named through /proc")
def test_a_report_into_stdout_that_goes_to_a_log_file_lands_in_the_log_between_its_lines(tmp_path: Path) -> None:
    """A process whose stdout is a regular file, as a CI job's log is, writes its report into a symlink to its
    /proc/self/fd/1 (what /dev/stdout is): the report lands in the log between what the process printed before and
    after, and the symlink stays a symlink (before: the symlink was followed to the regular log file, so a file was
    renamed over the link, and as root over /dev/stdout itself, and the log got nothing)."""
    import subprocess
    import sys

    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    log = tmp_path / "ci.log"
    script = ("import sys; from pytest_roofline.base.files import write_text_atomic; print('before', flush=True); "
              f"print('buffered'); write_text_atomic({str(link)!r}, '{{\"report\": 1}}\\n'); print('after')")
    with open(log, "w", encoding="utf-8") as out:
        subprocess.run([sys.executable, "-c", script], stdout=out, check=True)
    assert log.read_text(encoding="utf-8") == 'before\nbuffered\n{"report": 1}\nafter\n'
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_fifo_that_no_process_reads_is_an_error_at_once_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="report.fifo is a FIFO that no process reads: start its reader first"):
        write_text_atomic(fifo, "{}")
