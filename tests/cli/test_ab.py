"""``pytest-roofline ab``: usage errors (exit 2, one line, the worktree gone), the temporary worktree, and the
base importing its own tree (plugin/ab/child.py) through the two ways an editable install points into the
head's tree: a path on sys.path (setuptools' .pth for a src layout, PYTHONPATH here) and an import finder
(setuptools' editable finder, imitated by a small finder named as such). The slow test compares two real
revisions of a JAX kernel end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from git_repos import commit, git, make_repo, needs_git, run_cli
from paths import ROOT

from pytest_roofline.ab.protocol import VERSION
from pytest_roofline.ab.side_task import SideTask
from pytest_roofline.cli.ab.job import uses_xdist
from pytest_roofline.cli.ab.served import Server, ServeUnavailable
from pytest_roofline.cli.ab.sides import CHILD
from pytest_roofline.cli.ab.worktree import worktree
from pytest_roofline.cli.errors import CliError
from pytest_roofline.cli.main import main


def _ab(capsys: pytest.CaptureFixture[str], repo: Path, *args: str) -> tuple[int, str, str]:
    return run_cli(capsys, repo, "ab", *args)


def _worktrees(repo: Path) -> int:
    return git(repo, "worktree", "list", "--porcelain").count("worktree ")


@needs_git
def test_not_a_git_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _ab(capsys, tmp_path, "--base", "main")
    assert status == 2 and out == ""
    assert err.strip() == f"pytest-roofline ab: error: {tmp_path.resolve()} is not inside a git repository (ab " \
                          "compares two revisions of one)"


@needs_git
def test_unknown_revision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path, {"README": "x\n"})
    status, _, err = _ab(capsys, repo, "--base", "no-such-branch")
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "--base no-such-branch: not a commit of the repository at" in err
    assert _worktrees(repo) == 1


@needs_git
def test_too_few_rounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path, {"README": "x\n"})
    status, _, err = _ab(capsys, repo, "--base", "HEAD", "--rounds", "3")
    assert status == 2 and "--rounds 3: at least 6" in err
    status, _, err = _ab(capsys, repo, "--base", "HEAD", "--rounds", "8", "--long-lived")
    assert status == 2 and "--rounds 8 with --long-lived: at least 12 (a 95% interval needs six pairs" in err


@needs_git
@pytest.mark.slow  # a pytest process
@pytest.mark.parametrize("schedule", [[], ["--long-lived"]])
def test_pytest_cannot_collect(tmp_path: Path, capsys: pytest.CaptureFixture[str], schedule: list[str]) -> None:
    repo = make_repo(tmp_path, {"test_broken.py": "def test_x(:\n    pass\n"})
    status, out, err = _ab(capsys, repo, "--base", "HEAD", *schedule, "--", "test_broken.py")
    assert status == 2 and out == ""
    line = err.strip().splitlines()[-1]
    assert line.startswith("pytest-roofline ab: error: pytest cannot run the tests of the base (")
    assert "exit status 2 (interrupted or errors during collection)" in line and "test_broken.py" in line
    assert _worktrees(repo) == 1  # the worktree is gone after the error
    assert git(repo, "status", "--porcelain") == ""


@needs_git
@pytest.mark.slow  # a pytest process
def test_no_kernel_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path, {"test_plain.py": "def test_x():\n    pass\n"})
    status, _, err = _ab(capsys, repo, "--base", "HEAD")
    assert status == 2 and err.strip().splitlines() == [
        "pytest-roofline ab: error: the selected tests measured no kernel on either side (no roofline(...) call "
        "ran, or the pytest-roofline plugin is not active there)"]


def test_ctrl_c_is_exit_status_2_with_one_line(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import pytest_roofline.cli.ab.driver as ab

    def interrupted(*args: object) -> tuple[str, int]:
        raise KeyboardInterrupt  # as Ctrl-C (or SIGTERM, turned into it) during a round

    monkeypatch.setattr(ab, "ab_command", interrupted)
    assert main(["ab", "--base", "HEAD"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "pytest-roofline ab: interrupted; its temporary worktree was removed\n"


def test_arguments_after_double_dash_are_for_ab_only(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["show", "r.json", "--", "-k", "x"])
    assert stop.value.code == 2
    assert "arguments after -- are for ab and noise only" in capsys.readouterr().err


@needs_git
def test_worktree_is_removed_when_the_block_fails(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, {"a.txt": "one\n"})
    commit = git(repo, "rev-parse", "HEAD").strip()
    (repo / "a.txt").write_text("uncommitted\n")
    with pytest.raises(KeyboardInterrupt), worktree(repo, commit) as path:
        assert (path / "a.txt").read_text() == "one\n"
        assert _worktrees(repo) == 2
        raise KeyboardInterrupt  # as Ctrl-C would
    assert not path.exists() and _worktrees(repo) == 1
    assert (repo / "a.txt").read_text() == "uncommitted\n"  # the user's tree untouched
    with pytest.raises(CliError, match="git worktree add"), worktree(repo, "0" * 40):
        pass


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
@needs_git
def test_a_killed_runs_worktree_is_removed_by_the_next_run(tmp_path: Path) -> None:
    """A real process enters the worktree and is killed outright (SIGKILL: nothing of its own runs); the next
    run's clean-up removes its folder and git's record of it, and leaves a live run's alone."""
    import signal

    from pytest_roofline.cli.ab.worktree import remove_leftovers

    repo = make_repo(tmp_path, {"a.txt": "one\n"})
    commit = git(repo, "rev-parse", "HEAD").strip()
    hold = ("import sys; from pathlib import Path; from pytest_roofline.cli.ab.worktree import worktree\n"
            f"with worktree(Path({str(repo)!r}), {commit!r}) as p:\n    print(p, flush=True); sys.stdin.readline()\n")
    killed = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    alive = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert killed.stdout is not None and alive.stdout is not None and alive.stdin is not None
    left, kept = Path(killed.stdout.readline().strip()), Path(alive.stdout.readline().strip())
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    assert left.exists() and _worktrees(repo) == 3
    said: list[str] = []
    assert remove_leftovers(repo, said.append) == 1
    assert not left.parent.exists() and kept.exists() and _worktrees(repo) == 2
    assert said == [f"pytest-roofline ab: removed {left.parent}, left by an earlier run (process {killed.pid}) "
                    "that was killed"]
    alive.stdin.write("\n")
    alive.stdin.close()
    alive.wait(timeout=30)
    assert not kept.exists() and _worktrees(repo) == 1


