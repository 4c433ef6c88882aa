"""The oldest jax, jaxlib, numpy and pytest pytest-roofline runs with, checked from the installed distributions'
metadata without importing them.

These floors are the ones setup.cfg declares (``tests/base/test_dependencies.py`` keeps the two equal) and the ones
the ``oldest`` tox environment and CI's oldest-versions step install (``.ci/oldest.txt``) and run the
tests with. An older version is one clear line at start-up (the plugin) or at the first ``measure()`` call,
instead of an ImportError deep inside the profiler for every kernel.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from importlib import metadata

FLOORS: Mapping[str, str] = {"jax": "0.9.0", "jaxlib": "0.9.0", "numpy": "2.0", "pytest": "7.4"}


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string: "0.10.2" -> (0, 10, 2), "8.0.0rc1" -> (8, 0, 0)."""
    match = re.match(r"\d+(?:\.\d+)*", version.strip())
    if match is None:
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(part) for part in match.group(0).split("."))


@functools.cache
def installed(dist: str) -> str | None:
    """The installed version of ``dist`` (read once per process), None where it is not installed."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def too_old(need: tuple[str, ...] = tuple(FLOORS), found: Callable[[str], str | None] | None = None) -> str | None:
    """One line naming every distribution in ``need`` that is missing or older than its floor, and how to fix
    it; None when all are recent enough. ``found`` gives a distribution's installed version (None: missing);
    by default :func:`installed`."""
    old, missing = [], []
    for dist in need:
        version = (found or installed)(dist)
        if version is None:
            missing.append(dist)
        elif release(version) < release(FLOORS[dist]):
            old.append((dist, version))
    if not old and not missing:
        return None
    problems = []
    if old:
        problems.append(f"{' and '.join(f'{d} {v}' for d, v in old)} {'is' if len(old) == 1 else 'are'} installed")
    if missing:
        problems.append(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed")
    wanted = " ".join(f"'{dist}>={FLOORS[dist]}'" for dist in need if dist in missing or dist in dict(old))
    floors = ", ".join(f"{dist}>={FLOORS[dist]}" for dist in need)
    return f"pytest-roofline needs {floors}, but {'; '.join(problems)}: pip install --upgrade {wanted}"
