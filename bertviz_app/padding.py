"""Inputs of different lengths as one batch: each row padded to the longest, with the attention mask that tells the
model which positions are padding. Fine-tuning's and pretraining's batches are built with it."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def pad_rows(rows: Sequence[Sequence[int]], fill: int, dtype: torch.dtype = torch.long) -> Tensor:
    """`rows` as one (B, T) tensor, T the longest row's length, each row's remaining places `fill`."""
    out = torch.full((len(rows), max(map(len, rows))), fill, dtype=dtype)
    for row, values in enumerate(rows):
        out[row, :len(values)] = torch.tensor(values, dtype=dtype)
    return out


def pad_inputs(ids: Sequence[Sequence[int]], segment_ids: Sequence[Sequence[int]],
               pad_id: int) -> tuple[Tensor, Tensor, Tensor]:
    """(input ids, segment ids, attention mask), each (B, T): padding has `pad_id`, segment 0 and mask 0 (a token 1).
    To the longest of the batch, not to a fixed length: sentences are short, and padding costs as much as text."""
    return (pad_rows(ids, pad_id), pad_rows(segment_ids, 0), pad_rows([[1] * len(row) for row in ids], 0))
