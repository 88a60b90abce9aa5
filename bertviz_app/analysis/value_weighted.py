"""Value-weighted attention (Kobayashi et al. 2020, "Attention is not only a weight"): how much of token j actually
reaches token i in a layer, ||alpha_ij f(x_j)||, rather than the attention weight alpha_ij alone. A head may put most
of its weight on [SEP] and still move almost nothing, because [SEP]'s transformed value is short.

f_h(x) is token x's value in head h carried through that head's columns of the attention output projection (the
model's `BertAttention.value_grams` defines it). The model returns, per layer and token, the (h, h) Gram matrix
G_j[h, g] = f_h(x_j) · f_g(x_j), from which every norm below follows:

    one head:         ||alpha^h_ij f_h(x_j)||           = alpha^h_ij sqrt(G_j[h, h])
    summed over heads ||sum_h alpha^h_ij f_h(x_j)||     = sqrt(alpha_ij^T G_j alpha_ij),  alpha_ij = (alpha^1_ij ..)

L layers, h heads, T tokens."""

from __future__ import annotations

import numpy as np

from ._threads import single_threaded_blas
from .attention import check_index


def _check_shapes(attentions: np.ndarray, value_grams: np.ndarray) -> None:
    if attentions.ndim != 4 or attentions.shape[-1] != attentions.shape[-2]:
        raise ValueError(f"attentions must have shape (layers, heads, tokens, tokens), got {attentions.shape}")
    n_layers, n_heads, t, _ = attentions.shape
    if value_grams.shape != (n_layers, t, n_heads, n_heads):
        raise ValueError(f"value_grams must have shape (layers, tokens, heads, heads) = "
                         f"{(n_layers, t, n_heads, n_heads)} to match the attentions, got {value_grams.shape}; "
                         "capture the model's layer.*.attention.value_grams on the same input")


def value_norms(value_grams: np.ndarray) -> np.ndarray:
    """(L, h, T) ||f_h(x_j)||, the length of what token j sends through head h at full attention.
    value_grams: (L, T, h, h)."""
    diagonal = np.diagonal(value_grams, axis1=-2, axis2=-1)  # (L, T, h)
    # A Gram diagonal is a squared norm; rounding may leave -1e-12 where it should be 0.
    return np.sqrt(np.clip(diagonal, 0.0, None)).transpose(0, 2, 1)  # (L, h, T)


def value_weighted_attention(attentions: np.ndarray, value_grams: np.ndarray, layer: int,
                             head: int | None = None) -> np.ndarray:
    """(T, T) matrix of ||alpha_ij f(x_j)||: row i, column j = the length of the vector token j contributes to token
    i's attention output in `layer`, in one `head` or summed over all heads (head None; the vectors are summed, then
    the norm taken). Non-negative; rows do not sum to 1 (divide by the row sum to compare shapes with attention).

    attentions: (L, h, T, T); value_grams: (L, T, h, h) as the model captures them (`layer.{i}.attention.value_grams`)."""
    _check_shapes(attentions, value_grams)
    n_layers, n_heads = attentions.shape[:2]
    layer = check_index("layer", layer, n_layers)
    alpha = attentions[layer].astype(np.float64)  # (h, T, T)
    grams = value_grams[layer].astype(np.float64)  # (T, h, h)
    if head is not None:
        head = check_index("head", head, n_heads)
        norms = value_norms(grams[None])[0, head]  # (T,) ||f_head(x_j)||
        return (alpha[head] * norms[None, :]).astype(np.float32)
    # alpha_ij^T G_j alpha_ij for every (i, j): sum over heads h, g of alpha^h_ij G_j[h, g] alpha^g_ij.
    with single_threaded_blas():  # optimize=True may hand the contraction to BLAS, whose threads fight busy cores
        squared = np.einsum("hij,jhg,gij->ij", alpha, grams, alpha, optimize=True)  # (T, T)
    return np.sqrt(np.clip(squared, 0.0, None)).astype(np.float32)


def value_weighted_shares(attentions: np.ndarray, value_grams: np.ndarray) -> np.ndarray:
    """(L, h, T, T) value-weighted attention of every head, alpha_ij ||f_h(x_j)||, each row scaled to sum to one:
    the share of what reaches token i through a head that comes from token j (the views draw it like attention)."""
    _check_shapes(attentions, value_grams)
    weighted = attentions.astype(np.float32) * value_norms(value_grams)[:, :, None, :]  # (L, h, T, T)
    return weighted / np.maximum(weighted.sum(-1, keepdims=True), 1e-12)
