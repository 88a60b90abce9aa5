"""text-classification: `[CLS] text [SEP] (text_pair [SEP])`, a label per input from the pooler (accuracy, per-class
precision and recall, the confusion matrix)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from ...model import BertForSequenceClassification
from ...timeline import TimelineInput
from ..data import TextExample, read_text_examples
from .base import IGNORE, Feature, Task, softmax


@dataclass
class ClassPrediction:
    """The predicted label, and every label's probability (in the model's label order)."""

    label: str
    probability: float
    probabilities: dict[str, float]

    def __str__(self) -> str:
        return f"{self.label} ({self.probability:.3f})"


class TextClassification(Task):
    name = "text-classification"
    head = BertForSequenceClassification

    def read(self, path: Path, columns: tuple[str, str | None, str]) -> list[TextExample]:
        return read_text_examples(path, *columns)

    def encode(self, examples, tokenizer, max_length, labels=None, stride=128) -> list[Feature]:
        label_id = {name: i for i, name in enumerate(labels or [])}
        pairs = [e.text_pair for e in examples] if any(e.text_pair is not None for e in examples) else None
        encodings = tokenizer.encode_batch([e.text for e in examples], pairs, max_tokens=max_length)
        # A held-out label the training data never shows: no target (the loss skips it); the score counts it wrong.
        missing = IGNORE if label_id else None
        return [Feature(enc.ids, enc.segment_ids, i, label_id.get(e.label, missing))
                for i, (e, enc) in enumerate(zip(examples, encodings))]

    def score(self, examples, features, outputs, labels, loss):
        rows, correct, predicted = [], 0, []
        index = {name: k for k, name in enumerate(labels)}
        for e, logits in zip(examples, outputs):
            p = softmax(logits)
            k = int(p.argmax())
            gold = index.get(e.label)  # None: a label the training data never shows, which counts as wrong
            correct += gold is not None and k == gold
            rows.append({"text": e.text, "text_pair": e.text_pair, "gold": e.label, "prediction": labels[k],
                         "confidence": float(p[k]),
                         "loss": None if gold is None else float(-math.log(max(p[gold], 1e-45)))})
            predicted.append(labels[k])
        return {"accuracy": correct / len(examples), "loss": loss,
                **class_scores([e.label for e in examples], predicted, labels)}, rows

    def baseline(self, train, heldout) -> dict:
        """The most frequent label."""
        top = Counter(e.label for e in train).most_common(1)[0][0]
        return {"majority_label": top, "accuracy": sum(e.label == top for e in heldout) / len(heldout)}

    def fit_head(self, net, labels, existing) -> list[str]:
        new = super().fit_head(net, labels, existing)
        if new:
            net.config.problem_type = "single_label_classification"
        return new

    @torch.no_grad()
    def predict(self, model, tokenizer, labels, encoding) -> ClassPrediction:
        p = F.softmax(self._logits(model, encoding)[0].float(), -1).cpu().numpy()
        k = int(p.argmax())
        return ClassPrediction(labels[k], float(p[k]), {name: float(v) for name, v in zip(labels, p)})

    def timeline_input(self, example: TextExample) -> TimelineInput:
        return TimelineInput(example.text, example.text_pair, gold=example.label)


def class_scores(gold: list[str], predicted: list[str], labels: list[str]) -> dict:
    """Per-class precision and recall, and the confusion matrix, beside accuracy: with one class much more common, a
    good accuracy can hide a class the model never predicts. `confusion["matrix"][i][j]` counts the examples of
    label i predicted as label j; held-out labels the training never shows come after `labels` (their row only can
    be non-zero). Precision is None for a class never predicted, recall for one never seen."""
    names = list(labels) + sorted({g for g in gold} - set(labels))
    index = {name: k for k, name in enumerate(names)}
    matrix = [[0] * len(names) for _ in names]
    for g, p in zip(gold, predicted):
        matrix[index[g]][index[p]] += 1
    per_class = {}
    for k, name in enumerate(names):
        hits, said, seen = matrix[k][k], sum(row[k] for row in matrix), sum(matrix[k])
        per_class[name] = {"precision": hits / said if said else None, "recall": hits / seen if seen else None,
                           "support": seen}
    return {"per_class": per_class, "confusion": {"labels": names, "matrix": matrix}}
