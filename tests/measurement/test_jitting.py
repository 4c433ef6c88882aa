"""Any way a JAX user jits (pytest_roofline.measurement.staging): a plain function, functools.partial, jax.jit with
static or donated arguments, a jit given an argument it was not told is static, a wrapper that lowers but gives
no ``args_info`` (as eqx.filter_jit does; a fake of that shape here, the real one in tests/frameworks/), and an
error raised inside the kernel keeping its origin. Real tracing and compiling on this machine's CPU, no timing."""

from __future__ import annotations

import enum
from functools import partial
from typing import Any

import pytest

from pytest_roofline.base.errors import MeasureError, origin_frames

jax = pytest.importorskip("jax")
jnp = jax.numpy
compiled_mod = pytest.importorskip("pytest_roofline.measurement.compiled")
compile_program = compiled_mod.compile_program


class Mode(enum.Enum):
    SQUARE = "square"
    CUBE = "cube"


def layer(x: Any, scale: Any, *, implementation: str = "xla", mode: Mode = Mode.SQUARE, act: Any = None) -> Any:
    if implementation != "xla":
        raise ValueError(implementation)
    y = x * x if mode is Mode.SQUARE else x * x * x
    y = y * scale
    return act(y) if act is not None else y


def _run(program: Any) -> Any:
    dyn_args, dyn_kwargs = jax.tree_util.tree_unflatten(program.treedef, program.leaves)
    return program.compiled(*dyn_args, **dyn_kwargs)


def test_strings_enums_none_and_callables_are_static_in_a_plain_function_and_said_so() -> None:
    x = jnp.arange(8.0)
    program = compile_program(layer, (x, 2.0), {"implementation": "xla", "mode": Mode.CUBE, "act": jnp.tanh},
                              "layer")
    # x*x*x*scale, then tanh: the enum and the callable were compiled in, 2.0 is a constant of the program.
    assert jnp.allclose(_run(program)[0], jnp.tanh(x * x * x * 2.0))
    assert len(program.leaves) == 1  # only the array is an argument of the compiled program
    # One entry per argument, keywords in the order a pytree keeps them (sorted); long values cut at 40.
    first, act, implementation, mode = program.static
    assert (first, implementation, mode) == ("argument 1=2.0", "implementation='xla'", "mode=<Mode.CUBE: 'cube'>")
    assert act.startswith("act=<PjitFunction of <function tanh") and act.endswith("...")
    assert program.module_name.startswith("jit_layer")


def test_a_jax_jit_keeps_its_static_and_donated_arguments_and_names_them() -> None:
    @partial(jax.jit, static_argnames="implementation", donate_argnums=0)
    def scaled(x: Any, implementation: str) -> Any:
        return x * 3.0

    program = compile_program(scaled, (jnp.ones(16),), {"implementation": "xla"}, "scaled")
    assert program.static == ("implementation='xla'",) and program.donated == [True] and not program.staged_via


def test_a_jax_jit_given_a_string_it_was_not_told_is_static_jits_the_function_it_wraps() -> None:
    program = compile_program(jax.jit(layer), (jnp.ones(4), jnp.ones(4)), {"implementation": "xla"}, "layer")
    assert program.static == ("implementation='xla'",)
    assert "not declared static" in program.staged_via


def test_a_partial_and_a_nested_pytree_with_a_non_array_leaf() -> None:
    params = {"w": jnp.ones((4, 4)), "name": "dense", "act": None}

    def apply(p: dict[str, Any], x: Any, *, power: int) -> Any:
        return (x @ p["w"]) ** power

    program = compile_program(partial(apply, power=2), (params, jnp.ones((2, 4))), {}, "apply")
    assert jnp.allclose(_run(program)[0], 16.0)
    assert program.static == ("argument 0 (dict): ['name']",)  # None is an empty subtree, not a leaf
    assert program.module_name.startswith("jit_apply")


