"""question-answering: `[CLS] question [SEP] context window [SEP]`, long contexts in overlapping windows, the
answer's first and last token (or [CLS] when the window does not hold it) (SQuAD exact match and F1)."""

from __future__ import annotations

import collections
import re
import string
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ...model import BertForQuestionAnswering
from ...targets import Target
from ...timeline import MAX_LINE_CHARS, TimelineInput
from ..data import DataError, QAExample, read_squad
from .base import Batch, Feature, Task, pad, reset_linear, softmax

MAX_QUESTION_TOKENS = 64
QA_WINDOW = 384  # tokens of each window `predict` reads a question and its context in
MAX_ANSWER_TOKENS = 30


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


class QuestionAnswering(Task):
    name = "question-answering"
    head = BertForQuestionAnswering
    labelled = False
    reads_pair = True
    metric = "f1"
    explains = "answer"

    def read(self, path: Path, columns) -> list[QAExample]:
        return read_squad(path)

    def encode(self, examples, tokenizer, max_length, labels=None, stride=128) -> list[Feature]:
        return encode_windows(examples, tokenizer, max_length, stride)

    def collate(self, features: list[Feature], pad_id: int) -> Batch:
        batch = pad(features, pad_id)
        batch.start_positions = torch.tensor([f.start for f in features])
        batch.end_positions = torch.tensor([f.end for f in features])
        return batch

    def forward(self, model, batch: Batch):
        return model(batch.input_ids, batch.segment_ids, batch.attention_mask,
                     start_positions=batch.start_positions, end_positions=batch.end_positions)

    def has_targets(self, chunk) -> bool:
        return True

    def targets(self, chunk, batch) -> int:
        return len(chunk)

    def outputs(self, out, row: int, n: int):
        return (out.start_logits[row, :n].float().cpu().numpy(), out.end_logits[row, :n].float().cpu().numpy())

    def score(self, examples, features, outputs, labels, loss):
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

    def fit_head(self, net, labels, existing) -> list[str]:
        if self.made(existing):
            return []
        reset_linear(net.qa_outputs, net.config.initializer_range)
        return ["qa_outputs.weight", "qa_outputs.bias"]

    @torch.no_grad()
    def predict(self, model, tokenizer, labels, encoding) -> AnswerPrediction:
        """Sentence A is the question and sentence B the context, read in overlapping windows of at most QA_WINDOW
        tokens."""
        text, text_pair = encoding.text, encoding.text_pair
        if not text_pair or not text_pair.strip():
            raise ValueError("question answering needs a question (sentence A) and a context to find the answer in "
                             "(sentence B)")
        device = next(model.parameters()).device
        example = QAExample("input", text, text_pair)
        # Windows of QA_WINDOW tokens, or of the explorer's limit when the input had to be cut to it (the truncation
        # records it); an input that fitted fits one window of either length, so the limit need not travel here.
        window = min(QA_WINDOW, encoding.truncation.max_tokens) if encoding.truncation is not None else QA_WINDOW
        best = None
        for f in encode_windows([example], tokenizer, window, stride=128):
            out = model(torch.tensor([f.ids], device=device), torch.tensor([f.segment_ids], device=device))
            s, e = out.start_logits[0].float().cpu().numpy(), out.end_logits[0].float().cpu().numpy()
            span = best_span(s, e, f.context_start, len(f.offsets))
            if span is not None and (best is None or span[0] > best[0][0]):
                best = (span, f, softmax(s), softmax(e))
        if best is None:
            return AnswerPrediction("", 0, 0, 0.0, 0.0, float("-inf"))
        (score, s, e), f, ps, pe = best
        char_start, char_end = f.offsets[s - f.context_start][0], f.offsets[e - f.context_start][1]
        return AnswerPrediction(text_pair[char_start:char_end], char_start, char_end, float(ps[s]), float(pe[e]),
                                score)

    @torch.no_grad()
    def explain(self, model, labels, encoding, label=None, position=None) -> Target:
        """log P(start) + log P(end) of the predicted answer span."""
        device = next(model.parameters()).device
        out = model(torch.tensor([encoding.ids], device=device), torch.tensor([encoding.segment_ids], device=device))
        context = [i for i, s in enumerate(encoding.sequence_ids) if s == 1]
        if not context:
            raise ValueError("question answering needs a question (sentence A) and a passage (sentence B)")
        span = best_span(out.start_logits[0].float().cpu().numpy(), out.end_logits[0].float().cpu().numpy(),
                         context[0], len(context))
        if span is None:
            raise ValueError("the model finds no answer span in this passage")
        return Target("answer", span[1], end=span[2])

    def timeline_input(self, example: QAExample) -> TimelineInput:
        context = example.context
        if len(context) > MAX_LINE_CHARS:
            context = context[:MAX_LINE_CHARS].rsplit(" ", 1)[0]
        gold = next((text for text, start in example.answers if start + len(text) <= len(context)), None)
        return TimelineInput(example.question, context, gold=gold)

    def check_timeline_inputs(self, inputs, name):
        if not all(i.text_pair for i in inputs):
            return (f"{name}: question answering reads a question and a context; write each input as "
                    "'question [SEP] context'")
        return None


def encode_windows(examples: list[QAExample], tokenizer, max_length: int, stride: int) -> list[Feature]:
    """Each question with its context in windows of `max_length` tokens that overlap by `stride` at most."""
    questions = tokenizer.encode_batch([e.question for e in examples], add_special_tokens=False)
    contexts = _unique_contexts(examples, tokenizer)
    features = []
    for i, (e, q) in enumerate(zip(examples, questions)):
        q_ids = q.ids[:MAX_QUESTION_TOKENS]
        c_ids, c_offsets = contexts[e.context]
        budget = max_length - len(q_ids) - 3
        if budget < 8:
            raise DataError(f"--max-tokens {max_length} leaves no room for the context after the question; use 128 "
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


def _unique_contexts(examples: list[QAExample], tokenizer) -> dict[str, tuple[list[int], list]]:
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
