"""Pretraining BERT with its two original objectives: masked language modelling and next-sentence prediction.

masking (15% of the non-special tokens; of those 80% [MASK], 10% a random token, 10% unchanged) -> sentence pairs
from plain-text files (50% the true next sentences, 50% sentences of another document) -> a training loop (AdamW,
warmup and linear decay, clipping, mixed precision on GPU, one process or `torchrun` DDP) -> checkpoints in Hugging
Face format with the optimizer state beside them, so a run can stop at any time and resume -> an evaluation on a
held-out split (masked-token top-1/top-5, NSP accuracy, the unigram baseline).

Corpus format: UTF-8 text, one sentence per line, a blank line between documents.

Every batch is a pure function of (seed, step, rank): resuming needs no data-loader state, and two runs with the
same seed see the same examples.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .checkpoint import load_model, save_pretrained
from .config import BertConfig
from .model import BertForPreTraining
from .tokenizer import Tokenizer, truncate_longest_first

IGNORE_INDEX = -100  # label of positions with nothing to predict (cross_entropy's ignore_index)
IS_NEXT, NOT_NEXT = 0, 1  # next_sentence_label values, as the model's NSP head expects
# What happened to each position during masking (MaskedTokens.kind).
UNCHANGED, MASKED, RANDOM, KEPT = 0, 1, 2, 3
TRAINER_STATE = "trainer_state.pt"


# ------------------------------------------------------------------------------------------------------------------
# Masking
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class MaskedTokens:
    """A batch after corruption. All (B, T).

    input_ids: what the model reads; labels: the original id at every chosen position, IGNORE_INDEX elsewhere;
    kind: UNCHANGED (not chosen), MASKED (became [MASK]), RANDOM (became a random token), KEPT (chosen, unchanged)."""

    input_ids: Tensor
    labels: Tensor
    kind: Tensor


def word_starts_from_tokens(tokens: list[str]) -> list[bool]:
    """True where a WordPiece token begins a word (its continuation pieces start with ##)."""
    return [not t.startswith("##") for t in tokens]


def mask_tokens(input_ids: Tensor, special_tokens_mask: Tensor, mask_token_id: int, random_token_ids: Tensor,
                mlm_probability: float = 0.15, mask_fraction: float = 0.8, random_fraction: float = 0.1,
                word_starts: Tensor | None = None, generator: torch.Generator | None = None) -> MaskedTokens:
    """Corrupt a batch for masked language modelling, as BERT's pretraining data does.

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


# ------------------------------------------------------------------------------------------------------------------
# Sentence pairs from plain-text files
# ------------------------------------------------------------------------------------------------------------------
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
    """One `[CLS] A [SEP] B [SEP]` input. ids, type_ids: lists of the same length; next_sentence_label: IS_NEXT or
    NOT_NEXT."""

    ids: list[int]
    type_ids: list[int]
    next_sentence_label: int
    word_starts: list[bool] = field(default_factory=list)


class SentencePairDataset(torch.utils.data.Dataset):
    """Next-sentence pairs from tokenized documents. Item i is a deterministic function of (seed, i): a random split
    point of a random document gives A (the sentences before it, up to half the length budget) and, with
    probability 1/2, B = the sentences after it (IsNext), else a run of sentences of another document (NotNext).
    The length is the number of split points, a natural epoch."""

    def __init__(self, documents: list[list[list[int]]], tokenizer: Tokenizer, max_length: int = 128,
                 seed: int = 0, random_next_probability: float = 0.5):
        if max_length < 8:
            raise ValueError(f"max_length {max_length} is too short for sentence pairs; use 64 or more")
        self.documents = [d for d in documents if d and any(d)]
        self.splits = [(d, k) for d, doc in enumerate(self.documents) for k in range(1, len(doc))]
        if not self.splits:
            raise ValueError("the corpus has no document with two sentences, so there are no true next-sentence "
                             "pairs; put one sentence per line and a blank line between documents")
        if len(self.documents) < 2:
            raise ValueError("the corpus needs at least two documents for random next sentences")
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.seed = seed
        self.random_next_probability = random_next_probability
        self._continuation = {i for t, i in tokenizer.vocab.items() if t.startswith("##")}

    @classmethod
    def from_files(cls, paths, tokenizer: Tokenizer, max_length: int = 128, seed: int = 0,
                   max_documents: int | None = None) -> "SentencePairDataset":
        documents = read_documents(paths)
        if max_documents is not None:
            documents = documents[:max_documents]
        return cls(tokenize_documents(documents, tokenizer), tokenizer, max_length, seed)

    def __len__(self) -> int:
        return len(self.splits)

    def __getitem__(self, index: int) -> PairExample:
        rng = random.Random(self.seed * 1_000_003 + int(index))
        d, k = self.splits[rng.randrange(len(self.splits))]
        doc = self.documents[d]
        budget = self.max_length - 3  # [CLS], [SEP], [SEP]
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
        type_ids = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        starts = [i not in self._continuation for i in ids]
        return PairExample(ids, type_ids, label, starts)


def tokenize_documents(documents: list[list[str]], tokenizer: Tokenizer, chunk: int = 4096) -> list[list[list[int]]]:
    """Token ids of every sentence, without special tokens (batched through the Rust tokenizer for speed)."""
    flat = [s for doc in documents for s in doc]
    backend = getattr(tokenizer, "_tk", None)
    ids: list[list[int]] = []
    for start in range(0, len(flat), chunk):
        part = flat[start:start + chunk]
        if backend is not None:  # encode_batch runs on all cores; Tokenizer has no public batch method yet
            ids.extend(e.ids for e in backend.encode_batch(part, add_special_tokens=False))
        else:
            ids.extend([tokenizer.vocab[t] for t in tokenizer.tokenize(s)] for s in part)
    out, i = [], 0
    for doc in documents:
        out.append([s for s in ids[i:i + len(doc)] if s])
        i += len(doc)
    return out


@dataclass
class PretrainingBatch:
    """Model inputs for one step. input_ids, token_type_ids, attention_mask, labels, kind: (B, T);
    next_sentence_label: (B,)."""

    input_ids: Tensor
    token_type_ids: Tensor
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
        types[row, :n] = torch.tensor(e.type_ids)
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


# ------------------------------------------------------------------------------------------------------------------
# Building the model
# ------------------------------------------------------------------------------------------------------------------
def init_mlm_head(model: BertForPreTraining, log_prior: Tensor | None = None) -> None:
    """A sensible start for a masked-LM head that the checkpoint lacks: the transform is the identity map (so the
    first predictions are the word embeddings nearest the last hidden state, which already lies in a space close to
    them) and the output bias is the log unigram distribution (so the head starts from the unigram baseline)."""
    head = model.cls.predictions
    with torch.no_grad():
        head.transform.dense.weight.copy_(torch.eye(model.config.hidden_size))
        head.transform.dense.bias.zero_()
        head.transform.LayerNorm.reset_parameters()
        if log_prior is not None:
            head.bias.copy_(log_prior - log_prior.mean())
        else:
            head.bias.zero_()


def build_model(init: str, tokenizer: Tokenizer, preset: str = "mini", max_length: int = 128,
                log_prior: Tensor | None = None) -> tuple[BertForPreTraining, list[str]]:
    """A BertForPreTraining with both heads. init 'scratch': random weights of `preset` sized to the tokenizer;
    init PATH: the encoder of that checkpoint, with heads it lacks newly initialised (listed in the result)."""
    if init == "scratch":
        config = BertConfig.preset(preset, vocab_size=tokenizer.vocab_size,
                                   max_position_embeddings=max(max_length, BertConfig.preset(preset)
                                                               .max_position_embeddings))
        model = BertForPreTraining(config)
        if log_prior is not None:
            with torch.no_grad():
                model.cls.predictions.bias.copy_(log_prior - log_prior.mean())
        return model, ["all (scratch)"]
    source, _ = load_model(init)
    config = source.config
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(f"the tokenizer has {tokenizer.vocab_size} tokens but {init} only {config.vocab_size}")
    if max_length > config.max_position_embeddings:
        raise ValueError(f"--max-length {max_length} exceeds the model's {config.max_position_embeddings} positions")
    model = BertForPreTraining(config)
    state = source.state_dict()
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected:
        raise ValueError(f"{init} has weights this model cannot place: {unexpected[:5]}")
    new = [k for k in missing if k != "cls.predictions.decoder.weight"]
    if not source.has_mlm_head:
        init_mlm_head(model, log_prior)
    model.tie_weights()
    return model, new


def unigram_log_prior(dataset: SentencePairDataset, vocab_size: int, smoothing: float = 1.0) -> Tensor:
    """Log of the add-`smoothing` unigram distribution of the dataset's tokens."""
    counts = token_counts(dataset, vocab_size).double() + smoothing
    return (counts / counts.sum()).log().float()


def token_counts(dataset: SentencePairDataset, vocab_size: int) -> Tensor:
    flat = [i for doc in dataset.documents for s in doc for i in s]
    return torch.bincount(torch.tensor(flat, dtype=torch.long), minlength=vocab_size)[:vocab_size]


class PretrainingObjective(nn.Module):
    """MLM + NSP loss of a BertForPreTraining, with the vocabulary projection computed only at the chosen positions
    (about 15% of them): the same loss as `model(..., labels, next_sentence_label).loss`, at half the cost of a
    small model's step, because the projection onto 30k words would otherwise cost as much as the encoder."""

    def __init__(self, model: BertForPreTraining):
        super().__init__()
        if not (model.has_mlm_head and model.has_nsp_head):
            raise ValueError("pretraining needs a model with both the masked-LM and the next-sentence head")
        self.model = model
        # True while only new heads train: the encoder then runs without autograd, about 3x cheaper per step.
        self.encoder_frozen = False

    def forward(self, batch: PretrainingBatch) -> dict[str, Tensor]:
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.encoder_frozen):
            base = self.model.bert(batch.input_ids, batch.token_type_ids, batch.attention_mask)
        chosen = batch.labels != IGNORE_INDEX
        logits = self.model.cls.predictions(base.last_hidden_state[chosen]).float()  # (N, vocab)
        targets = batch.labels[chosen]
        mlm_loss = F.cross_entropy(logits, targets)
        nsp_logits = self.model.cls.seq_relationship(base.pooler_output).float()  # (B, 2)
        nsp_loss = F.cross_entropy(nsp_logits, batch.next_sentence_label)
        with torch.no_grad():
            top5 = logits.topk(min(5, logits.shape[-1]), -1).indices
            hits = top5 == targets[:, None]
        return {"loss": mlm_loss + nsp_loss, "mlm_loss": mlm_loss.detach(), "nsp_loss": nsp_loss.detach(),
                "mlm_correct": hits[:, 0].sum(), "mlm_top5": hits.any(-1).sum(), "mlm_count": targets.new_tensor(
                    len(targets)), "nsp_correct": (nsp_logits.argmax(-1) == batch.next_sentence_label).sum(),
                "nsp_count": targets.new_tensor(len(batch.next_sentence_label))}