class FakeFilterJit:
    """A fake of equinox's filter_jit's shape: callable, has ``lower`` whose result has no ``args_info``, no
    ``trace``. The plugin must jit it itself (nested jits are inlined by XLA)."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.__name__ = fn.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return jax.jit(self.fn)(*args, **kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> object:
        return object()


def test_a_wrapper_without_args_info_is_jitted_with_its_arrays_traced() -> None:
    def step(x: Any, y: Any) -> Any:
        return x @ y

    a = jnp.ones((32, 32))
    program = compile_program(FakeFilterJit(step), (a, a), {}, "step")
    assert "dot(" in program.hlo_text and program.module_name.startswith("jit_step")


def test_an_error_inside_the_kernel_keeps_the_frames_that_raised_it() -> None:
    def library_parse(flag: str) -> None:
        raise KeyError(f"unknown flag {flag!r}")

    def kernel(x: Any) -> Any:
        library_parse("tb")
        return x

    with pytest.raises(MeasureError) as info:
        compile_program(kernel, (jnp.ones(2),), {}, "kernel")
    assert "KeyError" in str(info.value) and "\n" not in str(info.value)
    frames = origin_frames(info.value.__cause__, "long")
    lines = frames.splitlines()
    assert lines[0] == "KeyError raised here (innermost last):"
    assert [line.split(", in ")[-1] for line in lines if line.startswith("  File")] == ["kernel", "library_parse"]
    assert 'raise KeyError(f"unknown flag {flag!r}")' in frames and "pytest_roofline" not in frames
    assert len(origin_frames(info.value.__cause__, "short").splitlines()) == 3
    assert origin_frames(info.value.__cause__, "no") == "" == origin_frames(None)


class Strategy:
    """Written as evosax writes its strategies (evosax itself: tests/frameworks/test_evosax_distrax.py): methods
    jitted with ``static_argnames=("self",)``, called bound, ``es.ask(key, state)``."""

    def __init__(self, width: int) -> None:
        self.width = width

    @partial(jax.jit, static_argnames=("self",))
    def ask(self, key: Any, mean: Any) -> Any:
        return mean + jax.random.normal(key, (self.width, mean.shape[0]))

    @partial(jax.jit, static_argnums=0)
    def __call__(self, x: Any) -> Any:
        return jnp.tanh(x) * self.width


def test_a_bound_method_of_a_jitted_function_takes_its_instance_as_self() -> None:
    es, key, mean = Strategy(8), jax.random.key(1), jnp.zeros(4)
    # Before: the bound method passed ``trace`` through to the function, and the key landed in ``self``.
    for fn, args in ((es.ask, (key, mean)), (partial(es.ask, key), (mean,))):
        program = compile_program(fn, args, {}, "ask")
        assert program.module_name.startswith("jit_ask")
        # Named as the caller sees it (the instance is not one of the arguments they passed).
        assert program.static == (() if isinstance(fn, partial) else (f"self={es!r:.37}...",))
        assert jnp.allclose(jax.tree_util.tree_leaves(_run(program))[0], es.ask(key, mean))


def test_an_object_whose_class_jitted_call_is_traced_with_itself_as_self() -> None:
    es, x = Strategy(3), jnp.arange(4.0)
    for fn in (es, es.__call__):
        program = compile_program(fn, (x,), {}, "strategy")
        assert program.module_name.startswith("jit___call") and not program.staged_via
        assert jnp.allclose(_run(program), jnp.tanh(x) * 3)


@jax.tree_util.register_pytree_node_class
class PerLeafPytree:
    """A pytree that flattens as distrax's ``Jittable`` does (distrax itself: tests/frameworks/): every attribute
    is a leaf, and whether it is a child or node data is decided per leaf by whether it is a JAX array."""

    def __init__(self, loc: Any, scale: Any, name: str = "normal") -> None:
        self.loc, self.scale, self.name = loc, scale, name

    def log_prob(self, x: Any) -> Any:
        return -0.5 * ((x - self.loc) / self.scale) ** 2 - jnp.log(self.scale)

    def tree_flatten(self) -> tuple[list[Any], Any]:
        leaves, treedef = jax.tree_util.tree_flatten(self.__dict__)
        switch = [isinstance(leaf, jax.Array) or isinstance(leaf, jax.core.Tracer) for leaf in leaves]
        return ([leaf if s else None for leaf, s in zip(leaves, switch, strict=True)],
                ([None if s else leaf for leaf, s in zip(leaves, switch, strict=True)], switch, treedef))

    @classmethod
    def tree_unflatten(cls, aux: Any, children: list[Any]) -> PerLeafPytree:
        metadata, switch, treedef = aux
        leaves = [c if s else m for c, m, s in zip(children, metadata, switch, strict=True)]
        obj = object.__new__(cls)
        obj.__dict__.update(jax.tree_util.tree_unflatten(treedef, leaves))
        return obj


def test_a_pytree_that_decides_per_leaf_is_measured_under_the_users_own_jit() -> None:
    d, x = PerLeafPytree(jnp.zeros(16), jnp.full(16, 2.0)), jnp.ones(16)
    log_prob = jax.jit(lambda d, x: d.log_prob(x))
    # JAX's own ahead-of-time call refuses it (its input tree holds placeholders): the reason the plugin steps around.
    with pytest.raises(TypeError, match="does not match the input pytree"):
        log_prob.trace(d, x).lower().compile()(d, x)
    program = compile_program(log_prob, (d, x), {}, "log_prob")
    assert program.num_devices == 1  # before: "Too many leaves for PyTreeDef; expected 1."
    assert "refuses the arguments' own tree" in program.staged_via
    assert jnp.allclose(jax.tree_util.tree_leaves(_run(program))[0], log_prob(d, x))


class Variable:
    """A fake of penzai's Variable, named so: a mutable holder of an array that is not a JAX type."""

    def __init__(self, value: Any) -> None:
        self.value = value


