"""The three fine-tuning tasks, each as the field does it: examples -> model inputs (features), the loss, held-out
metrics, and the answer for one input (`predict`, which `Explorer.predict` calls).

- text-classification: `[CLS] text [SEP] (text_pair [SEP])`, a label per input from the pooler (accuracy);
- token-classification: each word's pieces, the tag on the first piece and the others ignored (-100) (accuracy over
  words, and entity F1 when the tags are BIO);
- question-answering: `[CLS] question [SEP] context window [SEP]`, long contexts in overlapping windows, the answer's
  first and last token (or [CLS] when the window does not hold it) (SQuAD exact match and F1).
"""

from __future__ import annotations

import collections
import math
import re
import string
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..checkpoint import TASK_MODELS
from ..model import BertForQuestionAnswering, BertPreTrainedModel
from ..targets import Target
from ..tokenizer import Encoding, Tokenizer
from .data import DataError, QAExample, TaggedExample, TextExample

TEXT_CLASSIFICATION, TOKEN_CLASSIFICATION, QUESTION_ANSWERING = ("text-classification", "token-classification",
                                                                  "question-answering")
TASKS = tuple(TASK_MODELS)
IGNORE = -100
# A word's start in Feature.word_starts when the model never saw it: NO_PIECES (only control characters: counted as
# wrong, as the reference counts it) or PAST_LENGTH (cut by --max-length: not scored, and counted as cut).
NO_PIECES, PAST_LENGTH = -1, -2
MAX_QUESTION_TOKENS = 64
QA_WINDOW = 384  # tokens of each window `predict` reads a question and its context in
MAX_ANSWER_TOKENS = 30


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


def collate(features: list[Feature], pad_id: int, task: str) -> Batch:
    """Pad to the longest feature of the batch (not to --max-length: sentences are short, and padding costs as much as
    text)."""
    T = max(len(f.ids) for f in features)
    B = len(features)
    ids = torch.full((B, T), pad_id, dtype=torch.long)
    segments = torch.zeros((B, T), dtype=torch.long)
    mask = torch.zeros((B, T), dtype=torch.long)
    labels = torch.full((B, T), IGNORE, dtype=torch.long) if task == TOKEN_CLASSIFICATION else None
    for row, f in enumerate(features):
        n = len(f.ids)
        ids[row, :n] = torch.tensor(f.ids)
        segments[row, :n] = torch.tensor(f.segment_ids)
        mask[row, :n] = 1
        if labels is not None and f.label is not None:
            labels[row, :n] = torch.tensor(f.label)
    batch = Batch(ids, segments, mask, labels)
    if task == TEXT_CLASSIFICATION and features[0].label is not None:
        batch.labels = torch.tensor([f.label for f in features])
    if task == QUESTION_ANSWERING:
        batch.start_positions = torch.tensor([f.start for f in features])
        batch.end_positions = torch.tensor([f.end for f in features])
    return batch


class TaskObjective(nn.Module):
    """The model's own loss for the task (what transformers computes too), as a module that DDP can wrap."""

    def __init__(self, model: BertPreTrainedModel):
        super().__init__()
        self.model = model

    def forward(self, batch: Batch) -> dict[str, Tensor]:
        return {"loss": forward(self.model, batch).loss}


def forward(model: BertPreTrainedModel, batch: Batch):
    """The model's output on a batch, with its loss where the batch has targets."""
    if isinstance(model, BertForQuestionAnswering):
        return model(batch.input_ids, batch.segment_ids, batch.attention_mask,
                     start_positions=batch.start_positions, end_positions=batch.end_positions)
    return model(batch.input_ids, batch.segment_ids, batch.attention_mask, labels=batch.labels)


