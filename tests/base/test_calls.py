"""Kernel arguments and settings told apart (pytest_roofline.base.calls): the short form, the explicit form, and a
clash between a kernel parameter and a setting, which is an error, never a silent take. Pure: no JAX."""

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


def test_a_setting_that_is_also_a_kernel_parameter_is_an_error_naming_both_and_the_remedy() -> None:
    with pytest.raises(CallError) as info:
        split_call(named, (1,), {"name": "x"}, SETTINGS, "roofline(...) in t.py::test")
    text = str(info.value)
    assert text.startswith("roofline(...) in t.py::test: name= is both a setting of the measurement and a "
                           "parameter of kernel 'named'")
    assert "args=(...), kwargs={'name': ...}" in text


def test_a_partial_kernel_keeps_the_parameters_it_still_takes() -> None:
    bound = functools.partial(named, name="fixed")  # name is still a keyword of the partial
    with pytest.raises(CallError):
        split_call(bound, (1,), {"name": "label"}, SETTINGS, "here")


def test_explicit_form_gives_the_kernel_exactly_args_and_kwargs() -> None:
    call, mine = split_call(named, (), {"args": (1,), "kwargs": {"name": "k"}, "name": "label", "warmup": 2},
                            SETTINGS, "here")
    assert call == KernelCall(named, (1,), {"name": "k"}) and mine == {"name": "label", "warmup": 2}


@pytest.mark.parametrize(("args", "keywords", "fragment"), [
    ((1,), {"args": (2,)}, "given twice, 1 positionally and as args=/kwargs="),
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
