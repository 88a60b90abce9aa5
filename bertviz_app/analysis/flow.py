"""Attention flow (Abnar & Zuidema 2020): the layered attention graph, each layer's heads averaged with the residual
added as 0.5 A + 0.5 I and rows renormalized (as rollout; analysis.attention), an edge from token i at layer l + 1 to
token j at layer l with that weight as its capacity, and the maximum flow from every output token to every input token.

One maximum flow per pair (T^2 of them), by scipy's Dinic on integer capacities: each weight times FLOW_SCALE, so a
flow is exact to a few 1e-9 (the cut's edges times half a unit), compared with networkx's maximum_flow on the float
graph within 1e-6 (tests/test_value_zeroing_flow.py). Above FLOW_MAX_TOKENS it is refused, never approximated (the measured cost:
benchmarks/bench_causal.py)."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_flow

FLOW_MAX_TOKENS = 48
FLOW_SCALE = 2**30  # int32 capacities: a flow out of one token is at most 1 (its row sums to 1)


def mixed_attention(attentions: np.ndarray) -> np.ndarray:
    """(L, T, T) each layer's heads averaged, plus the residual (0.5 A + 0.5 I), rows renormalized."""
    mean = attentions.astype(np.float64).mean(axis=1)  # (L, T, T)
    mixed = 0.5 * mean + 0.5 * np.eye(mean.shape[-1])
    return mixed / mixed.sum(-1, keepdims=True)


def flow_graph(attentions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(rows, cols, float capacities, node count) of the layered graph: node l * T + i is token i at layer l (l = 0 the
    input, L the output); an edge goes down from layer l + 1 to layer l."""
    mixed = mixed_attention(attentions)
    L, T, _ = mixed.shape
    rows, cols, caps = [], [], []
    for layer in range(L):
        i, j = np.nonzero(mixed[layer] > 0)
        rows.append((layer + 1) * T + i)
        cols.append(layer * T + j)
        caps.append(mixed[layer][i, j])
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(caps), (L + 1) * T


def attention_flow(attentions: np.ndarray) -> np.ndarray:
    """(T, T) the maximum flow from output token i (row) to input token j (column) through every layer's attention
    graph. attentions: (L, h, T, T) a Run's."""
    L, _, T, _ = attentions.shape
    if T > FLOW_MAX_TOKENS:
        raise ValueError(f"attention flow is computed exactly up to {FLOW_MAX_TOKENS} tokens (one maximum flow per "
                         f"pair of tokens: {T * T} here, too slow to wait for); this input has {T}: shorten it, or use "
                         "rollout, its fast relative")
    rows, cols, caps, n = flow_graph(attentions)
    graph = csr_matrix((np.rint(caps * FLOW_SCALE).astype(np.int32), (rows, cols)), shape=(n, n))
    flows = np.empty((T, T))
    for i in range(T):
        for j in range(T):
            flows[i, j] = maximum_flow(graph, L * T + i, j).flow_value
    return flows / FLOW_SCALE
