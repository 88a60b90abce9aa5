"""token-classification: each word's pieces, the tag on the first piece and the others ignored (-100) (accuracy over
words, and entity F1 when the tags are BIO)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ...model import BertForTokenClassification
from ...timeline import TimelineInput
from ..data import TaggedExample, read_tagged_examples
from .base import IGNORE, NO_PIECES, PAST_LENGTH, Batch, Feature, Task, label_target, pad, softmax


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


class TokenClassification(Task):
    name = "token-classification"
    head = BertForTokenClassification
    per_word = True
    explains = "tag"

    def read(self, path: Path, columns) -> list[TaggedExample]:
        return read_tagged_examples(path)

    def encode(self, examples, tokenizer, max_length, labels=None, stride=128) -> list[Feature]:
        label_id = {name: i for i, name in enumerate(labels or [])}
        flat = [w for e in examples for w in e.words]
        pieces = iter(word_pieces(flat, tokenizer))
        features = []
        for i, e in enumerate(examples):
            ids, tags, starts = [tokenizer.cls_token_id], [IGNORE], []
            for tag in e.tags:
                word = next(pieces)
                if not word or len(ids) + len(word) > max_length - 1:
                    starts.append(PAST_LENGTH if word else NO_PIECES)
                    continue
                starts.append(len(ids))
                ids += word
                tags += [label_id.get(tag, IGNORE)] + [IGNORE] * (len(word) - 1)
            ids.append(tokenizer.sep_token_id)
            tags.append(IGNORE)
            features.append(Feature(ids, [0] * len(ids), i, tags, word_starts=starts))
        return features

    def eval_length(self, max_length: int, model_max_tokens: int) -> int:
        # Tagging is scored on every word, so held-out sentences are read whole (up to the model's limit).
        return model_max_tokens

    def collate(self, features: list[Feature], pad_id: int) -> Batch:
        batch = pad(features, pad_id)
        batch.labels = torch.full(batch.input_ids.shape, IGNORE, dtype=torch.long)
        for row, f in enumerate(features):
            if f.label is not None:
                batch.labels[row, :len(f.ids)] = torch.tensor(f.label)
        return batch

    def targets(self, chunk, batch) -> int:
        return len(chunk) if batch.labels is None or bool((batch.labels != IGNORE).any()) else 0

    def outputs(self, out, row: int, n: int):
        return out.logits[row, :n].float().cpu().numpy()

    def main_metric(self, labels) -> str:
        return "f1" if labels and is_bio(labels) else "accuracy"

    def score(self, examples, features, outputs, labels, loss):
        rows, correct, total, cut, cut_sentences = [], 0, 0, 0, 0
        gold_all, pred_all = [], []
        index = {name: k for k, name in enumerate(labels)}
        for e, f, logits in zip(examples, features, outputs):
            p = softmax(logits)  # (T, tags)
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

    def baseline(self, train, heldout) -> dict:
        """Each word's most frequent tag, the overall most frequent for unseen words."""
        by_word: dict[str, Counter] = {}
        for e in train:
            for w, t in zip(e.words, e.tags):
                by_word.setdefault(w, Counter())[t] += 1
        overall = Counter(t for e in train for t in e.tags).most_common(1)[0][0]
        guesses = [(by_word[w].most_common(1)[0][0] if w in by_word else overall) == t
                   for e in heldout for w, t in zip(e.words, e.tags)]
        return {"most_frequent_tag_accuracy": sum(guesses) / max(len(guesses), 1)}

    @torch.no_grad()
    def predict(self, model, tokenizer, labels, encoding) -> TagPrediction:
        if encoding.text_pair:
            raise ValueError("a tagger reads one text; leave the second sentence empty")
        text = encoding.text
        p = F.softmax(self._logits(model, encoding)[0].float(), -1).cpu().numpy()
        words: list[WordTag] = []
        for i, token in enumerate(encoding.tokens):
            if encoding.sequence_ids[i] is None:
                continue
            start, end = encoding.offsets[i]
            if token.startswith("##") and words:  # a continuation piece: extends the word, its tag is ignored
                words[-1].end = end
                words[-1].word = text[words[-1].start:end]
                continue
            k = int(p[i].argmax())
            words.append(WordTag(text[start:end], labels[k], float(p[i, k]), start, end))
        return TagPrediction(words)

    @torch.no_grad()
    def explain(self, model, labels, encoding, label=None, position=None):
        """log P(`label`) for the tag of token `position` (default: the first word, and its predicted tag)."""
        logits = self._logits(model, encoding)
        words = [i for i, s in enumerate(encoding.sequence_ids) if s is not None]
        position = words[0] if position is None and words else position
        if position not in words:
            raise ValueError(f"token {position!r} is not a word of the input; pick one of its words")
        return label_target(logits[0, position], labels, label, "tag", position)

    def timeline_input(self, example: TaggedExample) -> TimelineInput:
        return TimelineInput(" ".join(example.words), gold=list(example.tags))

    def check_timeline_inputs(self, inputs, name):
        if any(i.text_pair for i in inputs):
            return f"{name}: a tagger reads one text; write each input without [SEP]"
        return None


def word_pieces(words: list[str], tokenizer) -> list[list[int]]:
    """The piece ids of each word, as the reference tokenizer splits a word given on its own."""
    return [enc.ids for enc in tokenizer.encode_batch(words, add_special_tokens=False)] if words else []


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
