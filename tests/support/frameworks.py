"""Importing a framework for its tests: a library that is not installed skips them ("pip install -e
'.[frameworks]'"), and one that is installed but does not import with this JAX (flax 0.12.8 and tokamax 0.0.12 with
JAX 0.11.2: ``jax.experimental.hijax`` has no ``HiPrimitive``) skips them with the library's own error named. CI
installs every framework and fails where any of their tests is skipped (.ci/run).

What every framework test module shares: ``jax`` and ``jnp`` (the module skipped where JAX is not installed), the
timing ``FAST`` (a few runs, a fraction of a second: the tests check counts and behaviour, not speed), and
``pytestmark`` (each is slow: real libraries, compiled and measured), imported as they are named here."""

from __future__ import annotations

import importlib
from typing import Any, NoReturn

import pytest

__all__ = ["library", "jax", "jnp", "FAST", "pytestmark"]

jax = pytest.importorskip("jax")
jnp = jax.numpy
FAST = {"min_runs": 3, "max_runs": 5, "budget_s": 0.3, "warmup": 1}
pytestmark = pytest.mark.slow


def library(name: str) -> Any:
    """The module ``name``, or the calling test module skipped, saying why."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.split(".")[0] == exc.name.split(".")[0]:
            pytest.skip(f"{name} is not installed (pip install -e '.[frameworks]')", allow_module_level=True)
        _skipped(name, exc)
    except Exception as exc:  # noqa: BLE001 - any error of the library's own import is the reason named
        _skipped(name, exc)


def _skipped(name: str, exc: BaseException) -> NoReturn:
    import jax

    pytest.skip(f"{name} does not import with jax {jax.__version__}: {type(exc).__name__}: {exc}",
                allow_module_level=True)
