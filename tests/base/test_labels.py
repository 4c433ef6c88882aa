"""The name a kernel gets in results when its test gives none."""

from __future__ import annotations

import functools

from pytest_roofline.base.labels import kernel_name


def flash_attention(q: float, *, interpret: bool = False) -> float:
    return q


def test_a_partial_is_named_after_the_function_it_wraps() -> None:
    assert kernel_name(flash_attention) == "flash_attention"
    assert kernel_name(functools.partial(flash_attention, interpret=True)) == "flash_attention"
    assert kernel_name(functools.partial(functools.partial(flash_attention), interpret=True)) == "flash_attention"
    assert kernel_name(lambda x: x) == "<lambda>"


def test_a_callable_without_a_name_is_named_after_its_type() -> None:
    class Kernel:
        def __call__(self, x: float) -> float:
            return x

    assert kernel_name(Kernel()) == "Kernel"