# ------------------------------------------------------------------------------------------------------------------
# Evaluation
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class Evaluation:
    """Held-out metrics. Masked-token accuracies are over positions replaced by [MASK] (every chosen position is
    masked in evaluation, so the model cannot copy the answer); the unigram baseline always predicts the most
    frequent training tokens."""

    mlm_top1: float
    mlm_top5: float
    mlm_loss: float
    nsp_accuracy: float
    nsp_loss: float
    unigram_top1: float
    unigram_top5: float
    masked_tokens: int
    pairs: int

    def __str__(self) -> str:
        return (f"masked-token top-1 {self.mlm_top1:.3f}, top-5 {self.mlm_top5:.3f} (unigram baseline "
                f"{self.unigram_top1:.3f} / {self.unigram_top5:.3f}; {self.masked_tokens} tokens), MLM loss "
                f"{self.mlm_loss:.3f}; NSP accuracy {self.nsp_accuracy:.3f} on {self.pairs} pairs")


@torch.no_grad()
def evaluate(model: BertForPreTraining, dataset: SentencePairDataset, examples: int = 512, batch_size: int = 32,
             seed: int = 1234, unigram_counts: Tensor | None = None, device: torch.device | str = "cpu",
             whole_word: bool = False) -> Evaluation:
    """Masked-token top-1/top-5 and NSP accuracy on `examples` fixed pairs of `dataset` (the same pairs and masks for
    every checkpoint, given the seed, whatever the batch size). unigram_counts: token frequencies of the training data
    for the baseline."""
    was_training = model.training
    model.eval()
    objective = PretrainingObjective(model)
    tokenizer = dataset.tokenizer
    rand_ids = random_token_ids(tokenizer)
    top_unigram = None
    if unigram_counts is not None:
        counts = unigram_counts.clone()
        counts[sorted(tokenizer.special_ids)] = 0
        top_unigram = counts.topk(5).indices
    totals = Counter()
    for start in range(0, examples, batch_size):
        n = min(batch_size, examples - start)
        # Each pair is masked by its own generator, so a training run's curve (evaluated at its training batch size)
        # and the exported model's figures (at another) score the very same masked positions.
        items = [dataset[seed * 10_000_019 + index] for index in range(start, start + n)]
        generators = [torch.Generator().manual_seed(seed * 7919 + index) for index in range(start, start + n)]
        batch = collate(items, tokenizer, rand_ids, generators, whole_word=whole_word, mask_fraction=1.0,
                        random_fraction=0.0).to(torch.device(device))
        out = objective(batch)
        chosen = batch.labels[batch.labels != IGNORE_INDEX]
        totals["mlm_loss"] += float(out["mlm_loss"]) * len(chosen)
        totals["nsp_loss"] += float(out["nsp_loss"]) * n
        for key in ("mlm_correct", "mlm_top5", "mlm_count", "nsp_correct", "nsp_count"):
            totals[key] += int(out[key])
        if top_unigram is not None:
            top_unigram = top_unigram.to(chosen.device)
            totals["uni1"] += int((chosen == top_unigram[0]).sum())
            totals["uni5"] += int(torch.isin(chosen, top_unigram).sum())
    model.train(was_training)
    m, p = max(totals["mlm_count"], 1), max(totals["nsp_count"], 1)
    return Evaluation(totals["mlm_correct"] / m, totals["mlm_top5"] / m, totals["mlm_loss"] / m,
                      totals["nsp_correct"] / p, totals["nsp_loss"] / p, totals["uni1"] / m, totals["uni5"] / m,
                      totals["mlm_count"], totals["nsp_count"])


