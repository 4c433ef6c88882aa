"""``pytest-roofline analyze`` counts what ran, as a live measurement does: a profile recorded with
``jax.profiler.trace`` on this machine's CPU, of a ``lax.cond`` whose cheap branch ran (before, the dear branch was
counted: 4.29 GFLOP for 1.05 MFLOP) and of a data-dependent power iteration (before, its loop was counted once)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.cli.main import main

jax = pytest.importorskip("jax")
jnp, lax = jax.numpy, jax.lax
pytestmark = pytest.mark.slow
N = 1024


def _programs(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["module"]: p for p in out["programs"]}


def _power(a: Any, v: Any) -> Any:
    def body(state: Any) -> Any:
        u, lam, _, k = state
        w = a @ u
        new = jnp.linalg.norm(w)
        return w / new, new, jnp.abs(new - lam), k + 1

    return lax.while_loop(lambda s: (s[2] > 1e-6) & (s[3] < 500), body,
                          (v, jnp.float32(0), jnp.float32(1), jnp.int32(0)))[3]


def test_analyze_counts_the_branch_and_the_trips_that_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = jnp.full((N, N), 1e-3, jnp.float32)
    m = jax.random.normal(jax.random.PRNGKey(3), (N, N)) / jnp.sqrt(N)
    a = m @ m.T + jnp.eye(N)
    choose = jax.jit(lambda x, w, p: lax.cond(p, lambda v: jnp.tanh(v @ w @ w), lambda v: v + 1.0, x))
    power = jax.jit(_power)
    x, v = jnp.ones((N, N)), jnp.ones((N,))
    trips = int(power(a, v))
    jax.block_until_ready(choose(x, w, jnp.array(False)))
    with jax.profiler.trace(str(tmp_path)):
        for _ in range(3):
            jax.block_until_ready(choose(x, w, jnp.array(False)))
            jax.block_until_ready(power(a, v))
    assert main(["analyze", str(tmp_path), "--json"]) == 0
    found = _programs(json.loads(capsys.readouterr().out))
    cond = next(p for name, p in found.items() if "lambda" in name)
    loop = found["jit__power"]
    assert cond["flops"] == pytest.approx(N * N, rel=0.01)
    assert loop["flops"] == pytest.approx(trips * 2.0 * N * N, rel=0.02), loop  # each trip's matvec, not one
    assert not loop["counts_incomplete"] and not any("counted once" in n for n in loop["notes"])
