"""Attention: segment blocks, one token across heads, rollout, per-head statistics, and the query/key arithmetic
that produces a row of attention. L layers, h heads, T tokens, d head size."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..heads import HEAD_STATISTICS, SHARES, roles
from ._threads import single_threaded_blas

SEGMENT_FILTERS = ("all", "A->A", "A->B", "B->A", "B->B")


def check_index(name: str, value, size: int) -> int:
    """`value` as an int in 0..size-1, or a ValueError that says the valid range (and the value, when short)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer from 0 to {size - 1}, got {_shown(value)}")
    if not 0 <= value < size:
        raise ValueError(f"{name} {_shown(value)} is out of range: this input has {size} {name}s, numbered 0 to "
                         f"{size - 1}")
    return int(value)


def _shown(value) -> str:
    """A value as a sentence may quote it: a browser's JSON can send a 309-digit number or a megabyte of text."""
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text):,} characters)"


def segment_block(segment_ids, which: str = "all", keep=None) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the attention matrix that a segment filter keeps.

    segment_ids: (T,) 0 for [CLS], A and the first [SEP], 1 for B and the last [SEP]. which: 'all', 'A->A'
    (A attending to A), 'A->B', 'B->A' or 'B->B'. keep: optional (T,) bool, False drops that token from both axes
    (e.g. to hide [CLS]/[SEP]). Returns (row indices, column indices); `matrix[np.ix_(rows, cols)]` is the block.
    """
    segments = np.asarray(segment_ids)
    if which not in SEGMENT_FILTERS:
        raise ValueError(f"unknown segment filter {which!r}; choose one of {', '.join(SEGMENT_FILTERS)}")
    keep = np.ones(len(segments), dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    if which == "all":
        rows = cols = keep
    else:
        src, dst = which.split("->")
        rows = keep & (segments == (0 if src == "A" else 1))
        cols = keep & (segments == (0 if dst == "A" else 1))
    return np.flatnonzero(rows), np.flatnonzero(cols)


def token_attention(attentions: np.ndarray, layer: int, token: int) -> tuple[np.ndarray, np.ndarray]:
    """What `token` attends to and what attends to it, in every head of `layer`.
    attentions: (L, h, T, T). Returns (from (h, T), to (h, T))."""
    n_layers, _, t, _ = attentions.shape
    layer = check_index("layer", layer, n_layers)
    token = check_index("token", token, t)
    return attentions[layer, :, token, :], attentions[layer, :, :, token]


def attention_rollout(attentions: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020): how much each input token feeds each position after every layer.

    Per layer the heads are averaged and the residual connection is modelled as identity attention,
    Â = (1 - residual) * A + residual * I, rows renormalized; rollout after layer l is Â_l @ ... @ Â_0.
    attentions: (L, h, T, T). Returns (L, T, T), row i of entry l = the input-token mix at position i after layer l
    (rows sum to 1)."""
    if not 0.0 <= residual <= 1.0:
        raise ValueError(f"residual must be between 0 and 1, got {residual}")
    mean = attentions.mean(axis=1, dtype=np.float64)  # (L, T, T); no float64 copy of every head (151 MB at 512)
    t = mean.shape[-1]
    mixed = (1.0 - residual) * mean + residual * np.eye(t)[None]  # (L, T, T)
    mixed /= mixed.sum(axis=-1, keepdims=True)
    out = np.empty_like(mixed)
    current = np.eye(t)
    with single_threaded_blas():  # see _threads.py: BLAS threads on busy cores wait on each other
        for layer in range(mixed.shape[0]):
            current = mixed[layer] @ current
            out[layer] = current
    return out.astype(np.float32)


