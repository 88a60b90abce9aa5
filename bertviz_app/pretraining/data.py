"""Training data: documents from plain-text files (UTF-8, one sentence per line, a blank line between documents), or
already tokenized from a token-id corpus (`.npz`, `save_token_corpus`) -> next-sentence pairs (50% the true next
sentences, 50% sentences of another document, of the same source when the documents' sources are known and asked for)
-> padded, masked batches.

Every example is a pure function of (seed, index): resuming needs no data-loader state, and two runs with the same seed
see the same examples."""

from __future__ import annotations

import os
import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ..masking import MaskedTokens, mask_tokens
from ..padding import pad_inputs, pad_rows
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
                 seed: int = 0, random_next_probability: float = 0.5, sources: list[int] | None = None):
        """sources: each document's source (an index, one per document); given, a NotNext pair takes its B from
        another document of the same source (when the source has one), so that NSP cannot be told by the style of
        a dictionary entry against a speech alone."""
        if max_tokens < 8:
            raise ValueError(f"max_tokens {max_tokens} is too short for sentence pairs; use 64 or more")
        if sources is not None and len(sources) != len(documents):
            raise ValueError(f"{len(sources)} sources for {len(documents)} documents; give one source per document")
        kept = [i for i, d in enumerate(documents) if d and any(d)]
        self.documents = [documents[i] for i in kept]
        self.sources = [int(sources[i]) for i in kept] if sources is not None else None
        by_source = defaultdict(list)
        for d, source in enumerate(self.sources or []):
            by_source[source].append(d)
        self._same_source = {d: docs for docs in by_source.values() if len(docs) > 1 for d in docs}
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

    @classmethod
    def from_token_corpus(cls, path, tokenizer: Tokenizer, max_tokens: int = 128, seed: int = 0,
                          max_documents: int | None = None, same_source: bool = False) -> "SentencePairDataset":
        """From a `save_token_corpus` file; same_source: NotNext pairs within a source (the file must record them)."""
        documents, sources, _ = load_token_corpus(path)
        if same_source and sources is None:
            raise ValueError(f"{path} records no document sources; drop --same-source-negatives or rebuild it with "
                             "scripts/tokenize_corpus.py from a corpus folder with sources.json")
        if max_documents is not None:
            documents, sources = documents[:max_documents], sources and sources[:max_documents]
        if max((max(s) for d in documents for s in d if s), default=0) >= tokenizer.vocab_size:
            raise ValueError(f"{path} holds token ids beyond the tokenizer's {tokenizer.vocab_size}; it was made "
                             "with another vocabulary")
        return cls(documents, tokenizer, max_tokens, seed, sources=sources if same_source else None)

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
            pool = self._same_source.get(d)
            if pool is not None:  # another document of d's source
                other = pool[rng.randrange(len(pool) - 1)]
                other = pool[-1] if other == d else other
            else:
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


def save_token_corpus(path: str | os.PathLike, documents: list[list[list[int]]],
                      sources: list[int] | None = None, source_names: list[str] | None = None) -> Path:
    """Write tokenized documents as one `.npz`: the ids of every sentence end to end (uint16 when the vocabulary
    fits), where each sentence and document ends, and each document's source. A fifth of the text's size, and read
    without a tokenizer run."""
    flat = [i for doc in documents for sentence in doc for i in sentence]
    top = max(flat, default=0)
    tokens = np.asarray(flat, dtype=np.uint16 if top < 2 ** 16 else np.int32)
    sentence_ends = np.cumsum([len(s) for doc in documents for s in doc], dtype=np.int64)
    document_ends = np.cumsum([len(doc) for doc in documents], dtype=np.int64)
    arrays = dict(tokens=tokens, sentence_ends=sentence_ends, document_ends=document_ends)
    if sources is not None:
        if len(sources) != len(documents):
            raise ValueError(f"{len(sources)} sources for {len(documents)} documents")
        arrays["document_sources"] = np.asarray(sources, dtype=np.int32)
        arrays["source_names"] = np.asarray(source_names or [str(i) for i in range(max(sources, default=-1) + 1)])
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)
    return path


def load_token_corpus(path: str | os.PathLike) -> tuple[list[list[list[int]]], list[int] | None, list[str]]:
    """(documents, each document's source or None, the source names) of a `save_token_corpus` file."""
    with np.load(path) as data:
        tokens = data["tokens"].astype(np.int64)
        sentence_ends, document_ends = data["sentence_ends"], data["document_ends"]
        sources = data["document_sources"].tolist() if "document_sources" in data else None
        names = data["source_names"].tolist() if "source_names" in data else []
    sentences = np.split(tokens, sentence_ends[:-1]) if len(sentence_ends) else []
    sentences = [s.tolist() for s in sentences]
    starts = np.concatenate([[0], document_ends[:-1]]) if len(document_ends) else []
    documents = [sentences[a:b] for a, b in zip(starts, document_ends)]
    return documents, sources, names


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
    ids, types, attention = pad_inputs([e.ids for e in examples], [e.segment_ids for e in examples],
                                       tokenizer.pad_token_id)
    # an example without word starts counts every token as one (and padding is never chosen)
    starts = pad_rows([e.word_starts or [True] * len(e.ids) for e in examples], True, torch.bool)
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
