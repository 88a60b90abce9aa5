"""What every fine-tuning task is made of (`Task`: read, encode, collate, loss, evaluate, predict, explain, head,
metric), the model inputs they share (`Feature`, `Batch`), and the defaults of a task that scores a list of labels.
One file per task beside this one; `tasks/__init__.py` registers them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from ...model import BertPreTrainedModel
from ...padding import pad_inputs
from ...targets import Target
from ...timeline import TimelineInput
from ...tokenizer import Encoding, Tokenizer
from ..data import label_names

IGNORE = -100
# A word's start in Feature.word_starts when the model never saw it: NO_PIECES (only control characters: counted as
# wrong, as the reference counts it) or PAST_LENGTH (cut by --max-tokens: not scored, and counted as cut).
NO_PIECES, PAST_LENGTH = -1, -2


@dataclass
class Feature:
    """One model input. label: a class id, or a tag id per token (IGNORE where nothing is scored). For QA:
    start/end token of the answer (0, 0: not in this window), offsets of the context tokens in the context, and the
    position of the window's first context token."""

    ids: list[int]
    segment_ids: list[int]
    example: int  # index of the example it came from
    label: int | list[int] | None = None
    start: int = 0
    end: int = 0
    context_start: int = 0
    offsets: list[tuple[int, int]] = field(default_factory=list)
    word_starts: list[int] = field(default_factory=list)  # tagging: each word's first piece; NO_PIECES, PAST_LENGTH


@dataclass
class Batch:
    """input_ids, segment_ids, attention_mask: (B, T); labels: (B,) or (B, T); start/end_positions: (B,)."""

    input_ids: Tensor
    segment_ids: Tensor
    attention_mask: Tensor
    labels: Tensor | None = None
    start_positions: Tensor | None = None
    end_positions: Tensor | None = None

    def to(self, device: torch.device) -> "Batch":
        return Batch(*(None if (v := getattr(self, f)) is None else v.to(device, non_blocking=True)
                       for f in self.__dataclass_fields__))


def pad(features: list[Feature], pad_id: int) -> Batch:
    """The features padded to the longest of the batch; the targets are the task's to add."""
    return Batch(*pad_inputs([f.ids for f in features], [f.segment_ids for f in features], pad_id))


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


class TaskObjective(nn.Module):
    """The model's own loss for the task (what transformers computes too), as a module that DDP can wrap."""

    def __init__(self, model: BertPreTrainedModel, task: "Task"):
        super().__init__()
        self.model, self.task = model, task

    def forward(self, batch: Batch) -> dict[str, Tensor]:
        return {"loss": self.task.forward(self.model, batch).loss}


