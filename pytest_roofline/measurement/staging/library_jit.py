"""A library's own jit wrapper measured as the program it compiles (imports JAX).

Some libraries jit through a wrapper that is not itself a jitted function: penzai's ``pz.variable_jit`` takes the
Variables (objects that are not JAX types) out of its arguments and passes their values to one jitted function,
then writes that function's outputs back into them. Jitted here with every non-array leaf static, such a wrapper
becomes another program, whose weights are compiled in as constants. Instead it is traced once on a copy of its
arguments that keeps every array (the wrapper's own bookkeeping writes into the copy, never into the caller's
objects), and where that trace is exactly one jitted call that takes arrays from outside the arguments' pytree,
the jitted call's program is staged with all its inputs as arguments, its donation kept: the program the library
runs."""

from __future__ import annotations

import copy
import enum
import functools
import inspect
from typing import Any

import jax
import numpy as np
from jax.extend.core import ClosedJaxpr, jaxpr_as_fun

from ...base.units import format_quantity
from .staged import Staged, is_array

__all__ = ["stage_library_jit"]

_PLAIN = (str, bytes, int, float, complex, bool, type(None), enum.Enum, type, np.dtype, functools.partial)
_JIT_PRIMITIVES = ("jit", "pjit")


def _plain(leaf: Any) -> bool:
    """A static leaf that holds no arrays of its own: a string, a number, a type, a function."""
    return isinstance(leaf, _PLAIN) or inspect.isroutine(leaf)


def _keep(x: Any, memo: dict[int, Any]) -> Any:
    return x


@functools.cache
def _array_types() -> tuple[type, ...]:
    return type(jax.numpy.zeros(())), np.ndarray


def copy_keeping_arrays(tree: Any) -> Any:
    """A deep copy of ``tree`` in which every array (JAX's or NumPy's) is the caller's own object, not a copy.

    ``copy`` consults its dispatch table before an object's ``__deepcopy__``; the array types are entered there for
    the length of the copy and taken out again."""
    table: dict[type, Any] = copy._deepcopy_dispatch  # type: ignore[attr-defined]
    added = [k for k in _array_types() if k not in table]
    for kind in added:
        table[kind] = _keep
    try:
        return copy.deepcopy(tree)
    finally:
        for kind in added:
            table.pop(kind, None)


def _one_jit_call(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, list[Any]] | None:
    """(the jitted call's equation, the outer jaxpr, the outer trace's argument arrays) where ``fn`` traced on a
    copy of its arguments is one jitted call and nothing else; None otherwise."""
    try:
        copied_args, copied_kwargs = copy_keeping_arrays((args, kwargs))
    except Exception:  # noqa: BLE001 - an object that cannot be copied: staged the ordinary way
        return None
    flat, treedef = jax.tree_util.tree_flatten((copied_args, copied_kwargs))
    dynamic = [is_array(leaf) for leaf in flat]
    dyn = [leaf for leaf, d in zip(flat, dynamic, strict=True) if d]

    def probe(*traced: Any) -> list[Any]:
        given = iter(traced)
        call_args, call_kwargs = jax.tree_util.tree_unflatten(treedef, [next(given) if d else leaf
                                                                        for leaf, d in zip(flat, dynamic, strict=True)])
        return [x for x in jax.tree_util.tree_leaves(fn(*call_args, **call_kwargs)) if isinstance(x, jax.Array)]

    try:
        closed = jax.make_jaxpr(probe)(*dyn)
    except Exception:  # noqa: BLE001 - the ordinary staging reports the kernel's own error
        return None
    eqns = closed.jaxpr.eqns
    if len(eqns) != 1 or eqns[0].primitive.name not in _JIT_PRIMITIVES:
        return None
    return eqns[0], closed, dyn


def stage_library_jit(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> Staged | None:
    """The program of the one jitted function ``fn`` calls, staged with every input it is given; None where ``fn``
    is not such a wrapper (its arguments hold nothing but arrays and plain values, its trace is not one jitted call,
    or that call takes only the arguments' own arrays)."""
    if all(is_array(leaf) or _plain(leaf) for leaf in jax.tree_util.tree_leaves((args, kwargs))):
        return None
    found = _one_jit_call(fn, args, kwargs)
    if found is None:
        return None
    eqn, closed, dyn = found
    consts = dict(zip(closed.jaxpr.constvars, closed.consts, strict=True))
    own = dict(zip(closed.jaxpr.invars, dyn, strict=True))
    if any(type(v).__name__ == "Literal" or (v not in consts and v not in own) for v in eqn.invars):
        return None
    brought = [consts[v] for v in eqn.invars if v in consts]
    if not brought:
        return None
    values = [consts[v] if v in consts else own[v] for v in eqn.invars]
    inner: ClosedJaxpr = eqn.params["jaxpr"]
    donated = [bool(d) for d in eqn.params.get("donated_invars", (False,) * len(values))]
    program = jaxpr_as_fun(inner)

    def run(*inputs: Any) -> Any:
        return program(*inputs)

    run.__name__ = run.__qualname__ = str(eqn.params.get("name") or "kernel")
    jitted = jax.jit(run, donate_argnums=tuple(i for i, d in enumerate(donated) if d),
                     keep_unused=bool(eqn.params.get("keep_unused", False)))
    traced = jitted.trace(*values)
    size = sum(int(getattr(x, "nbytes", 0)) for x in brought)
    via = (f"{name} is a wrapper that calls its own jitted function {run.__name__!r} with {len(brought)} arrays "
           f"({format_quantity(size, 'B')}) its arguments hold outside their pytree (as penzai's variable_jit does "
           f"with its Variables): that function's program was measured, all {len(values)} of its inputs as "
           f"arguments" + (", its donation kept" if any(donated) else ""))
    return Staged(traced, traced.lower(), values, jax.tree_util.tree_structure((tuple(values), {})), donated,
                  (), via=via, donate_with=_donate_with(args, kwargs))


def _donate_with(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The wrapper's own way to donate, where the library is known; else said in general."""
    libraries = {type(leaf).__module__.split(".")[0] for leaf in jax.tree_util.tree_leaves((args, kwargs))
                 if not is_array(leaf) and not _plain(leaf)}
    if "penzai" in libraries:
        return "pz.variable_jit(..., donate_variables=True)"
    return "the donation option of the jit wrapper that calls it"
