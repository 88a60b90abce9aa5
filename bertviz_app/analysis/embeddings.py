"""The input embedding, taken apart: token + segment + position, summed, then LayerNorm-ed. Also the learned
position table (similarity, PCA path) and the two segment vectors."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._threads import single_threaded_blas


def embedding_parts(tokens, segment_ids, token_embeddings: np.ndarray, segment_embeddings: np.ndarray,
                    position_embeddings: np.ndarray, layernorm_output: np.ndarray) -> pd.DataFrame:
    """Per token: norms of the token, segment and position vectors, of their sum (the pre-LayerNorm embedding) and
    of the LayerNorm output; and each part's share of the sum, share_p = p·s / |s|², so the three shares add up to 1
    (a part pointing against the sum gets a negative share). All vector arguments (T, H)."""
    parts = {"token": token_embeddings, "segment": segment_embeddings, "position": position_embeddings}
    total = (token_embeddings.astype(np.float64) + segment_embeddings + position_embeddings)  # (T, H)
    squared = np.maximum((total * total).sum(-1), 1e-30)  # (T,)
    data = {"position": np.arange(len(total)), "token": list(tokens),
            "segment": ["A" if s == 0 else "B" for s in segment_ids]}
    for name, vectors in parts.items():
        data[f"norm_{name}"] = np.linalg.norm(vectors.astype(np.float64), axis=-1)
    data["norm_sum"] = np.sqrt(squared)
    data["norm_layernorm"] = np.linalg.norm(layernorm_output.astype(np.float64), axis=-1)
    for name, vectors in parts.items():
        data[f"share_{name}"] = (vectors.astype(np.float64) * total).sum(-1) / squared
    return pd.DataFrame(data)


def _cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    v = vectors.astype(np.float64)
    v = v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
    return (v @ v.T).astype(np.float32)


def first_positions(table: np.ndarray, n: int | None, minimum: int = 1) -> np.ndarray:
    """The first `n` rows of a position-embedding table (P, H), n None meaning all P; a ValueError that gives the
    valid range when n is not an integer from `minimum` to P."""
    table = np.asarray(table)
    if table.ndim != 2:
        raise ValueError(f"the position table must be (positions, hidden), got shape {table.shape}")
    n = table.shape[0] if n is None else n
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not minimum <= n <= table.shape[0]:
        raise ValueError(f"n must be an integer from {minimum} to {table.shape[0]} (the number of positions), "
                         f"got {n!r}")
    return table[:n]


def position_similarity(table: np.ndarray, n: int | None = None) -> np.ndarray:
    """Cosine similarity between the first `n` rows of a position-embedding table (P, H); n None means all P.
    Returns (n, n)."""
    return _cosine_matrix(first_positions(table, n))


def pca_2d(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project (N, H) vectors onto their first two principal components. Returns (N, 2) coordinates and the (2,)
    fraction of the total variance each component explains.

    Exact and deterministic: the eigendecomposition of the smaller Gram matrix of the centerd X, (H, H) = XᵀX or
    (N, N) = XXᵀ, on one BLAS thread (see `_threads`: on a busy machine threaded LAPACK took seconds for what one
    thread does in milliseconds). Sign convention: each component's largest-magnitude coordinate is positive, so
    the picture does not flip between inputs."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"pca_2d needs a 2-D array (vectors, dimensions), got shape {x.shape}")
    x = x - x.mean(axis=0, keepdims=True)
    n, h = x.shape
    coords = np.zeros((n, 2))
    explained = np.zeros(2)
    total = float((x * x).sum())
    if n < 2 or total <= 0:
        return coords.astype(np.float32), explained.astype(np.float32)
    by_feature = h <= n
    with single_threaded_blas():
        gram = x.T @ x if by_feature else x @ x.T  # (m, m), m = min(N, H)
        values, vectors_ = np.linalg.eigh(gram)  # ascending
        k = min(2, gram.shape[0])
        values = np.maximum(values[::-1][:k], 0.0)
        top = vectors_[:, ::-1][:, :k]  # (m, k)
        coords[:, :k] = x @ top if by_feature else top * np.sqrt(values)  # (N, k)
    explained[:k] = values / total
    for c in range(k):
        if coords[np.argmax(np.abs(coords[:, c])), c] < 0:
            coords[:, c] = -coords[:, c]
    return coords.astype(np.float32), explained.astype(np.float32)


def position_path(table: np.ndarray, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """2-D PCA of the first `n` rows of a position-embedding table (P, H), each scaled to unit length first: the
    geometry the cosine-similarity figure shows. Without the scaling, one row with an outsized norm (position 0 in
    many BERTs is several times longer than the rest) takes the whole first component and squeezes the path
    into a line. Returns (n, 2) coordinates and the (2,) explained variance."""
    v = first_positions(table, n, minimum=2).astype(np.float64)
    v = v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
    return pca_2d(v)


def segment_comparison(segment_a: np.ndarray, segment_b: np.ndarray | None) -> dict:
    """Compare the segment A and B embedding vectors (H,): their norms, the norm of B - A and their cosine
    (None entries when B is unknown)."""
    a = np.asarray(segment_a, dtype=np.float64)
    out = {"norm_a": float(np.linalg.norm(a)), "norm_b": None, "norm_difference": None, "cosine": None}
    if segment_b is not None:
        b = np.asarray(segment_b, dtype=np.float64)
        out.update(norm_b=float(np.linalg.norm(b)), norm_difference=float(np.linalg.norm(b - a)),
                   cosine=float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-30)))
    return out
