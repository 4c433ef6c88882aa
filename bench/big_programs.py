"""What measuring a program of many ops per run costs, against its timed runs and its compile.

Run: python bench/big_programs.py [--repeats 1]   (needs mctx and numpyro: pip install -e '.[frameworks]')

Two programs from libraries, jitted as their docs write them: mctx's ``muzero_policy`` under
``jax.jit(functools.partial(...))`` (batch 64, 256-wide embeddings, 32 simulations: nested while loops, about
137,000 trace events a run) and one ``NUTS.sample`` step of numpyro (a logistic regression, 2048 x 64). Each is
measured with ``pytest_roofline.measure`` at its defaults, as a test would, and the wall time of that call is split
into its phases. The table: total, compile, the timed runs (each run's wall clock, summed), the profiler and trace
reading, and ``(total - compile) / timed runs``, which the project holds under 10. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import pytest_roofline  # noqa: E402
from pytest_roofline.analysis.runs.time_spent import Stopwatch  # noqa: E402


def muzero() -> tuple[Any, tuple[Any, ...]]:
    import mctx

    batch, actions, width, simulations = 64, 16, 256, 32

    def recurrent_fn(params: Any, rng: Any, action: Any, embedding: Any) -> Any:
        nxt = jnp.tanh(embedding @ params + action[:, None].astype(jnp.float32))
        out = mctx.RecurrentFnOutput(reward=jnp.zeros(batch), discount=jnp.full(batch, 0.99),
                                     prior_logits=nxt[:, :actions], value=nxt[:, 0])
        return out, nxt

    params = jax.random.normal(jax.random.PRNGKey(0), (width, width)) / 16
    root = mctx.RootFnOutput(prior_logits=jnp.zeros((batch, actions)), value=jnp.zeros(batch),
                             embedding=jnp.ones((batch, width)))
    policy = jax.jit(functools.partial(mctx.muzero_policy, recurrent_fn=recurrent_fn, num_simulations=simulations))
    return policy, (params, jax.random.PRNGKey(1), root)


def nuts_step() -> tuple[Any, tuple[Any, ...]]:
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    n, d = 2048, 64

    def model(X: Any, y: Any = None) -> None:
        w = numpyro.sample("w", dist.Normal(jnp.zeros(d), 1.0))
        numpyro.sample("y", dist.Bernoulli(logits=X @ w), obs=y)

    X = jax.random.normal(jax.random.PRNGKey(0), (n, d))
    y = (X @ jnp.ones(d) > 0).astype(jnp.float32)
    mcmc = MCMC(NUTS(model), num_warmup=50, num_samples=1, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(1), X, y=y)
    kernel = mcmc.sampler

    def step(state: Any) -> Any:
        return kernel.sample(state, (X,), {"y": y})

    return jax.jit(step), (mcmc.last_state,)


def row(name: str, make: Any) -> str:
    fn, args = make()
    begun = time.perf_counter()
    with Stopwatch() as watch:
        result = pytest_roofline.measure(fn, *args)
    total = time.perf_counter() - begun
    spent = watch.spent()
    compile_s, timed = spent.get("compile"), spent.get("timed runs")
    ratio = (total - compile_s) / timed if timed > 0 else float("inf")
    how = "wall clock (first run traced)" if result.timer == "wallclock" and "trace events" in \
        result.timer_fallback_reason else result.timer
    return (
        f"{name:10} {total:7.2f} {compile_s:7.2f} {timed:7.2f} {spent.get('profiler'):7.2f} "
        f"{spent.get('trace reading'):7.2f} {result.runs:5d} {result.device_time_s * 1e3:8.2f} {ratio:6.1f}  {how}\n"
        f"{'':10} " + ", ".join(f"{k} {v:.2f}" for k, v in spent.to_dict().items())
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}")
    print(f"{'program':10} {'total':>7} {'compile':>7} {'timed':>7} {'prof':>7} {'trace':>7} {'runs':>5} "
          f"{'ms/run':>8} {'ratio':>6}  timer")
    for _ in range(args.repeats):
        for name, make in (("muzero", muzero), ("nuts step", nuts_step)):
            print(row(name, make), flush=True)


if __name__ == "__main__":
    main()