@needs_git
def test_an_unwritable_json_path_stops_ab_before_its_first_round(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    repo = make_repo(tmp_path, {"tests/test_k.py": "open('ran', 'w').close()\n\ndef test_k():\n    pass\n"})
    target = Path("/proc/pytest-roofline/ab.json")  # no one can write there, a superuser neither
    if not Path("/proc/self").exists():
        pytest.skip("no /proc on this system")
    status, out, err = _ab(capsys, repo, "--base", "HEAD", "--json", str(target), "--", "tests")
    assert status == 2 and out == ""
    assert err.startswith(f"pytest-roofline ab: error: --json {target}: cannot write it: "), err
    assert not (repo / "ran").exists() and _worktrees(repo) == 1  # no round ran


def test_a_failed_write_after_the_rounds_keeps_the_table_and_the_regression(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    """A fake comparison with a regression (no rounds run); the file system refuses the JSON once the rounds are
    done: the table is printed, the error names the path given, and the exit status stays the regression's 1."""
    from fakes import comparison, obs  # made-up comparisons

    from pytest_roofline.cli.ab import driver as ab_rounds
    from pytest_roofline.history.paired import KernelRounds

    slow = KernelRounds("t.py::test_a", "a", tuple(obs(0.5) for _ in range(6)), tuple(obs(0.25) for _ in range(6)))
    monkeypatch.setattr(ab_rounds, "run_ab", lambda options, cwd, log: (comparison([slow]), None))

    def refuse(path: object, text: str) -> None:
        raise OSError(28, "No space left on device", str(tmp_path / ".ab.json.tmp1234"))

    monkeypatch.setattr(ab_rounds, "write_text_atomic", refuse)
    text, status = ab_rounds.ab_command(ab_rounds.AbOptions("main", 6), str(tmp_path / "ab.json"), None)
    assert status == 1
    assert "REGRESSION" in text and "1 kernel regressed" in text
    assert text.splitlines()[-1] == (f"pytest-roofline ab: error: --json {tmp_path / 'ab.json'}: cannot write it: "
                                     "No space left on device")


# Two trees of one project: a package under src/ whose VERSION differs, and a test asserting its own tree's.
def _trees(tmp_path: Path, conftest: str = "") -> tuple[Path, Path]:
    roots = []
    for side in ("head", "base"):
        root = tmp_path / side
        (root / "src" / "demokern").mkdir(parents=True)
        (root / "src" / "demokern" / "__init__.py").write_text("from .inner import VERSION\n")
        (root / "src" / "demokern" / "inner.py").write_text(f"VERSION = {side!r}\n")
        (root / "test_version.py").write_text(f"import demokern\n\ndef test_v():\n    assert demokern.VERSION == "
                                              f"{side!r}\n")
        if conftest:
            (root / "conftest.py").write_text(conftest)
        roots.append(root)
    return roots[0], roots[1]


def _child(cwd: Path, head: Path, base: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHILD), str(head), base, "-q", "-p", "no:cacheprovider",
                           "-p", "no:roofline"], cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True)


