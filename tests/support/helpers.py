"""Compile a function with JAX and return what the counting code reads (real compiled programs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_roofline.analysis.program.counts import Counts, program_counts
from pytest_roofline.analysis.program.hlo_reader import HloModule, parse_hlo


def compile_counts(fn: Callable[..., Any], *args: Any) -> tuple[Counts, HloModule, Any]:
    import jax

    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    compiled = jitted.lower(*args).compile()
    module = parse_hlo(compiled.as_text())
    return program_counts(compiled.cost_analysis(), module), module, compiled
