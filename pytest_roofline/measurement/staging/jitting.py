"""How a kernel is staged for measuring, whichever way its author jitted it (imports JAX).

* A ``jax.jit`` (or ``nnx.jit``) function is traced as it is: its ``static_argnums``, ``static_argnames``,
  ``donate_argnums`` and shardings hold; the arguments it keeps static are the ones its lowering leaves out.
* Anything else (a plain function, ``functools.partial``, ``eqx.filter_jit``, a bound method, a jit function
  that was given an argument it cannot trace) is jitted here the way equinox's ``filter_jit`` does it: every
  argument leaf that is an array (JAX or NumPy) is traced, every other leaf (a string, an enum, None, a callable,
  a Python number, a module's non-array field) is static, compiled into the program. A wrapper that calls one
  jitted function with arrays it takes from objects that are not JAX types (penzai's ``variable_jit``) is
  measured as that function's program instead (:mod:`.library_jit`).

Either way the stage says which arguments were static, in words, for the result."""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import jax
import jax.numpy as jnp

from ...base.errors import MeasureError
from .library_jit import stage_library_jit
from .staged import Staged, is_array

__all__ = ["stage", "stage_filtered", "stage_as_given"]


def _name_of(fn: Any) -> str:
    """An identifier for the program's module name (``jit_<name>``), as ``jax.jit(fn)`` would give it."""
    inner = fn
    while not hasattr(inner, "__name__") and hasattr(inner, "func"):  # functools.partial
        inner = inner.func
    name = getattr(inner, "__name__", "") or type(fn).__name__
    return re.sub(r"\W", "_", name).strip("_") or "kernel"


def _jax_jitted(fn: Any) -> bool:
    """A function jitted by jax.jit or a wrapper that keeps its interface (nnx.jit): it traces and lowers."""
    return hasattr(fn, "trace") and hasattr(fn, "lower")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _where(path: Sequence[Any]) -> tuple[str, str]:
    """(the top-level argument, the rest of the path) of a leaf of ``(args, kwargs)``."""
    top, *rest = path[1:]
    name = f"argument {top.idx}" if path[0].idx == 0 else str(top.key)
    return name, jax.tree_util.keystr(tuple(rest))


