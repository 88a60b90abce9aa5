"""What BERT's pretraining heads say: fill in [MASK], judge whether B follows A, read predictions out of every layer
(the logit lens), probe a model with everyday sentences, and show a sentence as pretraining corrupts it. Pure
functions of a model, its tokenizer and one `Encoding`: the `Explorer` checks and encodes the text (with its token
limit and `normalize_mask`) once, and its methods call these."""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from .masking import IGNORE_INDEX, KEPT, MASKED, RANDOM, mask_tokens, random_token_ids
from .model import BertForPreTraining
from .tokenizer import Encoding, Tokenizer

# "[mask]", "[Mask]", "[ MASK ]": every spelling a user may type for the mask token.
_MASK_SPELLING = re.compile(r"\[\s*mask\s*\]", re.IGNORECASE)

Prediction = tuple[str, float]  # (token, probability)


def normalize_mask(text: str) -> str:
    """Write every spelling of the mask token as [MASK], the form the tokenizer keeps whole."""
    return _MASK_SPELLING.sub("[MASK]", text)


@contextmanager
def evaluating(model: torch.nn.Module):
    """Eval mode (no dropout) inside the block, the model's previous mode after it. Gradients stay as the caller has
    them: predictions add torch.inference_mode(), integrated gradients needs them."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


@contextmanager
def _predicting(model: torch.nn.Module):
    with evaluating(model), torch.inference_mode():
        yield


def _require_mlm(model: BertForPreTraining, tokenizer: Tokenizer) -> None:
    if not getattr(model, "has_mlm_head", False):
        raise ValueError("this model has no masked-LM head, so it cannot predict masked words; load a checkpoint "
                         "with one (for example a pretraining checkpoint from `bertviz-app pretrain`)")
    if tokenizer.mask_token_id is None:
        raise ValueError("the tokenizer has no [MASK] token; this vocabulary cannot be used for fill-mask")


def mask_positions(tokenizer: Tokenizer, encoding: Encoding) -> list[int]:
    """Positions of [MASK] in the input, in order."""
    if tokenizer.mask_token_id is None:
        return []
    return [i for i, t in enumerate(encoding.ids) if t == tokenizer.mask_token_id]


def require_masks(tokenizer: Tokenizer, encoding: Encoding) -> list[int]:
    """`mask_positions`, or a ValueError that says why there is none."""
    positions = mask_positions(tokenizer, encoding)
    if not positions:
        if "[MASK]" in encoding.text or "[MASK]" in (encoding.text_pair or ""):
            raise ValueError("every [MASK] was cut off because the input is longer than the model accepts; "
                             "shorten the text")
        raise ValueError("the text has no [MASK]; write [MASK] where the model should guess a word, "
                         "e.g. 'The capital of France is [MASK].'")
    return positions


def _forward(model: BertForPreTraining, encoding: Encoding, input_ids: list[int] | None = None, **kwargs):
    device = model.device
    ids = torch.tensor([input_ids if input_ids is not None else encoding.ids], device=device)
    segments = torch.tensor([encoding.segment_ids], device=device)
    return model(ids, segments, **kwargs)


def top_predictions(probs: Tensor, tokenizer: Tokenizer, top_k: int) -> list[Prediction]:
    """The top_k (token, probability) of one (vocab,) row of probabilities, best first."""
    top = probs.topk(min(top_k, probs.shape[-1]))
    return [(tokenizer.readable(tokenizer.id_to_token(i)), float(p))
            for i, p in zip(top.indices.tolist(), top.values.tolist())]


def check_top_k(top_k: int) -> None:
    if not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")


# ------------------------------------------------------------------------------------------------------------------
# Fill-mask and next sentence
# ------------------------------------------------------------------------------------------------------------------
def fill_mask(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, top_k: int = 10,
              max_masks: int | None = None) -> list[list[Prediction]]:
    """For each [MASK] of the input (sentence A's, then B's), in order, the `top_k` (token, probability) best first.
    max_masks: refuse inputs with more masks than this (None: no limit)."""
    _require_mlm(model, tokenizer)
    check_top_k(top_k)
    positions = require_masks(tokenizer, encoding)
    if max_masks is not None and len(positions) > max_masks:
        raise ValueError(f"{len(positions)} masks is too many; use at most {max_masks}")
    with _predicting(model):
        logits = _forward(model, encoding).prediction_logits[0]  # (T, vocab)
        probs = logits[positions].float().softmax(-1)  # (masks, vocab)
        return [top_predictions(row, tokenizer, top_k) for row in probs]


def is_next_probability(model: BertForPreTraining, pooler_output: Tensor) -> float:
    """P(IsNext) from the next-sentence head, given the pooler output (1, H) of a pair."""
    logits = model.cls.seq_relationship(pooler_output)[0]  # (2,), index 0 = IsNext
    return float(logits.float().softmax(-1)[0])


def replaced_probabilities(model: BertForPreTraining, last_hidden_state: np.ndarray | Tensor) -> np.ndarray:
    """ELECTRA: for each token, the discriminator's probability that it was replaced (T,), from the encoder's last
    hidden state (T, H), e.g. a Run's `hidden_states[-1]`: no second forward pass."""
    if not getattr(model, "has_replaced_head", False):
        raise ValueError("this model has no replaced-token head; only an ELECTRA discriminator checkpoint has one")
    with _predicting(model):
        hidden = torch.as_tensor(last_hidden_state, dtype=torch.float32, device=model.device)
        return torch.sigmoid(model.cls.discriminator(hidden).float()).cpu().numpy()


