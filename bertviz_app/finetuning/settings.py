"""`FinetuneSettings`: every setting of a fine-tuning, one field each (help, flags, check). `bertviz-app finetune`'s
options, the checks on construction and metrics.json's `settings` are all read from these fields, so a new setting is
one field here, or in settings.py's bases when every training has it (docs/ARCHITECTURE.md, "Adding a training
setting")."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from ..run_settings import TrainingRunSettings
from ..settings import parse_ints, setting, whole
from . import recipes
from .data import DataError
from .tasks import TASKS


def _seeds_ok(seeds) -> bool:
    return all(isinstance(s, int) and not isinstance(s, bool) for s in seeds) and len(set(seeds)) == len(seeds)


@dataclass(kw_only=True)
class FinetuneSettings(TrainingRunSettings):
    """What `finetune()` does; invalid values raise DataError (a ValueError) with a sentence naming the option. The
    model, output, max tokens, batch size, seed, learning rate, schedule and timeline are every training's
    (settings.TrainingRunSettings)."""

    POSITIONAL: ClassVar[tuple[str, ...]] = ("task", "train", "output")
    ERROR: ClassVar[type[Exception]] = DataError
    MIN_TOKENS: ClassVar[int] = 16

    task: str = setting(help="what to teach: a label per text (or pair), a tag per word, or an answer span in a "
                        "context", positional=True, choices=TASKS,
                        why="unknown task {value!r}; choose one of "
                        f"{', '.join(TASKS)}")
    train: str | os.PathLike = setting(
        help="training data: CSV/TSV/JSONL with a header (text-classification), CoNLL columns or JSONL tokens/tags "
             "(token-classification), SQuAD v1.1 JSON (question-answering); or a built-in recipe fetched on first "
             f"use: {', '.join(recipes.RECIPES)}", metavar="FILE|RECIPE")
    validation: str | os.PathLike | None = setting(
        None, "held-out data in the same format (default: a seeded --validation-fraction of --train)", metavar="FILE")
    overwrite: bool = setting(False, "replace a non-empty --output (only once the new model is complete)")
    text_column: str = setting("text", "the column of the text (a CSV/TSV header or a JSONL key)")
    pair_column: str | None = setting("text_pair", "second text of a pair, used when the file has this column")
    label_column: str = setting("label", "the column of the label")
    epochs: int = setting(3, "passes over the training data", check=whole(1), why="--epochs must be 1 or more")
    warmup_ratio: float = setting(0.0, "share of the steps spent warming up the learning rate from 0",
                                  check=lambda v: 0 <= v < 1, why="--warmup-ratio must be at least 0 and below 1")
    seeds: tuple[int, ...] = setting(
        (), "train once per seed (e.g. 0,1,2: one seed is one draw) and report each run's held-out score, their mean "
            "and spread; --output keeps the best run", parse=parse_ints, metavar="S,S,...", check=_seeds_ok,
        why="--seeds must be whole numbers, each once (e.g. 0,1,2)")
    keep_all: bool = setting(False, "with --seeds, keep every run's folder (the others beside --output, as "
                             "OUTPUT-seed-N), not only the best")
    split_seed: int | None = setting(None, "the seed of the held-out split (default: --seed, or the first of "
                                     "--seeds, so that every run is scored on the same examples)")
    validation_fraction: float = setting(0.1, "share of --train held out when there is no --validation",
                                         check=lambda v: 0 < v < 1, why="--validation-fraction must be between 0 and 1")
    eval_batch_size: int = setting(64, "examples per held-out batch", check=whole(1),
                                   why="the evaluation batch size must be 1 or more")
    stride: int = setting(128, "question answering: tokens two windows of a long context share", check=whole(0),
                          why="--stride must be 0 or more")
    timeline_inputs: str | os.PathLike | None = setting(
        None, "the timeline's inputs: a UTF-8 text file, one per line ('A [SEP] B' for a pair, 'question [SEP] "
              "context' for question answering) (default: the 5 shortest of the first 200 held-out examples)",
        metavar="FILE")

    def __post_init__(self):
        if isinstance(self.seeds, list):
            self.seeds = tuple(self.seeds)
        super().__post_init__()

    @property
    def heldout_seed(self) -> int:
        """The split's seed: the same for every run of --seeds."""
        if self.split_seed is not None:
            return self.split_seed
        return self.seeds[0] if self.seeds else self.seed