PROBES = ("The capital of France is [MASK].", "She poured a cup of [MASK].", "The [MASK] barked at the cat.",
          "He opened the [MASK] and walked in.", "A week has seven [MASK].")


def probe(model: BertForPreTraining, tokenizer: Tokenizer, sentences=PROBES, top_k: int = 5) -> list[str]:
    """One line per probe sentence: its top-k fill-ins."""
    from .masked_lm import fill_mask

    lines = []
    for sentence in sentences:
        predictions = fill_mask(model, tokenizer, sentence, top_k=top_k)[0]
        lines.append(f"{sentence}  ->  " + ", ".join(f"{t} {p:.2f}" for t, p in predictions))
    return lines


# ------------------------------------------------------------------------------------------------------------------
# Training
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class Distributed:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def setup_distributed(device: str) -> tuple[Distributed, torch.device]:
    """One process, or the process group that `torchrun` describes in the environment (gloo on CPU, nccl on GPU)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        from .explorer import resolve_device
        return Distributed(), resolve_device(device)
    import torch.distributed as dist

    info = Distributed(int(os.environ["RANK"]), world_size, int(os.environ.get("LOCAL_RANK", "0")))
    use_cuda = torch.cuda.is_available() and device in ("auto", "cuda")
    if use_cuda:
        torch.cuda.set_device(info.local_rank)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo")
    return info, torch.device("cuda", info.local_rank) if use_cuda else torch.device("cpu")


def linear_schedule(warmup: int, total: int):
    """Learning-rate factor: linear warmup from 0 to 1 over `warmup` steps, then linear decay to 0 at `total`."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))
    return factor


