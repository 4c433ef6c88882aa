"""Plugin start-up and collection errors, option help, markers: in-process pytester runs (no JAX needed)."""

from __future__ import annotations

import json
import os

import pytest
from fakes import FAKE_SESSION_CONFTEST

pytest_plugins = ["pytester"]

PLAIN = "def test_plain():\n    assert True\n"
# Two tests, each measuring one kernel against a marker threshold of 80%
TWO_AT_80 = """
import pytest

@pytest.mark.roofline(min=0.8)
def test_{first}(roofline):
    roofline(len, 1)

@pytest.mark.roofline(min=0.8)
def test_{second}(roofline):
    roofline(len, 1)
"""
MARKED = """
import pytest

@pytest.mark.roofline({args})
def test_a(roofline):
    pass
"""


def test_help_lists_every_option_and_ini_twin(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    text = result.stdout.str()
    for flag, ini in (("--roofline-min", "roofline_min"), ("--roofline-hardware", "roofline_hardware"),
                      ("--roofline-config", "roofline_config"), ("--roofline-calibrate", "roofline_calibrate"),
                      ("--roofline-report", "roofline_report"), ("--roofline-warn-only", "roofline_warn_only"),
                      ("--roofline-ceilings", "roofline_ceilings"), ("--roofline-history", "roofline_history"),
                      ("--roofline-baseline", "roofline_baseline"), ("--roofline-max-drop", "roofline_max_drop"),
                      ("--roofline-html", "roofline_html")):
        assert flag in text and ini in text


def test_marker_is_registered_with_its_signature(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.roofline(min=None, *, flops=None, bytes=None,*"])


@pytest.mark.parametrize("value", ["1.5", "0", "-0.2", "abc", "nan"])
def test_bad_cli_threshold(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest(f"--roofline-min={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--roofline-min={value} on the command line: must be*"])


def test_bad_ini_threshold_names_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makefile(".ini", tox="[pytest]\nroofline_min = 1.5\n")
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*roofline_min = 1.5 in tox.ini: must be in (0, 1]*"])


def test_bad_env_threshold(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ROOFLINE_MIN", "two")
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*PYTEST_ROOFLINE_MIN=two in the environment: must be a number in (0, 1]*"])


@pytest.mark.parametrize(
    "ini_line,fragment",
    [
        ("roofline_warn_only = maybe", "roofline_warn_only = maybe in tox.ini: must be true or false"),
        ("roofline_calibrate = 2", "roofline_calibrate = 2 in tox.ini: must be true or false"),
        (
            "roofline_ceilings = guessed",
            "roofline_ceilings = guessed in tox.ini: must be one of 'auto', 'datasheet', 'calibrated', 'live', "
            "got 'guessed'",
        ),
    ],
)
def test_bad_ini_values(pytester: pytest.Pytester, ini_line: str, fragment: str) -> None:
    pytester.makefile(".ini", tox=f"[pytest]\n{ini_line}\n")
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{fragment}*"])


@pytest.mark.parametrize("args,fragment", [
    ("min=2", "roofline marker of test_bad_marker.py::test_a: min=2: must be in (0, 1]"),
    ("min='high'", "min='high': must be a number in (0, 1]"),
    ("mn=0.5", "roofline marker of test_bad_marker.py::test_a: unknown keyword 'mn'"),
    ("bound='gpu'", "bound='gpu': must be one of 'compute', 'memory', got 'gpu'"),
    ("min_runs=0", "min_runs=0: must be a positive integer"),
    ("flops=-3", "flops=-3: must be a non-negative number"),
    ("timer='sundial'", "timer='sundial': must be one of 'auto', 'profiler', 'wallclock', got 'sundial'"),
    ("0.5, 0.6", "at most one positional argument"),
    ("min_runs=5, max_runs=2", "max_runs=2: must be at least min_runs (5)"),
])
def test_bad_marker_is_a_collection_error_naming_test_and_keyword(pytester: pytest.Pytester, args: str,
                                                                   fragment: str) -> None:
    pytester.makepyfile(test_bad_marker=MARKED.format(args=args))
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{fragment}*"])


def test_missing_config_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("--roofline-config=absent.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*roofline config absent.yaml (--roofline-config=absent.yaml on the command line): cannot read it*"]
    )


@pytest.mark.parametrize(
    "content,fragment",
    [
        ("min: [0.5", "not valid YAML"),
        ("min: 3\n", "min: 3 in *roofline.yaml: must be in (0, 1]"),
        ("thresholds:\n  '*::test_a': 1.7\n", "thresholds: '*::test_a': 1.7 in *roofline.yaml: must be in (0, 1]"),
        ("thresholds: [1, 2]\n", "'thresholds' must map test-id patterns"),
        ("colour: red\n", "unknown key(s) ?'colour'?"),
        (
            "devices:\n  H100 SXM:\n    memory_gbps: -1\n",
            "*roofline.yaml (from --roofline-config=roofline.yaml on the command line): H100 SXM.memory_gbps: "
            "must be a positive number*",
        ),
    ],
)
def test_malformed_config_file(pytester: pytest.Pytester, content: str, fragment: str) -> None:
    pytester.makefile(".yaml", roofline=content)
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("--roofline-config=roofline.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{fragment}*"])


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8-sig", "utf-16-be-no-bom", "binary"])
def test_a_config_file_in_another_encoding(pytester: pytest.Pytester, encoding: str) -> None:
    """An editor's UTF-16 or BOM-marked file is read; text no BOM names, or a binary file, is one line naming the
    file (it was an INTERNALERROR)."""
    text = "min: 3\n"  # read, it is refused by its value: proof that it was read
    raw = {"utf-16-be-no-bom": text.encode("utf-16-be"), "binary": bytes(range(256))}.get(encoding) \
        or text.encode(encoding)
    (pytester.path / "roofline.yaml").write_bytes(raw)
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("--roofline-config=roofline.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "INTERNALERROR" not in result.stderr.str()
    if encoding in ("utf-16", "utf-8-sig"):
        result.stderr.fnmatch_lines(["*min: 3 in *roofline.yaml: must be in (0, 1]*"])
    else:
        result.stderr.fnmatch_lines(["ERROR: roofline config roofline.yaml (--roofline-config=roofline.yaml on the "
                                     "command line): cannot read it: not *"])


def test_a_hardware_file_that_is_not_text_is_named(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_roofline.hardware.spec import HardwareError
    from pytest_roofline.hardware.table import load_shipped_table, merge_overrides

    path = pytester.path / "hw.yaml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    monkeypatch.setenv("PYTEST_ROOFLINE_HARDWARE_FILE", str(path))
    with pytest.raises(HardwareError, match=rf"hardware override file {path} \(from \$PYTEST_ROOFLINE_HARDWARE_FILE\): "
                                            r"cannot read it: not UTF-8 text \(byte 0x89 at offset 0\)"):
        merge_overrides(load_shipped_table(), None)
    path.write_bytes("devices_are_keys: {}\n".encode("utf-16"))
    with pytest.raises(HardwareError, match=rf"{path}"):  # read as text: refused for what it says, naming it
        merge_overrides(load_shipped_table(), None)


def test_a_threshold_marker_on_a_test_that_measured_nothing_says_so(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.9"))
    pytester.makepyfile("import pytest\n\n@pytest.mark.roofline(min=0.8)\ndef test_forgot(roofline):\n    pass\n\n"
                        "@pytest.mark.roofline(min=0.8)\ndef test_measured(roofline):\n    roofline(len, 1)\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["roofline: marked, measured nothing (1):",
                                 "  test_a_threshold_marker*.py::test_forgot: its roofline marker judged nothing:",
                                 "    the test measured no kernel (call the roofline fixture)"])
    assert "test_measured: its roofline marker" not in result.stdout.str()


def test_plugin_can_be_disabled(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("-p", "no:roofline", "--roofline-min=0.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --roofline-min=0.5*"])


@pytest.mark.slow  # starts Python processes: the full run's, not the quick loop's
def test_a_suite_without_roofline_tests_pays_nothing(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        "    print('JAX_IMPORTED=%s' % ('jax' in sys.modules))\n"
    )
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest_subprocess("-s", "--roofline-min=0.8")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*JAX_IMPORTED=False*"])
    # the threshold judged nothing: one line says so, and nothing else of the plugin's is printed
    assert [line for line in result.stdout.lines if line.startswith("roofline")] == [
        "roofline: --roofline-min=0.8 on the command line judged nothing: no test used the roofline fixture or marker "
        "(--roofline-survey measures every jitted program the tests run, and names those below it)"]
    result.stdout.no_fnmatch_line("*roofline summary*")


def test_bad_model_values(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("--roofline-model=sum")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--roofline-model=sum on the command line: must be one of 'program', 'ops', got 'sum'*"]
    )
    pytester.makepyfile(test_bad_marker=MARKED.format(args="model='guess'"))
    result = pytester.runpytest("test_bad_marker.py")
    result.stderr.fnmatch_lines(
        ["*roofline marker of test_bad_marker.py::test_a: model='guess': must be one of 'program', 'ops', got 'guess'*"]
    )


def test_unknown_hardware_name_stops_the_run_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_k=MARKED.format(args="min=0.5") + "\ndef test_b(roofline):\n    pass\n")
    result = pytester.runpytest("--roofline-hardware=NoSuchGPU")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --roofline-hardware=NoSuchGPU on the command line: no hardware named "
                                 "'NoSuchGPU' in the table; known: A100 40GB SXM, *H100 SXM*"])
    assert "UnknownDeviceError" not in result.stdout.str() + result.stderr.str()


def test_hardware_name_from_the_config_file_is_known(pytester: pytest.Pytester) -> None:
    # A made-up device in the config (a fake) may be forced by name.
    pytester.makefile(".yaml", roofline="devices:\n  Test Box:\n    platform: gpu\n    peak_tflops: {f32: 1}\n"
                                        "    memory_gbps: 100\n")
    pytester.makepyfile(PLAIN)
    assert pytester.runpytest("--roofline-config=roofline.yaml", "--roofline-hardware=test box").ret == 0


@pytest.mark.parametrize(("option", "said"), [("--roofline-report=afile/report.json", "cannot write the report there"),
                                             ("--roofline-trace-dir=afile", "cannot save traces in that directory")])
def test_an_output_path_that_cannot_be_written_is_a_usage_error(pytester: pytest.Pytester, option: str,
                                                                said: str) -> None:
    pytester.makepyfile(PLAIN)
    (pytester.path / "afile").write_text("x")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {option} on the command line: {said}: *afile is not a directory"])


@pytest.mark.parametrize("option", ["--roofline-report=/proc/roofline.json", "--roofline-html=/proc/roofline.html",
                                    "--roofline-history=/proc", "--roofline-trace-dir=/proc/traces"])
def test_an_output_under_proc_is_refused_at_start_up(pytester: pytest.Pytester, option: str) -> None:
    """/proc takes no new file even from root, whose permission bits say it could: refused before any test runs,
    not after the run."""
    if not os.path.isdir("/proc"):
        pytest.skip("no /proc on this system")
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {option} on the command line: cannot *proc*"])
    assert "Traceback" not in result.stderr.str() and "passed" not in result.stdout.str()


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root (CI containers run as root)")
def test_reports_into_a_character_device_leave_it_a_device(pytester: pytest.Pytester) -> None:
    """A real character device (/dev/null's numbers, made with mknod here): the report, the HTML report and the
    history's check are written into it, never renamed over it (as root, that replaced the system's /dev/null)."""
    import stat

    pytest.importorskip("plotly")
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.5"))
    pytester.makepyfile("def test_a(roofline):\n    roofline.measure(len, 1)\n")
    null = pytester.path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    result = pytester.runpytest("-p", "no:cacheprovider", f"--roofline-report={null}", f"--roofline-html={null}")
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"roofline report written to {null}", f"roofline HTML report written to {null}"])
    assert stat.S_ISCHR(null.stat().st_mode) and null.read_bytes() == b""
    assert sorted(p.name for p in pytester.path.iterdir() if p.name.startswith(".")) == []


