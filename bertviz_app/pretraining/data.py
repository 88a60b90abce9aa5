"""Training data: documents from plain-text files (UTF-8, one sentence per line, a blank line between documents) ->
next-sentence pairs (50% the true next sentences, 50% sentences of another document) -> padded, masked batches.

Every example is a pure function of (seed, index): resuming needs no data-loader state, and two runs with the same seed
see the same examples."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor

from ..masking import MaskedTokens, mask_tokens
from ..tokenizer import Tokenizer, truncate_longest_first

IS_NEXT, NOT_NEXT = 0, 1  # next_sentence_label values, as the model's NSP head expects


def read_documents(paths: list[str | os.PathLike] | str | os.PathLike) -> list[list[str]]:
    """Documents (lists of sentences) from text files: one sentence per line, a blank line between documents."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    documents: list[list[str]] = []
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no corpus file at {path}; give text files with one sentence per line and a "
                                    "blank line between documents")
        current: list[str] = []
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                line = line.strip()
                if line:
                    current.append(line)
                elif current:
                    documents.append(current)
                    current = []
        if current:
            documents.append(current)
    return documents


@dataclass
class PairExample:
    """One `[CLS] A [SEP] B [SEP]` input. ids, segment_ids: lists of the same length; next_sentence_label: IS_NEXT or
    NOT_NEXT."""

    ids: list[int]
    segment_ids: list[int]
    next_sentence_label: int
    word_starts: list[bool] = field(default_factory=list)


class SentencePairDataset(torch.utils.data.Dataset):
    """Next-sentence pairs from tokenized documents. Item i is a deterministic function of (seed, i): a random split
    point of a random document gives A (the sentences before it, up to half the length budget) and, with
    probability 1/2, B = the sentences after it (IsNext), else a run of sentences of another document (NotNext).
    The length is the number of split points, a natural epoch."""

    def __init__(self, documents: list[list[list[int]]], tokenizer: Tokenizer, max_tokens: int = 128,
                 seed: int = 0, random_next_probability: float = 0.5):
        if max_tokens < 8:
            raise ValueError(f"max_tokens {max_tokens} is too short for sentence pairs; use 64 or more")
        self.documents = [d for d in documents if d and any(d)]
        self.splits = [(d, k) for d, doc in enumerate(self.documents) for k in range(1, len(doc))]
        if not self.splits:
            raise ValueError("the corpus has no document with two sentences, so there are no true next-sentence "
                             "pairs; put one sentence per line and a blank line between documents")
        if len(self.documents) < 2:
            raise ValueError("the corpus needs at least two documents for random next sentences")
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.seed = seed
        self.random_next_probability = random_next_probability
        self._continuation = {i for t, i in tokenizer.vocab.items() if t.startswith("##")}

    @classmethod
    def from_files(cls, paths, tokenizer: Tokenizer, max_tokens: int = 128, seed: int = 0,
                   max_documents: int | None = None) -> "SentencePairDataset":
        documents = read_documents(paths)
        if max_documents is not None:
            documents = documents[:max_documents]
        return cls(tokenize_documents(documents, tokenizer), tokenizer, max_tokens, seed)

    def __len__(self) -> int:
        return len(self.splits)

    def __getitem__(self, index: int) -> PairExample:
        rng = random.Random(self.seed * 1_000_003 + int(index))
        d, k = self.splits[rng.randrange(len(self.splits))]
        doc = self.documents[d]
        budget = self.max_tokens - 3  # [CLS], [SEP], [SEP]
        a: list[int] = []
        for sentence in reversed(doc[:k]):  # the sentences just before the split, nearest first
            if a and len(a) + len(sentence) > budget // 2:
                break
            a = sentence + a
        if rng.random() < self.random_next_probability:
            label = NOT_NEXT
            other = rng.randrange(len(self.documents) - 1)
            other += other >= d  # any document but this one
            source = self.documents[other]
            following = source[rng.randrange(len(source)):]
        else:
            label = IS_NEXT
            following = doc[k:]
        b: list[int] = []
        for sentence in following:
            if b and len(a) + len(b) + len(sentence) > budget:
                break
            b = b + sentence
        cut_a, cut_b = truncate_longest_first(len(a), len(b), budget)
        # Cut A from the front so that its end still touches B; cut B from the back.
        a, b = a[cut_a:], b[:len(b) - cut_b]
        tk = self.tokenizer
        ids = [tk.cls_token_id, *a, tk.sep_token_id, *b, tk.sep_token_id]
        segment_ids = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        starts = [i not in self._continuation for i in ids]
        return PairExample(ids, segment_ids, label, starts)