@pytest.mark.slow  # a pytest process
def test_base_imports_its_own_tree_through_a_path(tmp_path: Path) -> None:
    head, base = _trees(tmp_path)
    venv = head / ".venv" / "site-packages"  # an environment inside the working tree, not in git
    venv.mkdir(parents=True)
    (venv / "installed_dependency.py").write_text("NAME = 'dependency'\n")
    for root in (head, base):
        test = root / "test_version.py"
        test.write_text("import installed_dependency\n" + test.read_text())
    env = {"PYTHONPATH": os.pathsep.join([str(head / "src"), str(venv)])}  # as an editable install's .pth
    assert _child(head, head, "", env).returncode == 0
    without = _child(base, head, "", env)  # no redirection: the base would run the head's code
    assert without.returncode == 1 and "assert 'head' == 'base'" in without.stdout
    done = _child(base, head, str(base), env)
    assert done.returncode == 0, done.stdout


# A fake of setuptools' editable finder (appended to sys.meta_path, mapping the package to the head's folder).
EDITABLE_FINDER = """
import importlib.util, os, sys

class FakeEditableFinder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "demokern":
            return None
        init = os.path.join(os.environ["DEMO_HEAD"], "src", "demokern", "__init__.py")
        return importlib.util.spec_from_file_location(name, init, submodule_search_locations=[os.path.dirname(init)])

sys.meta_path.append(FakeEditableFinder)
"""


@pytest.mark.slow  # a pytest process
def test_base_imports_its_own_tree_through_an_import_finder(tmp_path: Path) -> None:
    head, base = _trees(tmp_path, EDITABLE_FINDER)
    env = {"DEMO_HEAD": str(head)}
    assert _child(head, head, "", env).returncode == 0
    assert _child(base, head, "", env).returncode == 1
    done = _child(base, head, str(base), env)
    assert done.returncode == 0, done.stdout


@pytest.mark.slow  # a pytest process
def test_a_module_only_the_head_has_is_not_found_in_the_base(tmp_path: Path) -> None:
    head, base = _trees(tmp_path)
    (base / "src" / "demokern" / "inner.py").unlink()
    done = _child(base, head, str(base), {"PYTHONPATH": str(head / "src")})
    assert done.returncode == 2  # a collection error
    assert "ModuleNotFoundError: No module named 'demokern.inner'" in done.stdout  # not the head's inner.py


SHORT_OF_ITS_THRESHOLD = """import jax.numpy as jnp


def test_short(roofline):
    x = jnp.ones(1 << 24, jnp.float32)
    roofline(lambda x: x * 2, x, name="short", min=1.0, first_touch="exclude")  # far short of 100%
"""


@pytest.mark.slow  # two pytest processes timing a real kernel
def test_a_rounds_side_measures_each_kernel_once(tmp_path: Path) -> None:
    """A round's side (``--once``, its task ``once``) measures a kernel with the shorter timing (at least 0.05 s of
    runs, a 0.25 s budget, against at least 0.5 s as pytest runs it), and no failure trace is saved. Either way the
    test fails."""
    (tmp_path / "test_k.py").write_text(SHORT_OF_ITS_THRESHOLD)
    found = {}
    for once in ([], ["--once"]):
        report = tmp_path / f"r{len(once)}.json"
        task = SideTask("once").environment() if once else {}  # as the driver starts a round's side
        done = subprocess.run([sys.executable, str(CHILD), str(tmp_path), "", *once, "-q", "-p", "no:cacheprovider",
                               f"--roofline-report={report}", f"--roofline-trace-dir={tmp_path / 'traces'}"],
                              cwd=tmp_path, capture_output=True, text=True, env={**os.environ, **task})
        record = json.loads(report.read_text())["results"][0]
        if record["verdict"] == "contended":  # a neighbour never fails a test: what this one checks needs a failure
            pytest.skip(f"measured while other processes held the CPUs (cpu_waiting {record['result']['cpu_waiting']}):"
                        " the kernel is contended, not failed")
        assert done.returncode == 1, done.stdout + done.stderr
        found[bool(once)] = (len(record["result"]["per_run_s"]), record.get("trace_dir"))
    (normal_runs, normal_saved), (once_runs, once_saved) = found[False], found[True]
    assert once_runs < normal_runs and normal_saved and not once_saved


