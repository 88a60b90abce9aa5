"""Compare the attention of two runs: two inputs of the same length (a minimal pair such as "The keys to the cabinet
is/are ...") or two models on one input (the default model against all-MiniLM-L6-v2, the encoder it was trained from).
A difference per layer and head, and the heads ranked by how much they changed. L layers, h heads, T tokens.

Two models of different depths (BERT's 6 layers against a distilled 3) are compared layer for layer at the same
relative depth: layer l of the shallower one against the deeper one's layer that ends as far through its stack
(`paired_layer`), as DistilBERT's layers were distilled from every other layer of BERT."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class AttentionDifference:
    """How the attention of run B differs from run A.

    difference: (L, h, T, T) B - A, weight by weight
    head_change: (L, h) total variation distance between the two rows, 0.5 * sum_j |B_ij - A_ij| (0 = the same
        distribution, 1 = disjoint), averaged over the query rows compared; a head's one-number change
    max_difference: (L, h) largest |B_ij - A_ij| in the rows compared
    layer_change: (L,) head_change averaged over the layer's heads
    rows: indices of the query rows compared (all, unless chosen)
    differing: token positions where the two inputs' tokens differ (empty for two models on one input)
    layers_a, layers_b: (L,) the layer of A and of B each row of the arrays compares: the same numbers when the
        depths match, else the shallower model's every layer against the deeper one's at the same relative depth
    """

    tokens_a: list[str]
    tokens_b: list[str]
    difference: np.ndarray
    head_change: np.ndarray
    max_difference: np.ndarray
    layer_change: np.ndarray
    rows: np.ndarray
    differing: list[int]
    layers_a: list[int] | None = None
    layers_b: list[int] | None = None

    def __post_init__(self):
        if self.layers_a is None:
            self.layers_a = self.layers_b = list(range(self.head_change.shape[0]))

    @property
    def paired_by_depth(self) -> bool:
        return self.layers_a != self.layers_b

    def ranking(self) -> pd.DataFrame:
        """One row per head, most changed first: layer (of A), head, change (total variation), max_difference,
        rank; and layer_b, B's layer, when the two models' depths differ."""
        n_layers, n_heads = self.head_change.shape
        row, head = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")  # (L, h) each
        frame = pd.DataFrame({"layer": np.asarray(self.layers_a)[row.ravel()], "head": head.ravel(),
                              "change": self.head_change.ravel(), "max_difference": self.max_difference.ravel()})
        if self.paired_by_depth:
            frame.insert(1, "layer_b", np.asarray(self.layers_b)[row.ravel()])
        frame = frame.sort_values(["change", "layer", "head"], ascending=[False, True, True], kind="mergesort")
        frame["rank"] = np.arange(1, len(frame) + 1)
        return frame.reset_index(drop=True)


def paired_layer(layer: int, layers_from: int, layers_to: int) -> int:
    """The layer of a stack of `layers_to` at the same relative depth as `layer` of a stack of `layers_from`: layer
    l ends (l + 1) / L of the way through its stack, so 3 layers meet 6 at 1, 3 and 5, and 6 meet 3 at 0, 0, 1, 1,
    2, 2 (half up: 1.5 -> 2). The views' host (gradio-host.mjs, pairedLayer) moves two Compare sides alike."""
    if layers_from == layers_to:
        return layer
    return min(layers_to - 1, max(0, int(np.floor((layer + 1) * layers_to / layers_from + 0.5)) - 1))


def compare_attentions(a: np.ndarray, b: np.ndarray, tokens_a, tokens_b, rows=None) -> AttentionDifference:
    """Difference of two (L, h, T, T) attention stacks. tokens_a / tokens_b: (T,) each, for labels and to find the
    positions where two inputs differ; rows: query positions to compare (default all), e.g. leave out the differing
    token itself, whose own query changed with its word. Stacks of different depths are compared at the same
    relative depth (every layer of the shallower one, `paired_layer`); the numbers of heads must match."""
    a, b = np.asarray(a), np.asarray(b)
    tokens_a, tokens_b = [str(t) for t in tokens_a], [str(t) for t in tokens_b]
    if a.ndim != 4 or b.ndim != 4:
        raise ValueError(f"attentions must have shape (layers, heads, tokens, tokens), got {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"the two models differ in shape ({a.shape[0]} layers x {a.shape[1]} heads against "
                         f"{b.shape[0]} x {b.shape[1]}); head-by-head comparison needs as many heads per layer")
    shallow = min(a.shape[0], b.shape[0])
    layers_a = [paired_layer(i, shallow, a.shape[0]) for i in range(shallow)]
    layers_b = [paired_layer(i, shallow, b.shape[0]) for i in range(shallow)]
    if a.shape[0] != b.shape[0]:
        a, b = a[layers_a], b[layers_b]  # (L', h, T, T) each, L' the shallower depth
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"the two inputs have {a.shape[-1]} and {b.shape[-1]} tokens; attention can be compared "
                         "position by position only between inputs of the same length: change one word for another "
                         "that is a single word piece too (e.g. 'is' / 'are'), or compare two models on one input")
    t = a.shape[-1]
    if len(tokens_a) != t or len(tokens_b) != t:
        raise ValueError(f"give one token per position ({t}); got {len(tokens_a)} and {len(tokens_b)}")
    rows = np.arange(t) if rows is None else np.asarray(rows, dtype=np.int64).ravel()
    if len(rows) == 0 or rows.min() < 0 or rows.max() >= t:
        raise ValueError(f"rows must be non-empty token positions from 0 to {t - 1}")
    difference = b.astype(np.float32) - a.astype(np.float32)  # (L, h, T, T)
    compared = np.abs(difference[:, :, rows, :]).astype(np.float64)  # (L, h, rows, T)
    head_change = 0.5 * compared.sum(axis=-1).mean(axis=-1)  # (L, h)
    return AttentionDifference(tokens_a, tokens_b, difference, head_change.astype(np.float32),
                               compared.max(axis=(-2, -1)).astype(np.float32),
                               head_change.mean(axis=1).astype(np.float32), rows,
                               [i for i, (x, y) in enumerate(zip(tokens_a, tokens_b)) if x != y], layers_a, layers_b)