class Task:
    """One fine-tuning task. The defaults are those of a task that scores one of a list of labels per input or per
    token (`labelled`); a task overrides what it does differently."""

    name: str
    head: type[BertPreTrainedModel]  # the model class: the encoder and this task's head
    labelled = True  # the gold is one of the training data's labels (question answering: a span of the context)
    per_word = False  # a gold per word, scored on every word of a held-out sentence
    reads_pair = False  # needs sentence B (question answering: the context)
    metric = "accuracy"  # what picks the best epoch
    explains = "label"  # the Target kind of `explain`

    @property
    def one_label(self) -> bool:
        """One label per input (a classifier of the whole input)."""
        return self.labelled and not self.per_word

    def __repr__(self) -> str:
        return f"<task {self.name}>"

    # --- data ------------------------------------------------------------------------------------------------------
    def read(self, path: Path, columns: tuple[str, str | None, str]) -> list:
        """The examples of a file; `columns`: text, pair and label column names (a table's)."""
        raise NotImplementedError

    def label_names(self, examples: list) -> list[str] | None:
        return label_names(examples) if self.labelled else None

    def encode(self, examples: list, tokenizer: Tokenizer, max_length: int, labels: list[str] | None = None,
               stride: int = 128) -> list[Feature]:
        """Features of `examples`; `labels`: the label (or tag) names, in id order."""
        raise NotImplementedError

    def eval_length(self, max_length: int, model_max_tokens: int) -> int:
        """How many tokens a held-out input is read to."""
        return max_length

    def collate(self, features: list[Feature], pad_id: int) -> Batch:
        batch = pad(features, pad_id)
        if features[0].label is not None:
            batch.labels = torch.tensor([f.label for f in features])
        return batch

    # --- the loss and held-out scores ------------------------------------------------------------------------------
    def forward(self, model: BertPreTrainedModel, batch: Batch):
        """The model's output on a batch, with its loss where the batch has targets."""
        return model(batch.input_ids, batch.segment_ids, batch.attention_mask, labels=batch.labels)

    def has_targets(self, chunk: list[Feature]) -> bool:
        return all(f.label is not None for f in chunk)

    def targets(self, chunk: list[Feature], batch: Batch) -> int:
        """How many targets the batch's mean loss is over (a label the training never showed has none)."""
        return sum(f.label != IGNORE for f in chunk)

    def outputs(self, out, row: int, n: int):
        """One feature's outputs as float32 numpy, from row `row` of a batch's output; `n`: its length."""
        return out.logits[row].float().cpu().numpy()

    @torch.no_grad()
    def logits_of(self, model: BertPreTrainedModel, features: list[Feature], pad_id: int, batch_size: int = 64,
                  device: torch.device | str = "cpu") -> tuple[list, float]:
        """Per feature: class logits (C,), token logits (T, C), or (start, end) logits (T,) each, as float32 numpy;
        and the mean loss."""
        was_training = model.training
        model.eval()
        loss_sum, count = 0.0, 0
        # Longest first in batches of similar length: less padding, and the same numbers whatever the order.
        order = sorted(range(len(features)), key=lambda k: -len(features[k].ids))
        by_index: dict[int, object] = {}
        for begin in range(0, len(order), batch_size):
            chunk = [features[k] for k in order[begin:begin + batch_size]]
            batch = self.collate(chunk, pad_id).to(torch.device(device))
            if not self.has_targets(chunk):
                batch.labels = None
            out = self.forward(model, batch)
            targets = self.targets(chunk, batch)
            if out.loss is not None and targets:
                loss_sum += float(out.loss) * targets
                count += targets
            for row, k in enumerate(order[begin:begin + batch_size]):
                by_index[k] = self.outputs(out, row, len(features[k].ids))
        model.train(was_training)
        return [by_index[k] for k in range(len(features))], (loss_sum / count if count else float("nan"))

    def evaluate(self, model: BertPreTrainedModel, tokenizer: Tokenizer, examples: list, features: list[Feature],
                 labels: list[str] | None, batch_size: int = 64, device: torch.device | str = "cpu"
                 ) -> tuple[dict, list[dict]]:
        """Held-out metrics and one row per example (text, gold, prediction, confidence, loss) for the held-out
        table."""
        outputs, loss = self.logits_of(model, features, tokenizer.pad_token_id, batch_size, device)
        return self.score(examples, features, outputs, labels, loss)

    def score(self, examples: list, features: list[Feature], outputs: list, labels: list[str] | None,
              loss: float) -> tuple[dict, list[dict]]:
        raise NotImplementedError

    def main_metric(self, labels: list[str] | None) -> str:
        """The number that picks the best epoch."""
        return self.metric

    def baseline(self, train: list, heldout: list) -> dict | None:
        """What needs no model, for metrics.json."""
        return None

    # --- the head --------------------------------------------------------------------------------------------------
    def made(self, head) -> bool:
        """Whether a checkpoint's head (a checkpoint.TaskHead, or None) was fine-tuned for this task."""
        return head is not None and self.name == head.task

    def fit_head(self, net: nn.Module, labels: list[str] | None, existing) -> list[str]:
        """Give the model a head for `labels`: the checkpoint's own (`existing`, a checkpoint.TaskHead) when it was
        fine-tuned for this task with these very labels, else a new one (normal(0, initializer_range), zero bias, as
        BERT initializes). Returns the new parameters' names."""
        if self.made(existing) and existing.labels == labels:
            return []
        net.config = dataclasses.replace(net.config, num_labels=len(labels))
        net.num_labels = len(labels)
        net.classifier = nn.Linear(net.config.hidden_size, len(labels))
        reset_linear(net.classifier, net.config.initializer_range)
        return ["classifier.weight", "classifier.bias"]

    # --- one input -------------------------------------------------------------------------------------------------
    def predict(self, model: BertPreTrainedModel, tokenizer: Tokenizer, labels: list[str] | None,
                encoding: Encoding):
        """The task's answer for one encoded input."""
        raise NotImplementedError

    @torch.no_grad()
    def explain(self, model: BertPreTrainedModel, labels: list[str] | None, encoding: Encoding,
                label: str | None = None, position: int | None = None) -> Target:
        """The number that integrated gradients and head ranking explain for one encoded input: log P(`label`)
        (default: the predicted label). Raises ValueError in words when the label does not fit."""
        return label_target(self._logits(model, encoding)[0], labels, label, "label", 0)

    @staticmethod
    def _logits(model: BertPreTrainedModel, encoding: Encoding):
        device = next(model.parameters()).device
        return model(torch.tensor([encoding.ids], device=device),
                     torch.tensor([encoding.segment_ids], device=device)).logits

    # --- the timeline ----------------------------------------------------------------------------------------------
    def timeline_input(self, example) -> TimelineInput:
        """A held-out example as a timeline input, with its gold answer."""
        raise NotImplementedError

    def check_timeline_inputs(self, inputs: list[TimelineInput], name: str) -> str | None:
        """Why `inputs` (read from the file `name`) do not fit this task, in words; None when they do."""
        return None


def label_target(logits: Tensor, labels: list[str], label: str | None, kind: str, position: int) -> Target:
    """log P(`label`) of `logits` (one row of the head), default the most probable."""
    if label is None:
        index = int(logits.argmax())
    elif label in labels:
        index = labels.index(label)
    else:
        raise ValueError(f"{label!r} is not one of the model's labels ({', '.join(labels[:20])})")
    return Target(kind, position, index, labels[index])


def reset_linear(layer: nn.Linear, std: float) -> None:
    with torch.no_grad():
        nn.init.normal_(layer.weight, std=std)
        nn.init.zeros_(layer.bias)
