"""Hidden states through the layers. hidden_states: (L + 1, T, H), index 0 = the embedding output."""

from __future__ import annotations

import numpy as np

from .attention import check_index
from .embeddings import _cosine_matrix, pca_2d


def _unit(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def hidden_norms(hidden_states: np.ndarray) -> np.ndarray:
    """(L + 1, T) L2 norm of every token's vector at every layer."""
    return np.linalg.norm(hidden_states.astype(np.float64), axis=-1).astype(np.float32)


def layer_similarity(hidden_states: np.ndarray) -> np.ndarray:
    """(L, T) cosine between a token's vector before and after each layer: row l compares hidden_states[l] with
    hidden_states[l + 1]. Near 1: the layer barely turned the vector."""
    u = _unit(hidden_states)
    return (u[:-1] * u[1:]).sum(-1).astype(np.float32)


def token_similarity(hidden_states: np.ndarray, layer: int) -> np.ndarray:
    """(T, T) cosine between every pair of tokens at `layer` (0 = embeddings, L = last layer)."""
    layer = check_index("layer", layer, hidden_states.shape[0])
    return _cosine_matrix(hidden_states[layer])


def hidden_projection(hidden_states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One 2-D PCA shared by all layers, fitted on unit-length vectors (otherwise the growth of the norms through
    the layers would be all the picture shows). Returns (L + 1, T, 2) coordinates and the (2,) explained variance."""
    n_layers, t, h = hidden_states.shape
    flat = _unit(hidden_states).reshape(n_layers * t, h)  # ((L + 1) * T, H), layer-major
    coords, explained = pca_2d(flat)
    return coords.reshape(n_layers, t, 2), explained  # (L + 1, T, 2)