FULL_DISK_CONFTEST = """
import errno
import pytest
from fakes import FAKE_CPU, FakeMeasure
from pytest_roofline.plugin.hooks import activate, plugin_run
from pytest_roofline.plugin.session import RooflineSession

def full_disk(result, root, nodeid, label):  # a fake: saving fails as on a full disk
    raise OSError(errno.ENOSPC, "No space left on device", root + "/x")

@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    old = activate(config)
    plugin_run(config).session = RooflineSession(old.settings, old.trace_root, measure=FakeMeasure(0.5, 0.5),
                                                hardware=lambda settings, recalibrate: (FAKE_CPU, "calibrated"),
                                                save=full_disk)
"""


def test_a_trace_that_cannot_be_saved_is_a_warning_on_its_kernel(pytester: pytest.Pytester) -> None:
    """A fake session whose save fails as a full disk does: the kernel is measured, recorded and judged."""
    pytester.makeconftest(FULL_DISK_CONFTEST)
    pytester.makepyfile("def test_a(roofline):\n    roofline(len, 1, min=0.8)\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--roofline-warn-only", "--roofline-report=r.json")
    result.assert_outcomes(passed=1, warnings=2)
    result.stdout.fnmatch_lines(["*roofline: kernel 'len' of test_*::test_a: its trace was not saved: No space left "
                                 "on device: */x (the trace directory); no later kernel's trace is saved in this run"])
    assert len(json.loads((pytester.path / "r.json").read_text())["results"]) == 1


