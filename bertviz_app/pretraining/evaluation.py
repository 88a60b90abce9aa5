"""Held-out evaluation: masked-token top-1/top-5 and next-sentence accuracy against the unigram baseline, on fixed
pairs and masks, so that every checkpoint is scored on the very same positions."""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass

import torch
from torch import Tensor

from ..checkpoint import load_model
from ..masked_lm import probe
from ..masking import IGNORE_INDEX, random_token_ids
from ..model import BertForPreTraining
from ..tokenizer import Tokenizer
from .data import SentencePairDataset, collate
from .objective import PretrainingObjective, token_counts


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


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("checkpoint", help="checkpoint folder with MLM and NSP heads")
    parser.add_argument("--heldout", required=True, help="held-out text file")
    parser.add_argument("--train", default=None, help="training text file, for the unigram baseline")
    parser.add_argument("--examples", type=int, default=1024)
    parser.add_argument("--max-tokens", "--max-length", dest="max_tokens", type=int, default=128,
                        help="tokens per pair, special tokens included")
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
    heldout = SentencePairDataset.from_files([args.heldout], tokenizer, args.max_tokens, seed=1234)
    counts = None
    if args.train:
        counts = token_counts(SentencePairDataset.from_files([args.train], tokenizer, args.max_tokens,
                                                             max_documents=args.max_documents), tokenizer.vocab_size)
    result = evaluate(model, heldout, args.examples, args.batch_size, unigram_counts=counts)
    print(result)
    for line in probe(model, tokenizer):
        print(line)
    return result
