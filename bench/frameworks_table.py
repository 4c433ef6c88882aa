"""Framework code as its authors write it, measured: counted FLOPs against analytic ones, the iterations the trace
showed for loops whose trip count depends on the data, the source's FLOPs beside the compiled program's, the
utilization, and what one measurement costs in wall time against the kernel's own run time.

Run: pip install -e '.[frameworks]'; python bench/frameworks_table.py   (prints a Markdown table)

The kernels are those of tests/frameworks (flax.nnx with optax, equinox, diffrax, tokamax's XLA implementations,
keras 3 on JAX, dm-haiku, numpyro, jax-md, lineax, optimistix, jraph, mctx), at the sizes below. A framework that is
not installed is a row that says so. The "as ran" column lists the loops' iterations and the conditionals' branches
the trace showed; analytic counts that depend on the data come from the library's own statistics.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import pytest_roofline  # noqa: E402
from pytest_roofline.analysis.program.counts import RAN_FROM_TRACE  # noqa: E402

SETTINGS = {"min_runs": 5, "max_runs": 20, "budget_s": 1.0}
KEY = jax.random.PRNGKey(0)


@dataclass
class Case:
    framework: str
    kernel: str
    sizes: str
    analytic: Callable[[], float]  # FLOPs, the matmuls' (2 per multiply-add); NaN where there is no formula
    build: Callable[[], tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]
    analytic_bytes: float = float("nan")


def _nnx(step: bool) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    import optax
    from flax import nnx

    class Block(nnx.Module):  # type: ignore[misc]
        def __init__(self, rngs: Any) -> None:
            self.norm, self.up, self.down = nnx.LayerNorm(512, rngs=rngs), nnx.Linear(512, 2048, rngs=rngs), \
                nnx.Linear(2048, 512, rngs=rngs)

        def __call__(self, x: Any) -> Any:
            return x + self.down(nnx.gelu(self.up(self.norm(x))))

    model, x = Block(nnx.Rngs(0)), jnp.ones((512, 512))
    if not step:
        return nnx.jit(lambda m, v: m(v)), (model, x), {}
    opt = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)

    def train(m: Any, o: Any, v: Any) -> Any:
        loss, grads = nnx.value_and_grad(lambda mm: jnp.mean(mm(v) ** 2))(m)
        o.update(m, grads)
        return loss

    return nnx.jit(train), (model, opt, x), {}


def _eqx() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    import equinox as eqx
    import optax

    model, opt = eqx.nn.MLP(256, 256, 512, 2, key=KEY), optax.adamw(1e-3)

    @eqx.filter_jit
    def step(m: Any, state: Any, x: Any) -> Any:
        grads = eqx.filter_grad(lambda mm: jnp.mean(jax.vmap(mm)(x) ** 2))(m)
        updates, state = opt.update(grads, state, eqx.filter(m, eqx.is_array))
        return eqx.apply_updates(m, updates), state

    return step, (model, opt.init(eqx.filter(model, eqx.is_array)), jax.random.normal(KEY, (1024, 256))), {}


def _solution(y0: Any, w: Any) -> Any:
    import diffrax

    return diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: jnp.tanh(y @ a)), diffrax.Tsit5(), t0=0.0, t1=1.0,
                               dt0=0.1, y0=y0, args=w, stepsize_controller=diffrax.PIDController(rtol=1e-4, atol=1e-6))


DIFFRAX_ARGS = (jax.random.normal(KEY, (512, 256)), jax.random.normal(KEY, (256, 256)) / 16)


def _diffrax() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    return (lambda y0, w: _solution(y0, w).ys), DIFFRAX_ARGS, {}


def _diffrax_flops() -> float:
    """The steps the solver took (accepted and rejected, from its own statistics) x 6 stages, and the first stage of
    the first step (Tsit5 reuses a step's last stage as the next one's first), x one 512 x 256 x 256 matmul each."""
    stats = jax.jit(lambda y0, w: _solution(y0, w).stats)(*DIFFRAX_ARGS)
    return ((int(stats["num_steps"]) + int(stats["num_rejected_steps"])) * 6 + 1) * 2 * 512 * 256 * 256


def _tokamax(which: str) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    from absl import flags

    if not flags.FLAGS.is_parsed():
        flags.FLAGS(sys.argv[:1])
    import tokamax

    if which == "attention":
        q = jax.random.normal(KEY, (2, 1024, 8, 64))
        return tokamax.dot_product_attention, (q, q, q), {"implementation": "xla"}
    if which == "ragged":
        return tokamax.ragged_dot, (jax.random.normal(KEY, (2048, 512)), jax.random.normal(KEY, (8, 512, 512)),
                                    jnp.full((8,), 256, jnp.int32)), {"implementation": "xla"}
    if which == "glu":
        return (
            tokamax.gated_linear_unit,
            (jax.random.normal(KEY, (2048, 1024)), jax.random.normal(KEY, (1024, 2, 2048))),
            {"activation": jax.nn.silu, "implementation": "xla"},
        )
    return tokamax.layer_norm, (jax.random.normal(KEY, (4096, 2048)), jnp.ones(2048), jnp.zeros(2048)), \
        {"implementation": "xla"}


def _keras() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    import keras

    model = keras.Sequential([keras.Input((512,)), keras.layers.Dense(2048, activation="relu"),
                              keras.layers.Dense(512)])
    weights, others = [v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables]
    return (lambda tv, ntv, x: model.stateless_call(tv, ntv, x)[0]), (weights, others, jnp.ones((512, 512))), {}


def _haiku(grad: bool) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    import haiku as hk

    net = hk.without_apply_rng(hk.transform(lambda x: hk.remat(hk.nets.MLP([512, 512, 256]))(x)))
    x = jnp.ones((128, 256))
    params = net.init(KEY, x)
    if not grad:
        return net.apply, (params, x), {}
    return jax.grad(lambda p, v: jnp.mean(net.apply(p, v) ** 2)), (params, x), {}


HAIKU_LAYERS = 2 * 128 * (256 * 512 + 512 * 512 + 512 * 256)


def _nuts() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    x = jax.random.normal(KEY, (2048, 64))
    y = (x @ jnp.ones(64) > 0).astype(jnp.float32)

    def model(x: Any, y: Any = None) -> None:
        w = numpyro.sample("w", dist.Normal(jnp.zeros(64), 1.0))
        numpyro.sample("y", dist.Bernoulli(logits=x @ w), obs=y)

    mcmc = MCMC(NUTS(model), num_warmup=50, num_samples=1, progress_bar=False)
    mcmc.run(KEY, x, y=y)
    kernel = mcmc.sampler

    def step(state: Any) -> Any:
        new = kernel.sample(state, (x,), {"y": y})
        return new, new.num_steps

    global _NUTS_STEPS
    _NUTS_STEPS = int(jax.jit(step)(mcmc.last_state)[1])
    return step, (mcmc.last_state,), {}


_NUTS_STEPS = 0


def _jax_md(loop: bool) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    from jax_md import energy, partition, simulate, space

    side = 32
    grid = jnp.stack(jnp.meshgrid(jnp.arange(side), jnp.arange(side)), -1).reshape(-1, 2) * 1.1 + 0.5
    displacement, shift = space.periodic(side * 1.1)
    neighbor_fn, energy_fn = energy.lennard_jones_neighbor_list(displacement, side * 1.1, r_cutoff=2.5,
                                                                 format=partition.Dense)
    nbrs = neighbor_fn.allocate(grid)
    if not loop:
        return neighbor_fn.update, (grid, nbrs), {}
    init, apply = simulate.nve(energy_fn, shift, 1e-4)

    def simulation(state: Any, nbrs: Any) -> Any:
        def step(i: Any, sn: Any) -> Any:
            state = apply(sn[0], neighbor=sn[1])
            return state, sn[1].update(state.position)

        return jax.lax.fori_loop(0, 20, step, (state, nbrs))

    return simulation, (init(KEY, grid, kT=1e-4, neighbor=nbrs), nbrs), {}


def _cg() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    import lineax as lx

    m = jax.random.normal(KEY, (1024, 1024)) / 32
    a = m @ m.T + jnp.eye(1024)

    def cg(a: Any, b: Any) -> Any:
        op = lx.MatrixLinearOperator(a, lx.positive_semidefinite_tag)
        return lx.linear_solve(op, b, solver=lx.CG(rtol=1e-12, atol=1e-12, max_steps=20), throw=False).value

    return cg, (a, jnp.ones(1024)), {}


def _newton() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    import optimistix as optx

    m = jax.random.normal(KEY, (256, 256)) / 16
    fn = lambda y, args: args @ y - jnp.tanh(y) - 1.0  # noqa: E731
    return optx.root_find, (fn, optx.Newton(rtol=1e-6, atol=1e-6), jnp.zeros(256)), {"args": m @ m.T + jnp.eye(256)}


def _jraph() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    import jraph

    nodes, edges, f = 2048, 16384, 64
    w1, w2 = jax.random.normal(KEY, (3 * f, f)) / 16, jax.random.normal(KEY, (3 * f, f)) / 16
    net = jraph.GraphNetwork(
        update_edge_fn=lambda e, s, r, g: jax.nn.relu(jnp.concatenate([e, s, r], -1) @ w1),
        update_node_fn=lambda n, s, r, g: jax.nn.relu(jnp.concatenate([n, s, r], -1) @ w2))
    graph = jraph.GraphsTuple(nodes=jax.random.normal(KEY, (nodes, f)), edges=jax.random.normal(KEY, (edges, f)),
                              senders=jax.random.randint(KEY, (edges,), 0, nodes),
                              receivers=jax.random.randint(jax.random.PRNGKey(1), (edges,), 0, nodes),
                              n_node=jnp.array([nodes]), n_edge=jnp.array([edges]), globals=jnp.zeros((1, f)))
    return (lambda g: net(g).nodes), (graph,), {}


def _mctx() -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    import functools

    import mctx

    b, a, e = 64, 16, 256
    params = jax.random.normal(KEY, (e, e)) / 16

    def recurrent(params: Any, rng: Any, action: Any, embedding: Any) -> Any:
        nxt = jnp.tanh(embedding @ params + action[:, None].astype(jnp.float32))
        return mctx.RecurrentFnOutput(reward=jnp.zeros(b), discount=jnp.full(b, 0.99), prior_logits=nxt[:, :a],
                                      value=nxt[:, 0]), nxt

    root = mctx.RootFnOutput(prior_logits=jnp.zeros((b, a)), value=jnp.zeros(b), embedding=jnp.ones((b, e)))
    policy = jax.jit(functools.partial(mctx.muzero_policy, recurrent_fn=recurrent, num_simulations=32))
    return policy, (params, KEY, root), {}


def _is(value: float) -> Callable[[], float]:
    return lambda: value


CASES = [
    Case(
        "flax.nnx", "block forward (nnx.jit)", "512 x 512 -> 2048", _is(2 * 2 * 512 * 512 * 2048), lambda: _nnx(False)
    ),
    Case(
        "flax.nnx + optax", "AdamW training step", "same block", _is(3 * 2 * 2 * 512 * 512 * 2048), lambda: _nnx(True)
    ),
    Case(
        "equinox + optax",
        "filter_jit MLP step",
        "1024 x 256, width 512, depth 2",
        _is(3 * 2 * 1024 * (256 * 512 + 512 * 512 + 512 * 256)),
        _eqx,
    ),
    Case("diffrax", "Tsit5 adaptive solve", "512 x 256, tanh(y @ W)", _diffrax_flops, _diffrax),
    Case(
        "tokamax",
        "dot_product_attention (xla)",
        "2 x 1024 x 8 heads x 64",
        _is(2 * 2 * (2 * 8 * 1024 * 1024 * 64)),
        lambda: _tokamax("attention"),
    ),
    Case(
        "tokamax",
        "ragged_dot (xla)",
        "2048 x 512 x 512, 8 groups",
        _is(2 * 2048 * 512 * 512),
        lambda: _tokamax("ragged"),
    ),
    Case(
        "tokamax",
        "gated_linear_unit (xla)",
        "2048 x 1024 -> 2 x 2048",
        _is(2 * 2048 * 1024 * 4096),
        lambda: _tokamax("glu"),
    ),
    Case(
        "tokamax",
        "layer_norm (xla)",
        "4096 x 2048",
        _is(float("nan")),
        lambda: _tokamax("layer_norm"),
        analytic_bytes=2 * 4096 * 2048 * 4,
    ),  # x read once and written once
    Case("keras 3 (jax)", "Dense MLP, stateless_call", "512 x 512 -> 2048", _is(2 * 2 * 512 * 512 * 2048), _keras),
    Case(
        "dm-haiku", "transformed MLP (hk.remat)", "128 x 256, 512, 512, 256", _is(HAIKU_LAYERS), lambda: _haiku(False)
    ),
    Case(
        "dm-haiku",
        "its gradient",
        "same MLP",
        _is(2 * HAIKU_LAYERS + 2 * 128 * (512 * 512 + 512 * 256)),
        lambda: _haiku(True),
    ),
    Case(
        "numpyro",
        "one NUTS step, warmed up",
        "logistic regression 2048 x 64",
        lambda: _NUTS_STEPS * 2 * 2 * 2048 * 64,
        _nuts,
    ),
    Case("jax-md", "neighbor update, no rebuild", "1024 LJ particles", _is(float("nan")), lambda: _jax_md(False)),
    Case("jax-md", "fori_loop of 20 NVE steps", "same", _is(float("nan")), lambda: _jax_md(True)),
    Case("lineax", "CG, 20 steps", "1024 x 1024", _is(22 * 2 * 1024 * 1024), _cg),
    Case("optimistix", "Newton root_find, args=", "256", _is(float("nan")), _newton),
    Case("jraph", "GraphNetwork", "2048 nodes, 16384 edges, 64", _is(2 * (16384 + 2048) * 3 * 64 * 64), _jraph),
    Case("mctx", "muzero_policy", "64 x 16 actions, 256, 32 simulations", _is(float("nan")), _mctx),
]


def _g(value: float) -> str:
    return "-" if value != value or value == 0 else f"{value / 1e9:.3g}"


def _mb(value: float) -> str:
    return "-" if value != value else f"{value / 1e6:.3g}"


def row(case: Case) -> str:
    try:
        fn, args, kwargs = case.build()
    except ImportError as exc:
        return f"| {case.framework} | {case.kernel} | {case.sizes} | not installed ({exc.name}) | | | | | | | |"
    start = time.perf_counter()
    r = pytest_roofline.measure(fn, args=args, kwargs=kwargs, **SETTINGS)
    wall = time.perf_counter() - start
    ran = "; ".join([loop.split(": ", 1)[1].removesuffix(RAN_FROM_TRACE) + " iterations" for loop in r.work.loops
                     if loop.endswith(RAN_FROM_TRACE)]
                    + [line.split(": ", 1)[1].removesuffix(" times per run (from the trace)")
                       for line in r.work.branches.lines]) or "-"
    if len(ran) > 80:
        ran = ran[:77] + "..."
    factor = f"{r.compiled_over_source:.2f}" if r.compiled_over_source is not None else "-"
    return (f"| {case.framework} | {case.kernel} | {case.sizes} | {_g(r.flops)} | {_g(case.analytic())} | "
            f"{_mb(r.bytes_accessed)} | {_mb(case.analytic_bytes)} | {ran} | "
            f"{factor} | {r.utilization:.1%}{' IMPOSSIBLE' if r.impossible else ''} | "
            f"{wall:.1f} s / {r.device_time_s * 1e3:.3g} ms |")


def main() -> None:
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}")
    print("| framework | kernel | sizes | GFLOP counted | GFLOP analytic | MB counted | MB analytic | "
          "as ran (from the trace) | compiled / source FLOPs | utilization | measure() wall / one run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for case in CASES:
        print(row(case), flush=True)


if __name__ == "__main__":
    main()