PREPARED = """import jax.numpy as jnp


def test_plain(roofline):
    roofline(lambda x: x * 2, jnp.ones(1 << 16), name="double")


def test_reads(roofline):
    result = roofline(lambda x: x + 1, jnp.ones(1 << 16), name="inc")
    assert result.utilization >= 0  # reads what it measured: the preparing process cannot run it to its end
"""


def _preparing_server(tmp_path: Path, *, first: bool = False, wait: bool = False) -> Server:
    """A round's process of ab's default schedule on PREPARED, started; a fake CPU entry with made-up peaks
    (datasheet ceilings): nothing to calibrate."""
    (tmp_path / "test_k.py").write_text(PREPARED)
    (tmp_path / "fake_cpu.yaml").write_text(
        "devices:\n  Fake CPU:\n    platform: cpu\n    device_kinds: [cpu]\n    read: 2026-11-26\n"
        "    peak_tflops: {f32: 10, vector: 10}\n    memory_gbps: 2000\n")
    command = [sys.executable, str(CHILD), str(tmp_path), "", "-q", "-p", "no:cacheprovider",
               "--roofline-config=fake_cpu.yaml", "--roofline-ceilings=datasheet"]
    return Server.start("head", "the head", command, tmp_path, dict(os.environ), tmp_path / "head.log", prepare=True,
                        first=first, wait=wait)


@pytest.mark.slow  # a pytest process timing two real kernels
def test_a_preparing_process_compiles_first_and_measures_when_asked(tmp_path: Path) -> None:
    """A round's process in ab's default schedule (``--serve=R,W,prepare``): it says its hardware, runs every test
    with its kernels compiled and nothing timed, says its items, and then measures a test when asked: the prepared
    one by its kept call, the one that reads its result by running it whole. A fake CPU entry with made-up peaks
    (datasheet ceilings): nothing to calibrate."""
    server = _preparing_server(tmp_path)
    try:
        server.hardware()
        server.ready()
        assert server.items == ["test_k.py::test_plain", "test_k.py::test_reads"]
        plain, reads = server.run("test_k.py::test_plain"), server.run("test_k.py::test_reads")
        again = server.run("test_k.py::test_plain")  # a second request: run whole (nothing kept for another round)
    finally:
        server.stop()
    assert list(plain.records) == [("test_k.py::test_plain", "double")] and not plain.unmeasured
    assert list(reads.records) == [("test_k.py::test_reads", "inc")] and not reads.unmeasured
    assert list(again.records) == list(plain.records)
    log = (tmp_path / "head.log").read_text()
    # while preparing, the test that reads its result stopped there (a skip), the other ran to its end
    assert "3 passed, 1 skipped in" in log and server.process.returncode == 0, log


@pytest.mark.slow  # two pytest processes
def test_a_waiting_process_finds_its_hardware_once_told_to_go_and_ends_when_asked_to_quit_instead(
        tmp_path: Path) -> None:
    """The second process of a first pair (``--serve=R,W,prepare,first,wait``) starts up and collects beside the
    first, and finds its hardware (a CPU's calibration) only once the driver says go: told to quit instead, it ends
    having found none."""
    server = _preparing_server(tmp_path, first=True, wait=True)
    try:
        server.go()
        server.hardware()
        server.ready()
        assert server.found == "Fake CPU" and server.items == ["test_k.py::test_plain", "test_k.py::test_reads"]
    finally:
        server.stop()
    assert server.process.returncode == 0
    quitting = _preparing_server(tmp_path, first=True, wait=True)
    quitting.stop()
    assert quitting.process.returncode == 0
    assert quitting.answers.closed and not quitting.hardware_said


