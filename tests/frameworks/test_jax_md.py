"""jax-md as its README writes it: a Lennard-Jones system with a neighbor list, the list updated where no rebuild is
needed, and a ``fori_loop`` of NVE steps that update the list. The neighbor update is a ``lax.cond`` between
rebuilding and keeping the list: counted by the branch that ran (before, the rebuild was charged on every update and
the update read "10131.8% impossible"). Real jax-md on this machine's CPU, skipped where it is not installed."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from frameworks import FAST, jax, jnp, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline

# jax-md takes about 7 s to import: found here, imported by the tests that run (not by the quick loop's collection).
if importlib.util.find_spec("jax_md") is None:
    pytest.skip("jax-md is not installed (pip install -e '.[frameworks]')", allow_module_level=True)

SIDE, STEPS = 32, 20  # a 32 x 32 square lattice, 1.1 apart: no particle moves far enough to rebuild the list


def _system() -> tuple[Any, ...]:
    from jax_md import energy, partition, space

    box = SIDE * 1.1
    grid = jnp.stack(jnp.meshgrid(jnp.arange(SIDE), jnp.arange(SIDE)), -1).reshape(-1, 2) * 1.1 + 0.5
    displacement, shift = space.periodic(box)
    neighbor_fn, energy_fn = energy.lennard_jones_neighbor_list(displacement, box, r_cutoff=2.5,
                                                                 format=partition.Dense)
    nbrs = neighbor_fn.allocate(grid)
    return grid, neighbor_fn, energy_fn, shift, nbrs


def test_a_neighbor_update_without_a_rebuild_counts_the_branch_that_ran() -> None:
    grid, neighbor_fn, _, _, nbrs = _system()
    result = pytest_roofline.measure(neighbor_fn.update, grid, nbrs, **FAST)
    assert not result.impossible and not result.figures.unjudged
    assert any(line.endswith(": ran branch 0 1 times per run (from the trace)") for line in result.work.branches.lines)
    # Keeping the list: the displacement of each particle from its reference and a max, not a rebuild's cell list
    # and neighbor search (about 400 FLOP a particle).
    assert result.flops < 100 * SIDE * SIDE, result.flops


def test_an_nve_loop_counts_its_steps_as_they_ran() -> None:
    from jax_md import simulate

    grid, neighbor_fn, energy_fn, shift, nbrs = _system()
    init, apply = simulate.nve(energy_fn, shift, 1e-4)
    state = init(jax.random.PRNGKey(0), grid, kT=1e-4, neighbor=nbrs)

    def step(state: Any, nbrs: Any) -> Any:
        state = apply(state, neighbor=nbrs)
        return state, nbrs.update(state.position)

    def simulation(state: Any, nbrs: Any) -> Any:
        return jax.lax.fori_loop(0, STEPS, lambda i, sn: step(*sn), (state, nbrs))

    one = pytest_roofline.measure(step, state, nbrs, **FAST)
    loop = pytest_roofline.measure(simulation, state, nbrs, **FAST)
    assert loop.flops == pytest.approx(STEPS * one.flops, rel=0.10), (loop.flops, one.flops)
    assert loop.bytes_accessed <= 1.1 * STEPS * one.bytes_accessed
    assert any(f"ran branch 0 {STEPS} times per run" in line for line in loop.work.branches.lines)
    assert not loop.impossible and not one.impossible
