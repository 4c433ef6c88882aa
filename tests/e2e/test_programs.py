"""Fingerprints of compiled programs and ab's programs pass: which kernels two revisions compile alike.

Real programs compiled by XLA:CPU where a fingerprint is taken; the comparison of two passes is pure."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest

from pytest_roofline.ab.same_programs import ProgramsOfTest, ProgramsPass, compare_programs, deselect_args
from pytest_roofline.ab.side_task import SideTask
from pytest_roofline.base.calls import KernelCall
from pytest_roofline.measurement.fingerprint import compile_fingerprint, fingerprint, normalized_hlo, program_facts
from pytest_roofline.measurement.options import MeasureOptions

# What XLA's CPU backend makes of these programs: compiled for the CPU device wherever the tests run.
pytestmark = pytest.mark.cpu_backend

pytest_plugins = ["pytester"]
MODES = "pytest_roofline.plugin.ab.side_modes"  # the plugin of ab's modes, which a side's script loads


def _fp(fn: Callable[..., Any], *args: Any, **settings: Any) -> str:
    return compile_fingerprint(KernelCall(fn, args, {}), MeasureOptions.from_keywords(settings))


def _row_sum(x: jax.Array) -> jax.Array:
    return x.sum(axis=-1)


# The same source text at another line and under another name: what a pull request moving code around gives.
SOURCE = "def {name}({arg}):\n    return {arg}.sum(axis=-1)\n"


def _defined(name: str, blank_lines: int, arg: str = "x") -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    code = compile("\n" * blank_lines + SOURCE.format(name=name, arg=arg), f"/somewhere/{name}.py", "exec")
    exec(code, namespace)  # noqa: S102 - a function defined at a chosen file and line
    defined: Callable[..., Any] = namespace[name]
    return defined


def test_the_same_program_from_another_file_line_and_name_has_the_same_fingerprint() -> None:
    x = jnp.ones((64, 256), jnp.float32)
    first, moved = _defined("row_sum", 0), _defined("total_of_rows", 40, arg="rows")
    assert _fp(first, x) == _fp(moved, x)
    assert _fp(jax.jit(_row_sum), x) == _fp(jax.jit(first), x)  # jitted by its author: the same again
    # the HLO text itself differs (source lines, names); only its normalized form is the same
    texts = [str(jax.jit(f).lower(x).compile().as_text()) for f in (first, moved)]
    assert texts[0] != texts[1] and normalized_hlo(texts[0]) == normalized_hlo(texts[1])
    assert "metadata=" not in normalized_hlo(texts[0]) and "FileNames" not in normalized_hlo(texts[0])


def test_a_changed_program_shapes_dtype_or_stated_work_changes_the_fingerprint() -> None:
    x = jnp.ones((64, 256), jnp.float32)
    same = _fp(_row_sum, x)
    assert _fp(lambda x: jnp.cumsum(x, axis=-1)[:, -1], x) != same  # another program
    assert _fp(_row_sum, jnp.ones((64, 512), jnp.float32)) != same  # other shapes
    assert _fp(_row_sum, x.astype(jnp.bfloat16)) != same  # another dtype
    assert _fp(_row_sum, x, bytes=x.nbytes) != same  # judged against other work: another utilization
    assert _fp(_row_sum, x, first_touch="exclude") != same  # another roofline
    assert _fp(_row_sum, x, warmup=3) == same  # timing settings change no program and no roofline


def test_flags_versions_and_device_are_part_of_it() -> None:
    text = "HloModule m\n\nENTRY %main (x: f32[4]) -> f32[4] {\n  ROOT %x = f32[4]{0} parameter(0)\n}\n"
    facts = program_facts("cpu", "cpu", 1, {}, environ={})
    assert fingerprint(text, facts) == fingerprint(text, dict(facts))
    flags = program_facts("cpu", "cpu", 1, {}, environ={"XLA_FLAGS": "--xla_cpu_enable_fast_math=true"})
    assert fingerprint(text, flags) != fingerprint(text, facts)
    assert fingerprint(text, {**facts, "jaxlib": "0.0.1"}) != fingerprint(text, facts)
    assert fingerprint(text, {**facts, "device_kind": "NVIDIA H100 80GB HBM3"}) != fingerprint(text, facts)
    assert facts["jax"] == jax.__version__


def test_metadata_with_braces_and_quotes_inside_strings_is_removed_whole() -> None:
    line = ('  %a = f32[4]{0} add(%x, %y), metadata={op_name="jit(f)/add{weird}" source_file="a \\"b\\".py" '
            'source_line=3}, backend_config={"k":1}')
    assert normalized_hlo(line) == '  %n0 = f32[4]{0} add(%n1, %n2), backend_config={"k":1}'


def _pass(*tests: ProgramsOfTest) -> ProgramsPass:
    return ProgramsPass({t.nodeid: t for t in tests}, "cpu")


def test_compare_programs_times_only_tests_whose_programs_differ_or_were_not_all_seen() -> None:
    base = _pass(ProgramsOfTest("t::same", {"a": "1", "b": "2"}), ProgramsOfTest("t::changed", {"a": "1", "b": "2"}),
                 ProgramsOfTest("t::gone", {"a": "9"}), ProgramsOfTest("t::stopped", {"a": "1"}),
                 ProgramsOfTest("t::grew", {"a": "1"}), ProgramsOfTest("t::none", {}))
    head = _pass(ProgramsOfTest("t::same", {"a": "1", "b": "2"}), ProgramsOfTest("t::changed", {"a": "1", "b": "3"}),
                 ProgramsOfTest("t::new", {"a": "7"}),
                 ProgramsOfTest("t::stopped", {"a": "1"}, complete=False, stopped="it reads the result of a"),
                 ProgramsOfTest("t::grew", {"a": "1", "b": "5"}), ProgramsOfTest("t::none", {}))
    diff = compare_programs(base, head)
    assert set(diff.timed) == {"t::changed", "t::stopped", "t::grew"}
    assert diff.timed["t::changed"] == "program b changed"
    assert diff.timed["t::grew"] == "program b added"
    assert "head: it reads the result of a" in diff.timed["t::stopped"]
    assert set(diff.untimed) == {"t::same", "t::gone", "t::new", "t::none"}
    assert diff.kernels[("t::same", "a")] == "same" and diff.kernels[("t::changed", "a")] == "same"
    assert diff.kernels[("t::gone", "a")] == "removed" and diff.kernels[("t::new", "a")] == "added"
    assert deselect_args(["a", "b"]) == ["--deselect", "a", "--deselect", "b"]


def test_a_kernel_that_did_not_compile_on_both_sides_is_never_the_same() -> None:
    base = _pass(ProgramsOfTest("t::x", {"a": ""}, complete=False, stopped="a did not compile"))
    diff = compare_programs(base, _pass(ProgramsOfTest("t::x", {"a": ""}, complete=False)))
    assert list(diff.timed) == ["t::x"] and diff.kernels[("t::x", "a")] == "changed"


def test_a_programs_pass_file_round_trips_and_a_foreign_one_is_refused() -> None:
    one = _pass(ProgramsOfTest("t::x", {"a": "1"}, complete=False, stopped="why"))
    assert ProgramsPass.from_dict(json.loads(json.dumps(one.to_dict()))) == one
    with pytest.raises(ValueError, match="not a programs pass"):
        ProgramsPass.from_dict({"records": []})


PASS_TESTS = """
import jax.numpy as jnp
import pytest


