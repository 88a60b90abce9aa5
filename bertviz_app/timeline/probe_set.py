"""A timeline's probe set: tagged (or labelled) sentences held out of the training, whose hidden states every snapshot
stores, so that `Timeline.probe` asks probing.py's one probe what each layer knew at each step.

    timeline/probe-set.json     source, sentences [{text, label}], tags, labels, pieces (the spellings of the pieces
                                used), layers, hidden
    timeline/probe-set.npy      (N, 6) int32: sentence, position, piece (into `pieces`), word, tag (-1: none),
                                segment of every token, the columns of a corpus folder (corpus/build.py)
    timeline/step-NNNNNNN/probe.npy   (L + 1, N, H) float16: every layer's hidden state of every token (0: the
                                embeddings), as a corpus folder keeps them (float16: 2**-11 relative)

Sized by `PROBE_BYTES`: the sentences are taken in their seeded order while a snapshot's states stay within it (the
classroom preset, 3 x 128 float16 a token: about 5,400 tokens)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..files import JSON_LIMIT, inside, read_json
from ..i18n import Translator, english
from ..probing import words_and_tags
from . import format as fmt
from .inputs import TimelineError

PROBE_BYTES = 4 * 2**20      # one snapshot's stored states at most
PROBE_SENTENCES = 256        # and at most this many sentences (a small model's budget holds more than a probe needs)
FILE, COLUMNS, STATES = "probe-set.json", "probe-set.npy", "probe.npy"
BATCH = 64


@dataclass
class ProbeSentence:
    """What a probe set is made of: a sentence, with its words and a tag each (a tagged source), and a label."""
    text: str
    words: list[str] | None = None
    tags: list[str] | None = None
    label: str | None = None


class ProbeSet:
    """The sentences and token columns of a timeline's probe set: the tables probing.probe_data reads of a corpus
    (token_columns, tags, labels, sentences, sentence_starts, pieces), and its states at a snapshot (`states`)."""

    def __init__(self, record: dict, columns: np.ndarray, ids: np.ndarray | None = None):
        self.record, self.token_columns = record, columns
        self.ids = ids  # every token's vocabulary id: a built set's, for the model (a read one needs none)
        self.num_layers, self.hidden_size = int(record["layers"]), int(record["hidden"])

    def __len__(self) -> int:
        return len(self.record["sentences"])

    @property
    def tags(self) -> list[str]:
        return self.record["tags"]

    @property
    def labels(self) -> list[str]:
        return self.record["labels"]

    @property
    def source(self) -> str:
        """What the sentences came from: "brown", or a file's name (never its folder: a visitor reads it)."""
        return self.record["source"]

    def describe(self, tr: Translator = english) -> str:
        """The probe set in words, for a figure: '214 held-out sentences of the Brown corpus' (in `tr`'s language; a
        file's name as it is)."""
        name = tr("the Brown corpus") if self.source == "brown" else self.source
        return tr("{n} held-out sentences of {name}", n=len(self), name=name)

    @cached_property
    def pieces(self) -> np.ndarray:
        return np.asarray(self.record["pieces"], dtype=object)

    @cached_property
    def sentences(self) -> pd.DataFrame:
        return pd.DataFrame({"text": [s["text"] for s in self.record["sentences"]],
                             "label": [s["label"] for s in self.record["sentences"]]})

    @cached_property
    def sentence_starts(self) -> np.ndarray:
        return np.searchsorted(self.token_columns[:, 0], np.arange(len(self) + 1))

    @property
    def state_shape(self) -> tuple[int, int, int]:
        return (self.num_layers + 1, len(self.token_columns), self.hidden_size)

    # --- writing ---------------------------------------------------------------------------------------------------
    @classmethod
    def build(cls, sentences: list[ProbeSentence], source: str, tokenizer, max_tokens: int, num_layers: int,
              hidden_size: int, budget: int = PROBE_BYTES) -> "ProbeSet":
        """The first sentences of `sentences` (already sampled by the caller) whose states fit `budget` bytes a
        snapshot, tokenized as the model reads them."""
        per_token = (num_layers + 1) * hidden_size * 2
        tags = sorted({t for s in sentences for t in (s.tags or ())})
        tag_ids = {t: i for i, t in enumerate(tags)}
        kept, rows, total = [], [], 0
        for sentence in sentences[:PROBE_SENTENCES]:
            enc = tokenizer.encode(sentence.text, max_tokens=max_tokens)
            if (total + len(enc)) * per_token > budget:
                break
            words, tag_of = words_and_tags(sentence.words, sentence.tags, enc, tag_ids)
            rows += [(len(kept), p, enc.ids[p], words[p], tag_of[p], enc.segment_ids[p]) for p in range(len(enc))]
            kept.append(sentence)
            total += len(enc)
        columns = np.asarray(rows, dtype=np.int32).reshape(-1, 6)
        used, columns[:, 2] = np.unique(columns[:, 2], return_inverse=True)
        record = {"source": source, "layers": num_layers, "hidden": hidden_size, "tags": tags,
                  "labels": sorted({s.label for s in kept if s.label is not None}),
                  "pieces": [tokenizer.id_to_token(int(i)) for i in used],
                  "sentences": [{"text": s.text, "label": s.label} for s in kept]}
        return cls(record, columns, used[columns[:, 2]])

    def write(self, folder: Path) -> None:
        np.save(folder / f"{fmt.PARTIAL}{COLUMNS}", self.token_columns)
        (folder / f"{fmt.PARTIAL}{COLUMNS}").replace(folder / COLUMNS)
        fmt.write_json(folder / FILE, self.record)

    @torch.inference_mode()
    def states(self, bert: nn.Module, pad_token_id: int = 0) -> np.ndarray:
        """(L + 1, N, H) float16: every layer's hidden state of every token, the sentences in padded batches of
        BATCH (the model in eval mode: the caller's)."""
        device = next(bert.parameters()).device
        out = np.zeros(self.state_shape, np.float16)
        starts = self.sentence_starts
        for first in range(0, len(self), BATCH):
            batch = range(first, min(first + BATCH, len(self)))
            spans = [(starts[i], starts[i + 1]) for i in batch]
            width = max(b - a for a, b in spans)

            def padded(values, pad=0):
                return torch.tensor([list(values[a:b]) + [pad] * (width - (b - a)) for a, b in spans], device=device)

            run = bert(padded(self.ids, pad_token_id), padded(self.token_columns[:, 5]),
                       padded(np.ones(len(self.ids), np.int64)), capture=("embeddings", "layer.*.output"))
            for layer, hidden in enumerate((run.captured["embeddings"], *run.layers("output"))):
                hidden = hidden.half().cpu().numpy()
                for k, (a, b) in enumerate(spans):
                    out[layer, a:b] = hidden[k, :b - a]
        return out

    # --- reading ---------------------------------------------------------------------------------------------------
    @classmethod
    def read(cls, folder: Path) -> "ProbeSet | None":
        """The probe set of the timeline in `folder`; None when it has none (TimelineError when it is damaged)."""
        if not (folder / FILE).is_file():
            return None
        record = read_json(inside(folder, folder / FILE, TimelineError), TimelineError, JSON_LIMIT)
        try:
            columns = np.load(inside(folder, folder / COLUMNS, TimelineError), allow_pickle=False)
            if (not isinstance(record, dict) or columns.dtype != np.int32 or columns.ndim != 2
                    or columns.shape[1] != 6 or len(record["sentences"]) != int(columns[-1, 0]) + 1):
                raise ValueError("its tables disagree")
            probe_set = cls(record, columns)
        except (OSError, ValueError, KeyError, TypeError, IndexError) as err:
            raise TimelineError(f"the probe set of {folder} cannot be read ({err}); train again to make it") from None
        return probe_set

    def snapshot_states(self, timeline: Path, snapshot: Path) -> np.ndarray:
        """A snapshot's stored states, mapped (not read whole), checked against the probe set's shape."""
        path = inside(timeline, snapshot / STATES, TimelineError)
        try:
            states = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as err:
            raise TimelineError(f"{snapshot.name}/{STATES} cannot be read ({err})") from None
        if states.shape != self.state_shape or states.dtype != np.float16:
            raise TimelineError(f"{snapshot.name}/{STATES} holds {states.dtype} {states.shape}, not the probe set's "
                                f"float16 {self.state_shape}")
        return states