def test_report_that_fails_at_the_end_keeps_the_summary_and_fails_the_run(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.5"))
    # The report path becomes a directory during the run (a constructed failure: the file cannot replace it).
    pytester.makepyfile("import os\n\ndef test_a(roofline):\n    roofline.measure(len, 1)\n"
                        "    os.mkdir('report.json')\n")
    result = pytester.runpytest("--roofline-report=report.json")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(["roofline: fake CPU (cpu): f32 100 GFLOP/s; memory 10 GB/s [calibration]; holds 1 GB; "
                                 "ceilings: calibrated",
                                 "*roofline summary (worst first)*", "*test_a ?len?*50.0%*measured",
                                 "roofline report NOT written: --roofline-report=report.json on the "
                                 "command line: Is a directory", "*1 passed*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_hooks_in_process_with_a_fake_measure(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.9, 0.5, 0.4"))
    pytester.makepyfile(TWO_AT_80.format(first="pass", second="fail"))
    result = pytester.runpytest("--roofline-report=r.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    # The failure as a CI log shows it by default: the short block, at most 12 lines of at most 120 characters.
    result.stdout.fnmatch_lines(
        [
            "roofline: kernel 'len': utilization 40.0%, 95% interval 40.0%-40.0% is below its threshold 80% (measured*",
            "  why       memory-bound: 1 ms per run against a roofline of 400 us, 600 us lost per run",
            "  more      pytest -vv: the full block*",
        ]
    )
    out = result.stdout.lines
    block = out[next(i for i, line in enumerate(out) if line.startswith("roofline: kernel 'len'")):]
    block = block[:next(i for i, line in enumerate(block) if line.startswith("====="))]
    assert 3 <= len(block) <= 12 and max(len(line) for line in block) <= 120, block
    assert "(measured twice: 50.0%, then 40.0%)" in " ".join(line.strip() for line in block)
    import json

    data = json.loads((pytester.path / "r.json").read_text())
    assert [(r["label"], r["verdict"]) for r in data["results"]] == [("len", "pass"), ("len", "fail")]
    assert data["schema_version"] == 1 and data["results"][1]["trace_dir"] == "t"


def test_bad_first_touch_values(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest("--roofline-first-touch=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--roofline-first-touch=sometimes on the command line: must be one of 'include', "
                                 "'exclude', got 'sometimes'*"])
    pytester.makepyfile(test_bad_marker=MARKED.format(args="first_touch='maybe'"))
    result = pytester.runpytest("test_bad_marker.py")
    result.stderr.fnmatch_lines(["*roofline marker of test_bad_marker.py::test_a: first_touch='maybe': must be one "
                                 "of 'include', 'exclude', got 'maybe'*"])


def test_a_kernel_below_its_threshold_through_cpu_contention_warns_and_passes(pytester: pytest.Pytester) -> None:
    """Fake measurements (50%, twice) whose threads waited for a CPU during 40% of their ready time: 83% without the
    waiting, above the 80% threshold: a warning, not a failure. At 30% (50% without the waiting, below it even so) a
    warning too: a neighbour can cost more than the waiting shows (before, it failed)."""
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.5, 0.5, 0.3, 0.3, waiting=0.4"))
    pytester.makepyfile(TWO_AT_80.format(first="contended", second="slow_anyway"))
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "default")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "83.3% without the time its threads waited for a CPU held by another process: not judged" in out
    assert "below it even at 50.0% without the time its threads waited" in out
    result.stdout.fnmatch_lines(["*test_contended*contended*", "contended: 2 kernel(s) measured while other "
                                 "processes held the CPUs*"])


@pytest.mark.parametrize("how", ["env", "ini", "option", "none"])
def test_warn_only_option_reads_the_effective_setting(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                      how: str) -> None:
    pytester.makepyfile("def test_a(request):\n"
                        f"    assert request.config.getoption('roofline_warn_only') is {how != 'none'}\n")
    args = []
    if how == "env":
        monkeypatch.setenv("PYTEST_ROOFLINE_WARN_ONLY", "1")
    elif how == "ini":
        pytester.makeini("[pytest]\nroofline_warn_only = true\n")
    elif how == "option":
        args.append("--roofline-warn-only")
    pytester.runpytest(*args).assert_outcomes(passed=1)


@pytest.mark.slow  # a pytest process measuring a real kernel
def test_a_kernel_is_measured_against_a_hook_s_hardware_entry(pytester: pytest.Pytester) -> None:
    """A conftest's pytest_roofline_hardware hook adds a CPU entry with made-up figures (docs/hooks.md's example);
    forced with --roofline-hardware and its datasheet ceilings, a real kernel's roofline is that entry's."""
    pytester.makeconftest("def pytest_roofline_hardware(config):\n"
                          "    return {'Lab CPU': {'platform': 'cpu', 'device_kinds': ['cpu'], 'read': '2026-11-27',\n"
                          "                        'peak_tflops': {'f32': 1.2}, 'memory_gbps': 80}}\n")
    pytester.makepyfile("import jax.numpy as jnp\n\n"
                        "def test_a(roofline):\n"
                        "    x = jnp.ones(1 << 20, jnp.float32)\n"
                        "    r = roofline.measure(lambda x: x * 2, x, max_runs=5, min_time_s=0.0)\n"
                        "    assert r.roofline_time_s == r.bytes_accessed / 80e9\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--roofline-hardware=Lab CPU",
                                           "--roofline-ceilings=datasheet", "--roofline-first-touch=exclude",
                                           "--roofline-report=r.json")
    assert result.ret == 0, result.stdout.str()
    (record,) = json.loads((pytester.path / "r.json").read_text())["results"]
    hardware = record["result"]["hardware"]
    bandwidth = hardware["memory_bandwidth_bytes_per_s"]
    assert hardware["name"] == "Lab CPU" and bandwidth["value"] == 80e9
    assert bandwidth["source"] == "override in the pytest_roofline_hardware hook"


FAKE_LOCK_WAIT = """
import contextlib
from pytest_roofline.plugin import lock, session

@contextlib.contextmanager
def waited_lock(platform=None, say=None):  # FAKE: as if another process had held the device lock for 118.2 s
    yield lock.LockWait(118.2, "process 4242 (pytest other_suite)")

session.device_lock = waited_lock
"""


def test_a_wait_for_the_device_lock_is_kept_apart_and_said(pytester: pytest.Pytester) -> None:
    """Fake measurements beside a FAKE lock that another process held for 118.2 s: the summary and the JSON report say
    which measurement waited, how long and for whom, and that the wait is in the test's duration, not its figures
    (before, nothing said why a test took 122 s in --durations)."""
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.9, 0.9") + FAKE_LOCK_WAIT)
    pytester.makepyfile(TWO_AT_80.format(first="a", second="b"))
    result = pytester.runpytest("-p", "no:cacheprovider", "--roofline-report=r.json")
    result.assert_outcomes(passed=2)
    out = " ".join(line.strip() for line in result.stdout.lines)
    assert ("device lock: 2 measurement(s) waited 236.4 s in all for it (the longest 118.2 s, test_a_wait_for_the_"
            "device_lock_is_kept_apart_and_said.py::test_a::len, held by process 4242 (pytest other_suite)); that wait "
            "is in those tests' durations as pytest counts them (--durations), in no kernel's figures") in out
    waits = json.loads((pytester.path / "r.json").read_text())["lock_waits"]
    assert [(w["seconds"], w["holder"]) for w in waits] == [(118.2, "process 4242 (pytest other_suite)")] * 2