def tokenize_documents(documents: list[list[str]], tokenizer: Tokenizer, chunk: int = 4096) -> list[list[list[int]]]:
    """Token ids of every sentence, without special tokens, exactly as the app tokenizes (the tokenizer's reference
    word splitting; WordPiece batched). Empty sentences are dropped."""
    flat = [s for doc in documents for s in doc]
    ids: list[list[int]] = []
    for start in range(0, len(flat), chunk):
        ids.extend(e.ids for e in tokenizer.encode_batch(flat[start:start + chunk], add_special_tokens=False))
    out, i = [], 0
    for doc in documents:
        out.append([s for s in ids[i:i + len(doc)] if s])
        i += len(doc)
    return out


@dataclass
class PretrainingBatch:
    """Model inputs for one step. input_ids, segment_ids, attention_mask, labels, kind: (B, T);
    next_sentence_label: (B,)."""

    input_ids: Tensor
    segment_ids: Tensor
    attention_mask: Tensor
    labels: Tensor
    next_sentence_label: Tensor
    kind: Tensor

    def to(self, device: torch.device) -> "PretrainingBatch":
        return PretrainingBatch(*(getattr(self, f).to(device, non_blocking=True) for f in self.__dataclass_fields__))


def collate(examples: list[PairExample], tokenizer: Tokenizer, random_ids: Tensor,
            generator: torch.Generator | list[torch.Generator], mlm_probability: float = 0.15, whole_word: bool = False,
            mask_fraction: float = 0.8, random_fraction: float = 0.1) -> PretrainingBatch:
    """Pad to the longest example and mask. Padding and special tokens are never chosen. `generator`: one for the
    batch, or one per example (then the positions chosen in an example do not depend on the examples batched with it)."""
    if tokenizer.mask_token_id is None:
        raise ValueError("the tokenizer has no [MASK] token; masked-LM pretraining needs one in the vocabulary")
    T = max(len(e.ids) for e in examples)
    B = len(examples)
    ids = torch.full((B, T), tokenizer.pad_token_id, dtype=torch.long)
    types = torch.zeros((B, T), dtype=torch.long)
    attention = torch.zeros((B, T), dtype=torch.long)
    starts = torch.ones((B, T), dtype=torch.bool)
    for row, e in enumerate(examples):
        n = len(e.ids)
        ids[row, :n] = torch.tensor(e.ids)
        types[row, :n] = torch.tensor(e.segment_ids)
        attention[row, :n] = 1
        if e.word_starts:
            starts[row, :n] = torch.tensor(e.word_starts)
    special = (attention == 0) | torch.isin(ids, torch.tensor(sorted(tokenizer.special_ids)))

    def mask(rows: slice, g: torch.Generator) -> MaskedTokens:
        return mask_tokens(ids[rows], special[rows], tokenizer.mask_token_id, random_ids, mlm_probability,
                           mask_fraction, random_fraction, starts[rows] if whole_word else None, g)

    if isinstance(generator, torch.Generator):
        masked = mask(slice(None), generator)
    else:
        parts = [mask(slice(row, row + 1), g) for row, g in enumerate(generator)]
        masked = MaskedTokens(*(torch.cat([getattr(m, f) for m in parts]) for f in ("input_ids", "labels", "kind")))
    nsp = torch.tensor([e.next_sentence_label for e in examples])
    return PretrainingBatch(masked.input_ids, types, attention, masked.labels, nsp, masked.kind)
