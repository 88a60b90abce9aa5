"""`PretrainSettings`: every setting of a pretraining run, one field each (help, flags, check). `bertviz-app
pretrain`'s options, the checks on construction and the run's `settings.json` are all read from these fields, so a
new setting is one field here (docs/ARCHITECTURE.md, "Adding a training setting")."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..settings import check, setting
from ..timeline import MAX_SNAPSHOTS
from ..training import SCHEDULES, warmup_steps


def _whole(least: int):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= least


@dataclass
class PretrainSettings:
    """What `run_pretrain()` does; invalid values raise ValueError with a sentence naming the option."""

    corpus: str | os.PathLike = setting(
        help="a text file (one sentence per line, blank line between documents), a token-id corpus (.npz, "
             "scripts/tokenize_corpus.py), or a folder with train.txt and heldout.txt (scripts/build_corpus.py "
             "writes one) or train.npz and heldout.npz")
    out: str | os.PathLike = setting(
        help="output folder: checkpoints step-NNNNNNN/, log.csv, settings.json, timeline/; a run with the same --out "
             "resumes from its latest checkpoint")
    heldout: str | os.PathLike | None = setting(
        None, "held-out text file for evaluation (default: CORPUS/heldout.txt when CORPUS is a folder)")
    init: str = setting("scratch", "'scratch' for random weights, or a checkpoint folder to continue from (heads it "
                        "lacks are newly initialized)")
    preset: str = setting("mini", "model size with --init scratch", choices=("tiny", "classroom", "mini", "base", "large"))
    tokenizer: str | os.PathLike | None = setting(
        None, "tokenizer folder (default: the --init folder, or the default model's tokenizer with --init scratch)")
    steps: int = setting(10_000, "total optimizer steps", check=_whole(1), why="--steps must be 1 or more")
    batch_size: int = setting(32, "sentence pairs per step and process", check=_whole(1),
                              why="--batch-size must be 1 or more")
    # --max-length: the name this option had before; the model card's commands use it
    max_tokens: int = setting(128, "tokens per pair, special tokens included", flags=("--max-tokens", "--max-length"),
                              check=_whole(8), why="--max-tokens must be 8 or more")
    lr: float = setting(1e-4, "peak learning rate", check=lambda v: 0 < v < 1,
                        why="--lr must be a number between 0 and 1 (BERT pretraining: 1e-4)")
    head_lr_scale: float = setting(1.0, "learning-rate multiplier for newly initialized heads",
                                   check=lambda v: 0 < v < math.inf, why="--head-lr-scale must be above 0")
    schedule: str = setting("linear", "the learning rate after warmup: linear decay to 0 (BERT's), cosine, or "
                            "constant", choices=tuple(SCHEDULES))
    warmup_ratio: float = setting(0.06, "share of --steps spent warming up the learning rate from 0",
                                  check=lambda v: 0 <= v < 1, why="--warmup-ratio must be at least 0 and below 1")
    warmup: int | None = setting(None, "deprecated: warmup in steps, which replaces --warmup-ratio when given",
                                 check=lambda v: v is None or _whole(0)(v), why="--warmup must be 0 or more steps")
    weight_decay: float = setting(0.01, "AdamW's weight decay (never on biases and LayerNorm)",
                                  check=lambda v: 0 <= v < 1, why="--weight-decay must be at least 0 and below 1")
    clip: float = setting(1.0, "gradient-norm clipping (0: off)", check=lambda v: 0 <= v < math.inf,
                          why="--clip must be 0 (off) or a positive number")
    freeze_encoder_steps: int = setting(
        0, "train only the newly initialized heads for the first N steps (the encoder, embeddings and pooler stay "
           "fixed), so that a new head does not disturb a pretrained encoder; single process only",
        check=_whole(0), why="--freeze-encoder-steps must be 0 or more")
    reinit_top_layers: int = setting(
        0, "give the top N encoder layers of --init BERT's random initialization first; they and the MLM head train at "
           "--head-lr-scale x --lr. all-MiniLM-L6-v2's sentence-embedding top layer makes a [MASK] answer with a word "
           "of its sentence (scripts/diagnose_copy.py)", check=_whole(0), why="--reinit-top-layers must be 0 or more")
    mlm_probability: float = setting(0.15, "share of the tokens masked", check=lambda v: 0 < v < 1,
                                     why="--mlm-probability must be between 0 and 1")
    whole_word: bool = setting(False, "mask whole words instead of word pieces")
    same_source_negatives: bool = setting(
        False, "draw the random second sentence of NSP from another document of the first one's source (needs a "
               "token-id corpus that records sources)")
    minutes: float = setting(0.0, "stop after this many minutes of training, saving a checkpoint there (0: no limit; "
                             "the same command resumes)", check=lambda v: v >= 0, why="--minutes must be 0 or more")
    seed: int = setting(0, "initial weights, the pairs' order and the masks")
    device: str = setting("auto", "auto, cpu or cuda")
    threads: int | None = setting(None, "CPU threads per process (default: torch's)",
                                  check=lambda v: v is None or _whole(1)(v), why="--threads must be 1 or more")
    log_every: int = setting(10, "steps between progress lines and CSV rows", check=_whole(1),
                             why="--log-every must be 1 or more")
    eval_every: int = setting(0, "steps between held-out evaluations (0: at checkpoints only)", check=_whole(0),
                              why="--eval-every must be 0 or more")
    eval_examples: int = setting(256, "held-out pairs per evaluation", check=_whole(1),
                                 why="--eval-examples must be 1 or more")
    save_every: int = setting(500, "steps between checkpoints", check=_whole(1), why="--save-every must be 1 or more")
    save_minutes: float = setting(15.0, "also save when this many minutes have passed since the last checkpoint "
                                  "(0: off)", check=lambda v: v >= 0, why="--save-minutes must be 0 or more")
    keep: int = setting(2, "checkpoints to keep (0: all)", check=_whole(0), why="--keep must be 0 or more")
    timeline: int = setting(
        50, "snapshots of the model kept in OUT/timeline/ as it learns, log-spaced early where heads change fastest: "
            "every head's attention and the predictions on a few inputs, for the app's timeline slider and "
            "bertviz_app.open_timeline (0: none)",
        check=lambda v: _whole(0)(v) and v <= MAX_SNAPSHOTS, why=f"--timeline must be 0 (off) to {MAX_SNAPSHOTS}")
    timeline_inputs: str | os.PathLike | None = setting(
        None, "the timeline's inputs: a UTF-8 text file, one sentence per line ('A [SEP] B' for a pair; end a line "
              "with [MASK] in it with '=> word' to follow that word's probability) (default: built-in probes, e.g. "
              "'The capital of France is [MASK]. => paris')", metavar="FILE")
    max_documents: int | None = setting(None, "read only the first N documents",
                                        check=lambda v: v is None or _whole(1)(v),
                                        why="--max-documents must be 1 or more")

    def __post_init__(self):
        check(self)
        if self.reinit_top_layers and self.freeze_encoder_steps:
            raise ValueError("--freeze-encoder-steps keeps the whole encoder fixed, re-initialized layers too; use "
                             "--head-lr-scale with --reinit-top-layers instead")

    @property
    def warmup_steps(self) -> int:
        """The deprecated --warmup when given, else --warmup-ratio of --steps."""
        return self.warmup if self.warmup is not None else warmup_steps(self.warmup_ratio, self.steps)
