"""A fourth fine-tuning task written as a newcomer would, to hold the registry to its promise (a new task is one file
and one line in finetuning/tasks/__init__.py's TASKS): a score per text, the pooler's one output trained with mean
squared error. test_finetuning.py registers it for one test."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from bertviz_app.finetuning.data import read_text_examples
from bertviz_app.finetuning.tasks import Feature, Task
from bertviz_app.finetuning.tasks.base import reset_linear
from bertviz_app.model import BertForSequenceClassification
from bertviz_app.timeline import TimelineInput


class TextRegression(Task):
    name = "text-regression"
    head = BertForSequenceClassification
    labelled = False
    metric = "neg_mse"  # the best epoch is the highest score

    def read(self, path, columns):
        return read_text_examples(path, *columns)

    def encode(self, examples, tokenizer, max_length, labels=None, stride=128):
        encodings = tokenizer.encode_batch([e.text for e in examples], max_tokens=max_length)
        return [Feature(enc.ids, enc.segment_ids, i, float(e.label)) for i, (e, enc) in enumerate(zip(examples,
                                                                                                        encodings))]

    def targets(self, chunk, batch):
        return len(chunk)

    def score(self, examples, features, outputs, labels, loss):
        rows = [{"text": e.text, "gold": float(e.label), "prediction": float(o[0])} for e, o in zip(examples, outputs)]
        mse = sum((r["gold"] - r["prediction"]) ** 2 for r in rows) / len(rows)
        return {"neg_mse": -mse, "mse": mse, "loss": loss}, rows

    def fit_head(self, net, labels, existing):
        net.config = dataclasses.replace(net.config, num_labels=1)
        net.config.problem_type = "regression"
        net.num_labels = 1
        net.classifier = nn.Linear(net.config.hidden_size, 1)
        reset_linear(net.classifier, net.config.initializer_range)
        return ["classifier.weight", "classifier.bias"]

    @torch.no_grad()
    def predict(self, model, tokenizer, labels, encoding):
        return float(self._logits(model, encoding)[0, 0])

    def timeline_input(self, example):
        return TimelineInput(example.text, gold=example.label)
