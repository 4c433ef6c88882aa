"""Any way a JAX user jits (pytest_roofline.measurement.jitting): a plain function, functools.partial, jax.jit with
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