def latest_checkpoint(out: Path) -> Path | None:
    """The newest `step-NNNNNNN` folder under `out` that holds a trainer state (a complete checkpoint)."""
    folders = sorted(p for p in out.glob("step-*") if (p / TRAINER_STATE).exists())
    return folders[-1] if folders else None


def _resolve_corpus(args) -> tuple[list[Path], Path | None]:
    corpus = Path(args.corpus)
    heldout = Path(args.heldout) if args.heldout else None
    if corpus.is_dir():
        if (corpus / "train.txt").exists():
            heldout = heldout or ((corpus / "heldout.txt") if (corpus / "heldout.txt").exists() else None)
            return [corpus / "train.txt"], heldout
        files = sorted(corpus.glob("*.txt"))
        if not files:
            raise FileNotFoundError(f"{corpus} holds no .txt files")
        return files, heldout
    if not corpus.is_file():
        raise FileNotFoundError(f"no corpus at {corpus}; give a text file or a folder with train.txt "
                                "(build one with scripts/build_corpus.py)")
    return [corpus], heldout


def _load_tokenizer(args) -> Tokenizer:
    from .explorer import default_model_path

    if args.tokenizer:
        folder = Path(args.tokenizer)
    elif args.init != "scratch":
        folder = Path(args.init)
    else:
        folder = default_model_path()
    return Tokenizer.from_folder(folder)