@dataclass
class HeadStatistics:
    """Per-head summaries of where attention goes, each (L, h); shares are averages over query tokens of the
    attention weight that lands there, so they lie in [0, 1].

    entropy: mean entropy of a row, in nats; distance: mean |i - j| weighted by attention;
    cls, sep, self: share to [CLS], to any [SEP], to the token itself; previous, next: share to the token just
    before / after (averaged over the tokens that have one); dominant: (L, h) the head's role (heads.roles).
    """

    entropy: np.ndarray
    distance: np.ndarray
    cls: np.ndarray
    sep: np.ndarray
    self: np.ndarray
    previous: np.ndarray
    next: np.ndarray
    dominant: np.ndarray

    def as_dict(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in HEAD_STATISTICS}

    def to_frame(self) -> pd.DataFrame:
        n_layers, n_heads = self.entropy.shape
        layer, head = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")  # (L, h) each
        data = {"layer": layer.ravel(), "head": head.ravel()}
        data.update({name: values.ravel() for name, values in self.as_dict().items()})
        data["dominant"] = self.dominant.ravel()
        return pd.DataFrame(data)

    def summaries(self) -> list[list[str]]:
        """(L, h) one-line descriptions for hover text."""
        n_layers, n_heads = self.entropy.shape
        return [[f"{self.dominant[l, h]}; entropy {self.entropy[l, h]:.2f}, distance {self.distance[l, h]:.1f}, "
                 f"[CLS] {self.cls[l, h]:.0%}, [SEP] {self.sep[l, h]:.0%}, self {self.self[l, h]:.0%}, "
                 f"prev {self.previous[l, h]:.0%}, next {self.next[l, h]:.0%}" for h in range(n_heads)]
                for l in range(n_layers)]


def head_statistics(attentions: np.ndarray, special_mask) -> HeadStatistics:
    """Statistics of every head. attentions: (L, h, T, T); special_mask: (T,) 1 for special tokens. The special
    token at position 0 is taken as [CLS] and every later one as [SEP] (BERT's layout), whatever their spelling."""
    n_layers, n_heads, t, _ = attentions.shape
    special = np.asarray(special_mask, dtype=bool)
    is_cls = np.zeros(t, dtype=bool)
    is_cls[0] = special[0]
    is_sep = special & ~is_cls
    index = np.arange(t)
    cls_keys, sep_keys = np.flatnonzero(is_cls), np.flatnonzero(is_sep)
    distance_of = np.abs(index[:, None] - index[None, :]).astype(np.float32)  # (T, T) |i - j|
    out = {name: np.zeros((n_layers, n_heads), dtype=np.float64) for name in ("entropy", "distance", *SHARES)}
    # One layer at a time, in float32: a 512-token input has 18.9 M weights, and a float64 copy of all of them
    # (with a clipped copy for the logarithm) took over a second; the means below need no more than float32. No BLAS
    # product either: the shares to [CLS] and [SEP] are sums over a few columns, and a (T, T) @ (T, 2) product on
    # numpy's BLAS threads took 1.3 s for all layers at 512 tokens on two busy cores, against 0.24 s on one thread.
    for layer in range(n_layers):
        a = np.asarray(attentions[layer], dtype=np.float32)  # (h, T, T); a float32 Run's layer is not copied
        logs = np.maximum(a, np.float32(1e-12))
        np.log(logs, out=logs)
        out["entropy"][layer] = -np.einsum("hij,hij->hi", a, logs).mean(-1)
        out["distance"][layer] = np.einsum("hij,ij->hi", a, distance_of).mean(-1)
        out["cls"][layer] = a[:, :, cls_keys].sum(-1).mean(-1)  # each row's weight on [CLS], averaged over rows
        out["sep"][layer] = a[:, :, sep_keys].sum(-1).mean(-1)
        out["self"][layer] = np.diagonal(a, axis1=-2, axis2=-1).mean(-1)
        if t > 1:  # offset diagonals: entry i is the weight from token i+1 to i (previous), from i to i+1 (next)
            out["previous"][layer] = np.diagonal(a, offset=-1, axis1=-2, axis2=-1).mean(-1)
            out["next"][layer] = np.diagonal(a, offset=1, axis1=-2, axis2=-1).mean(-1)
    entropy = out["entropy"]
    shares = {name: out[name] for name in SHARES}
    dominant = roles(shares, entropy / (np.log(t) if t > 1 else 1.0))
    f32 = {k: v.astype(np.float32) for k, v in shares.items()}
    return HeadStatistics(entropy=entropy.astype(np.float32), distance=out["distance"].astype(np.float32),
                          dominant=dominant, **f32)


def tidy_frame(matrices: np.ndarray, tokens, layers, heads, *, value: str = "weight",
               precision: str | None = None) -> pd.DataFrame:
    """(l', h', T, T) matrices as a tidy table, one row per (layer, head, from, to): columns layer, head, from, to,
    from_token, to_token, `value`, precision. `layers` and `heads` label the first two axes (a head may be a word,
    such as "rollout"); precision names the dtype of the attention the numbers come from (default: the matrices'
    own), so that a CSV says whether it holds the model's float32 or a cache's float16."""
    matrices = _labelled(matrices, layers, heads)
    n_layers, n_heads, t, _ = matrices.shape
    lay, hed, src, dst = np.meshgrid(np.arange(n_layers), np.arange(n_heads), np.arange(t), np.arange(t),
                                     indexing="ij")
    tokens = np.asarray(list(tokens), dtype=object)
    frame = pd.DataFrame({"layer": np.asarray(layers)[lay.ravel()], "head": np.asarray(heads)[hed.ravel()],
                          "from": src.ravel(), "to": dst.ravel(), "from_token": tokens[src.ravel()],
                          "to_token": tokens[dst.ravel()], value: matrices.ravel()})
    frame["precision"] = precision or matrices.dtype.name
    return frame


