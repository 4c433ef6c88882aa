"""Kernel arguments and settings told apart (pytest_roofline.base.calls): a keyword the kernel's signature names goes
to the kernel (``args=`` of optimistix and scipy's minimize, a parameter called ``name``), ``roofline_<setting>=`` is
always the setting, the explicit form where the kernel names neither ``args`` nor ``kwargs``. Pure: no JAX."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from pytest_roofline.base.calls import CallError, KernelCall, split_call

SETTINGS = ("name", "min", "warmup")


def kernel(x: Any, y: Any = 0, *, flag: bool = False) -> Any:
    return x


def named(x: Any, name: str) -> Any:
    return x


def test_short_form_gives_unknown_keywords_to_the_kernel_and_keeps_settings() -> None:
    call, mine = split_call(kernel, (1, 2), {"flag": True, "min": 0.5, "warmup": 3}, SETTINGS, "here")
    assert call == KernelCall(kernel, (1, 2), {"flag": True}) and mine == {"min": 0.5, "warmup": 3}


def test_a_setting_that_is_also_a_kernel_parameter_goes_to_the_kernel_and_says_both_readings() -> None:
    call, mine = split_call(named, (1,), {"name": "x", "warmup": 2}, SETTINGS, "roofline(...) in t.py::test")
    assert call == KernelCall(named, (1,), {"name": "x"}) and mine == {"warmup": 2}
    assert call.readings == ("name= went to kernel 'named', a parameter of it, not to the setting name= (write "
                             "roofline_name= for the setting)",)


def test_the_namespaced_form_is_always_the_setting() -> None:
    call, mine = split_call(named, (1,), {"name": "x", "roofline_name": "label", "roofline_min": 0.5}, SETTINGS,
                            "here")
    assert call == KernelCall(named, (1,), {"name": "x"}) and mine == {"name": "label", "min": 0.5}


@pytest.mark.parametrize(("keywords", "fragment"), [
    ({"roofline_nme": "x"}, "unknown setting roofline_nme= (known: roofline_min, roofline_name, roofline_warmup)"),
    ({"min": 0.5, "roofline_min": 0.6}, "the setting min is given twice, as min= and as roofline_min=; give it once"),
])
def test_namespaced_form_errors(keywords: dict[str, Any], fragment: str) -> None:
    with pytest.raises(CallError, match="^here: ") as info:
        split_call(kernel, (1,), keywords, SETTINGS, "here")
    assert fragment in str(info.value)


def root_find(fn: Any, solver: Any, y0: Any, args: Any = None, options: Any = None) -> Any:
    """The shape of optimistix.root_find's signature: a parameter called ``args``."""
    return y0


def minimize(fun: Any, x0: Any, args: tuple[Any, ...] = (), *, method: str, tol: Any = None) -> Any:
    """The shape of jax.scipy.optimize.minimize's signature."""
    return x0


def test_args_that_the_kernel_names_reaches_the_kernel_as_the_libraries_document_it() -> None:
    call, mine = split_call(root_find, ("fn", "solver", 1.0), {"args": "A", "min": 0.5}, SETTINGS, "here")
    assert call == KernelCall(root_find, ("fn", "solver", 1.0), {"args": "A"}) and mine == {"min": 0.5}
    call, mine = split_call(minimize, ("rosen", 1.0), {"args": (100.0,), "method": "BFGS"}, SETTINGS, "here")
    assert call == KernelCall(minimize, ("rosen", 1.0), {"args": (100.0,), "method": "BFGS"}) and mine == {}
    assert call.readings == ()


def test_a_partial_kernel_keeps_the_parameters_it_still_takes() -> None:
    bound = functools.partial(named, name="fixed")  # name is still a keyword of the partial
    call, mine = split_call(bound, (1,), {"name": "label"}, SETTINGS, "here")
    assert call.kwargs == {"name": "label"} and mine == {}


def test_explicit_form_gives_the_kernel_exactly_args_and_kwargs() -> None:
    call, mine = split_call(named, (), {"args": (1,), "kwargs": {"name": "k"}, "name": "label", "warmup": 2},
                            SETTINGS, "here")
    assert call == KernelCall(named, (1,), {"name": "k"}) and mine == {"name": "label", "warmup": 2}


@pytest.mark.parametrize(("args", "keywords", "fragment"), [
    ((1,), {"args": (2,)}, "given twice, 1 positionally and as args=/kwargs=; give them one way (if args= is a "
                           "keyword of kernel 'kernel' that its signature does not name, pass it as kwargs={'args': "),
    ((), {"args": (1,), "flag": True}, "unknown keyword 'flag': with args=/kwargs= every other keyword is a setting"),
    ((), {"args": 1}, "args= must be a tuple of the kernel's positional arguments, got int"),
    ((), {"kwargs": [("a", 1)]}, "kwargs= must be a dict of the kernel's keyword arguments, got list"),
])
def test_explicit_form_errors(args: tuple[Any, ...], keywords: dict[str, Any], fragment: str) -> None:
    with pytest.raises(CallError, match="^here: ") as info:
        split_call(kernel, args, keywords, SETTINGS, "here")
    assert fragment in str(info.value)


def test_a_kernel_without_a_signature_takes_no_keyword_for_itself() -> None:
    call, mine = split_call(max, (1, 2), {"name": "m"}, SETTINGS, "here")
    assert call.kwargs == {} and mine == {"name": "m"}