@pytest.mark.slow  # a pytest process timing two real kernels
def test_a_first_pairs_process_says_its_programs_then_prepares_what_it_is_asked_to(tmp_path: Path) -> None:
    """The first pair of ab's default schedule (``--serve=R,W,prepare,first``): each process runs every test once
    with nothing kept (its programs pass, one test's inputs at a time), says each test's kernels' fingerprints with
    its items, then prepares only the tests it is asked to and measures them when asked. A fake CPU entry with
    made-up peaks (datasheet ceilings): nothing to calibrate."""
    server = _preparing_server(tmp_path, first=True)
    try:
        server.hardware()
        server.ready()
        assert server.items == ["test_k.py::test_plain", "test_k.py::test_reads"] and server.found == "Fake CPU"
        assert server.programs is not None
        found = server.programs.tests
        assert list(found["test_k.py::test_plain"].kernels) == ["double"] and found["test_k.py::test_plain"].complete
        assert not found["test_k.py::test_reads"].complete  # it reads its result: timed, run whole when asked
        server.prepare(["test_k.py::test_plain"])
        server.prepared()
        plain = server.run("test_k.py::test_plain")
    finally:
        server.stop()
    assert list(plain.records) == [("test_k.py::test_plain", "double")] and not plain.unmeasured
    log = (tmp_path / "head.log").read_text()
    # the pass ran both (one skipped where it read its result), then test_plain alone was prepared: its request was
    # its kept call (no test run), and test_reads was never run again
    assert "2 passed, 1 skipped in" in log and server.process.returncode == 0, log


SUITE = {
    "src/demokern/__init__.py": "VERSION = 'one'\n\n\ndef total(x):\n    return x.sum()\n",
    "tests/test_kernels.py": """import jax.numpy as jnp
import pytest

import demokern


@pytest.mark.roofline(min=0.01)
def test_total(roofline):
    assert demokern.VERSION == 'one'  # this revision's code, not the other's
    x = jnp.ones(1 << 24, jnp.float32)
    roofline(demokern.total, x, bytes=x.nbytes)


@pytest.mark.roofline(min=0.01)
def test_matmul(roofline):
    a = jnp.ones((256, 256), jnp.float32)
    roofline(lambda a: a @ a, a, name="matmul", flops=2 * 256**3)
""",
}
SLOWER = ("VERSION = 'two'\n\n\ndef total(x):\n    s = x.sum()\n"
          "    u = (x - s / x.size).sum()  # a second pass that needs the first one's sum\n"
          "    return (x * u).sum() + s  # and a third that needs the second's\n")


@needs_git
@pytest.mark.slow
@pytest.mark.parametrize("schedule", ["kernels", "rounds"])
def test_two_revisions_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch, schedule: str) -> None:
    """The head's total makes two more passes, each needing the one before (three times the time for the same
    stated bytes): a regression, and the matmul (the same in both) not one. It also shows the base ran its own code:
    with the head's, the base's test would fail its VERSION assertion (no measurement: "added"), or both sides would
    run the slow total (ratio 1). Wide margin: --max-drop 0.3 against a drop to about 0.33 (with one pass fewer, a
    drop to about 0.45 had let one noisy round of six lift the interval's top to 0.74 on a busy VM). The first touch
    is left out of the roofline: where XLA does not fuse the extra passes (jax 0.9.0) it writes a fresh 64 MiB
    temporary whose page faults the roofline would otherwise count as work, raising the head's utilization. Both
    schedules: every round in fresh processes ("rounds", the default), and two long-lived processes, each test in
    its own rounds ("kernels")."""
    repo = make_repo(tmp_path, SUITE)
    monkeypatch.setenv("PYTHONPATH", str(repo / "src"))  # the head's code, as an editable install would give it
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # as in a user's shell: ab itself writes none
    tests = SUITE["tests/test_kernels.py"].replace("== 'one'", "== 'two'")
    commit(repo, {"src/demokern/__init__.py": SLOWER, "tests/test_kernels.py": tests}, "total: three passes")
    # Six units of the interval: six rounds in fresh processes, or six pairs of long-lived processes of two rounds
    long_lived, rounds = (["--long-lived"], 12) if schedule == "kernels" else ([], 6)
    status, out, err = _ab(capsys, repo, "--base", "HEAD~1", "--rounds", str(rounds), "--max-drop", "0.3", *long_lived,
                           "--json", str(tmp_path / "ab.json"), "--html", str(tmp_path / "ab.html"),
                           "--", "tests", "-q", "--roofline-first-touch=exclude")
    document = json.loads((tmp_path / "ab.json").read_text())
    kernels = {k["label"]: k for k in document["kernels"]}
    # the matmul compiles to the same program on both sides: not timed at all
    assert kernels["matmul"]["verdict"] == "same" and kernels["matmul"]["ratios"] == [], out
    assert "programs pass (" in err and "kernels 1 same, 1 changed; 1 test to time" in err
    # by default the first round's pair prepares every test and is the programs pass; long-lived pairs need their own
    where = "the first round's processes compiled" if schedule == "rounds" else "both sides compiled"
    assert where in err.split("programs pass (", 1)[1].splitlines()[0], err
    if kernels["total"]["contended"] and not kernels["total"]["settled"]:
        # a neighbour held the CPUs in enough rounds that the rest cannot decide (seen once in CI): said, never passed
        assert "cannot judge: contended" in out and "1 undecided" in out, out
        return
    assert kernels["total"]["verdict"] == "regression", out
    assert status == 1 and document["exit_status"] == 1 and document["rounds"] == rounds
    assert document["schedule"] == schedule
    assert len(kernels["total"]["ratios"]) == 6 and kernels["total"]["interval"][1] < 0.7
    assert "REGRESSION (below 0.70)" in out and "1 kernel regressed" in out
    # the regression explained op by op: the second pass is an op only the head's program has, with its share
    ops = kernels["total"]["ops_diff"]
    added = [c for c in ops["changes"] if c["kind"] == "added"]
    assert added and ops["program_changed"] and sum(c["share"] for c in added) > 0.5, ops
    assert f"added {added[0]['name']}, " in out and "tests/test_kernels.py::test_total [total]: op by op:" in out
    page = (tmp_path / "ab.html").read_text()
    assert "Base against head (pytest-roofline ab)" in page and "[total]: op by op</h3>" in page
    # the head's working tree as ab found it, ignored files included (no __pycache__, no .pytest_cache)
    assert _worktrees(repo) == 1 and git(repo, "status", "--porcelain", "--ignored") == ""


