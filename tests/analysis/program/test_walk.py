"""The one walk over executed ops, on real compiled HLO: loops multiplied, a conditional's costliest branch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import compile_counts

from pytest_roofline.analysis.model.per_op import op_rows
from pytest_roofline.analysis.program.hlo_reader import HloModule
from pytest_roofline.analysis.program.walk import executed, executed_op_count
from pytest_roofline.analysis.program.xla_costs import computation_cost, instruction_cost

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _module(fn: Callable[..., Any], *args: Any) -> HloModule:
    return compile_counts(fn, *args)[1]


def test_a_conditional_runs_its_costliest_branch() -> None:
    x = jnp.ones((128, 128), jnp.float32)
    module = _module(lambda p, v: jax.lax.cond(p, lambda a: (a @ a) @ a, lambda a: a + 1.0, v), True, x)
    (cond,) = [i for c in module.computations.values() for i in c.instructions if i.opcode == "conditional"]
    branch_costs = {name: computation_cost(module, name, True) for name in cond.called}
    costly = max(branch_costs, key=lambda n: branch_costs[n].flops + branch_costs[n].bytes)
    walked = {e.computation.name for e in executed(module)}
    assert costly in walked and not (set(cond.called) - {costly}) & walked
    # The program's counts, the op rows and the op count agree on that branch.
    entry = module.entry
    assert instruction_cost(module, entry, cond).flops == branch_costs[costly].flops >= 2 * 2 * 128**3
    rows = op_rows(module, lambda cls: 1e12, 1e12, 1e11)
    assert sum(r.executions for r in rows) == executed_op_count(module)
    assert sum(r.flops for r in rows) == pytest.approx(computation_cost(module, module.entry_name, True).flops)


def test_loop_bodies_run_trip_count_times() -> None:
    x = jnp.ones((16, 16), jnp.float32)
    module = _module(lambda v: jax.lax.fori_loop(0, 9, lambda i, y: jnp.tanh(y) * 2.0, v), x)
    in_body = [e for e in executed(module) if not e.computation.is_entry]
    assert in_body and all(e.times == 9 for e in in_body)
    assert executed_op_count(module) == sum(e.times for e in executed(module))


@pytest.mark.parametrize(("hlo", "nothing"), [
    # jax.jit(lambda x: 3) on jax 0.10.2 (CPU): a copy of a constant.
    ("ENTRY %main.1 () -> s32[] {\n  %constant.1 = s32[] constant(3)\n  ROOT %copy = s32[] copy(%constant.1)\n}", True),
    # jax.jit(lambda x: None): an empty tuple.
    ("ENTRY %main.2 (x.1: f32[4]) -> () {\n  %x.1 = f32[4]{0} parameter(0)\n  ROOT %tuple.1 = () tuple()\n}", True),
    # jax.jit(lambda x: x): a copy of the input moves its bytes (a copy kernel).
    ("ENTRY %main.1 (x.1: f32[4]) -> f32[4] {\n  %x.1 = f32[4]{0} parameter(0)\n"
     "  ROOT %copy = f32[4]{0} copy(%x.1)\n}", False),
    ("ENTRY %main (x: f32[4]) -> f32[4] {\n  %x = f32[4]{0} parameter(0)\n"
     "  ROOT %n = f32[4]{0} negate(%x)\n}", False),
])
def test_a_program_that_computes_nothing_is_told(hlo: str, nothing: bool) -> None:
    from pytest_roofline.analysis.program.hlo_reader import parse_hlo
    from pytest_roofline.analysis.program.walk import does_no_work

    assert does_no_work(parse_hlo("HloModule m\n\n" + hlo + "\n")) is nothing


def test_an_empty_input_is_named_as_such() -> None:
    """The optimized HLO of jax.jit(lambda x: jnp.sum(x * 2)) for a f32[0,16] input on jax 0.10.2 (CPU), cut to its
    entry: the sum of nothing is a constant."""
    from pytest_roofline.analysis.program.hlo_reader import parse_hlo
    from pytest_roofline.analysis.program.walk import does_no_work, empty_inputs_note

    hlo = ("HloModule m\n\nENTRY %main.1 (x: f32[0,16], y: f32[4]) -> f32[] {\n  %x = f32[0,16]{1,0} parameter(0)\n"
           "  %y = f32[4]{0} parameter(1)\n  ROOT %constant.1 = f32[] constant(0)\n}\n")
    module = parse_hlo(hlo)
    assert does_no_work(module)
    assert empty_inputs_note(module) == ["empty input: input 0 (f32[0,16]) holds no element (inputs are counted from "
                                         "0, in the order the program takes them), so the program computes nothing "
                                         "on it"]
    assert empty_inputs_note(parse_hlo(hlo.replace("[0,16]", "[2,16]"))) == []


def test_an_empty_input_of_a_program_that_still_writes_is_named_too() -> None:
    """A made-up entry in the shape of jnp.concatenate([x, jnp.ones(65536)]) for an f32[0] x: the program does work
    (it writes its output), none of it on the empty input (before, no note named it)."""
    from pytest_roofline.analysis.program.hlo_reader import parse_hlo
    from pytest_roofline.analysis.program.walk import does_no_work, empty_inputs_note

    hlo = ("HloModule m\n\nENTRY %main.1 (x: f32[0]) -> f32[65536] {\n  %x = f32[0]{0} parameter(0)\n"
           "  %c = f32[] constant(1)\n  ROOT %b = f32[65536]{0} broadcast(%c), dimensions={}\n}\n")
    module = parse_hlo(hlo)
    assert not does_no_work(module)
    assert empty_inputs_note(module, computes=True) == [
        "empty input: input 0 (f32[0]) holds no element (inputs are counted from 0, in the order the program takes "
        "them), so what the program does (making or copying what it returns) is not work on it: its figures say "
        "nothing of the kernel on real data"]
