"""The one number an attribution or an ablation explains: log P(a token at a [MASK]) from the masked-LM head, the
IsNext log-odds from the next-sentence head, or a fine-tuned head's log-probability (a label, a word's tag, an answer
span). Shared by attribution.py and ablation.py so that both measure exactly the same thing; validated here, at the
boundary, with messages that say what to do."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from .masked_lm import evaluating, require_masks
from .model import BertForPreTraining, BertModelOutput
from .tokenizer import Encoding, Tokenizer

TARGETS = ("mask", "is_next")
TASK_TARGETS = ("label", "tag", "answer")  # read by a fine-tuned head model (finetuning/tasks.py)


@dataclass(frozen=True)
class Target:
    """kind 'mask': f = log P(token at `position`), the `mask_index`-th [MASK] of the input (0 = the first).
    kind 'is_next': f = log P(IsNext) / P(NotNext) = l_IsNext - l_NotNext, the logit of the next-sentence head's
    IsNext probability; `position` is 0, the [CLS] token the pooler reads.
    kind 'logit_diff' ("why A and not B", Yin & Neubig 2022): f = logit(token) - logit(`other`) at the [MASK] at
    `position`, the log-odds of the two answers between themselves (their softmax's other terms cancel).
    Fine-tuned heads (the model given is the head model): kind 'label', f = log P(label `token_id`) of a sequence
    classifier (`token` its name, `position` 0); 'tag', f = log P(tag `token_id`) at token `position`; 'answer',
    f = log P(start = `position`) + log P(end = `end`) of a question-answering head."""

    kind: str
    position: int
    token_id: int | None = None
    token: str | None = None
    mask_index: int | None = None
    end: int | None = None
    other_id: int | None = None
    other: str | None = None

    def describe(self) -> str:
        if self.kind == "mask":
            return f"log P({self.token!r}) at [MASK] {self.mask_index + 1} (token {self.position})"
        if self.kind == "logit_diff":
            return (f"logit({self.token!r}) - logit({self.other!r}) at [MASK] {self.mask_index + 1} "
                    f"(token {self.position})")
        if self.kind == "label":
            return f"log P({self.token})"
        if self.kind == "tag":
            return f"log P({self.token}) at token {self.position}"
        if self.kind == "answer":
            return f"log P(answer = tokens {self.position} to {self.end})"
        return "IsNext logit, log P(IsNext)/P(NotNext)"

    def value(self, model: BertForPreTraining, out: BertModelOutput) -> Tensor:
        """(B,) the target of each example of a forward pass of `model.bert`."""
        if self.kind == "mask":
            # The head at one position only: all T positions would cost a (T, vocab) product per example.
            logits = model.cls.predictions(out.last_hidden_state[:, self.position])  # (B, vocab)
            return logits.float().log_softmax(-1)[:, self.token_id]
        if self.kind == "logit_diff":
            logits = model.cls.predictions(out.last_hidden_state[:, self.position]).float()  # (B, vocab)
            return logits[:, self.token_id] - logits[:, self.other_id]
        if self.kind == "label":  # the head's dropout is off: the model is in eval mode whenever a target is read
            return model.classifier(out.pooler_output).float().log_softmax(-1)[:, self.token_id]
        if self.kind == "tag":
            return model.classifier(out.last_hidden_state[:, self.position]).float().log_softmax(-1)[:, self.token_id]
        if self.kind == "answer":
            start, end = model.qa_outputs(out.last_hidden_state).float().log_softmax(1).unbind(-1)  # (B, T) each
            return start[:, self.position] + end[:, self.end]
        logits = model.cls.seq_relationship(out.pooler_output).float()  # (B, 2), index 0 = IsNext
        return logits[:, 0] - logits[:, 1]

    def reads(self) -> tuple[list[int] | None, Target]:
        """The positions of the last layer this target reads, and the target as it reads them from a pass that
        computed only those (`BertModel.forward(rows=...)`): a [MASK]'s or a tag's position, [CLS] for the pooler
        (IsNext, a label); every position (None, and the target itself) for an answer span or a kind not named here."""
        if self.kind in ("mask", "tag"):
            return [self.position], replace(self, position=0)
        if self.kind in ("is_next", "label"):
            return [0], self
        return None, self

    def probability(self, value: float) -> float:
        """The probability a target value stands for: exp(log P), the sigmoid of the IsNext logit, or of a logit
        difference (P(token) / (P(token) + P(other)))."""
        return 1.0 / (1.0 + math.exp(-value)) if self.kind in ("is_next", "logit_diff") else math.exp(value)


def forward_ids(model: BertForPreTraining, encoding: Encoding, ids: list[int] | None = None,
                **kwargs) -> BertModelOutput:
    """model.bert on one encoded input (a batch of 1), on the model's device."""
    device = model.device
    input_ids = torch.tensor([encoding.ids if ids is None else ids], device=device)
    return model.bert(input_ids, torch.tensor([encoding.segment_ids], device=device), **kwargs)


def resolve_target(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, target: str = "mask",
                   mask_index: int = 0, token: str | int | None = None) -> Target:
    """Check that the model can compute `target` on this input and pin it down: which [MASK], which token (by
    default the model's top prediction there, which costs one forward pass)."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose 'mask' (log P of a token at a [MASK]) or 'is_next' "
                         "(the next-sentence head's IsNext logit)")
    if target == "is_next":
        if not getattr(model, "has_nsp_head", False):
            raise ValueError("this model has no next-sentence head, so there is no IsNext logit to explain; load a "
                             "model with one (the default minilm-l6-mlm-nsp-en) or use target='mask'")
        if not encoding.is_pair:
            raise ValueError("the IsNext target needs a sentence pair; give text_pair (sentence B)")
        if token is not None:
            raise ValueError("token applies to the 'mask' target only; leave it out for 'is_next'")
        return Target("is_next", 0)

    if not getattr(model, "has_mlm_head", False):
        raise ValueError("this model has no masked-LM head, so it cannot predict masked words; load a model with one "
                         "(the default minilm-l6-mlm-nsp-en), or use target='is_next' with a model that has an NSP "
                         "head")
    masks = require_masks(tokenizer, encoding)
    if isinstance(mask_index, bool) or not isinstance(mask_index, int) or not 0 <= mask_index < len(masks):
        raise ValueError(f"mask_index {mask_index!r} is out of range: the text has {len(masks)} [MASK] token"
                         f"{'s' if len(masks) != 1 else ''}, numbered 0 to {len(masks) - 1}")
    position = masks[mask_index]
    if token is None:
        with evaluating(model), torch.inference_mode():
            hidden = forward_ids(model, encoding).last_hidden_state[0, position]  # (H,)
            token_id = int(model.cls.predictions(hidden).argmax())
    elif isinstance(token, bool) or not isinstance(token, (int, str)):
        raise ValueError(f"token must be a word piece (str) or a vocabulary id (int), got {token!r}")
    elif isinstance(token, int):
        if not 0 <= token < model.config.vocab_size:
            raise ValueError(f"token id {token} is outside the vocabulary (0 to {model.config.vocab_size - 1})")
        token_id = token
    else:
        token_id = tokenizer.token_to_id(token)
        if token_id is None:
            token_id = tokenizer.token_to_id(token.strip().lower())
        if token_id is None:
            raise ValueError(f"{token!r} is not in the vocabulary as one word piece; pick one of the model's "
                             "predictions or a word that tokenizes to a single piece")
    return Target("mask", position, token_id, tokenizer.id_to_token(token_id), mask_index)


def resolve_contrast(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, answer: str | int,
                     other: str | int, mask_index: int = 0) -> Target:
    """The 'logit_diff' target of two answers at the `mask_index`-th [MASK], each checked as `resolve_target` checks
    one (a word piece of the vocabulary, or an id)."""
    a, b = (resolve_target(model, tokenizer, encoding, "mask", mask_index, word) for word in (answer, other))
    if a.token_id == b.token_id:
        raise ValueError(f"the two answers are the same token ({a.token!r}); choose two different ones, e.g. the "
                         "model's top two predictions at the [MASK]")
    return Target("logit_diff", a.position, a.token_id, a.token, a.mask_index, other_id=b.token_id, other=b.token)


# ------------------------------------------------------------------------------------------------------------------
# Batches sized by a memory budget
# ------------------------------------------------------------------------------------------------------------------
DEFAULT_MEMORY_BUDGET = 512 * 2**20  # bytes of activations per batch: 3 examples of 512 tokens of the default model


def example_bytes(config, tokens: int, backward: bool) -> int:
    """A generous estimate of the activation memory one example of `tokens` tokens takes in a float32 forward pass of
    the fused attention path (kept for the backward pass when `backward`). Per layer: the hidden-size tensors
    (input, queries, keys, values, context, attention output, two LayerNorms and some slack: 12 x T x H), the
    feed-forward's (pre- and post-activation: 2 x T x I) and one (h, T, T) block of attention scores, which the fused
    kernel does not keep but a math fallback does. Without a backward pass only about two layers are alive at a time.
    The peak memory measured against this estimate: docs/ARCHITECTURE.md, "Measured"."""
    t, hidden, inner, heads = tokens, config.hidden_size, config.intermediate_size, config.num_attention_heads
    per_layer = 12 * t * hidden + 2 * t * inner + heads * t * t
    layers = config.num_hidden_layers if backward else 2
    return 4 * (layers * per_layer + 4 * t * hidden)


def batch_size_for(config, tokens: int, backward: bool, memory_budget: int | None, limit: int) -> int:
    """How many examples fit `memory_budget` bytes at once (at least 1, at most `limit`)."""
    budget = DEFAULT_MEMORY_BUDGET if memory_budget is None else memory_budget
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ValueError(f"memory_budget must be a positive number of bytes, got {memory_budget!r}")
    return max(1, min(limit, budget // example_bytes(config, tokens, backward)))