# ------------------------------------------------------------------------------------------------------------------
# Examples -> features
# ------------------------------------------------------------------------------------------------------------------
def encode(task: str, examples: list, tokenizer: Tokenizer, max_length: int, labels: list[str] | None = None,
           stride: int = 128) -> list[Feature]:
    """Features of `examples` for `task`; `labels`: the label (or tag) names, in id order."""
    label_id = {name: i for i, name in enumerate(labels or [])}
    if task == TEXT_CLASSIFICATION:
        return _encode_text(examples, tokenizer, max_length, label_id)
    if task == TOKEN_CLASSIFICATION:
        return _encode_tagged(examples, tokenizer, max_length, label_id)
    return _encode_qa(examples, tokenizer, max_length, stride)


def _encode_text(examples: list[TextExample], tokenizer: Tokenizer, max_length: int,
                 label_id: dict[str, int]) -> list[Feature]:
    pairs = [e.text_pair for e in examples] if any(e.text_pair is not None for e in examples) else None
    encodings = tokenizer.encode_batch([e.text for e in examples], pairs, max_tokens=max_length)
    # A held-out label the training data never shows: no target (the loss skips it); the score counts it wrong.
    missing = IGNORE if label_id else None
    return [Feature(enc.ids, enc.segment_ids, i, label_id.get(e.label, missing))
            for i, (e, enc) in enumerate(zip(examples, encodings))]


def word_pieces(words: list[str], tokenizer: Tokenizer) -> list[list[int]]:
    """The piece ids of each word, as the reference tokenizer splits a word given on its own."""
    return [enc.ids for enc in tokenizer.encode_batch(words, add_special_tokens=False)] if words else []


def _encode_tagged(examples: list[TaggedExample], tokenizer: Tokenizer, max_length: int,
                   label_id: dict[str, int]) -> list[Feature]:
    flat = [w for e in examples for w in e.words]
    pieces = iter(word_pieces(flat, tokenizer))
    features = []
    for i, e in enumerate(examples):
        ids, labels, starts = [tokenizer.cls_token_id], [IGNORE], []
        for tag in e.tags:
            word = next(pieces)
            if not word or len(ids) + len(word) > max_length - 1:
                starts.append(PAST_LENGTH if word else NO_PIECES)
                continue
            starts.append(len(ids))
            ids += word
            labels += [label_id.get(tag, IGNORE)] + [IGNORE] * (len(word) - 1)
        ids.append(tokenizer.sep_token_id)
        labels.append(IGNORE)
        features.append(Feature(ids, [0] * len(ids), i, labels, word_starts=starts))
    return features


