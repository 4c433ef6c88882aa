"""A figure read from one part of a frozen value: read through the part, typed as declared, never set, and itself
on the class (where the figures' declaration test reads its path). Pure; made-up values."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass

import pytest

from pytest_roofline.base.part_of import Part


@dataclass(frozen=True)
class _Work:
    flops: float


@dataclass(frozen=True)
class _Made:
    work: _Work
    flops = Part[float]("work.flops")


class _Sub(_Made):  # as Result extends Measured: the dataclass's own frozen check does not cover a subclass
    pass


def test_a_part_is_read_through_and_is_itself_on_the_class() -> None:
    made = _Made(_Work(3.0))
    assert made.flops == 3.0 and isinstance(_Made.flops, Part) and _Made.flops.path == "work.flops"


@pytest.mark.parametrize("kind", [_Made, _Sub])
def test_a_part_is_never_set(kind: type[_Made]) -> None:
    made = kind(_Work(3.0))
    with pytest.raises((AttributeError, FrozenInstanceError)):
        made.flops = 4.0
    assert made.flops == 3.0