@needs_git
@pytest.mark.slow
def test_no_program_changed_times_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A pull request that changes no kernel's program (a comment in the kernel, a README, a conftest): both sides
    compile, nothing is timed, every kernel "same program", exit 0; the Markdown summary says so too, and the head's
    conftest receives the verdicts in its pytest_roofline_ab hook, as a user's would."""
    repo = make_repo(tmp_path, SUITE)
    monkeypatch.setenv("PYTHONPATH", str(repo / "src"))
    monkeypatch.setenv("AB_HOOK_OUT", str(tmp_path / "hooked.json"))
    changed = SUITE["src/demokern/__init__.py"].replace("return x.sum()", "return x.sum()  # the same sum")
    commit(repo, {"src/demokern/__init__.py": changed, "README.md": "words\n", "conftest.py": AB_HOOK},
            "no program changed")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    status, out, err = _ab(capsys, repo, "--base", "HEAD~1", "--summary-md", str(tmp_path / "s.md"), "--", "tests")
    assert status == 0, out + err
    assert "kernels 2 same; 0 tests to time" in err and "round 1/" not in err
    rows = [line for line in out.splitlines() if line.startswith("tests/")]
    assert len(rows) == 2 and all(r.endswith("same program: not timed") for r in rows)
    assert "nothing timed: every kernel compiles to the same program on both sides" in out
    summary = (tmp_path / "s.md").read_text()
    assert summary.startswith("### pytest-roofline ab: no kernel regressed")
    assert "2 kernels compiled to the same program on both sides: not timed." in summary
    hooked = json.loads((tmp_path / "hooked.json").read_text())
    assert sorted(k["verdict"] for k in hooked["kernels"]) == ["same", "same"] and hooked["exit_status"] == 0
    assert _worktrees(repo) == 1 and git(repo, "status", "--porcelain", "--ignored") == ""


# A user's conftest that receives a comparison's verdicts (docs/hooks.md).
AB_HOOK = """import json, os

def pytest_roofline_ab(config, comparison):
    with open(os.environ["AB_HOOK_OUT"], "w") as out:
        json.dump(comparison, out)
"""


