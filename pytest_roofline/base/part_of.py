"""An attribute of a frozen value read from one of its parts, declared in one line:
``flops = Part[float]("work.flops")`` on a class makes ``obj.flops`` read ``obj.work.flops``, typed ``float``, and
never set (as a property without a setter). Pure."""

from __future__ import annotations

from operator import attrgetter
from typing import Generic, TypeVar, cast, overload

__all__ = ["Part"]

T = TypeVar("T")


class Part(Generic[T]):
    """A figure one part of the value holds, at ``path`` (dotted)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._get = attrgetter(path)

    @overload
    def __get__(self, owner: None, kind: type) -> Part[T]: ...

    @overload
    def __get__(self, owner: object, kind: type) -> T: ...

    def __get__(self, owner: object | None, kind: type) -> Part[T] | T:
        return self if owner is None else cast(T, self._get(owner))

    def __set__(self, owner: object, value: object) -> None:  # read from a part of a frozen value
        raise AttributeError(f"cannot set what is read from {self.path}: the value is frozen")
