"""What ran of a program's control flow (pytest_roofline.analysis.program.control_ran). Loops of unknown trip count
counted by the iterations that ran: constructed HLO and event counts for nesting (the outer loop first, then the one
inside it, and a known loop around them), and the counts charged that many times. Conditionals counted by the branches
that ran: real compiled HLO with event counts made up as a trace would show them. The real traces are in
tests/measurement/test_measure.py, tests/measurement/test_control_flow.py and tests/frameworks/."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import compile_counts

from pytest_roofline.analysis.program.control_ran import (
    Branches,
    branches_ran,
    trips_ran,
    with_control_ran,
    with_trips_ran,
)
from pytest_roofline.analysis.program.counts import hlo_counts, program_counts
from pytest_roofline.analysis.program.hlo_reader import HloModule, Instruction, parse_hlo
from pytest_roofline.analysis.program.walk import executed

# What XLA's CPU backend makes of these programs: compiled for the CPU device wherever the tests run.
pytestmark = pytest.mark.cpu_backend

# (Names are unique in a module, as XLA writes them.) A known loop of 2 trips around an unknown loop, around another
# unknown loop; each body doubles an f32[1024].
HLO = """HloModule nested

inner_body {
  p = f32[1024]{0} parameter(0)
  c = f32[] constant(2)
  b = f32[1024]{0} broadcast(c), dimensions={}
  ROOT m = f32[1024]{0} multiply(p, b)
}

inner_cond {
  p = f32[1024]{0} parameter(0)
  ROOT t = pred[] constant(true)
}

middle_body {
  p = f32[1024]{0} parameter(0)
  e = f32[1024]{0} exponential(p)
  ROOT w_inner = f32[1024]{0} while(e), condition=inner_cond, body=inner_body
}

middle_cond {
  p = f32[1024]{0} parameter(0)
  ROOT t = pred[] constant(true)
}

outer_body {
  p = f32[1024]{0} parameter(0)
  ROOT w_middle = f32[1024]{0} while(p), condition=middle_cond, body=middle_body
}

outer_cond {
  p = f32[1024]{0} parameter(0)
  ROOT t = pred[] constant(true)
}

ENTRY main {
  x = f32[1024]{0} parameter(0)
  ROOT w_outer = f32[1024]{0} while(x), condition=outer_cond, body=outer_body, backend_config={"known_trip_count":{"n":"2"}}
}
"""  # noqa: E501 (HLO text as XLA prints it)


def test_nested_loops_are_read_outermost_first_and_charged_as_they_ran() -> None:
    module = parse_hlo(HLO)
    middle = module.computations["outer_body"].root.name
    inner = module.computations["middle_body"].root.name
    # Per run: the known loop runs the middle loop twice; the middle loop ran 3 iterations each time, the inner 5.
    events = {"e": 2 * 3, "m": 2 * 3 * 5}
    assert trips_ran(module, events) == {middle: 3}  # the inner loop waits for the one around it
    ran, trips = with_trips_ran(module, events)
    assert trips == {middle: 3, inner: 5}
    before, after = hlo_counts(module), hlo_counts(ran)
    assert before.lower_bound and not after.lower_bound
    assert after.transcendentals == 2 * 3 * 1024 == 6 * before.transcendentals / 2
    assert after.flops == 2 * 3 * 5 * 1024
    assert sorted(after.loops) == sorted(["w_outer: trip count 2", f"{middle}: 3 iterations ran (from the trace)",
                                          f"{inner}: 5 iterations ran (from the trace)"])


def test_a_loop_whose_body_shows_no_event_stays_unknown() -> None:
    module = parse_hlo(HLO)
    ran, trips = with_trips_ran(module, {})
    assert trips == {} and hlo_counts(ran).lower_bound


# A known loop of 2 trips around an unknown loop whose condition computes (a compare, which a trace shows) and whose
# body is a matmul: a line search whose first step is accepted tests its condition once and runs no iteration.
SEARCH = """HloModule search

