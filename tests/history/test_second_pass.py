"""Per-op times under GPU command buffers: where the timed runs' trace hides each kernel (CUDA graphs), the op
rows are timed in a second profiled pass of the program compiled with command buffers off, and say so; compare
says why it shows no op lines. The second pass runs here on this machine's CPU, whose compiler ignores the GPU
option: what is shown is the mechanism (recompiled, timed, rows filled, the pass named); its effect on a GPU's
trace is a GPU check (docs/gpu.md)."""

from __future__ import annotations

import pytest
from fakes import HIDDEN, fake_result

from pytest_roofline.analysis.model.per_op import OpsModel, op_rows
from pytest_roofline.analysis.program.hlo_reader import parse_hlo
from pytest_roofline.analysis.runs.program_runs import ops_hidden
from pytest_roofline.report.history_text import op_diff_lines
from pytest_roofline.result.recorded_result import RecordedResult

jax = pytest.importorskip("jax")
jnp = jax.numpy


def test_the_note_of_a_hidden_trace_is_found_among_others() -> None:
    assert ops_hidden(("another note", HIDDEN)) == HIDDEN and ops_hidden(("another note",)) == ""


def test_compare_says_why_it_shows_no_op_lines() -> None:
    before = RecordedResult.from_dict(fake_result(0.5, notes=(HIDDEN,)).to_dict())
    after = RecordedResult.from_dict(fake_result(0.25, notes=(HIDDEN,)).to_dict())
    assert op_diff_lines(before, after) == [f"    op by op: not shown: {HIDDEN}"]


@pytest.mark.slow
def test_a_second_pass_with_command_buffers_off_times_each_op() -> None:
    from pytest_roofline.measurement.as_ran import SECOND_PASS, ops_from_second_pass
    from pytest_roofline.measurement.compiled import NO_COMMAND_BUFFERS, compile_program

    program = compile_program(lambda x: jnp.tanh(x @ x).sum(axis=0), (jnp.ones((256, 256)),), {}, "k")
    rows = op_rows(parse_hlo(program.hlo_text), lambda _: 1e11, 1e11, 1e10)
    assert rows and not any(r.measured_s for r in rows)  # as a trace without per-op times leaves them
    found = ops_from_second_pass(OpsModel(tuple(rows)), program)
    assert found.times_from == SECOND_PASS and "xla_gpu_enable_command_buffer=" in SECOND_PASS
    assert all(r.measured_s for r in found.rows) and [r.name for r in found.rows] == [r.name for r in rows]
    assert NO_COMMAND_BUFFERS == {"xla_gpu_enable_command_buffer": ""}


@pytest.mark.slow
def test_where_the_timed_runs_hid_the_kernels_the_second_pass_tells_what_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    """A FAKE hidden trace on this CPU: the timed runs' op events are taken away and their notes say command buffers
    hid them, as an H200's trace of this loop did (tests/data/corpus, while_power); the real second pass shows every
    op, and the loop is counted by the trips it made, never once."""
    import pytest_roofline
    from pytest_roofline.measurement import as_ran
    from pytest_roofline.measurement.as_ran import SECOND_PASS

    seen = {"tallies": 0, "notes": 0}
    from pytest_roofline.analysis.model.per_op import tally_events as real_tally

    def first_tally_empty(events, run_of_event, runs):  # type: ignore[no-untyped-def]
        seen["tallies"] += 1
        return real_tally([] if seen["tallies"] == 1 else events, run_of_event, runs)

    def first_hidden(notes):  # type: ignore[no-untyped-def]
        seen["notes"] += 1
        return HIDDEN if seen["notes"] == 1 else ""

    monkeypatch.setattr(as_ran, "tally_events", first_tally_empty)
    monkeypatch.setattr(as_ran, "ops_hidden", first_hidden)

    def power(a, v):  # type: ignore[no-untyped-def]
        def body(state):  # type: ignore[no-untyped-def]
            u, lam, _, k = state
            w = a @ u
            new = jnp.linalg.norm(w)
            return w / new, new, jnp.abs(new - lam), k + 1

        return jax.lax.while_loop(lambda s: (s[2] > 1e-6) & (s[3] < 500), body,
                                  (v, jnp.float32(0), jnp.float32(1), jnp.int32(0)))[3]

    n = 256
    m = jax.random.normal(jax.random.PRNGKey(3), (n, n)) / jnp.sqrt(n)
    a, v = m @ m.T + jnp.eye(n), jnp.ones(n)
    trips = int(jax.jit(power)(a, v))
    r = pytest_roofline.measure(power, a, v, min_runs=3, max_runs=3, budget_s=0.3, warmup=1)
    assert seen["tallies"] >= 2 and r.ops_model.times_from == SECOND_PASS
    assert any(f"{trips} iterations ran (from the trace)" in loop for loop in r.loops), r.loops
    assert not r.counts_lower_bound and r.flops == pytest.approx(trips * 2.0 * n * n, rel=0.05)