@needs_git
@pytest.mark.slow
@pytest.mark.parametrize("xdist", [[], ["-n", "0"]], ids=["pairs", "processes-to-their-end"])
def test_a_budget_that_runs_out_leaves_the_open_kernels_undecided(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  xdist: list[str]) -> None:
    """--budget 1s: one round runs (the first always does), then no other fits; the kernels it timed are undecided
    with fewer than six rounds, never a pass; --strict fails them. In both ways of running a round: a pair of
    processes that prepare and then measure in turn, and (with xdist's -n, here without workers) processes that run
    the tests to their end."""
    repo = make_repo(tmp_path, SUITE)
    monkeypatch.setenv("PYTHONPATH", str(repo / "src"))
    commit(repo, {"README.md": "words\n"}, "no program changed")
    status, out, err = _ab(capsys, repo, "--base", "HEAD~1", "--time-all", "--budget", "1s", "--strict", "--",
                           "tests", "-k", "total", *xdist)
    assert "programs pass" not in err and "round 1/20" in err and "round 2/20" not in err
    (row,) = [line for line in out.splitlines() if line.startswith("tests/")]
    # on a runner that is never quiet the one round may also have been measured while contended: still undecided
    assert row.endswith("undecided (fewer than 6 rounds ran)") or "cannot judge: contended (" in row, out
    assert "the budget of 1 s ran out after 1 rounds" in out and status == 1


def test_xdist_arguments_keep_the_processes_that_run_to_their_end() -> None:
    """xdist's workers cannot serve requests: with -n, --numprocesses or --dist each side of a round runs whole."""
    assert all(uses_xdist(args) for args in (["-n", "2"], ["-n2"], ["--numprocesses=auto"], ["--dist", "load"]))
    assert not uses_xdist(["-q", "-k", "total", "-p", "no:xdist", "--no-header", "tests"])


