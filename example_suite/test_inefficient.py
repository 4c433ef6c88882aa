"""A deliberately inefficient kernel: it must fail its threshold.

Marked xfail(strict=True): the suite passes while the kernel fails, and a person sees the failure
message with ``pytest example_suite --runxfail``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest


def row_by_row_softmax(x):
    # A sequential loop of one tiny op per row: launch/dispatch overhead dominates, the hardware idles.
    def body(i, out):
        return out.at[i].set(jax.nn.softmax(x[i]))

    return jax.lax.fori_loop(0, x.shape[0], body, jnp.zeros_like(x))


# Expected to fail, except where verdicts are warnings (--roofline-warn-only, its ini line or
# PYTEST_ROOFLINE_WARN_ONLY, as in CI): the option reads the effective setting.
@pytest.mark.xfail("not config.getoption('roofline_warn_only')", strict=True,
                   reason="deliberately slow: a sequential loop over rows")
@pytest.mark.roofline(min=0.3)
def test_row_by_row_softmax(roofline):
    roofline(row_by_row_softmax, jnp.ones((2048, 256), jnp.float32))
