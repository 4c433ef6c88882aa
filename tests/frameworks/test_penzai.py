"""penzai's own jit, ``pz.variable_jit``, as its docs write it: a model whose weights are Variables (objects that are
not JAX types) passed to a function the wrapper jits. Measured as the program penzai compiles, the weights its
inputs, the caller's model left as it was. Real penzai on this machine's CPU, skipped where it is not installed
(``pip install -e '.[frameworks]'``)."""

from __future__ import annotations

from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline


def test_variable_jit_is_measured_with_its_weights_as_inputs() -> None:
    pz = library("penzai.pz")
    simple_mlp = library("penzai.models.simple_mlp")
    sizes, batch = [256, 512, 256], 64
    mlp = simple_mlp.MLP.from_config(name="mlp", init_base_rng=jax.random.key(0), feature_sizes=sizes)
    x = pz.nx.wrap(jnp.ones((batch, sizes[0]))).tag("batch", "features")
    forward = pz.variable_jit(lambda model, x: model(x))
    result = pytest_roofline.measure(forward, mlp, x, **FAST)
    weights = sum(int(v.value.data_array.nbytes) for v in pz.unbind_params(mlp)[1])
    assert weights > 1 << 20
    # Before: jitted here with every Variable static, the weights were constants (the arguments the input alone)
    # and the wrapper's write-back left tracers in the caller's model.
    assert result.module_name.startswith("jit_inner_fun")
    assert result.memory is not None and result.memory.arguments >= weights
    assert "calls its own jitted function 'inner_fun'" in " ".join(result.notes)
    leaves = jax.tree_util.tree_leaves([v.value for v in pz.unbind_params(mlp)[1]])
    assert all(isinstance(a, jax.Array) and not isinstance(a, jax.core.Tracer) for a in leaves)
    # Two matmuls of the batch: 2 x batch x (256 x 512 + 512 x 256) FLOPs, within the biases and activations.
    hand = 2 * batch * (sizes[0] * sizes[1] + sizes[1] * sizes[2])
    assert 1.0 <= result.work.flops / hand <= 1.05
    forward(mlp, x)  # the model still runs as the library's own call
