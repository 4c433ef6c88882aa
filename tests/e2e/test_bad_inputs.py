"""Bad inputs as a user meets them, run as pytest runs them: a kernel that cannot be measured is listed with
its error in the summary, the JSON and the HTML (fake measurement: a kernel named "broken" fails, made up);
a marker typo under pytest-xdist, a kernel that does no work and a kernel that raises when run (real JAX,
in a subprocess)."""

from __future__ import annotations

import json

import pytest
from fakes import FAKE_SESSION_CONFTEST

pytest_plugins = ["pytester"]

BROKEN = """
import pytest

def broken(x):
    return x

def fine(x):
    return x

def test_broken(roofline):
    roofline(broken, 1)

def test_fine(roofline):
    roofline(fine, 1)
"""


def test_a_kernel_that_cannot_be_measured_is_in_the_summary_the_json_and_the_html(pytester: pytest.Pytester) -> None:
    pytest.importorskip("plotly")
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="0.6"))
    pytester.makepyfile(test_k=BROKEN)
    result = pytester.runpytest("-p", "no:cacheprovider", "--roofline-report=r.json", "--roofline-html=r.html")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*roofline summary*",
            "*test_k.py::test_fine [[]fine[]]*",
            "could not be measured (1):",
            "  test_k.py::test_broken [[]broken[]]: broken: running it failed: RuntimeError: made up for the test",
        ]
    )
    data = json.loads((pytester.path / "r.json").read_text())
    assert [r["label"] for r in data["results"]] == ["fine"]
    assert data["unmeasured"] == [{"nodeid": "test_k.py::test_broken", "label": "broken",
                                   "error": "broken: running it failed: RuntimeError: made up for the test"}]
    page = (pytester.path / "r.html").read_text()
    assert "Could not be measured (1)" in page and "made up for the test" in page


JAX_KERNELS = """
import jax, jax.numpy as jnp, pytest

FAST = dict(warmup=1, min_runs=2, max_runs=3, budget_s=0.2)

@pytest.mark.roofline(minx=0.5)
def test_typo(roofline):
    pass

def test_returns_none(roofline):
    roofline(lambda x: None, jnp.ones(4), bound="compute", **FAST)

def test_returns_a_number(roofline):
    roofline(lambda x: 3, jnp.ones(4), **FAST)

def fails_when_run(x):
    def boom(v):
        raise RuntimeError("boom at run time")
    return jax.pure_callback(boom, jax.ShapeDtypeStruct((4,), jnp.float32), x)

def test_raises_when_run(roofline):
    roofline(fails_when_run, jnp.ones(4), **FAST)
"""


@pytest.mark.slow
def test_bad_kernels_and_a_marker_typo_under_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytest.importorskip("jax")
    pytester.makepyfile(test_k=JAX_KERNELS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-W", "always", "-vv",  # full blocks
                                           f"--roofline-trace-dir={pytester.path / 'traces'}")
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and result.ret == 1, out
    result.assert_outcomes(passed=1, failed=2, errors=1, warnings=1)
    # The marker's own message, as an error at setup of that test.
    result.stdout.fnmatch_lines(["*roofline marker of test_k.py::test_typo: unknown keyword 'minx'; allowed: min*"])
    # None is no work: it never passes bound=; a number is no work too, said in a warning.
    result.stdout.fnmatch_lines(["*kernel '<lambda>' of test_k.py::test_returns_none: the kernel does no work*"])
    assert out.count("the kernel does no work") >= 2
    # ... and it is bound by neither: no intensity, no bound, no hints, in the message and the summary.
    result.stdout.fnmatch_lines(["  intensity     none: the program computes nothing, so it is bound by neither",
                                 "test_k.py::test_returns_none ?<lambda>? * - * - * no-work*"])
    assert "-bound" not in out.split("test_returns_none")[1].split("_____")[0] and "  hint  " not in out
    # A kernel that raises: one line, the exception it ended in, no embedded traceback in our message.
    line = next(x for x in out.splitlines() if x.startswith("roofline: kernel 'fails_when_run'"))
    assert line.endswith("cannot be measured: fails_when_run: running it failed: JaxRuntimeError: INTERNAL: "
                         "CpuCallback error calling callback: RuntimeError: boom at run time"), line
    result.stdout.fnmatch_lines(
        ["could not be measured (1):", "  test_k.py::test_raises_when_run [[]fails_when_run[]]*"]
    )


def test_the_html_summary_flags_an_impossible_result_as_the_terminal_does(pytester: pytest.Pytester) -> None:
    pytest.importorskip("plotly")
    pytester.makeconftest(FAKE_SESSION_CONFTEST.format(utils="1.3, 1.3"))  # made up: 130% of the roofline
    pytester.makepyfile(test_k="def fine(x):\n    return x\n\ndef test_a(roofline):\n    roofline(fine, 1, min=0.5)\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--roofline-warn-only", "--roofline-html=r.html")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*test_k.py::test_a [[]fine[]]*130.0%*impossible (min 50%) [[]warn-only[]]*"])
    page = (pytester.path / "r.html").read_text()
    assert '<td data-value="1.3" class="num bad" title="above 105%: a peak or a count is wrong">130.0% IMPOSSIBLE' \
        in page.replace("1.2999999999999998", "1.3")
