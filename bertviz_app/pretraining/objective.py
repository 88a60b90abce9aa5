"""The model to train and its loss: masked LM + next-sentence prediction, with the vocabulary projection computed only
where there is something to predict."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..checkpoint import load_model
from ..config import BertConfig
from ..masking import IGNORE_INDEX
from ..model import BertForPreTraining
from ..tokenizer import Tokenizer
from .data import PretrainingBatch, SentencePairDataset


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


def build_model(init: str, tokenizer: Tokenizer, preset: str = "mini", max_tokens: int = 128,
                log_prior: Tensor | None = None, reinit_top_layers: int = 0) -> tuple[BertForPreTraining, list[str]]:
    """A BertForPreTraining with both heads. init 'scratch': random weights of `preset` sized to the tokenizer;
    init PATH: the encoder of that checkpoint, with heads it lacks newly initialized (listed in the result), and its
    top `reinit_top_layers` layers given BERT's initialization (listed too, with the MLM head they feed: what trains
    at the new parameters' learning rate)."""
    if init == "scratch":
        config = BertConfig.preset(preset, vocab_size=tokenizer.vocab_size,
                                   max_position_embeddings=max(max_tokens, BertConfig.preset(preset)
                                                               .max_position_embeddings))
        model = BertForPreTraining(config)
        if log_prior is not None:
            with torch.no_grad():
                model.cls.predictions.bias.copy_(log_prior - log_prior.mean())
        return model, ["all (scratch)"]
    source, _ = load_model(init)
    config = source.config
    if config.model_type != "bert":  # refused now, not when the trained model cannot be saved
        raise ValueError(f"{init} is a {config.family} checkpoint; pretraining continues BERT checkpoints only")
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(f"the tokenizer has {tokenizer.vocab_size} tokens but {init} only {config.vocab_size}")
    if max_tokens > config.max_position_embeddings:
        raise ValueError(f"--max-tokens {max_tokens} exceeds the model's {config.max_position_embeddings} positions")
    model = BertForPreTraining(config)
    state = source.state_dict()
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected:
        raise ValueError(f"{init} has weights this model cannot place: {unexpected[:5]}")
    new = [k for k in missing if k != "cls.predictions.decoder.weight"]
    if not source.has_mlm_head:
        init_mlm_head(model, log_prior)
    layers = model.bert.encoder.layer
    if not 0 <= reinit_top_layers <= len(layers):
        raise ValueError(f"--reinit-top-layers {reinit_top_layers}: {init} has {len(layers)} layers")
    for i in range(len(layers) - reinit_top_layers, len(layers)):
        for module in layers[i].modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=config.initializer_range)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                module.reset_parameters()
        new += [f"bert.encoder.layer.{i}.{name}" for name, _ in layers[i].named_parameters()]
    if reinit_top_layers:
        new += [f"cls.predictions.{name}" for name, _ in model.cls.predictions.named_parameters()
                if not name.startswith("decoder") and f"cls.predictions.{name}" not in new]
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
            base = self.model.bert(batch.input_ids, batch.segment_ids, batch.attention_mask)
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
