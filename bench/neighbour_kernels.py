"""Kernels for bench/library_neighbours.py, from three libraries (each skipped where it is not installed): a
Gaussian-process log-prob by tfp (a 1024^2 Cholesky in jaxlib's LAPACK), an int8 MLP quantized by qwix, a causal
attention by tokamax (XLA's matmul fusions)."""
import jax
import jax.numpy as jnp
import pytest


@pytest.mark.roofline(min=0.08)
def test_gp_log_prob(roofline):
    tfp = pytest.importorskip("tensorflow_probability.substrates.jax")
    n = 1024
    x = jnp.linspace(0.0, 1.0, n)[:, None]
    kernel = tfp.math.psd_kernels.ExponentiatedQuadratic(amplitude=1.0, length_scale=0.2)
    gp = tfp.distributions.GaussianProcess(kernel, index_points=x, observation_noise_variance=0.1)
    y = jnp.sin(6.0 * x[:, 0])
    roofline(jax.jit(lambda gp, y: gp.log_prob(y)), gp, y)


@pytest.mark.roofline(min=0.3)
def test_int8_mlp(roofline):
    qwix = pytest.importorskip("qwix")
    from flax import linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(1024)(nn.relu(nn.Dense(4096)(x)))

    x = jnp.ones((512, 1024), jnp.float32)
    fp = MLP()
    params = fp.init(jax.random.key(0), x)["params"]
    rules = [qwix.QtRule(module_path=".*", weight_qtype=jnp.int8, act_qtype=jnp.int8)]
    ptq = qwix.quantize_model(fp, qwix.PtqProvider(rules))
    abstract = jax.eval_shape(ptq.init, jax.random.key(0), x)["params"]
    qparams = qwix.quantize_params(params, abstract)
    roofline(jax.jit(lambda p, x: ptq.apply({"params": p}, x)), qparams, x)


@pytest.mark.roofline(min=0.3)
def test_causal_attention(roofline):
    tokamax = pytest.importorskip("tokamax")
    from absl import flags

    flags.FLAGS.mark_as_parsed()  # tokamax reads absl flags, which would parse pytest's own argv
    b, t, h, d = 4, 1024, 8, 64
    q = jax.random.normal(jax.random.key(0), (b, t, h, d), jnp.float32)
    k = jax.random.normal(jax.random.key(1), (b, t, h, d), jnp.float32)
    v = jax.random.normal(jax.random.key(2), (b, t, h, d), jnp.float32)
    attend = jax.jit(lambda q, k, v: tokamax.dot_product_attention(q, k, v, is_causal=True, implementation="xla"))
    roofline(attend, q, k, v)
