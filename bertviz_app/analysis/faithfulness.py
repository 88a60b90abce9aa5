"""Does attention agree with what the prediction depends on? Rank correlations between attention-based token scores
(raw attention, rollout, value-weighted attention, all read from the row of the predicted position) and
gradient- or perturbation-based importance (integrated gradients, blank-out) over the same tokens, as in Jain &
Wallace (2019) and Abnar & Zuidema (2020). Pure numpy and pandas (no scipy)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def average_ranks(values) -> np.ndarray:
    """(n,) ranks 1..n of `values` (n,), ties sharing the mean of the ranks they span (as Spearman's rho needs)."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"ranks are taken of a 1-d array, got shape {x.shape}")
    if np.isnan(x).any():
        raise ValueError("cannot rank NaN values; drop them first")
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    # Runs of equal values: each run [start, end) gets the mean rank (start + 1 + end) / 2.
    boundaries = np.flatnonzero(np.diff(sorted_x)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [len(x)]))
    ranks = np.empty(len(x), dtype=np.float64)
    for start, end in zip(starts, ends):
        ranks[order[start:end]] = (start + 1 + end) / 2.0
    return ranks


def spearman(a, b) -> float:
    """Spearman's rank correlation of two (n,) arrays: Pearson's r of their average ranks, in [-1, 1]. NaN when
    either is constant (no ranking to correlate) or n < 2."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"spearman needs two 1-d arrays of one length, got shapes {a.shape} and {b.shape}")
    if len(a) < 2:
        return float("nan")
    ra, rb = average_ranks(a), average_ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    denominator = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    if denominator == 0.0:
        return float("nan")
    return float(np.clip((ra * rb).sum() / denominator, -1.0, 1.0))


def faithfulness_table(measures: dict[str, np.ndarray], references: dict[str, np.ndarray],
                       keep=None) -> pd.DataFrame:
    """Spearman correlation of every attention-based measure with every reference importance.

    measures, references: name -> (T,) score per token; keep: (T,) bool, the tokens that take part (e.g. the words
    of the input, not [CLS]/[SEP] or the [MASK] being predicted). Returns a table with one row per measure, one column
    per reference, and `tokens` (how many took part) in its attrs."""
    if not measures or not references:
        raise ValueError("give at least one attention measure and one reference importance")
    lengths = {len(np.asarray(v)) for v in (*measures.values(), *references.values())}
    if len(lengths) != 1:
        raise ValueError(f"every score must have one entry per token; got lengths {sorted(lengths)}")
    (t,) = lengths
    keep = np.ones(t, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    if keep.shape != (t,):
        raise ValueError(f"keep must have one entry per token ({t}), got shape {keep.shape}")
    table = pd.DataFrame({ref: {name: spearman(np.asarray(m)[keep], np.asarray(r)[keep])
                                for name, m in measures.items()}
                          for ref, r in references.items()})
    table.index.name = "attention measure"
    table.attrs["tokens"] = int(keep.sum())
    return table


# ------------------------------------------------------------------------------------------------------------------
# Deletion and insertion curves (Samek et al. 2017; Petsiuk et al. 2018)
# ------------------------------------------------------------------------------------------------------------------
def removal_order(scores, keep) -> np.ndarray:
    """The `keep` positions, highest score first (ties: the earlier position first): the order in which a method says
    the tokens matter."""
    scores, keep = np.asarray(scores, dtype=np.float64), np.asarray(keep, dtype=bool)
    if scores.shape != keep.shape or scores.ndim != 1:
        raise ValueError(f"scores and keep must be (T,) each, got shapes {scores.shape} and {keep.shape}")
    if np.isnan(scores[keep]).any():
        raise ValueError("cannot order tokens by NaN scores")
    candidates = np.flatnonzero(keep)
    return candidates[np.argsort(-scores[candidates], kind="stable")]


def curve_inputs(ids, order, blank: int) -> tuple[np.ndarray, np.ndarray]:
    """(deletion, insertion), each (n + 1, T) token ids for n = len(order): row k of deletion has the first k tokens of
    `order` replaced by `blank`; row k of insertion has every token of `order` blanked but its first k."""
    ids, order = np.asarray(ids), np.asarray(order, dtype=np.int64)
    n = len(order)
    deletion = np.repeat(ids[None], n + 1, axis=0)
    insertion = deletion.copy()
    insertion[:, order] = blank
    for k, position in enumerate(order, start=1):
        deletion[k:, position] = blank
        insertion[k:, position] = ids[position]
    return deletion, insertion


def aopc(deletion, insertion) -> tuple[float, float]:
    """The area over the deletion curve and under the insertion curve, each measured from its own start and averaged
    over its n + 1 points: mean_k f(deletion_0) - f(deletion_k) and mean_k f(insertion_k) - f(insertion_0), in the
    metric's units. Higher is more faithful for both: the method's first tokens are the ones the metric needs."""
    deletion, insertion = np.asarray(deletion, dtype=np.float64), np.asarray(insertion, dtype=np.float64)
    if deletion.ndim != 1 or deletion.shape != insertion.shape or len(deletion) < 1:
        raise ValueError("the deletion and insertion curves must be two 1-d arrays of one length")
    return float((deletion[0] - deletion).mean()), float((insertion - insertion[0]).mean())