def test_two_kernels(roofline):
    x = jnp.ones((64, 256))
    roofline(lambda x: x.sum(axis=-1), x, name="sum", min=0.9)
    roofline.measure(lambda x: x * 2, x, name="double")


def test_reads_its_result(roofline):
    result = roofline(lambda x: x + 1, jnp.ones(8), name="plus")
    assert result.utilization > 0


def test_fails_after_its_kernel(roofline):
    roofline(lambda x: x - 1, jnp.ones(8), name="minus")
    assert False


def test_not_a_kernel():
    pass


@pytest.mark.roofline(min=0.5)
def test_does_not_compile(roofline):
    roofline(lambda x: x @ x, jnp.ones((3, 4)), name="bad")
"""


@pytest.mark.slow  # a pytest process compiling five kernels
def test_the_programs_pass_compiles_fingerprints_and_times_nothing(pytester: pytest.Pytester,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A real pytest run with the variable ab's driver sets (its task, ab/side_task.py) and its modes plugin (as
    plugin/ab/child.py loads it): every
    kernel compiled (none timed, so none fails its threshold), each test's fingerprints written, a test that reads
    its result stopped there (skipped) and said to be incomplete, as is one that fails; a kernel that does not
    compile is logged without a fingerprint."""
    out = pytester.path / "programs.json"
    for name, value in SideTask("programs", str(out)).environment().items():
        monkeypatch.setenv(name, value)
    pytester.makepyfile(test_k=PASS_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", "-p", MODES)
    result.assert_outcomes(passed=3, skipped=1, failed=1)
    result.stdout.fnmatch_lines(["*programs pass: each kernel compiled and fingerprinted, nothing timed*",
                                 "*programs pass: it reads the result of plus, which the programs pass does not*"])
    assert "roofline summary" not in result.stdout.str()  # nothing measured
    found = ProgramsPass.from_dict(json.loads(out.read_text()))
    tests = {nodeid.split("::")[1]: t for nodeid, t in found.tests.items()}
    assert set(tests) == {"test_two_kernels", "test_reads_its_result", "test_fails_after_its_kernel",
                          "test_does_not_compile"}  # the plain test is not one of the plugin's
    assert list(tests["test_two_kernels"].kernels) == ["sum", "double"] and tests["test_two_kernels"].complete
    assert all(len(f) == 20 for f in tests["test_two_kernels"].kernels.values())
    assert not tests["test_reads_its_result"].complete and "reads the result of plus" in \
        tests["test_reads_its_result"].stopped
    assert tests["test_fails_after_its_kernel"].stopped == "it failed in its call"
    bad = tests["test_does_not_compile"]
    assert bad.kernels == {"bad": ""} and not bad.complete and bad.stopped.startswith("bad did not compile")
    assert found.device == "cpu"
    # -x: the session stops at the first failure; the tests after it did not run, so their kernels are unknown
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-x", "-p", MODES)
    after = ProgramsPass.from_dict(json.loads(out.read_text())).tests
    (unrun,) = [t for nodeid, t in after.items() if nodeid.endswith("test_does_not_compile")]
    assert not unrun.complete and unrun.stopped == "it did not run (the session stopped before it)"


@pytest.mark.slow  # three pytest processes
def test_a_programs_pass_under_xdist_writes_one_file_per_worker(pytester: pytest.Pytester,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xdist")
    out = pytester.path / "programs.json"
    monkeypatch.setenv("PYTEST_ROOFLINE_PROGRAMS_PASS", str(out))  # as a driver of protocol 4 set it: still read
    pytester.makepyfile(test_k=PASS_TESTS)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-p", MODES)
    files = sorted(p.name for p in Path(pytester.path).glob("programs.json.gw*"))
    assert files == ["programs.json.gw0", "programs.json.gw1"]
    from pytest_roofline.cli.ab.programs import _read

    merged = _read(out, "the head")
    assert len(merged.tests) == 4 and merged.device == "cpu"