def _encode_qa(examples: list[QAExample], tokenizer: Tokenizer, max_length: int, stride: int) -> list[Feature]:
    questions = tokenizer.encode_batch([e.question for e in examples], add_special_tokens=False)
    contexts = _unique_contexts(examples, tokenizer)
    features = []
    for i, (e, q) in enumerate(zip(examples, questions)):
        q_ids = q.ids[:MAX_QUESTION_TOKENS]
        c_ids, c_offsets = contexts[e.context]
        budget = max_length - len(q_ids) - 3
        if budget < 8:
            raise DataError(f"--max-length {max_length} leaves no room for the context after the question; use 128 "
                            "or more")
        step = max(1, budget - min(stride, budget // 2))  # windows overlap by `stride` tokens at most
        answer = e.answers[0] if e.answers else None
        start = 0
        while True:
            end = min(start + budget, len(c_ids))
            ids = [tokenizer.cls_token_id, *q_ids, tokenizer.sep_token_id, *c_ids[start:end], tokenizer.sep_token_id]
            segments = [0] * (len(q_ids) + 2) + [1] * (end - start + 1)
            f = Feature(ids, segments, i, context_start=len(q_ids) + 2, offsets=c_offsets[start:end])
            if answer is not None:
                f.start, f.end = _answer_tokens(answer, c_offsets, start, end, f.context_start)
            features.append(f)
            if end >= len(c_ids):
                break
            start += step
    return features


def _unique_contexts(examples: list[QAExample], tokenizer: Tokenizer) -> dict[str, tuple[list[int], list]]:
    """SQuAD asks several questions about each paragraph: tokenize each paragraph once."""
    unique = list(dict.fromkeys(e.context for e in examples))
    return {text: (enc.ids, enc.offsets) for text, enc in
            zip(unique, tokenizer.encode_batch(unique, add_special_tokens=False))}


def _answer_tokens(answer: tuple[str, int], offsets, start: int, end: int, context_start: int) -> tuple[int, int]:
    text, char_start = answer
    char_end = char_start + len(text)
    inside = [k for k in range(start, end) if offsets[k][1] > char_start and offsets[k][0] < char_end]
    first_all = next((k for k, (s, e) in enumerate(offsets) if e > char_start), None)
    last_all = max((k for k, (s, e) in enumerate(offsets) if s < char_end), default=None)
    if not inside or first_all is None or first_all < start or last_all >= end:
        return 0, 0  # the answer is not (wholly) in this window: point at [CLS]
    return context_start + first_all - start, context_start + last_all - start


# ------------------------------------------------------------------------------------------------------------------
# Evaluation
# ------------------------------------------------------------------------------------------------------------------
@torch.no_grad()
def logits_of(model: BertPreTrainedModel, features: list[Feature], pad_id: int, task: str, batch_size: int = 64,
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
        batch = collate(chunk, pad_id, task).to(torch.device(device))
        if not _has_targets(chunk, task):
            batch.labels = None
        out = forward(model, batch)
        # the loss is the mean over the targets there are (a label the training never showed has none)
        if task == TEXT_CLASSIFICATION:
            targets = sum(f.label != IGNORE for f in chunk)
        else:
            targets = len(chunk) if batch.labels is None or bool((batch.labels != IGNORE).any()) else 0
        if out.loss is not None and targets:
            loss_sum += float(out.loss) * targets
            count += targets
        if task == QUESTION_ANSWERING:
            for row, k in enumerate(order[begin:begin + batch_size]):
                n = len(features[k].ids)
                by_index[k] = (out.start_logits[row, :n].float().cpu().numpy(),
                               out.end_logits[row, :n].float().cpu().numpy())
        else:
            logits = out.logits.float().cpu().numpy()
            for row, k in enumerate(order[begin:begin + batch_size]):
                by_index[k] = logits[row] if task == TEXT_CLASSIFICATION else logits[row, :len(features[k].ids)]
    model.train(was_training)
    outputs = [by_index[k] for k in range(len(features))]
    return outputs, (loss_sum / count if count else float("nan"))


def _has_targets(chunk: list[Feature], task: str) -> bool:
    return task == QUESTION_ANSWERING or all(f.label is not None for f in chunk)


def evaluate(task: str, model: BertPreTrainedModel, tokenizer: Tokenizer, examples: list, features: list[Feature],
             labels: list[str] | None, batch_size: int = 64, device: torch.device | str = "cpu"
             ) -> tuple[dict, list[dict]]:
    """Held-out metrics and one row per example (text, gold, prediction, confidence, loss) for the held-out table."""
    outputs, loss = logits_of(model, features, tokenizer.pad_token_id, task, batch_size, device)
    if task == TEXT_CLASSIFICATION:
        return _evaluate_text(examples, features, outputs, labels, loss)
    if task == TOKEN_CLASSIFICATION:
        return _evaluate_tags(examples, features, outputs, labels, loss)
    return _evaluate_qa(examples, features, outputs, loss)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _evaluate_text(examples, features, outputs, labels, loss):
    rows, correct, predicted = [], 0, []
    index = {name: k for k, name in enumerate(labels)}
    for e, logits in zip(examples, outputs):
        p = _softmax(logits)
        k = int(p.argmax())
        gold = index.get(e.label)  # None: a label the training data never shows, which counts as wrong
        correct += gold is not None and k == gold
        rows.append({"text": e.text, "text_pair": e.text_pair, "gold": e.label, "prediction": labels[k],
                     "confidence": float(p[k]),
                     "loss": None if gold is None else float(-math.log(max(p[gold], 1e-45)))})
        predicted.append(labels[k])
    return {"accuracy": correct / len(examples), "loss": loss,
            **class_scores([e.label for e in examples], predicted, labels)}, rows


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


def _evaluate_tags(examples, features, outputs, labels, loss):
    rows, correct, total, cut, cut_sentences = [], 0, 0, 0, 0
    gold_all, pred_all = [], []
    index = {name: k for k, name in enumerate(labels)}
    for e, f, logits in zip(examples, features, outputs):
        p = _softmax(logits)  # (T, tags)
        # Only what the model saw is scored: a word cut by the length limit is counted apart; a word of no pieces
        # counts as wrong ("").
        seen = [k for k, t in enumerate(f.word_starts) if t != PAST_LENGTH]
        predicted = [labels[int(p[t].argmax())] if t >= 0 else "" for t in f.word_starts]
        gold, guessed = [e.tags[k] for k in seen], [predicted[k] for k in seen]
        hits = sum(g == q for g, q in zip(gold, guessed))
        correct += hits
        total += len(seen)
        cut += len(e.tags) - len(seen)
        cut_sentences += len(seen) < len(e.tags)
        gold_all.append(gold)
        pred_all.append(guessed)
        gold_p = [p[t, index[g]] for t, g in zip(f.word_starts, e.tags) if t >= 0 and g in index]
        confidence = [p[t].max() for t in f.word_starts if t >= 0]
        rows.append({"text": " ".join(e.words), "gold": " ".join(e.tags), "prediction": " ".join(predicted),
                     "confidence": float(np.mean(confidence)) if confidence else 0.0,
                     "loss": -float(np.mean(np.log(np.maximum(gold_p, 1e-45)))) if gold_p else 0.0,
                     "accuracy": hits / max(len(seen), 1)})
    metrics = {"accuracy": correct / max(total, 1), "loss": loss, "words": total}
    if cut:
        metrics.update(words_cut=cut, sentences_cut=cut_sentences)
    if is_bio(labels):
        metrics.update(entity_scores(gold_all, pred_all))
    return metrics, rows


def is_bio(labels: list[str]) -> bool:
    """True for IOB/BIO tags (O, B-PER, I-PER, ...): then entity F1 is the measure the field reports."""
    return "O" in labels and all(t == "O" or re.match(r"^[BI]-.+", t) for t in labels) and len(labels) > 1


def _entities(tags: list[str]) -> set[tuple[int, int, str]]:
    """(start, end, type) of every entity, as conlleval reads them: an I- after O or another type starts one."""
    found, start, kind = set(), None, None
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, typ = tag.partition("-")
        if start is not None and (prefix in ("B", "O", "") or typ != kind):
            found.add((start, i, kind))
            start = None
        if prefix in ("B", "I") and start is None:
            start, kind = i, typ
    return found


def entity_scores(gold: list[list[str]], predicted: list[list[str]]) -> dict:
    tp = n_gold = n_pred = 0
    for g, p in zip(gold, predicted):
        eg, ep = _entities(g), _entities(p)
        tp += len(eg & ep)
        n_gold += len(eg)
        n_pred += len(ep)
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def best_span(start_logits: np.ndarray, end_logits: np.ndarray, context_start: int, n_context: int,
              max_answer_tokens: int = MAX_ANSWER_TOKENS, top: int = 20) -> tuple[float, int, int] | None:
    """(score, start, end) of the best answer inside the context tokens (start <= end, at most max_answer_tokens),
    score = start logit + end logit; None if the window has no context."""
    if n_context <= 0:
        return None
    lo, hi = context_start, context_start + n_context
    starts = np.argsort(start_logits[lo:hi])[::-1][:top] + lo
    ends = np.argsort(end_logits[lo:hi])[::-1][:top] + lo
    best = None
    for s in starts:
        for e in ends:
            if s <= e < s + max_answer_tokens:
                score = float(start_logits[s] + end_logits[e])
                if best is None or score > best[0]:
                    best = (score, int(s), int(e))
    return best


def _evaluate_qa(examples, features, outputs, loss):
    by_example: dict[int, tuple] = {}
    for f, (s, e) in zip(features, outputs):
        span = best_span(s, e, f.context_start, len(f.offsets))
        if span is not None and (f.example not in by_example or span[0] > by_example[f.example][0][0]):
            by_example[f.example] = (span, f)
    rows, em, f1 = [], 0.0, 0.0
    for i, ex in enumerate(examples):
        answer, confidence = "", 0.0
        if i in by_example:
            (score, s, e), f = by_example[i]
            answer = ex.context[f.offsets[s - f.context_start][0]:f.offsets[e - f.context_start][1]]
        golds = [text for text, _ in ex.answers]
        this_em = max(float(normalize_answer(answer) == normalize_answer(g)) for g in golds)
        this_f1 = max(answer_f1(answer, g) for g in golds)
        em += this_em
        f1 += this_f1
        rows.append({"text": ex.question, "text_pair": ex.context, "gold": golds[0], "prediction": answer,
                     "confidence": confidence, "loss": 1.0 - this_f1})
    n = max(len(examples), 1)
    return {"exact_match": em / n, "f1": f1 / n, "loss": loss}, rows


def normalize_answer(text: str) -> str:
    """SQuAD's normalization: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def answer_f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((collections.Counter(p) & collections.Counter(g)).values())
    if not p or not g:
        return float(p == g)
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def main_metric(task: str, labels: list[str] | None) -> str:
    """The number that picks the best epoch."""
    if task == QUESTION_ANSWERING:
        return "f1"
    if task == TOKEN_CLASSIFICATION and labels and is_bio(labels):
        return "f1"
    return "accuracy"


# ------------------------------------------------------------------------------------------------------------------
# One input's answer
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class ClassPrediction:
    """The predicted label, and every label's probability (in the model's label order)."""

    label: str
    probability: float
    probabilities: dict[str, float]

    def __str__(self) -> str:
        return f"{self.label} ({self.probability:.3f})"


@dataclass
class WordTag:
    word: str
    tag: str
    probability: float
    start: int  # character span of the word in the text
    end: int


@dataclass
class TagPrediction:
    """A tag per word (the tag of its first piece, as in training), with its probability."""

    words: list[WordTag]

    @property
    def tags(self) -> list[str]:
        return [w.tag for w in self.words]

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([vars(w) for w in self.words])

    def __str__(self) -> str:
        return " ".join(f"{w.word}/{w.tag}" for w in self.words)


@dataclass
class AnswerPrediction:
    """The answer span in the context (characters start:end), with the probabilities of its first and last token
    (softmax over the tokens of the window that holds it)."""

    answer: str
    start: int
    end: int
    start_probability: float
    end_probability: float
    score: float  # start logit + end logit

    def __str__(self) -> str:
        return f"{self.answer!r} (start {self.start_probability:.3f}, end {self.end_probability:.3f})"


@torch.no_grad()
def predict(model: BertPreTrainedModel, tokenizer: Tokenizer, task: str, labels: list[str] | None,
            encoding: Encoding):
    """The task's answer for one encoded input: ClassPrediction, TagPrediction or AnswerPrediction (for QA, sentence
    A is the question and sentence B the context, read in overlapping windows of at most QA_WINDOW tokens)."""
    device = next(model.parameters()).device
    enc, text, text_pair = encoding, encoding.text, encoding.text_pair
    if task == TEXT_CLASSIFICATION:
        logits = model(torch.tensor([enc.ids], device=device), torch.tensor([enc.segment_ids], device=device)).logits
        p = F.softmax(logits[0].float(), -1).cpu().numpy()
        k = int(p.argmax())
        return ClassPrediction(labels[k], float(p[k]), {name: float(v) for name, v in zip(labels, p)})
    if task == TOKEN_CLASSIFICATION:
        if text_pair:
            raise ValueError("a tagger reads one text; leave the second sentence empty")
        logits = model(torch.tensor([enc.ids], device=device), torch.tensor([enc.segment_ids], device=device)).logits
        p = F.softmax(logits[0].float(), -1).cpu().numpy()
        words: list[WordTag] = []
        for i, token in enumerate(enc.tokens):
            if enc.sequence_ids[i] is None:
                continue
            start, end = enc.offsets[i]
            if token.startswith("##") and words:  # a continuation piece: extends the word, its tag is ignored
                words[-1].end = end
                words[-1].word = text[words[-1].start:end]
                continue
            k = int(p[i].argmax())
            words.append(WordTag(text[start:end], labels[k], float(p[i, k]), start, end))
        return TagPrediction(words)
    if not text_pair or not text_pair.strip():
        raise ValueError("question answering needs a question (sentence A) and a context to find the answer in "
                         "(sentence B)")
    example = QAExample("input", text, text_pair)
    # Windows of QA_WINDOW tokens, or of the explorer's limit when the input had to be cut to it (the truncation
    # records it); an input that fitted fits one window of either length, so the limit need not travel here.
    window = min(QA_WINDOW, encoding.truncation.max_tokens) if encoding.truncation is not None else QA_WINDOW
    features = _encode_qa([example], tokenizer, window, stride=128)
    best = None
    for f in features:
        out = model(torch.tensor([f.ids], device=device), torch.tensor([f.segment_ids], device=device))
        s, e = out.start_logits[0].float().cpu().numpy(), out.end_logits[0].float().cpu().numpy()
        span = best_span(s, e, f.context_start, len(f.offsets))
        if span is not None and (best is None or span[0] > best[0][0]):
            best = (span, f, _softmax(s), _softmax(e))
    if best is None:
        return AnswerPrediction("", 0, 0, 0.0, 0.0, float("-inf"))
    (score, s, e), f, ps, pe = best
    char_start, char_end = f.offsets[s - f.context_start][0], f.offsets[e - f.context_start][1]
    return AnswerPrediction(text_pair[char_start:char_end], char_start, char_end, float(ps[s]), float(pe[e]), score)


# ------------------------------------------------------------------------------------------------------------------
# What an explanation explains
# ------------------------------------------------------------------------------------------------------------------
@torch.no_grad()
def explain_target(model: BertPreTrainedModel, task: str, labels: list[str] | None, encoding,
                   label: str | None = None, position: int | None = None) -> Target:
    """The number that integrated gradients and head ranking explain for one encoded input: log P(`label`) of a
    classifier (default: the predicted label); log P(`label`) for the tag of token `position` (default: the first
    word, and its predicted tag); log P(start) + log P(end) of the predicted answer span. Raises ValueError in
    words when the label or position does not fit."""
    device = next(model.parameters()).device
    out = model(torch.tensor([encoding.ids], device=device), torch.tensor([encoding.segment_ids], device=device))
    if task == QUESTION_ANSWERING:
        context = [i for i, s in enumerate(encoding.sequence_ids) if s == 1]
        if not context:
            raise ValueError("question answering needs a question (sentence A) and a passage (sentence B)")
        span = best_span(out.start_logits[0].float().cpu().numpy(), out.end_logits[0].float().cpu().numpy(),
                         context[0], len(context))
        if span is None:
            raise ValueError("the model finds no answer span in this passage")
        return Target("answer", span[1], end=span[2])
    if task == TOKEN_CLASSIFICATION:
        words = [i for i, s in enumerate(encoding.sequence_ids) if s is not None]
        position = words[0] if position is None and words else position
        if position not in words:
            raise ValueError(f"token {position!r} is not a word of the input; pick one of its words")
        logits = out.logits[0, position]
    else:
        logits = out.logits[0]
    if label is None:
        index = int(logits.argmax())
    elif label in labels:
        index = labels.index(label)
    else:
        raise ValueError(f"{label!r} is not one of the model's labels ({', '.join(labels[:20])})")
    kind = "label" if task == TEXT_CLASSIFICATION else "tag"
    return Target(kind, 0 if kind == "label" else position, index, labels[index])
