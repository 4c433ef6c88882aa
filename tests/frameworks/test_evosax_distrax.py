"""Callables as two libraries hand them out: evosax's strategies jit ``ask`` and ``tell`` as methods with a static
``self`` and are called bound (``es.ask(key, state, params)``, as its README writes it); distrax's distributions
are pytrees that decide per leaf what goes in their node data, jitted by the user (``jax.jit(lambda d, x:
d.log_prob(x))``, as its README writes it). Each is measured as the library runs it, with counts against a hand count.
Real evosax and distrax on this machine's CPU, skipped where they are not installed (``pip install -e
'.[frameworks]'``)."""

from __future__ import annotations

from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline


def test_a_strategys_bound_ask_and_tell_are_measured_as_evosax_calls_them() -> None:
    evosax_algorithms = library("evosax.algorithms")  # imported here, as distrax below
    es = evosax_algorithms.SimpleES(population_size=64, solution=jnp.zeros(256))
    params = es.default_params
    key = jax.random.key(0)
    state = es.init(key, jnp.zeros(256), params)
    population, asked = es.ask(key, state, params)
    result = pytest_roofline.measure(es.ask, key, state, params, **FAST)
    assert result.runs >= 3 and result.device_time_s > 0
    assert result.module_name.startswith("jit_ask")
    fitness = jnp.sum(population**2, axis=-1)
    told = pytest_roofline.measure(es.tell, key, population, fitness, asked, params, **FAST)
    assert told.module_name.startswith("jit_tell")
    # The population's 64 x 256 normal draws and the shift by the mean at least: the counts see the real program.
    assert result.work.flops >= 64 * 256


def test_a_distribution_under_the_users_jit_is_measured_with_its_arrays_as_inputs() -> None:
    distrax = library("distrax")  # imported here: the quick loop collects this module without running it
    n = 1 << 16
    d = distrax.Normal(jnp.zeros(n), jnp.full(n, 2.0))
    log_prob = jax.jit(lambda d, x: d.log_prob(x))
    x = jnp.ones(n)
    result = pytest_roofline.measure(log_prob, d, x, **FAST)
    assert "refuses the arguments' own tree" in " ".join(result.notes)
    # Three inputs of n float32 read, one written: at least 16 bytes an element, and the log of the scale for each.
    assert result.work.bytes_accessed >= 16 * n
    assert result.work.transcendentals >= n