def test_the_sample_pull_request_workflow_runs_ab_with_real_options() -> None:
    import re
    import shlex

    import yaml

    text = (ROOT / "docs" / "pr-ci.yml").read_text()
    workflow = yaml.safe_load(text)
    steps = workflow["jobs"]["roofline-ab"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0  # the target branch must be there for --base
    (ab,) = [step for step in steps if "pytest-roofline ab" in step.get("run", "")]
    assert ab["shell"] == "bash"  # pipefail: tee must not hide ab's exit status
    run = ab["run"].replace("\\\n", " ")
    assert re.search(r'pytest-roofline ab --base "origin/\$\{\{ github.base_ref \}\}"', run)
    from pytest_roofline.cli.main import _parser

    command = shlex.split(run.split("pytest-roofline ", 1)[1].split(" -- ", 1)[0])
    args = _parser().parse_args(command)  # the options are real: argparse would stop on any other
    assert args.command == "ab" and args.json == "roofline-ab.json" and args.html == "roofline-ab.html"
    assert args.summary_md == "roofline-ab.md" and args.budget == 900


def test_the_first_pairs_programs_choose_what_is_timed() -> None:
    """Fakes of the first pair's two processes, holding only what each said once prepared (its programs pass): the
    diff chooses the tests to time; a side that said nothing is a one-line error (one that said something unreadable:
    tests/ab/test_protocol.py)."""
    from types import SimpleNamespace
    from typing import cast

    from pytest_roofline.ab.same_programs import ProgramsOfTest, ProgramsPass
    from pytest_roofline.cli.ab.programs import first_pair_programs

    def side(label: str, total: str) -> Server:
        tests = {"t.py::test_total": ProgramsOfTest("t.py::test_total", {"total": total}),
                 "t.py::test_matmul": ProgramsOfTest("t.py::test_matmul", {"matmul": "m1"})}
        return cast(Server, SimpleNamespace(label=label, programs=ProgramsPass(tests, "cpu"), found=""))

    found = first_pair_programs(side("the base", "a1"), side("the head", "a2"))
    assert found is not None
    diff, device = found
    assert list(diff.timed) == ["t.py::test_total"] and device == "cpu"
    assert diff.kernels[("t.py::test_matmul", "matmul")] == "same"
    named = cast(Server, SimpleNamespace(label="the head", programs=side("", "a2").programs, found="CPU Z x2"))
    assert first_pair_programs(side("the base", "a1"), named) == (diff, "CPU Z x2")  # the hardware it said it found
    silent = cast(Server, SimpleNamespace(label="the base", programs=None, found=""))  # said no programs
    with pytest.raises(CliError, match=r"did not say what they compiled \(the base: no, the head: yes\)"):
        first_pair_programs(silent, side("the head", "a2"))



# FAKE side processes: each a few lines of Python that answer on the pipes as a serving process would, speaking an
# older protocol (no version: a pytest-roofline from before it had one), a newer one, or a message of a kind the
# driver does not know.
_FAKE_SIDE = """
import json, os, sys
requests, answers = (int(fd) for fd in sys.argv[3].removeprefix("--serve=").split(",")[:2])
out = os.fdopen(answers, "w")
for line in {lines!r}:
    out.write(line + "\\n")
out.flush()
os.fdopen(requests).readline()
"""


def _fake_side(tmp_path: Path, lines: list[str]) -> Server:
    script = tmp_path / "fake_side.py"
    script.write_text(_FAKE_SIDE.format(lines=lines))
    return Server.start("base", "the base (fake)", [sys.executable, str(script), "", ""], tmp_path, dict(os.environ),
                        tmp_path / "base.log")


@pytest.mark.slow  # a Python process
@pytest.mark.parametrize(("lines", "refused"), [
    (['{"items": ["t.py::test_a"]}'], "the base (fake) sent a message with no kind (items): it speaks no ab protocol "
                                      f"version (a pytest-roofline from before version {VERSION})"),
    (['{"kind": "hello", "version": 99}', '{"kind": "items", "nodeids": ["t.py::test_a"]}'],
     f"the base (fake) speaks version 99 of the ab protocol, this pytest-roofline version {VERSION}"),
], ids=["older", "newer"])
def test_a_side_that_speaks_another_protocol_is_refused_in_one_line(tmp_path: Path, lines: list[str],
                                                                     refused: str) -> None:
    """Refused before anything runs (ServeUnavailable: the comparison then measures that side in processes that
    run to their end, and says so in one line); the process is stopped."""
    server = _fake_side(tmp_path, lines)
    with pytest.raises(ServeUnavailable) as info:
        server.ready()
    assert str(info.value) == refused
    assert server.process.poll() is not None and server.answers.closed


@pytest.mark.slow  # a Python process
def test_a_message_of_an_unknown_kind_from_a_side_is_an_error_that_names_it(tmp_path: Path) -> None:
    server = _fake_side(tmp_path, [f'{{"kind": "hello", "version": {VERSION}}}', '{"kind": "frobnicate", "x": 1}'])
    try:
        with pytest.raises(CliError, match=r"^the base \(fake\) sent a message of an unexpected kind 'frobnicate' "
                                           r"\(expected items, failed\)$"):
            server.ready()
    finally:
        server.stop()


@pytest.mark.slow  # a Python process
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process states read from /proc")
def test_a_stopped_side_is_said_while_waited_for_and_given_up_on(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A FAKE side that says hello and then is stopped (SIGSTOP, as a debugger or a job control would): the driver
    says that it waits and why, then gives up on it and kills it (before, a bare readline() waited for ever, silent).
    The waits are shortened here to a tenth of a second."""
    import signal

    from pytest_roofline.cli.ab import served

    said: list[str] = []
    monkeypatch.setattr(served, "say", said.append)
    monkeypatch.setattr(served, "WAIT_SAY_S", 0.1)
    monkeypatch.setattr(served, "STOPPED_MAX_S", 0.3)
    server = _fake_side(tmp_path, [f'{{"kind": "hello", "version": {VERSION}}}'])
    try:
        server._line()  # its hello: read while it still runs
        os.kill(server.process.pid, signal.SIGSTOP)
        with pytest.raises(CliError, match=r"^the base \(fake\) \(process \d+\) was stopped for 0 s \(a SIGSTOP or a "
                                           r"debugger\): given up on and killed; its log: "):
            server._line()
        assert server.process.wait(timeout=60) == -signal.SIGKILL
    finally:
        server.stop()
    assert any("is stopped (a SIGSTOP or a debugger): waiting for it to go on (kill -CONT" in line for line in said)


def test_the_schedule_is_chosen_once_from_the_options_and_each_has_its_own_name() -> None:
    """One rule picks the rounds' schedule before anything runs; the two that report "rounds" differ by name."""
    from pytest_roofline.cli.ab.driver import FRESH, choose
    from pytest_roofline.cli.ab.job import AbOptions
    from pytest_roofline.cli.ab.pairs import LONG_LIVED, ROUND_PER_PAIR

    assert choose(AbOptions("HEAD", 6)) is ROUND_PER_PAIR
    assert choose(AbOptions("HEAD", 12, long_lived=True)) is LONG_LIVED
    assert choose(AbOptions("HEAD", 6, pytest_args=("-n", "2"))) is FRESH  # xdist's workers cannot serve
    schedules = (FRESH, ROUND_PER_PAIR, LONG_LIVED)
    assert len({s.name for s in schedules}) == 3
    assert [s.unit for s in schedules] == ["rounds", "rounds", "kernels"]  # what a comparison's JSON says
