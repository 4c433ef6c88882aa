"""An equinox MLP's training step as its authors write it: ``eqx.filter_jit`` over a module whose activation is a
function (a non-array leaf) and an optax state. Real equinox and optax on this machine's CPU, skipped where they are
not installed (``pip install -e '.[frameworks]'``)."""

from __future__ import annotations

from typing import Any

from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

eqx = library("equinox")
optax = library("optax")

B, D, W = 512, 256, 512  # batch, in/out size, width


def _model() -> Any:
    return eqx.nn.MLP(D, D, W, 2, activation=jax.nn.relu, key=jax.random.PRNGKey(0))


OPT = optax.adamw(1e-3)


@eqx.filter_jit  # type: ignore[untyped-decorator]
def train_step(model: Any, state: Any, x: Any) -> Any:
    def loss(m: Any) -> Any:
        return jnp.mean(jax.vmap(m)(x) ** 2)

    grads = eqx.filter_grad(loss)(model)
    updates, state = OPT.update(grads, state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), state


def test_a_filter_jit_training_step_is_measured_with_its_module_static_fields_named(roofline: Any) -> None:
    model = _model()
    state = OPT.init(eqx.filter(model, eqx.is_array))
    x = jax.random.normal(jax.random.PRNGKey(1), (B, D))
    result = roofline.measure(train_step, model, state, x, **FAST)
    forward = 2 * B * (D * W + W * W + W * D)
    # forward, and backward twice the forward (the input's gradient of the first layer is not needed: a bit less)
    assert 2.5 * forward <= result.flops <= 3.1 * forward, result.flops / forward
    static = " ".join(result.program.static)
    assert "argument 0 (MLP)" in static and "activation" in static
    assert result.source_flops is not None and abs(result.flops / result.source_flops - 1) < 0.05
    assert roofline.results == [result]  # recorded, not "could not be measured"
