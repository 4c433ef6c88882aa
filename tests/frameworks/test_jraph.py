"""jraph's ``GraphNetwork`` as its docs write it: edges updated from their senders and receivers, nodes from the
messages summed into them (``segment_sum``, a scatter-add). The compiler, the per-op model and the source count the
same work within 2% (before, the scatter's adds were one FLOP in the source and none per op, and the summary called
the program "[2.8x source FLOPs]"). Real jraph on this machine's CPU, skipped where it is not installed."""

from __future__ import annotations

from typing import Any

import pytest
from frameworks import FAST, jax, jnp, library, pytestmark  # noqa: F401  (pytestmark: every framework test is slow)

import pytest_roofline

jraph = library("jraph")

NODES, EDGES, F = 512, 4096, 32


def test_a_graph_network_counts_alike_in_the_compiler_the_ops_and_the_source() -> None:
    key = jax.random.PRNGKey(0)
    w_edge = jax.random.normal(key, (3 * F, F)) / 16
    w_node = jax.random.normal(jax.random.PRNGKey(1), (3 * F, F)) / 16

    def update_edge(edges: Any, senders: Any, receivers: Any, globals_: Any) -> Any:
        return jax.nn.relu(jnp.concatenate([edges, senders, receivers], -1) @ w_edge)

    def update_node(nodes: Any, sent: Any, received: Any, globals_: Any) -> Any:
        return jax.nn.relu(jnp.concatenate([nodes, sent, received], -1) @ w_node)

    net = jraph.GraphNetwork(update_edge_fn=update_edge, update_node_fn=update_node)
    graph = jraph.GraphsTuple(
        nodes=jax.random.normal(key, (NODES, F)), edges=jax.random.normal(key, (EDGES, F)),
        senders=jax.random.randint(key, (EDGES,), 0, NODES),
        receivers=jax.random.randint(jax.random.PRNGKey(2), (EDGES,), 0, NODES),
        n_node=jnp.array([NODES]), n_edge=jnp.array([EDGES]), globals=jnp.zeros((1, F)))
    result = pytest_roofline.measure(lambda g: net(g).nodes, graph, **FAST)
    matmuls = 2 * (EDGES + NODES) * 3 * F * F
    sums = 2 * EDGES * F  # each edge's message added to its sender's and its receiver's sum
    assert sum(result.work.matrix_flops.values()) == pytest.approx(matmuls, rel=0.001)
    assert result.flops == pytest.approx(matmuls + sums, rel=0.05)
    assert sum(op.flops for op in result.ops) == pytest.approx(result.flops, rel=0.02)
    assert result.source_flops == pytest.approx(result.flops, rel=0.02)
    assert result.compiled_over_source is not None and result.compiled_over_source < 1.05
    assert not result.impossible
