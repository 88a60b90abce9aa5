"""What each layer knows, over a corpus: the probe of probing.py (its recipe and targets said there) on the hidden
states a corpus folder holds, read from the shards' memory maps."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import probing
from ..probing import (C, HELD_OUT, MAX_ITEMS, MIN_SENTENCES, POSITION_EDGES, TARGETS, ProbeData,  # noqa: F401
                       ProbeError, control_task, fit, fit_and_score, probe_items, standardize)
from .sources import CorpusError


def probe(corpus, target: str, layer=None, control: bool = True, max_items: int = MAX_ITEMS,
          seed: int = 0) -> pd.DataFrame:
    """One row per hidden layer (0 = the embeddings), or the one asked for: `accuracy` of a linear probe of `target`
    on sentences it never saw, `control_accuracy` of the same probe on the control task, `selectivity` (their
    difference) and `majority` (always answering the training part's commonest class)."""
    layers = range(corpus.num_layers + 1) if layer is None else [corpus.check_hidden_layer(layer)]
    data = probe_data(corpus, target, max_items, seed)
    return probe_items(data, target, layers, lambda k: hidden_rows(corpus, k, data.rows), control, seed)


def hidden_rows(corpus, layer: int, rows: np.ndarray) -> np.ndarray:
    """(len(rows), H) float64: the rows' hidden states at `layer`, read from the shards' memory maps (only those rows
    are read from the disk, never a layer whole)."""
    out = np.empty((len(rows), corpus.hidden_size), np.float64)
    order = np.argsort(rows, kind="stable")
    start = 0
    for shard in corpus.shards:
        stop = start + shard.tokens
        lo, hi = np.searchsorted(rows[order], [start, stop])
        if hi > lo:
            picked = order[lo:hi]
            out[picked] = shard.array("hidden")[layer][rows[picked] - start]
        start = stop
    return out


def probe_data(corpus, target: str, max_items: int = MAX_ITEMS, seed: int = 0) -> ProbeData:
    """probing.probe_data, its refusals said as a corpus's."""
    try:
        return probing.probe_data(corpus, target, max_items, seed)
    except ProbeError as err:
        raise CorpusError(str(err)) from None
