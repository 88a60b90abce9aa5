"""`FinetuneSettings`: every setting of a fine-tuning, one field each (help, flags, check). `bertviz-app finetune`'s
options, the checks on construction and metrics.json's `settings` are all read from these fields, so a new setting is
one field here (docs/ARCHITECTURE.md, "Adding a training setting")."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..settings import check, parse_ints, setting
from ..timeline import MAX_SNAPSHOTS
from ..training import SCHEDULES
from . import recipes
from .data import DataError
from .tasks import TASKS


def _whole(least: int):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= least


def _seeds_ok(seeds) -> bool:
    return all(isinstance(s, int) and not isinstance(s, bool) for s in seeds) and len(set(seeds)) == len(seeds)


@dataclass
class FinetuneSettings:
    """What `finetune()` does; invalid values raise DataError (a ValueError) with a sentence naming the option."""

    task: str = setting(help="what to teach: a label per text (or pair), a tag per word, or an answer span in a "
                        "context", positional=True, choices=TASKS,
                        why="unknown task {value!r}; choose one of "
                        f"{', '.join(TASKS)}")
    train: str | os.PathLike = setting(
        help="training data: CSV/TSV/JSONL with a header (text-classification), CoNLL columns or JSONL tokens/tags "
             "(token-classification), SQuAD v1.1 JSON (question-answering); or a built-in recipe fetched on first "
             f"use: {', '.join(recipes.RECIPES)}", metavar="FILE|RECIPE")
    output: str | os.PathLike = setting(
        help="folder to write the fine-tuned model and metrics.json into; refused if it exists and is not empty, "
             "unless --overwrite", metavar="DIR")
    validation: str | os.PathLike | None = setting(
        None, "held-out data in the same format (default: a seeded --validation-fraction of --train)", metavar="FILE")
    model: str | os.PathLike | None = setting(
        None, "the checkpoint to start from (default: the built-in default model)", metavar="NAME|DIR")
    overwrite: bool = setting(False, "replace a non-empty --output (only once the new model is complete)")
    text_column: str = setting("text", "the column of the text (a CSV/TSV header or a JSONL key)")
    pair_column: str | None = setting("text_pair", "second text of a pair, used when the file has this column")
    label_column: str = setting("label", "the column of the label")
    epochs: int = setting(3, "passes over the training data", check=_whole(1), why="--epochs must be 1 or more")
    batch_size: int = setting(32, "examples per step and process", check=_whole(1),
                              why="--batch-size must be 1 or more")
    learning_rate: float = setting(5e-5, "the peak learning rate", flags=("--learning-rate", "--lr"),
                                   check=lambda v: 0 < v < 1,
                                   why="--learning-rate must be a number between 0 and 1 (BERT: 2e-5 to 5e-5)")
    schedule: str = setting("linear", "the learning rate after warmup: linear decay to 0 (BERT's), cosine, or "
                            "constant", choices=tuple(SCHEDULES))
    warmup_ratio: float = setting(0.0, "share of the steps spent warming up the learning rate from 0",
                                  check=lambda v: 0 <= v < 1, why="--warmup-ratio must be at least 0 and below 1")
    max_length: int = setting(128, "tokens per input, special tokens included", check=_whole(16),
                              why="--max-length must be 16 tokens or more")
    seed: int = setting(0, "the new head's weights, dropout and the order of the examples",
                        check=_whole(-2**63), why="--seed must be a whole number")
    seeds: tuple[int, ...] = setting(
        (), "train once per seed (e.g. 0,1,2: one seed is one draw) and report each run's held-out score, their mean "
            "and spread; --output keeps the best run", parse=parse_ints, metavar="S,S,...", check=_seeds_ok,
        why="--seeds must be whole numbers, each once (e.g. 0,1,2)")
    keep_all: bool = setting(False, "with --seeds, keep every run's folder (the others beside --output, as "
                             "OUTPUT-seed-N), not only the best")
    split_seed: int | None = setting(None, "the seed of the held-out split (default: --seed, or the first of "
                                     "--seeds, so that every run is scored on the same examples)")
    weight_decay: float = setting(0.01, "AdamW's weight decay (never on biases and LayerNorm)",
                                  check=lambda v: 0 <= v < 1, why="--weight-decay must be at least 0 and below 1")
    clip: float = setting(1.0, "gradient-norm clipping (0: off)", check=lambda v: 0 <= v < math.inf,
                          why="--clip must be 0 (off) or a positive number")
    validation_fraction: float = setting(0.1, "share of --train held out when there is no --validation",
                                         check=lambda v: 0 < v < 1, why="--validation-fraction must be between 0 and 1")
    eval_batch_size: int = setting(64, "examples per held-out batch", check=_whole(1),
                                   why="the evaluation batch size must be 1 or more")
    stride: int = setting(128, "question answering: tokens two windows of a long context share", check=_whole(0),
                          why="--stride must be 0 or more")
    timeline: int = setting(
        50, "snapshots of the model kept in OUTPUT/timeline/ as it learns, log-spaced early where heads change "
            "fastest: every head's attention and the task's answer on a few inputs, for the app's timeline slider "
            "and bertviz_app.open_timeline (0: none)",
        check=lambda v: _whole(0)(v) and v <= MAX_SNAPSHOTS, why=f"--timeline must be 0 (off) to {MAX_SNAPSHOTS}")
    timeline_inputs: str | os.PathLike | None = setting(
        None, "the timeline's inputs: a UTF-8 text file, one per line ('A [SEP] B' for a pair, 'question [SEP] "
              "context' for question answering) (default: the 5 shortest of the first 200 held-out examples)",
        metavar="FILE")
    device: str = setting("auto", "auto, cpu or cuda")
    threads: int | None = setting(None, "CPU threads (default: torch's)",
                                  check=lambda v: v is None or _whole(1)(v), why="--threads must be 1 or more")

    def __post_init__(self):
        if isinstance(self.seeds, list):
            self.seeds = tuple(self.seeds)
        check(self, DataError)

    @property
    def heldout_seed(self) -> int:
        """The split's seed: the same for every run of --seeds."""
        if self.split_seed is not None:
            return self.split_seed
        return self.seeds[0] if self.seeds else self.seed