class CsvLog:
    FIELDS = ("step", "split", "loss", "mlm_loss", "nsp_loss", "mlm_top1", "mlm_top5", "nsp_accuracy", "lr",
              "steps_per_s", "elapsed_s")

    def __init__(self, path: Path):
        self.path = path
        if not path.exists():
            with path.open("w", newline="") as f:
                csv.writer(f).writerow(self.FIELDS)

    def write(self, **row) -> None:
        with self.path.open("a", newline="") as f:
            csv.writer(f).writerow([_fmt(row.get(k, "")) for k in self.FIELDS])


def _fmt(value) -> str:
    return f"{value:.5g}" if isinstance(value, float) else str(value)


def _save_checkpoint(model: BertForPreTraining, tokenizer: Tokenizer, optimizer, scheduler, scaler, step: int,
                     out: Path, keep: int) -> Path:
    folder = out / f"step-{step:07d}"
    partial = out / f".partial-{step:07d}"
    if partial.exists():
        shutil.rmtree(partial)
    save_pretrained(model, partial, tokenizer=tokenizer)
    state = {"step": step, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
             "scaler": scaler.state_dict() if scaler is not None else None, "torch_rng": torch.get_rng_state(),
             "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}
    torch.save(state, partial / TRAINER_STATE)
    if folder.exists():
        shutil.rmtree(folder)
    partial.rename(folder)  # a checkpoint folder exists only once it is complete
    if keep > 0:
        for old in sorted(out.glob("step-*"))[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    return folder


def add_pretrain_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of `bertviz-app pretrain`."""
    parser.add_argument("--corpus", required=True,
                        help="a text file (one sentence per line, blank line between documents) or a folder with "
                             "train.txt and heldout.txt (scripts/build_corpus.py writes one)")
    parser.add_argument("--heldout", default=None, help="held-out text file for evaluation (default: "
                        "CORPUS/heldout.txt when CORPUS is a folder)")
    parser.add_argument("--init", default="scratch",
                        help="'scratch' for random weights, or a checkpoint folder to continue from (heads it lacks "
                             "are newly initialised)")
    parser.add_argument("--preset", default="mini", choices=("tiny", "mini", "base", "large"),
                        help="model size with --init scratch (default: mini)")
    parser.add_argument("--tokenizer", default=None, help="tokenizer folder (default: the --init folder, or the "
                        "default model's tokenizer with --init scratch)")
    parser.add_argument("--out", required=True, help="output folder: checkpoints step-NNNNNNN/, log.csv; a run "
                        "with the same --out resumes from its latest checkpoint")
    parser.add_argument("--steps", type=int, default=10_000, help="total optimizer steps (default: 10000)")
    parser.add_argument("--batch-size", type=int, default=32, help="sentence pairs per step and process")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per pair, special tokens included")
    parser.add_argument("--lr", type=float, default=1e-4, help="peak learning rate (default: 1e-4)")
    parser.add_argument("--head-lr-scale", type=float, default=1.0,
                        help="learning-rate multiplier for newly initialised heads (default: 1)")
    parser.add_argument("--warmup", type=int, default=None, help="warmup steps (default: 6%% of --steps)")
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--clip", type=float, default=1.0, help="gradient-norm clipping (0: off)")
    parser.add_argument("--freeze-encoder-steps", type=int, default=0,
                        help="train only the newly initialised heads for the first N steps (the encoder, embeddings "
                             "and pooler stay fixed), so that a new head does not disturb a pretrained encoder; "
                             "single process only")
    parser.add_argument("--mlm-probability", type=float, default=0.15)
    parser.add_argument("--whole-word", action="store_true", help="mask whole words instead of word pieces")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads per process (default: torch's)")
    parser.add_argument("--log-every", type=int, default=10, help="steps between progress lines and CSV rows")
    parser.add_argument("--eval-every", type=int, default=0, help="steps between held-out evaluations (0: at "
                        "checkpoints only)")
    parser.add_argument("--eval-examples", type=int, default=256, help="held-out pairs per evaluation")
    parser.add_argument("--save-every", type=int, default=500, help="steps between checkpoints")
    parser.add_argument("--save-minutes", type=float, default=15.0, help="also save when this many minutes have "
                        "passed since the last checkpoint (0: off)")
    parser.add_argument("--keep", type=int, default=2, help="checkpoints to keep (0: all)")
    parser.add_argument("--max-documents", type=int, default=None, help="read only the first N documents")
    return parser


def run_pretrain(args: argparse.Namespace) -> BertForPreTraining:
    """Train (or resume) as `args` say; returns the trained model (unwrapped, on its device)."""
    if args.freeze_encoder_steps and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ValueError("--freeze-encoder-steps is not supported under torchrun (DDP needs every parameter to "
                         "train from the start); run the frozen phase in one process, then resume under torchrun")
    dist_info, device = setup_distributed(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    say = (lambda *a: print(*a, file=sys.stderr, flush=True)) if dist_info.is_main else (lambda *a: None)

    tokenizer = _load_tokenizer(args)
    files, heldout_file = _resolve_corpus(args)
    t0 = time.perf_counter()
    train_data = SentencePairDataset.from_files(files, tokenizer, args.max_length, args.seed, args.max_documents)
    heldout = (SentencePairDataset.from_files([heldout_file], tokenizer, args.max_length, seed=1234)
               if heldout_file else None)
    counts = token_counts(train_data, tokenizer.vocab_size)
    say(f"corpus: {len(train_data.documents)} documents, {len(train_data)} pairs per epoch"
        + (f", held-out {len(heldout.documents)} documents" if heldout else "")
        + f" (read in {time.perf_counter() - t0:.1f} s)")

    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model, new = build_model(args.init, tokenizer, args.preset, args.max_length,
                             log_prior=unigram_log_prior(train_data, tokenizer.vocab_size))
    say(f"model: {model.num_parameters() / 1e6:.1f} M parameters; newly initialised: "
        f"{', '.join(new) if new else 'nothing'}")
    model.to(device).train()

    new_params = {id(p) for name, p in model.named_parameters() if name in new}
    groups: dict[tuple[bool, bool], list] = {}
    for name, p in model.named_parameters():
        no_decay = name.endswith("bias") or "LayerNorm" in name
        groups.setdefault((no_decay, id(p) in new_params), []).append(p)
    optimizer = torch.optim.AdamW(
        [{"params": ps, "weight_decay": 0.0 if no_decay else args.weight_decay,
          "lr": args.lr * (args.head_lr_scale if is_new else 1.0)} for (no_decay, is_new), ps in groups.items()],
        lr=args.lr, betas=(0.9, 0.999), eps=1e-6, fused=device.type == "cuda")
    warmup = args.warmup if args.warmup is not None else max(1, int(0.06 * args.steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, linear_schedule(warmup, args.steps))
    amp_dtype = None
    if device.type == "cuda":
        amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    scaler = torch.amp.GradScaler("cuda") if amp_dtype == torch.float16 else None

    step = 0
    resume_from = latest_checkpoint(out)
    if resume_from is not None:
        trained, _ = load_model(resume_from)
        model.load_state_dict(trained.state_dict())
        model.tie_weights()
        state = torch.load(resume_from / TRAINER_STATE, map_location="cpu", weights_only=True)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        if scaler is not None and state.get("scaler"):
            scaler.load_state_dict(state["scaler"])
        torch.set_rng_state(state["torch_rng"])
        step = int(state["step"])
        say(f"resumed from {resume_from} at step {step}")
    if step >= args.steps:
        say(f"already trained {step} steps (--steps {args.steps}); raise --steps to continue")
        return model

    objective = PretrainingObjective(model)
    runner: nn.Module = objective
    if dist_info.world_size > 1:
        runner = nn.parallel.DistributedDataParallel(
            objective, device_ids=[device.index] if device.type == "cuda" else None)
    rand_ids = random_token_ids(tokenizer)
    log = CsvLog(out / "log.csv") if dist_info.is_main else None
    stats, last_time, started, last_save = Counter(), time.perf_counter(), time.perf_counter(), time.perf_counter()
    steps_since = 0

    def evaluate_now() -> None:
        if heldout is None or not dist_info.is_main:
            return
        result = evaluate(model, heldout, args.eval_examples, args.batch_size, unigram_counts=counts, device=device,
                          whole_word=args.whole_word)
        say(f"step {step}: held-out {result}")
        log.write(step=step, split="heldout", loss=result.mlm_loss + result.nsp_loss, mlm_loss=result.mlm_loss,
                  nsp_loss=result.nsp_loss, mlm_top1=result.mlm_top1, mlm_top5=result.mlm_top5,
                  nsp_accuracy=result.nsp_accuracy, elapsed_s=time.perf_counter() - started)

    head_params = [p for p in model.parameters() if id(p) in new_params]
    if args.freeze_encoder_steps and not head_params:
        raise ValueError("--freeze-encoder-steps needs newly initialised heads to train; use it with --init PATH "
                         "of a checkpoint without them")
    while step < args.steps:
        frozen = step < args.freeze_encoder_steps
        if frozen != objective.encoder_frozen:
            objective.encoder_frozen = frozen
            for p in model.parameters():
                p.requires_grad_(not frozen or id(p) in new_params)
            say(f"step {step}: {'training only the new heads' if frozen else 'training the whole model'}")
        # The batch of (step, rank) is fixed by the seed: resuming replays exactly the data not yet seen.
        base = (step * dist_info.world_size + dist_info.rank) * args.batch_size
        items = [train_data[base + i] for i in range(args.batch_size)]
        generator = torch.Generator().manual_seed(args.seed * 1_000_003 + step * 131 + dist_info.rank)
        batch = collate(items, tokenizer, rand_ids, generator, args.mlm_probability, args.whole_word).to(device)
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            result = runner(batch)
        loss = result["loss"]
        if not torch.isfinite(loss):
            raise RuntimeError(f"the loss became {float(loss)} at step {step}; lower --lr or check the corpus")
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
        else:
            loss.backward()
        if args.clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        steps_since += 1
        for key in ("mlm_correct", "mlm_top5", "mlm_count", "nsp_correct", "nsp_count"):
            stats[key] += int(result[key])
        stats["mlm_loss"] += float(result["mlm_loss"])
        stats["nsp_loss"] += float(result["nsp_loss"])

        if step % args.log_every == 0 or step == args.steps:
            now = time.perf_counter()
            rate = steps_since / (now - last_time)
            m, p = max(stats["mlm_count"], 1), max(stats["nsp_count"], 1)
            row = dict(step=step, split="train", mlm_loss=stats["mlm_loss"] / steps_since,
                       nsp_loss=stats["nsp_loss"] / steps_since, mlm_top1=stats["mlm_correct"] / m,
                       mlm_top5=stats["mlm_top5"] / m, nsp_accuracy=stats["nsp_correct"] / p,
                       lr=scheduler.get_last_lr()[0], steps_per_s=rate, elapsed_s=now - started)
            row["loss"] = row["mlm_loss"] + row["nsp_loss"]
            if log is not None:
                log.write(**row)
            eta = (args.steps - step) / rate if rate > 0 else float("inf")
            say(f"step {step}/{args.steps} ({100 * step / args.steps:.1f}%) loss {row['loss']:.3f} mlm "
                f"{row['mlm_loss']:.3f} top-1 {row['mlm_top1']:.3f} nsp {row['nsp_loss']:.3f} acc "
                f"{row['nsp_accuracy']:.3f} lr {row['lr']:.2e} {rate:.3f} steps/s eta {eta / 60:.0f} min")
            stats, last_time, steps_since = Counter(), now, 0
        timed_save = args.save_minutes > 0 and time.perf_counter() - last_save > 60 * args.save_minutes
        if step % args.save_every == 0 or step == args.steps or timed_save:
            if dist_info.is_main:
                folder = _save_checkpoint(model, tokenizer, optimizer, scheduler, scaler, step, out, args.keep)
                say(f"saved {folder}")
            last_save = time.perf_counter()
            if args.eval_every == 0:
                evaluate_now()
        if args.eval_every and step % args.eval_every == 0:
            evaluate_now()
    if dist_info.world_size > 1:
        import torch.distributed as dist
        dist.barrier()
    return model


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("checkpoint", help="checkpoint folder with MLM and NSP heads")
    parser.add_argument("--heldout", required=True, help="held-out text file")
    parser.add_argument("--train", default=None, help="training text file, for the unigram baseline")
    parser.add_argument("--examples", type=int, default=1024)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-documents", type=int, default=None, help="training documents read for the baseline")
    return parser


def run_evaluate(args: argparse.Namespace) -> Evaluation:
    """Evaluate a checkpoint on a held-out file and print the metrics and the probe sentences."""
    model, _ = load_model(args.checkpoint)
    if not (model.has_mlm_head and model.has_nsp_head):
        raise ValueError(f"{args.checkpoint} lacks the masked-LM or next-sentence head; evaluate a pretraining "
                         "checkpoint")
    tokenizer = Tokenizer.from_folder(args.checkpoint)
    heldout = SentencePairDataset.from_files([args.heldout], tokenizer, args.max_length, seed=1234)
    counts = None
    if args.train:
        counts = token_counts(SentencePairDataset.from_files([args.train], tokenizer, args.max_length,
                                                             max_documents=args.max_documents), tokenizer.vocab_size)
    result = evaluate(model, heldout, args.examples, args.batch_size, unigram_counts=counts)
    print(result)
    for line in probe(model, tokenizer):
        print(line)
    return result


def main(argv: list[str] | None = None) -> None:
    """`python -m bertviz_app.pretraining [train options]` or `python -m bertviz_app.pretraining evaluate ...`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "evaluate":
        parser = add_evaluate_arguments(argparse.ArgumentParser(prog="bertviz-app pretrain evaluate",
                                                                description="Evaluate a pretraining checkpoint."))
        run_evaluate(parser.parse_args(argv[1:]))
        return
    parser = add_pretrain_arguments(argparse.ArgumentParser(
        prog="bertviz-app pretrain", description="Pretrain BERT with masked-LM and next-sentence prediction."))
    run_pretrain(parser.parse_args(argv))


if __name__ == "__main__":
    main()