def next_sentence(model: BertForPreTraining, encoding: Encoding) -> float:
    """P(B follows A) from the next-sentence head, for an encoded pair."""
    if not getattr(model, "has_nsp_head", False):
        raise ValueError("this model has no next-sentence head; load a checkpoint with one (for example a "
                         "pretraining checkpoint from `bertviz-app pretrain`)")
    if not encoding.is_pair:
        raise ValueError("sentence B is empty; next-sentence prediction needs two sentences")
    with _predicting(model):
        return is_next_probability(model, _forward(model, encoding).pooler_output)


# ------------------------------------------------------------------------------------------------------------------
# Masking one token of an input
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class MaskedPrediction:
    """Predictions at `index` after replacing the token there by [MASK].

    original: the token that was there; original_probability / original_rank (1 = best): how the model rates it."""

    index: int
    original: str
    predictions: list[Prediction]
    original_probability: float
    original_rank: int


def mask_token(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, index: int,
               top_k: int = 10) -> MaskedPrediction:
    """Replace token `index` of the encoded input (a Run's, for instance) by [MASK] and predict there."""
    _require_mlm(model, tokenizer)
    check_top_k(top_k)
    if not isinstance(index, int) or not 0 <= index < len(encoding):
        raise ValueError(f"token index {index!r} is outside the input (0 .. {len(encoding) - 1})")
    if encoding.special_tokens_mask[index]:
        raise ValueError(f"token {index} is {encoding.tokens[index]}, a special token; pick a word token")
    ids = list(encoding.ids)
    original_id = ids[index]
    ids[index] = tokenizer.mask_token_id
    with _predicting(model):
        logits = _forward(model, encoding, ids).prediction_logits[0, index]  # (vocab,)
        probs = logits.float().softmax(-1)
        p_original = float(probs[original_id])
        rank = int((probs > probs[original_id]).sum()) + 1
        return MaskedPrediction(index, encoding.labels[index], top_predictions(probs, tokenizer, top_k), p_original, rank)


# ------------------------------------------------------------------------------------------------------------------
# Logit lens
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class LogitLens:
    """The MLM head applied to every layer's hidden state at one position.

    layers[0] is the embedding output, layers[l] the output of layer l (L + 1 entries), each the top_k
    (token, probability) best first. final_token_probability[l]: the probability layer l gives the final layer's
    best token, which shows where the answer forms."""

    tokens: list[str]
    position: int
    layers: list[list[Prediction]]
    final_token: str
    final_token_probability: list[float]


