"""BERT's masking rule, in one place for training and for "what pretraining sees": 15% of the non-special tokens are
chosen; of those 80% become [MASK], 10% a random token and 10% stay as they are; the label of a chosen position is
its original id. Whole-word masking is an option."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .tokenizer import Tokenizer

IGNORE_INDEX = -100  # label of positions with nothing to predict (cross_entropy's ignore_index)
# What happened to each position during masking (MaskedTokens.kind).
UNCHANGED, MASKED, RANDOM, KEPT = 0, 1, 2, 3


@dataclass
class MaskedTokens:
    """A batch after corruption. All (B, T).

    input_ids: what the model reads; labels: the original id at every chosen position, IGNORE_INDEX elsewhere;
    kind: UNCHANGED (not chosen), MASKED (became [MASK]), RANDOM (became a random token), KEPT (chosen, unchanged)."""

    input_ids: Tensor
    labels: Tensor
    kind: Tensor


def mask_tokens(input_ids: Tensor, special_tokens_mask: Tensor, mask_token_id: int, random_token_ids: Tensor,
                mlm_probability: float = 0.15, mask_fraction: float = 0.8, random_fraction: float = 0.1,
                word_starts: Tensor | None = None, generator: torch.Generator | None = None) -> MaskedTokens:
    """Corrupt a batch for masked language modeling, as BERT's pretraining data does.

    In each row, round(mlm_probability x the number of non-special tokens) positions are chosen (at least one), never
    a position where `special_tokens_mask` is true (mark [CLS], [SEP] and padding there). Each chosen position becomes
    [MASK] with probability `mask_fraction`, a token drawn uniformly from `random_token_ids` with probability
    `random_fraction`, and stays as it is otherwise; its label is the original id either way.

    word_starts (B, T) bool: whole-word masking; whole words are chosen (a word is a start token and the ##
    pieces after it), until the row's budget is reached, skipping words that would overshoot it.
    input_ids, special_tokens_mask: (B, T)."""
    if not 0.0 < mlm_probability <= 1.0:
        raise ValueError(f"mlm_probability must be in (0, 1], got {mlm_probability}")
    if mask_fraction < 0 or random_fraction < 0 or mask_fraction + random_fraction > 1:
        raise ValueError("mask_fraction and random_fraction must be non-negative and sum to at most 1")
    if input_ids.shape != special_tokens_mask.shape:
        raise ValueError(f"input_ids {tuple(input_ids.shape)} and special_tokens_mask "
                         f"{tuple(special_tokens_mask.shape)} must have the same shape")
    special = special_tokens_mask.bool()
    chosen = torch.zeros_like(special)
    for row in range(input_ids.shape[0]):
        candidates = (~special[row]).nonzero().flatten()
        if len(candidates) == 0:
            continue
        budget = max(1, round(mlm_probability * len(candidates)))
        if word_starts is None:
            order = candidates[torch.randperm(len(candidates), generator=generator)]
            chosen[row, order[:budget]] = True
            continue
        # Whole words: group each candidate with the ## pieces that follow it.
        words: list[list[int]] = []
        for pos in candidates.tolist():
            if words and not bool(word_starts[row, pos]) and words[-1][-1] == pos - 1:
                words[-1].append(pos)
            else:
                words.append([pos])
        taken = 0
        for w in torch.randperm(len(words), generator=generator).tolist():
            if taken >= budget:
                break
            if taken + len(words[w]) > budget and taken > 0:
                continue
            chosen[row, words[w]] = True
            taken += len(words[w])

    draw = torch.rand(input_ids.shape, generator=generator)  # one uniform number per position decides its fate
    is_mask = chosen & (draw < mask_fraction)
    is_random = chosen & (draw >= mask_fraction) & (draw < mask_fraction + random_fraction)
    kind = torch.full_like(input_ids, UNCHANGED)
    kind[chosen] = KEPT
    kind[is_mask] = MASKED
    kind[is_random] = RANDOM
    corrupted = input_ids.clone()
    corrupted[is_mask] = mask_token_id
    picks = torch.randint(len(random_token_ids), input_ids.shape, generator=generator)
    corrupted[is_random] = random_token_ids[picks][is_random]
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    return MaskedTokens(corrupted, labels, kind)


def random_token_ids(tokenizer: Tokenizer) -> Tensor:
    """The ids a 'random token' is drawn from: the whole vocabulary except special tokens and [unused] slots, so
    that the corruption looks like real text."""
    ids = [i for t, i in tokenizer.vocab.items()
           if i not in tokenizer.special_ids and not (t.startswith("[") and t.endswith("]"))]
    return torch.tensor(sorted(ids))