def _static_words(paths: Sequence[Sequence[Any]], values: Sequence[Any], tops: dict[str, Any]) -> tuple[str, ...]:
    """``implementation='xla'``, ``argument 0 (MLP): .activation, .final_activation``: one entry per argument."""
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for path, value in zip(paths, values, strict=True):
        top, rest = _where(path)
        grouped.setdefault(top, []).append((rest, value))
    words = []
    for top, items in grouped.items():
        if len(items) == 1 and not items[0][0]:
            words.append(f"{top}={_shown(items[0][1])}")
            continue
        shown = ", ".join(rest for rest, _ in items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")
        words.append(f"{top} ({type(tops[top]).__name__}): {shown}")
    return tuple(words)


def _tops(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    return {**{f"argument {i}": a for i, a in enumerate(args)}, **kwargs}


# Jitted wrappers by (function, argument structure, which leaves are arrays, the static leaves): measuring the same
# kernel again takes its program from JAX's in-memory cache, as ``jax.jit(fn)`` does. Bounded, oldest out first.
_WRAPPERS: dict[Any, Any] = {}
_WRAPPERS_KEPT = 64


def _filtered_jit(fn: Callable[..., Any], treedef: Any, dynamic: tuple[bool, ...], static: tuple[Any, ...]) -> Any:
    """``jax.jit`` of ``fn`` taking only its dynamic leaves; the static ones are closed over."""
    key: Any = (fn, treedef, dynamic, tuple((type(v), v) for v in static))  # 1 and 1.0 compile differently
    try:
        cached = _WRAPPERS.get(key)
    except (TypeError, ValueError):  # a static leaf that cannot be hashed or compared: a wrapper of its own
        key, cached = None, None
    if cached is not None:
        return cached

    def kernel(*traced: Any) -> list[Any]:
        given, fixed = iter(traced), iter(static)
        call_args, call_kwargs = jax.tree_util.tree_unflatten(treedef, [next(given) if d else next(fixed)
                                                                        for d in dynamic])
        # Only the arrays it returns are outputs (a module with callables in it is not a JAX type).
        return [x for x in jax.tree_util.tree_leaves(fn(*call_args, **call_kwargs)) if isinstance(x, jax.Array)]

    kernel.__name__ = kernel.__qualname__ = _name_of(fn)
    jitted = jax.jit(kernel)
    if key is not None:
        if len(_WRAPPERS) >= _WRAPPERS_KEPT:
            del _WRAPPERS[next(iter(_WRAPPERS))]
        _WRAPPERS[key] = jitted
    return jitted


def stage_filtered(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], via: str = "") -> Staged:
    """Jit ``fn`` with its array leaves traced and every other leaf static (equinox's rule)."""
    flat, treedef = jax.tree_util.tree_flatten_with_path((args, kwargs))
    dynamic = tuple(is_array(leaf) for _, leaf in flat)
    dyn = [leaf for (_, leaf), d in zip(flat, dynamic, strict=True) if d]
    static = [(path, leaf) for (path, leaf), d in zip(flat, dynamic, strict=True) if not d]
    traced = _filtered_jit(fn, treedef, dynamic, tuple(leaf for _, leaf in static)).trace(*dyn)
    words = _static_words([p for p, _ in static], [leaf for _, leaf in static], _tops(args, kwargs))
    return Staged(traced, traced.lower(), dyn, jax.tree_util.tree_structure((tuple(dyn), {})), [False] * len(dyn),
                  words, via=via)


def _dynamic_args(name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                  args_info: Any) -> tuple[tuple[Any, ...], dict[str, Any], tuple[str, ...]]:
    """The arguments ``Compiled`` is called with (without the static ones its lowering left out), and the static
    ones in words."""
    info_args, info_kwargs = args_info
    dyn_kwargs = {k: v for k, v in kwargs.items() if k in info_kwargs}
    static_kwargs = tuple(f"{k}={_shown(v)}" for k, v in kwargs.items() if k not in info_kwargs)
    missing = len(args) - len(info_args)
    if missing == 0:
        return args, dyn_kwargs, static_kwargs
    target: Any = jax.tree_util.tree_structure(info_args)
    candidates = [i for i, a in enumerate(args) if not is_array(a)]
    matches = []
    for static in itertools.combinations(candidates, missing):
        rest = tuple(a for i, a in enumerate(args) if i not in static)
        if jax.tree_util.tree_structure(rest) == target:
            matches.append((rest, static))
    if len(matches) > 1:  # e.g. (x, 2.0, 9) with 9 static: the traced one is the float its lowering has
        matches = [m for m in matches if _typed_alike(m[0], info_args)]
    if len(matches) != 1:
        raise MeasureError(f"{name}: cannot tell which of its {len(args)} positional arguments are static; "
                           f"bind static arguments with functools.partial before measuring")
    rest, static = matches[0]
    return rest, dyn_kwargs, tuple(f"argument {i}={_shown(args[i])}" for i in static) + static_kwargs


def _typed_alike(args: tuple[Any, ...], info_args: Any) -> bool:
    """Whether each leaf of ``args`` has the shape and dtype the lowering gives the argument in its place."""
    try:
        return all(jnp.shape(a) == tuple(i.shape) and jnp.result_type(a) == i.dtype
                   for a, i in zip(jax.tree_util.tree_leaves(args), jax.tree_util.tree_leaves(info_args), strict=True))
    except (TypeError, ValueError):  # a leaf with no shape or dtype (an object): not this one
        return False


def _not_arrays(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return any(not is_array(leaf) for leaf in jax.tree_util.tree_leaves((args, kwargs)))


def stage_as_given(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> Staged | str:
    """Trace and lower a jax.jit function as its author jitted it; where it cannot be, why not (then the caller
    jits a function that calls it): a leaf it was not told is static, no ``args_info``, or a compiled form that
    would refuse the arguments' own tree."""
    try:
        traced = fn.trace(*args, **kwargs)
    except TypeError:
        if _not_arrays(args, kwargs):
            return _NOT_DECLARED
        raise
    try:
        lowered = traced.lower()  # JAX rebuilds the arguments' tree from placeholders (``args_info``) as it lowers
        args_info = lowered.args_info
    except AttributeError:
        return _NO_ARGS_INFO
    except Exception:  # noqa: BLE001 - a pytree whose unflattening reads its leaves cannot take the placeholders;
        return _OWN_TREE  # any other error comes back from the function jitted around it
    dyn_args, dyn_kwargs, static = _dynamic_args(name, args, kwargs, args_info)
    leaves, treedef = jax.tree_util.tree_flatten((dyn_args, dyn_kwargs))
    # JAX's own Lowered only: a wrapper's (nnx.jit's) holds the tree of the function it jits, not the arguments'.
    given: Any = treedef  # (PyTreeDef's stubs give it no comparison)
    if isinstance(lowered, jax.stages.Lowered) and given != lowered.in_tree:
        return _OWN_TREE
    donated = [bool(getattr(info, "donated", False)) for info in jax.tree_util.tree_leaves(lowered.args_info)]
    if len(donated) != len(leaves):
        donated = [False] * len(leaves)
    # nnx.jit's Traced holds JAX's own (with the jaxpr) as ``traced``.
    inner = traced if hasattr(traced, "jaxpr") else getattr(traced, "traced", None)
    return Staged(inner, lowered, leaves, treedef, donated, static)


_NOT_DECLARED = ("its jit was given arguments that are not arrays and not declared static: the function it wraps was "
                 "jitted with every non-array leaf static (its own jit options, such as donation, are not used)")
_NO_ARGS_INFO = ("its lowering gives no args_info to tell its static arguments by: the function it wraps was jitted "
                 "with every non-array leaf static (its own jit options, such as donation, are not used)")
# JAX builds a lowered program's input tree from placeholders: a custom pytree that decides per leaf what goes in
# its node data (distrax's distributions) then keeps the placeholders there, and the compiled program refuses the
# arguments it was traced with ("Function compiled with input pytree does not match").
# One whose unflattening reads its leaves (tfp's GaussianProcess calls float() on one) cannot be rebuilt from them at
# all: ``Lowered.args_info`` raises.
_OWN_TREE = ("its compiled form refuses the arguments' own tree (a pytree that keeps some of its leaves in its node "
             "data, or reads them as it is rebuilt): a function of the argument arrays that calls it was jitted "
             "(its donation is not used)")


def _bound_jitted(fn: Any) -> tuple[Any, Any] | None:
    """(the jitted function, the instance) where ``fn`` is a bound method of a jitted function (evosax's ``es.ask``,
    jitted with ``static_argnames=("self",)``) or an object whose class jitted ``__call__``: a bound method passes
    ``trace`` through to the function, which would take the first argument as ``self``."""
    if inspect.ismethod(fn) and _jax_jitted(fn.__func__):
        return fn.__func__, fn.__self__
    call = inspect.getattr_static(type(fn), "__call__", None)  # the class's own attribute, not bound to ``fn``
    if not isinstance(fn, type) and not _jax_jitted(fn) and call is not None and _jax_jitted(call):
        return call, fn
    return None


def _method_words(words: str) -> str:
    """A static argument's words as the caller of a bound method numbers them: the instance is ``self``."""
    found = re.match(r"argument (\d+)", words)
    if found is None:
        return words
    k = int(found.group(1))
    return ("self" if k == 0 else f"argument {k - 1}") + words[found.end():]


def stage(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> Staged:
    """The kernel traced and lowered for these arguments; see the module's rules."""
    bound = _bound_jitted(fn)
    if bound is not None:
        function, instance = bound
        as_method = stage(function, (instance, *args), kwargs, name)
        return replace(as_method, static=tuple(_method_words(w) for w in as_method.static))
    if _jax_jitted(fn):
        given = stage_as_given(fn, args, kwargs, name)
        if isinstance(given, Staged):
            return given
        inner = getattr(fn, "__wrapped__", None)
        if given == _OWN_TREE:  # the jitted function itself, called inside: its static arguments still hold
            return stage_filtered(fn, args, kwargs, given)
        if callable(inner):
            return stage_filtered(inner, args, kwargs, given)
        return stage_filtered(fn, args, kwargs)
    library = stage_library_jit(fn, args, kwargs, name)
    return library if library is not None else stage_filtered(fn, args, kwargs)