def _labelled(matrices, layers, heads) -> np.ndarray:
    """`matrices` (l', h', T, T) as an array, once `layers` and `heads` are checked to label its first two axes."""
    matrices = np.asarray(matrices)
    if (len(layers), len(heads)) != matrices.shape[:2]:
        raise ValueError(f"{len(layers)} layers and {len(heads)} heads label matrices of shape {matrices.shape}")
    return matrices


def write_tidy_csv(out, matrices: np.ndarray, tokens, layers, heads, *, value: str = "weight",
                   precision: str | None = None) -> None:
    """`tidy_frame(...)` as CSV text written to `out` (a text file), a row of one matrix at a time: no table of every
    row in between (at 256 tokens, all heads of a layer are 786,432 rows; a DataFrame of them took several times the
    CSV's 24 MB). Numbers are written with as many digits as their precision needs to read back exactly: 9 for
    float32, 5 for float16."""
    matrices = _labelled(matrices, layers, heads)
    precision = precision or matrices.dtype.name
    digits = 5 if matrices.dtype == np.float16 else 9
    names = [_csv_field(str(token)) for token in tokens]
    out.write(f"layer,head,from,to,from_token,to_token,{value},precision\n")
    for layer, per_layer in zip(layers, matrices):
        for head, matrix in zip(heads, per_layer):
            for i, row in enumerate(matrix.astype(np.float64).tolist()):
                start, end = f"{layer},{head},{i},", f",{precision}\n"
                out.write("".join(f"{start}{j},{names[i]},{names[j]},{w:.{digits}g}{end}" for j, w in enumerate(row)))


def _csv_field(text: str) -> str:
    """`text` as one CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break (a token may)."""
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if any(c in text for c in ',"\r\n') else text


@dataclass
class QueryKey:
    """The arithmetic of one attention row (layer, head, token i), as the model adds it up.

    query: (d,) q_i; keys: (T, d) every k_j; products: (T, d) q_i * k_j elementwise; dots: (T,) q_i·k_j;
    terms: the model's named additive terms of this row's scores, name -> (T,), each already scaled ("q.k" is
    dots times scale; DeBERTa adds "c2p" and "p2c"); scores: (T,) their sum; weights: (T,) softmax(scores), equal to
    attentions[layer, head, i]; scale: what the model multiplies q·k by in its "q.k" term (for the picture's words).
    """

    layer: int
    head: int
    token: int
    query: np.ndarray
    keys: np.ndarray
    products: np.ndarray
    dots: np.ndarray
    scale: float
    scores: np.ndarray
    weights: np.ndarray
    terms: dict[str, np.ndarray]


def query_key(queries: np.ndarray, keys: np.ndarray, layer: int, head: int, token: int,
              terms: dict[str, np.ndarray], scale: float) -> QueryKey:
    """One attention row from the (unscaled) queries and keys, (L, h, T, d) each, and the model's score terms of
    `layer`, name -> (h, T, T): the scores are the terms' sum, never a rule assumed here, then a softmax over all
    keys (a Run has no padding). scale: the model's factor of q·k, shown beside the arithmetic."""
    n_layers, n_heads, t, d = queries.shape
    layer = check_index("layer", layer, n_layers)
    head = check_index("head", head, n_heads)
    token = check_index("token", token, t)
    if not terms:
        raise ValueError("the scores need at least one term")
    q = queries[layer, head, token].astype(np.float32)  # (d,)
    k = keys[layer, head].astype(np.float32)  # (T, d)
    products = q[None, :] * k  # (T, d)
    dots = k @ q  # (T,)
    row = {name: np.asarray(term, dtype=np.float32)[head, token] for name, term in terms.items()}  # name -> (T,)
    scores = np.sum(list(row.values()), axis=0, dtype=np.float32)  # (T,)
    shifted = np.exp(scores - scores.max())
    weights = (shifted / shifted.sum()).astype(np.float32)
    return QueryKey(layer, head, token, q, k, products, dots, float(scale), scores, weights, row)
