"""Per-token attention statistics of every head, computed on a padded batch as it leaves the model: what a corpus keeps
of the attention instead of the (T, T) matrices themselves. The definitions are `analysis.head_statistics`'s, one
query token (one row) at a time, so that a sentence's mean over its tokens is that function's number for it; two are
added for a corpus: the share to punctuation, and where the row's strongest weight lands."""

from __future__ import annotations

import unicodedata

import torch
from torch import Tensor

# The statistics, in the order of the last axis of `token_statistics`.
STATISTICS = ("entropy", "distance", "cls", "sep", "self", "previous", "next", "punctuation", "strongest")
# The positional profile's offsets: mean attention from token i to token i + d.
OFFSETS = tuple(range(-10, 11))


def is_punctuation(piece: str) -> bool:
    """A piece made only of punctuation characters ('.', ',', '"', '##.'), never a special token."""
    piece = piece.removeprefix("##")
    return bool(piece) and all(unicodedata.category(c).startswith("P") for c in piece)


def token_statistics(attention: Tensor, lengths: Tensor, special: Tensor, punctuation: Tensor) -> Tensor:
    """(B, T, h, S) float32 statistics of one layer's attention, for every query token (padding rows are garbage).

    attention: (B, h, T, T) with exact zeros on padding keys; lengths: (B,); special, punctuation: (B, T) bool.
    `previous` is NaN for the first token and `next` for the last (they have none); `strongest` is the offset j - i
    of the key with the largest weight (the first of equals)."""
    B, h, T, _ = attention.shape
    index = torch.arange(T, device=attention.device)
    is_cls = torch.zeros_like(special)
    is_cls[:, 0] = special[:, 0]  # BERT's layout: the special token in front is [CLS], every later one a [SEP]
    is_sep = special & ~is_cls
    logs = attention.clamp_min(1e-12).log_()
    entropy = -(attention * logs).sum(-1)  # (B, h, T)
    del logs
    distance = torch.einsum("bhij,ij->bhi", attention, (index[:, None] - index[None, :]).abs().float())

    keys = torch.stack([is_cls, is_sep, punctuation & ~special], -1).float()  # (B, T, 3)
    cls, sep, punct = torch.einsum("bhij,bjk->kbhi", attention, keys)  # each (B, h, T): a row's weight on those keys
    diagonal = attention.diagonal(dim1=-2, dim2=-1)  # (B, h, T)
    nan = torch.full((B, h, 1), float("nan"), device=attention.device)
    previous = torch.cat([nan, attention.diagonal(offset=-1, dim1=-2, dim2=-1)], -1)  # row i's weight on i - 1
    following = torch.cat([attention.diagonal(offset=1, dim1=-2, dim2=-1), nan], -1)  # row i's weight on i + 1
    last = (lengths - 1).view(B, 1).expand(B, h)  # the sentence's last token has no next one
    following = following.scatter(-1, last.unsqueeze(-1), float("nan"))
    strongest = (attention.argmax(-1) - index).float()  # (B, h, T)
    stats = torch.stack([entropy, distance, cls, sep, diagonal, previous, following, punct, strongest], -1)
    return stats.transpose(1, 2)  # (B, T, h, S)


def offset_sums(attention: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """For each offset d of OFFSETS: the summed weight from token i to i + d over the batch's valid pairs, per head
    ((h, len(OFFSETS)) float64), and how many (i, i + d) pairs there were ((len(OFFSETS),) int64)."""
    B, h, T, _ = attention.shape
    index = torch.arange(T, device=attention.device)
    offset = index[None, :] - index[:, None]  # (T, T): j - i
    rows, cols = torch.nonzero(offset.abs() <= OFFSETS[-1], as_tuple=True)  # the band of pairs within reach
    valid = (torch.maximum(rows, cols)[None, :] < lengths[:, None]).to(attention.dtype)  # (B, P): inside the sentence
    weights = (attention[:, :, rows, cols] * valid[:, None, :]).sum(0)  # (h, P)
    bins = offset[rows, cols] - OFFSETS[0]  # (P,) 0 .. len(OFFSETS) - 1
    sums = torch.zeros(h, len(OFFSETS), dtype=torch.float64, device=attention.device)
    sums.index_add_(1, bins, weights.double())
    counts = torch.zeros(len(OFFSETS), dtype=torch.float64, device=attention.device).index_add_(
        0, bins, valid.sum(0).double())
    return sums.cpu(), counts.round().long().cpu()