search_body {
  p = f32[64,64]{1,0} parameter(0)
  ROOT d = f32[64,64]{1,0} dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

search_cond {
  p = f32[64,64]{1,0} parameter(0)
  c = f32[] constant(0)
  k = f32[] constant(1)
  ROOT t = pred[] compare(c, k), direction=GT
}

outer_body {
  p = f32[64,64]{1,0} parameter(0)
  ROOT w_search = f32[64,64]{1,0} while(p), condition=search_cond, body=search_body
}

outer_cond {
  p = f32[64,64]{1,0} parameter(0)
  ROOT t = pred[] constant(true)
}

ENTRY main {
  x = f32[64,64]{1,0} parameter(0)
  ROOT w_outer = f32[64,64]{1,0} while(x), condition=outer_cond, body=outer_body, backend_config={"known_trip_count":{"n":"2"}}
}
"""  # noqa: E501 (HLO text as XLA prints it)


@pytest.mark.parametrize(("tests", "trips"), [(1, 0), (4, 3)])
def test_a_loop_whose_body_shows_nothing_is_read_from_its_condition(tests: int, trips: int) -> None:
    module = parse_hlo(SEARCH)
    # Per run: the outer loop runs the search twice; each tested its condition ``tests`` times. Before, a search
    # that ran no iteration left its body counted once and the counts a lower bound (jaxopt's LBFGS).
    ran, found = with_trips_ran(module, {"t": 2 * tests, "d": 2 * trips})
    assert found == {"w_search": trips}
    counts = hlo_counts(ran)
    assert counts.matrix_flops.get("f32", 0.0) == 2 * trips * 2 * 64**3 and not counts.lower_bound
    assert [e.times for e in executed(ran) if e.instruction.name == "d"] == ([2 * trips] if trips else [])
    if trips == 0:
        assert trips_ran(module, {"t": 2}) == {"w_search": 0}  # the body showed nothing: the condition tells


def jax_cond(*args: Any) -> Any:
    import jax

    return jax.lax.cond(*args)


def jax_fori(*args: Any) -> Any:
    import jax

    return jax.lax.fori_loop(*args)


# --- conditionals: the branches that ran, on real compiled HLO (jax on the CPU) with event counts made up here, as a
# trace would show them (a fake trace: the real one is in tests/measurement/test_control_flow.py) ---
def _compiled(fn: Any, *args: Any) -> tuple[Any, HloModule]:
    jax = pytest.importorskip("jax")
    counts, module, compiled = compile_counts(jax.jit(fn), *args)
    return compiled, module


def _conditional(module: HloModule) -> Instruction:
    (cond,) = [i for c in module.computations.values() for i in c.instructions if i.opcode == "conditional"]
    return cond


def _ops_of(module: HloModule, branch: str) -> list[str]:
    return [e.instruction.name for e in executed(module, within=module.computations[branch])]


def test_a_conditional_is_counted_by_the_branch_the_trace_shows_not_the_dearest() -> None:
    jnp = pytest.importorskip("jax.numpy")
    w = jnp.ones((256, 256), jnp.float32)
    compiled, module = _compiled(lambda p, x: jax_cond(p, lambda a: jnp.tanh(a @ w @ w), lambda a: a + 1.0, x),
                                 jnp.array(False), jnp.ones((256, 256), jnp.float32))
    cond = _conditional(module)
    cheap, dear = cond.called  # branch 0 is the false one
    events = {op: 1.0 for op in _ops_of(module, cheap)}
    assert branches_ran(module, events) == {cond.name: (1.0, 0.0)}
    ran, seen = with_control_ran(module, events)
    assert seen.branches == {cond.name: (1.0, 0.0)} and not seen.trips
    before, after = program_counts(compiled.cost_analysis(), module), program_counts(compiled.cost_analysis(), ran)
    assert before.flops == pytest.approx(2 * 2 * 256**3, rel=0.01)  # the dearest: two matmuls
    assert after.flops == pytest.approx(256 * 256, rel=0.01)  # what ran: one add per element
    assert after.branches == Branches((f"{cond.name}: ran branch 0 1 times per run (from the trace)",), unsure=False)
    assert {e.computation.name for e in executed(ran)} >= {cheap} and dear not in {e.computation.name
                                                                                   for e in executed(ran)}


def test_a_branch_with_no_op_took_what_the_others_did_not_show() -> None:
    jnp = pytest.importorskip("jax.numpy")
    compiled, module = _compiled(lambda p, x: jax_cond(p, lambda a: a @ a, lambda a: a, x) * 2.0,
                                 jnp.array(False), jnp.ones((128, 128), jnp.float32))
    cond = _conditional(module)
    shown = [e.instruction.name for e in executed(module) if e.computation.is_entry]
    assert branches_ran(module, {op: 1.0 for op in shown}) == {cond.name: (1.0, 0.0)}
    assert branches_ran(module, {}) == {}  # no trace at all: nothing can be told


def test_a_conditional_inside_a_loop_is_counted_by_how_often_each_branch_ran() -> None:
    """A stabilising step every tenth iteration (lineax CG's shape): 2 of 20 iterations take the dear branch."""
    jnp = pytest.importorskip("jax.numpy")
    a = jnp.ones((256, 256), jnp.float32)

    def body(i: Any, v: Any) -> Any:
        return jax_cond(i % 10 == 0, lambda u: jnp.tanh(a @ u), lambda u: u * 0.5, v)

    compiled, module = _compiled(lambda v: jax_fori(0, 20, body, v), jnp.ones((256,), jnp.float32))
    cond = _conditional(module)
    cheap, dear = cond.called
    events = {**{op: 18.0 for op in _ops_of(module, cheap)}, **{op: 2.0 for op in _ops_of(module, dear)}}
    ran, seen = with_control_ran(module, events)
    assert seen.branches == {cond.name: (0.9, 0.1)}
    runs = {e.instruction.name: e.times for e in executed(ran)}
    assert all(runs[op] == 18 for op in _ops_of(module, cheap)) and all(runs[op] == 2 for op in _ops_of(module, dear))
    counted = program_counts(compiled.cost_analysis(), ran)
    analytic = 2 * (2 * 256 * 256) + 18 * 256  # two matvecs, eighteen scalings (the loop's own i+1, i%10 aside)
    assert counted.flops == pytest.approx(analytic, rel=0.05)
    assert program_counts(compiled.cost_analysis(), module).flops > 9 * analytic  # the dearest on all 20


def test_a_conditional_whose_branches_show_no_event_is_counted_at_the_dearest_and_said_so() -> None:
    jnp = pytest.importorskip("jax.numpy")
    compiled, module = _compiled(lambda p, x: jax_cond(p, lambda a: a @ a, lambda a: a + 1.0, x) * 2.0,
                                 jnp.array(False), jnp.ones((128, 128), jnp.float32))
    shown = [e.instruction.name for e in executed(module) if e.computation.is_entry]
    ran, seen = with_control_ran(module, {op: 1.0 for op in shown})  # a command buffer hid the branches' ops
    assert not seen
    branches = program_counts(compiled.cost_analysis(), ran).branches
    assert branches.unsure and len(branches.lines) == 1
    assert "which of its 2 branches ran is unknown (the trace did not show): counted at the dearest" \
        in branches.lines[0]


def test_the_summary_marks_how_conditionals_were_counted_and_says_what_the_marks_mean() -> None:
    """Made-up results (fakes) whose work carries a conditional read from the trace, and one counted at its dearest."""
    from dataclasses import replace

    from fakes import fake_result, record_of

    from pytest_roofline.report.failure import short_block
    from pytest_roofline.report.text import summary_lines

    base = fake_result(0.5)
    ran = replace(base, work=replace(base.work, branches=Branches(("cond.3: ran branch 0 1 times per run (from the "
                                                                   "trace)",))))
    dear = replace(base, work=replace(base.work, branches=Branches(("cond.4: which ...",), unsure=True)))
    lines = summary_lines([record_of("t.py::test_a", "a", ran, "pass", 0.4, "marker"),
                           record_of("t.py::test_b", "b", dear, "pass", 0.4, "marker")])
    assert any("[branches ran]" in line for line in lines) and any("[dearest branch]" in line for line in lines)
    assert any(line.startswith("[branches ran]: conditionals counted by the branches the trace showed run")
               for line in lines)
    assert any(line.startswith("[dearest branch]: which branch of a conditional ran is unknown") for line in lines)
    block = short_block(record_of("t.py::test_a", "a", ran, "fail", 0.9, "marker"), "below its threshold")
    assert "  branches  cond.3: ran branch 0 1 times per run (from the trace)" in block and len(block) <= 12
    assert ran.to_dict()["conditionals"] == ["cond.3: ran branch 0 1 times per run (from the trace)"]


def test_a_conditional_the_trace_cannot_tell_gives_the_range_of_the_counts() -> None:
    jnp = pytest.importorskip("jax.numpy")
    compiled, module = _compiled(lambda p, x: jax_cond(p, lambda a: a @ a, lambda a: a + 1.0, x) * 2.0,
                                 jnp.array(False), jnp.ones((128, 128), jnp.float32))
    counts = program_counts(compiled.cost_analysis(), module)  # no trace: counted at the dearest
    spare_flops, spare_bytes = counts.branches.spare
    assert spare_flops == pytest.approx(2 * 128**3 - 128 * 128, rel=0.01)  # the matmul, less the add
    assert counts.flops - spare_flops == pytest.approx(2 * 128 * 128, rel=0.01)  # the add and the scaling
    assert spare_bytes >= 0