def variable_jit(fn: Any) -> Any:
    """A fake of ``pz.variable_jit``'s shape, named so: the Variables are taken out of the arguments, their values
    passed to one jitted function, and its outputs written back into them."""

    def inner(args: Any, values: Any) -> Any:
        boxes = [Variable(v) for v in values]
        rebound = [boxes.pop(0) if a is None else a for a in args]  # None: where a Variable was
        result = fn(*rebound)
        return result, [b.value for b in rebound if isinstance(b, Variable)]

    jitted = jax.jit(inner)

    def outer(*args: Any) -> Any:
        found = [a for a in args if isinstance(a, Variable)]
        result, values = jitted([None if isinstance(a, Variable) else a for a in args], [v.value for v in found])
        for box, value in zip(found, values, strict=True):
            box.value = value
        return result

    return outer


def test_a_wrapper_that_hands_in_its_own_arrays_is_measured_as_its_jitted_program() -> None:
    weights, x = Variable(jnp.full((64, 64), 0.5)), jnp.ones((8, 64))
    forward = variable_jit(lambda w, x: x @ w.value)
    program = compile_program(forward, (weights, x), {}, "forward")
    # Before: jitted here with the Variable static, its weights a constant of another program, and the wrapper's
    # write-back left a tracer of that trace in the caller's Variable.
    assert isinstance(weights.value, jax.Array) and not isinstance(weights.value, jax.core.Tracer)
    assert any(leaf is weights.value for leaf in program.leaves)  # the weights are an input, not a constant
    assert program.module_name.startswith("jit_inner")
    assert "calls its own jitted function 'inner' with 1 arrays (16.4 kB)" in program.staged_via
    out = jax.tree_util.tree_leaves(_run(program))
    assert jnp.allclose(out[0], x @ weights.value) and jnp.allclose(out[1], weights.value)


def test_a_plain_function_of_an_object_is_still_jitted_whole() -> None:
    holder = Variable(jnp.full(8, 3.0))  # no jitted call inside: the object's array is a constant, as before
    program = compile_program(lambda h, x: x * h.value, (holder, jnp.ones(8)), {}, "scale")
    assert program.staged_via == "" and len(program.leaves) == 1
    assert jnp.allclose(_run(program)[0], 3.0)


@jax.tree_util.register_pytree_node_class
class Converting:
    """A fake of tfp's distributions' shape, named so: rebuilding one converts its leaves (``jnp.asarray``), which
    JAX's placeholders for a lowering's ``args_info`` cannot be."""

    def __init__(self, loc: Any) -> None:
        self.loc = jnp.asarray(loc)

    def tree_flatten(self) -> tuple[tuple[Any], None]:
        return (self.loc,), None

    @classmethod
    def tree_unflatten(cls, aux: None, children: tuple[Any]) -> Converting:
        return cls(*children)


def test_a_pytree_that_converts_its_leaves_is_measured_under_the_users_own_jit() -> None:
    d, x = Converting(jnp.full(16, 2.0)), jnp.ones(16)
    shift = jax.jit(lambda d, x: x - d.loc)
    with pytest.raises(TypeError, match="ArgInfo"):  # JAX's own ahead-of-time lowering: the reason stepped around
        shift.trace(d, x).lower()
    program = compile_program(shift, (d, x), {}, "shift")  # before: "cannot trace it with the given arguments"
    assert "refuses the arguments' own tree" in program.staged_via
    assert jnp.allclose(_run(program)[0], -1.0)


def test_a_jitted_function_whose_static_argument_follows_a_traced_number_is_told_apart_by_its_type() -> None:
    """As dm-pix's README jits ``gaussian_blur(image, sigma, kernel_size)``: the sigma (a Python float) is traced,
    the kernel size (an int) static. Both are numbers, so the tree alone cannot tell which the lowering left out;
    its argument's dtype (float32, not int32) does. Two numbers of one type stay ambiguous: the error says so."""

    def blur(x: Any, sigma: Any, size: int) -> Any:
        return x * sigma + size

    jitted = jax.jit(blur, static_argnums=(2,))
    program = compile_program(jitted, (jnp.ones(4), 2.0, 9), {}, "blur")
    assert program.static == ("argument 2=9",)
    assert jnp.allclose(_run(program), jnp.ones(4) * 2.0 + 9)
    with pytest.raises(MeasureError, match="cannot tell which of its 3 positional arguments are static"):
        compile_program(jitted, (jnp.ones(4), 2, 9), {}, "blur")
