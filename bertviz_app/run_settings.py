"""The settings every run shares, defined once: `RunSettings` (what every run of a model over data names: model,
output, max tokens, batch size, device), which `CorpusSettings` extends, and `TrainingRunSettings` (what every
training adds: seed, learning rate, schedule, clipping, timeline, threads), which `PretrainSettings` and
`FinetuneSettings` extend. Each field has one name, one flag and one check; a name it had before is kept for a release
as a deprecated alias (`RENAMED`: as a keyword argument, with a DeprecationWarning, and as a flag, which says so)."""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import ClassVar

from .settings import check, setting, whole
from .training import SCHEDULES

__all__ = ["MAX_SNAPSHOTS", "RunSettings", "TrainingRunSettings", "learning_rate"]

MAX_SNAPSHOTS = 1000  # --timeline's bound: 1000 snapshots of 5 short inputs are ~80 MB for the default model


class _Named(type):
    """Settings take their first fields by position (`POSITIONAL`), every other by name, and an old name
    (`RENAMED`) with a DeprecationWarning, whichever dataclass extends them."""

    def __call__(cls, *args, **kwargs):
        if len(args) > len(cls.POSITIONAL):
            raise TypeError(f"{cls.__name__} takes {len(cls.POSITIONAL)} settings by position "
                            f"({', '.join(cls.POSITIONAL) or 'none'}); give the others by name")
        for name, value in zip(cls.POSITIONAL, args):
            if name in kwargs:
                raise TypeError(f"{cls.__name__} got {name} twice")
            kwargs[name] = value
        return super().__call__(**cls.current_names(kwargs))


@dataclass(kw_only=True)
class RunSettings(metaclass=_Named):
    """What every run of a model over data names. A kind sets `ERROR` (what a bad value raises), `MIN_TOKENS` and
    `POSITIONAL` (the fields it takes by position, in order)."""

    POSITIONAL: ClassVar[tuple[str, ...]] = ()
    RENAMED: ClassVar[dict[str, str]] = {"max_length": "max_tokens"}
    ERROR: ClassVar[type[Exception]] = ValueError
    MIN_TOKENS: ClassVar[int] = 8

    model: str | os.PathLike | None = setting(
        None, "a built-in model name, a hub id or a checkpoint folder to start from (default: the default model)",
        metavar="NAME|DIR")
    output: str | os.PathLike = setting(help="the folder to write into: the same folder resumes a pretraining or a "
                                             "corpus build; a fine-tuning refuses one that is not empty (--overwrite)",
                                        flags=("--output", "-o"), metavar="DIR")
    max_tokens: int = setting(128, "tokens per input, special tokens included (longer inputs are cut)",
                              check=whole(1), why="--max-tokens must be a whole number of tokens")
    batch_size: int = setting(32, "inputs per step and process", check=whole(1), why="--batch-size must be 1 or more")
    device: str = setting("auto", "auto, cpu or cuda")

    @classmethod
    def current_names(cls, kwargs: dict) -> dict:
        """`kwargs` with each old name (`RENAMED`) given its field's name, with a DeprecationWarning. Raises
        TypeError for a setting given under both names."""
        kwargs = dict(kwargs)
        for old, new in cls.RENAMED.items():
            if old in kwargs:
                warnings.warn(f"{cls.__name__}: {old} is deprecated; use {new}", DeprecationWarning, stacklevel=3)
                if new in kwargs:
                    raise TypeError(f"{cls.__name__} got both {old} and {new} (the same setting)")
                kwargs[new] = kwargs.pop(old)
        return kwargs

    def __getattr__(self, name: str):
        """An old name read (`settings.max_length`): the field's value, with a DeprecationWarning."""
        new = type(self).RENAMED.get(name)
        if new is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(f"{type(self).__name__}.{name} is deprecated; use .{new}", DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    def __post_init__(self):
        check(self, self.ERROR)
        if self.max_tokens < self.MIN_TOKENS:
            raise self.ERROR(f"--max-tokens must be {self.MIN_TOKENS} or more")


def learning_rate(default: float):
    """The learning-rate field, with a kind's own default (pretraining from scratch takes a larger one)."""
    return setting(default, "the peak learning rate", check=lambda v: 0 < v < 1,
                   why="--learning-rate must be a number between 0 and 1 (BERT: 1e-4 to pretrain, 2e-5 to 5e-5 to "
                       "fine-tune)")


@dataclass(kw_only=True)
class TrainingRunSettings(RunSettings):
    """What every training adds: its seed, the optimizer's settings and the timeline of snapshots."""

    RENAMED: ClassVar[dict[str, str]] = {**RunSettings.RENAMED, "lr": "learning_rate"}

    seed: int = setting(0, "the new weights, dropout and the order of the examples", check=whole(-2**63),
                        why="--seed must be a whole number")
    learning_rate: float = learning_rate(5e-5)
    schedule: str = setting("linear", "the learning rate after warmup: linear decay to 0 (BERT's), cosine, or "
                            "constant", choices=tuple(SCHEDULES))
    weight_decay: float = setting(0.01, "AdamW's weight decay (never on biases and LayerNorm)",
                                  check=lambda v: 0 <= v < 1, why="--weight-decay must be at least 0 and below 1")
    clip: float = setting(1.0, "gradient-norm clipping (0: off)", check=lambda v: 0 <= v < math.inf,
                          why="--clip must be 0 (off) or a positive number")
    timeline: int = setting(
        50, "snapshots of the model kept in OUTPUT/timeline/ as it learns, log-spaced early where heads change "
            "fastest: every head's attention and the model's answers on a few inputs, for the app's timeline slider "
            "and bertviz_app.open_timeline (0: none)",
        check=lambda v: whole(0)(v) and v <= MAX_SNAPSHOTS, why=f"--timeline must be 0 (off) to {MAX_SNAPSHOTS}")
    threads: int | None = setting(None, "CPU threads per process (default: torch's)",
                                  check=lambda v: v is None or whole(1)(v), why="--threads must be 1 or more")
