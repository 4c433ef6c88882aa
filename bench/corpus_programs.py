"""The programs bench/record_corpus.py records, with their analytic counts: control flow of every kind (conditionals,
loops of known and data-dependent trip count, a cond inside a loop, LU solves inside a loop), a scan of matmuls, a
Pallas kernel, a chain of small kernels, a function that calls two jitted ones, and where their libraries import,
a diffrax solve, a lineax CG solve, an optimistix Newton root find and a numpyro NUTS step, written as their docs
write them. ``facts``: what ran, read from the program's own outputs when it is recorded (the trips a loop made)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

N = 1024


@dataclass
class Program:
    """A program to record: its function, its arguments, and its analytic counts per run (``facts``: what ran,
    computed when recorded, such as the trips a data-dependent loop made)."""

    name: str
    fn: Callable[..., Any]
    args: Callable[[], tuple[Any, ...]]
    analytic: Callable[[Any], dict[str, float]]
    facts: Callable[[Any], dict[str, Any]] = field(default=lambda _out: {})
    what: str = ""


def _dear_or_cheap(x: Any, w: Any, p: Any) -> Any:
    return lax.cond(p, lambda v: jnp.tanh(v @ w @ w), lambda v: v + 1.0, x)


def _cond_in_loop(v: Any, a: Any) -> Any:
    def body(i: Any, u: Any) -> Any:
        return lax.cond(i % 10 == 0, lambda w: jnp.tanh(a @ w), lambda w: w * 0.5, u)

    return lax.fori_loop(0, 20, body, v)


def _power_iteration(a: Any, v: Any) -> Any:
    """Until the estimate settles: a data-dependent while loop of matvecs; returns the trips it made."""

    def cond(state: Any) -> Any:
        _, _, delta, k = state
        return (delta > 1e-6) & (k < 500)

    def body(state: Any) -> Any:
        u, lam, _, k = state
        w = a @ u
        new = jnp.linalg.norm(w)
        return w / new, new, jnp.abs(new - lam), k + 1

    u, lam, _, k = lax.while_loop(cond, body, (v, jnp.float32(0), jnp.float32(1), jnp.int32(0)))
    return lam, k


def _scan_matmuls(x: Any, ws: Any) -> Any:
    def step(h: Any, w: Any) -> Any:
        return jnp.tanh(h @ w), None

    return lax.scan(step, x, ws)[0]


def _cg(a: Any, b: Any) -> Any:
    """Conjugate gradients to a tolerance, with a residual recomputed from the matrix every tenth step."""

    def cond(state: Any) -> Any:
        _, r, _, k = state
        return (jnp.vdot(r, r) > 1e-10) & (k < 60)

    def body(state: Any) -> Any:
        x, r, p, k = state
        ap = a @ p
        alpha = jnp.vdot(r, r) / jnp.vdot(p, ap)
        x = x + alpha * p
        r_new = lax.cond(k % 10 == 9, lambda: b - a @ x, lambda: r - alpha * ap)
        beta = jnp.vdot(r_new, r_new) / jnp.vdot(r, r)
        return x, r_new, r_new + beta * p, k + 1

    x, _, _, k = lax.while_loop(cond, body, (jnp.zeros_like(b), b, b, jnp.int32(0)))
    return x, k


def _lu_newton(a: Any, y: Any) -> Any:
    """Newton on a @ y - tanh(y) = 1 until the step is small: an LU solve of the Jacobian each iteration."""

    def cond(state: Any) -> Any:
        _, step, k = state
        return (step > 1e-5) & (k < 50)

    def body(state: Any) -> Any:
        y, _, k = state
        f = a @ y - jnp.tanh(y) - 1.0
        jac = a - jnp.diag(1.0 - jnp.tanh(y) ** 2)
        dy = jnp.linalg.solve(jac, f)
        return y - dy, jnp.max(jnp.abs(dy)), k + 1

    y, _, k = lax.while_loop(cond, body, (y, jnp.float32(1), jnp.int32(0)))
    return y, k


def _pallas_scale(x: Any) -> Any:
    from jax.experimental import pallas as pl

    def kernel(x_ref: Any, o_ref: Any) -> None:
        o_ref[...] = x_ref[...] * 2.0 + 1.0

    interpret = jax.default_backend() == "cpu"
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(x.shape[0] // 256,),
                          in_specs=[pl.BlockSpec((256, x.shape[1]), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((256, x.shape[1]), lambda i: (i, 0)),
                          interpret=interpret)(x)


def _many_small(x: Any) -> Any:
    """A chain of small kernels (what XLA puts in a command buffer on a GPU)."""
    for k in range(6):
        x = jnp.sin(x) * (k + 1.0) + jnp.sum(x, axis=1, keepdims=True) / x.shape[1]
    return x


@jax.jit
def _first(x: Any, w: Any) -> Any:
    return jnp.tanh(x @ w)


@jax.jit
def _second(h: Any, w: Any) -> Any:
    return jnp.sum(h @ w.T, axis=0)


def _two_jits(x: Any, w: Any) -> Any:
    return _second(_first(x, w), w)


def _spd(n: int) -> Any:
    m = jax.random.normal(jax.random.PRNGKey(3), (n, n), jnp.float32) / jnp.sqrt(n)
    return m @ m.T + jnp.eye(n, dtype=jnp.float32)


def _core() -> list[Program]:
    w = lambda: jnp.full((N, N), 1e-3, jnp.float32)  # noqa: E731
    matvec = 2.0 * N * N
    return [
        Program("cond_cheap", _dear_or_cheap, lambda: (jnp.ones((N, N), jnp.float32), w(), jnp.array(False)),
                lambda _o: {"flops": N * N, "matrix_flops": 0.0},
                what="lax.cond(False, two 1024^2 matmuls and tanh, v + 1): the cheap branch ran"),
        Program("cond_dear", _dear_or_cheap, lambda: (jnp.ones((N, N), jnp.float32), w(), jnp.array(True)),
                lambda _o: {"matrix_flops": 2 * 2.0 * N ** 3, "transcendentals": N * N},
                what="lax.cond(True, ...): the dear branch ran (two 1024^2 matmuls, a tanh)"),
        Program("cond_in_loop", _cond_in_loop, lambda: (jnp.ones((N,), jnp.float32), w()),
                lambda _o: {"matrix_flops": 2 * matvec, "flops": 2 * matvec + 18 * N},
                what="a cond inside a 20-trip fori_loop: a 1024^2 matvec every tenth trip, a scaling otherwise"),
        Program("while_power", _power_iteration, lambda: (_spd(N), jnp.ones((N,), jnp.float32)),
                lambda o: {"matrix_flops": int(o[1]) * matvec}, lambda o: {"trips": int(o[1])},
                what="power iteration until the estimate settles: a data-dependent while loop of 1024^2 matvecs"),
        Program("scan_matmuls", _scan_matmuls,
                lambda: (jnp.ones((256, 512), jnp.float32), jnp.full((8, 512, 512), 1e-3, jnp.float32)),
                lambda _o: {"matrix_flops": 8 * 2.0 * 256 * 512 * 512, "transcendentals": 8 * 256 * 512},
                what="lax.scan of 8 (256x512) @ (512x512) matmuls with a tanh"),
        Program("cg_loop", _cg, lambda: (_spd(N), jnp.ones((N,), jnp.float32)),
                lambda o: {"matrix_flops": (int(o[1]) + int(o[1]) // 10) * matvec}, lambda o: {"trips": int(o[1])},
                what="conjugate gradients to a tolerance: a matvec a step, the residual recomputed every tenth"),
        Program("lu_newton", _lu_newton, lambda: (_spd(256), jnp.zeros((256,), jnp.float32)),
                lambda o: {"matrix_flops": int(o[1]) * 2.0 * 256 * 256, "lu_solves": int(o[1])},
                lambda o: {"trips": int(o[1])},
                what="Newton's method until the step is small: a 256^2 matvec and an LU solve a step"),
        Program("pallas_scale", _pallas_scale, lambda: (jnp.ones((2048, 1024), jnp.float32),),
                lambda _o: {"bytes_accessed": 2 * 4.0 * 2048 * 1024},
                what="a Pallas kernel (Triton on a GPU): x * 2 + 1 over 2048x1024 f32, no cost estimate"),
        Program("many_small", _many_small, lambda: (jnp.ones((64, 256), jnp.float32),),
                lambda _o: {"transcendentals": 6 * 64 * 256},
                what="six rounds of sin, scale and a row mean on 64x256: small kernels XLA puts in a command buffer"),
        Program("two_jits", _two_jits, lambda: (jnp.ones((512, 512), jnp.float32), jnp.full((512, 512), 1e-3)),
                lambda _o: {"matrix_flops": 2 * 2.0 * 512 ** 3, "transcendentals": 512 * 512},
                what="a function that calls two jitted functions (tanh(x @ w), then a sum of h @ w.T)"),
    ]


def _diffrax() -> list[Program]:
    import diffrax

    b, d, stages = 256, 256, 6

    def solve(y0: Any, w: Any) -> Any:
        term = diffrax.ODETerm(lambda t, y, w: jnp.tanh(y @ w))
        sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), t0=0.0, t1=1.0, dt0=0.1, y0=y0, args=w,
                                  stepsize_controller=diffrax.PIDController(rtol=1e-4, atol=1e-6))
        return sol.ys, sol.stats["num_steps"], sol.stats["num_rejected_steps"]

    def tried(o: Any) -> int:
        return int(o[1]) + int(o[2])

    return [Program("diffrax_tsit5", solve, lambda: (jax.random.normal(jax.random.PRNGKey(1), (b, d)),
                                                     jax.random.normal(jax.random.PRNGKey(0), (d, d)) / 16),
                    lambda o: {"matrix_flops": (tried(o) * stages + 1) * 2.0 * b * d * d},
                    lambda o: {"trips": tried(o), "stages": stages},
                    what="diffrax Tsit5 with a PID controller on dy/dt = tanh(y @ w), 256x256: adaptive steps")]


def _lineax_optimistix() -> list[Program]:
    import lineax as lx
    import optimistix as optx

    n, steps = 512, 20

    def spd() -> Any:
        m = jax.random.normal(jax.random.PRNGKey(0), (n, n)) / jnp.sqrt(n)
        return m @ m.T + jnp.eye(n)

    def cg(a: Any, b: Any) -> Any:
        operator = lx.MatrixLinearOperator(a, lx.positive_semidefinite_tag)
        sol = lx.linear_solve(operator, b, solver=lx.CG(rtol=1e-12, atol=1e-12, max_steps=steps), throw=False)
        return sol.value, sol.stats["num_steps"]

    def newton(a: Any, y0: Any) -> Any:
        sol = optx.root_find(lambda y, args: args @ y - jnp.tanh(y) - 1.0, optx.Newton(rtol=1e-6, atol=1e-6), y0,
                             args=a)
        return sol.value, sol.stats["num_steps"]

    return [
        Program("lineax_cg", cg, lambda: (spd(), jnp.ones(n)),
                lambda o: {"matrix_flops": (int(o[1]) + int(o[1]) // 10) * 2.0 * n * n},
                lambda o: {"trips": int(o[1])},
                what="lineax CG, 512^2, 20 steps: a matvec a step and a stabilising one every tenth (a lax.cond)"),
        Program("optimistix_newton", newton, lambda: (spd()[:128, :128], jnp.zeros(128)),
                lambda o: {"lu_solves": int(o[1])}, lambda o: {"trips": int(o[1])},
                what="optimistix Newton root find of args @ y - tanh(y) = 1, 128^2: an LU solve a step"),
    ]


def _numpyro() -> list[Program]:
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    n, d = 2048, 64
    X = jax.random.normal(jax.random.PRNGKey(0), (n, d))
    y = (X @ jnp.ones(d) > 0).astype(jnp.float32)

    def model(X: Any, y: Any = None) -> None:
        w = numpyro.sample("w", dist.Normal(jnp.zeros(d), 1.0))
        numpyro.sample("y", dist.Bernoulli(logits=X @ w), obs=y)

    mcmc = MCMC(NUTS(model), num_warmup=50, num_samples=1, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(1), X, y=y)
    kernel, warmed = mcmc.sampler, mcmc.last_state

    def step(state: Any) -> Any:
        new = kernel.sample(state, (X,), {"y": y})
        return new, new.num_steps

    return [Program("numpyro_nuts", step, lambda: (warmed,),
                    lambda o: {"matrix_flops": int(o[1]) * 2 * (2.0 * n * d)}, lambda o: {"trips": int(o[1])},
                    what="numpyro NUTS, one step of a 2048x64 logistic regression from a warmed-up state")]


_LIBRARIES = {"diffrax_tsit5": "diffrax", "lineax_cg": "lineax", "optimistix_newton": "optimistix",
              "numpyro_nuts": "numpyro"}


def names() -> list[str]:
    """Every program's name (made without building the programs), those of libraries that do not import left out
    (said on stderr)."""
    import importlib.util
    import sys

    core = [p.name for p in _core()]
    found = [name for name, library in _LIBRARIES.items() if importlib.util.find_spec(library) is not None]
    for name, library in _LIBRARIES.items():
        if name not in found:
            print(f"skipped {name}: {library} is not installed", file=sys.stderr)
    return core + found


def programs(only: list[str] | None = None) -> list[Program]:
    """The programs named in ``only`` (every one where None), their libraries imported only where asked for."""
    wanted = set(only) if only else None
    found = [p for p in _core() if wanted is None or p.name in wanted]
    for library in (_diffrax, _lineax_optimistix, _numpyro):
        names_of = {"_diffrax": {"diffrax_tsit5"}, "_lineax_optimistix": {"lineax_cg", "optimistix_newton"},
                    "_numpyro": {"numpyro_nuts"}}[library.__name__]
        if wanted is None or wanted & names_of:
            found += [p for p in library() if wanted is None or p.name in wanted]
    return found