def logit_lens(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, position: int | None = None,
               top_k: int = 5, mask_index: int = 0) -> LogitLens:
    """Per-layer top predictions at `position` (a token index), or by default at the `mask_index`-th [MASK]."""
    _require_mlm(model, tokenizer)
    check_top_k(top_k)
    if position is None:
        masks = require_masks(tokenizer, encoding)
        if not 0 <= mask_index < len(masks):
            raise ValueError(f"mask_index {mask_index} is out of range: the text has {len(masks)} [MASK] tokens")
        position = masks[mask_index]
    elif not isinstance(position, int) or not 0 <= position < len(encoding):
        raise ValueError(f"position {position!r} is outside the input (0 .. {len(encoding) - 1})")
    with _predicting(model):
        out = _forward(model, encoding, capture=("embeddings", "layer.*.output"))
        layers = (out.captured["embeddings"], *out.layers("output"))  # L + 1 of (1, T, H)
        states = torch.stack([h[0, position] for h in layers])  # (L + 1, H)
        probs = model.cls.predictions(states).float().softmax(-1)  # (L + 1, vocab)
        final_id = int(probs[-1].argmax())
        return LogitLens(list(encoding.labels), position, [top_predictions(p, tokenizer, top_k) for p in probs],
                         tokenizer.readable(tokenizer.id_to_token(final_id)), probs[:, final_id].tolist())


# ------------------------------------------------------------------------------------------------------------------
# What pretraining sees
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class CorruptedExample:
    """One sentence (pair) as a pretraining example. All lists have one entry per token.

    tokens: the clean input; input_tokens: what the model reads; labels: the id to predict or IGNORE_INDEX;
    kinds: '' (not chosen), 'mask', 'random' or 'kept'."""

    tokens: list[str]
    input_tokens: list[str]
    input_ids: list[int]
    segment_ids: list[int]
    labels: list[int]
    kinds: list[str]

    @property
    def chosen(self) -> list[int]:
        return [i for i, label in enumerate(self.labels) if label != IGNORE_INDEX]


_KIND_NAMES = {MASKED: "mask", RANDOM: "random", KEPT: "kept"}


def corrupt_example(tokenizer: Tokenizer, encoding: Encoding, seed: int = 0, mlm_probability: float = 0.15,
                    whole_word: bool = False) -> CorruptedExample:
    """The encoded input (a Run's, for instance) corrupted by the 80/10/10 rule exactly as the pretraining data is,
    with its labels."""
    if tokenizer.mask_token_id is None:
        raise ValueError("the tokenizer has no [MASK] token, so there is nothing to corrupt with")
    ids = torch.tensor([encoding.ids])
    special = torch.tensor([encoding.special_tokens_mask], dtype=torch.bool)
    words = encoding.word_ids  # the tokenizer's own words: WordPiece's '##' rule, BPE's and unigram's pre-tokenizer
    starts = torch.tensor([[i == 0 or words[i] != words[i - 1] for i in range(len(words))]]) if whole_word else None
    masked = mask_tokens(ids, special, tokenizer.mask_token_id, random_token_ids(tokenizer), mlm_probability,
                         word_starts=starts, generator=torch.Generator().manual_seed(seed))
    new_ids = masked.input_ids[0].tolist()
    shown = [label if new == old else tokenizer.readable(tokenizer.id_to_token(new))
             for label, old, new in zip(encoding.labels, encoding.ids, new_ids)]
    return CorruptedExample(list(encoding.labels), shown, new_ids,
                            list(encoding.segment_ids), masked.labels[0].tolist(),
                            [_KIND_NAMES.get(k, "") for k in masked.kind[0].tolist()])


# ------------------------------------------------------------------------------------------------------------------
# Probes: everyday sentences that show at a glance what a model has learned
# ------------------------------------------------------------------------------------------------------------------
PROBES = ("The capital of France is [MASK].", "She poured a cup of [MASK].", "The [MASK] barked at the cat.",
          "He opened the [MASK] and walked in.", "A week has seven [MASK].")


def probe(model: BertForPreTraining, tokenizer: Tokenizer, sentences=PROBES, top_k: int = 5) -> list[str]:
    """One line per probe sentence: its top-k fill-ins."""
    lines = []
    for sentence in sentences:
        encoding = tokenizer.encode(normalize_mask(sentence), max_tokens=model.config.max_tokens)
        predictions = fill_mask(model, tokenizer, encoding, top_k=top_k)[0]
        lines.append(f"{sentence}  ->  " + ", ".join(f"{t} {p:.2f}" for t, p in predictions))
    return lines
