"""The Pretrain tab's jobs for the training lane (training.py): what a tiny BERT from scratch may read (the built-in
texts: Python's help topics, which every Python carries, and Debian's fortune cookies, read as scripts/build_corpus.py
reads them, where they are installed; or the operator's --pretrain-data files: a visitor never sends a file or a
path), the model sizes offered, the class's sentence as the timeline's input 0, and
`PretrainJob`, which the lane runs with `run_pretrain` (one training at a time, as a fine-tuning)."""

from __future__ import annotations

import codecs
import csv
import importlib.util
import os
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...corpus.fortunes import FORTUNES, fortunes, is_heldout
from ...corpus.python_help import help_topics
from ...finetuning import cache_dir
from ...i18n import Message, composed
from ...pretraining import PretrainSettings
from ...timeline.inputs import PRETRAINING_PROBES, TimelineInput, parse_line

BUILTIN_MISSING = Message("The built-in text, Debian's fortune cookies, is not installed on this server; whoever runs "
                          "it can install it (apt-get install fortunes fortunes-min) or name a text file with "
                          "--pretrain-data.")
HELP_MISSING = Message("This server's Python carries no help topics (its pydoc_data was left out); whoever runs the "
                       "server can name a text file with --pretrain-data.")


@dataclass(frozen=True)
class BuiltinText:
    label: str  # translated whole in the page: one line of the catalogue
    present: Callable[[], bool]
    documents: Callable[[], list[list[str]]]
    missing: Message  # the sentence a start gets when it is not there


# The default first, offered always: the help topics are there wherever the app is installed. The fortunes are offered
# where they are installed (`make test` installs them; `make app` does not: that would need root and Debian).
BUILTIN_TEXTS = {
    "python-help": BuiltinText("python-help: Python's help topics (built in, in every Python: about 1,000 paragraphs "
                               "of its language reference)", lambda: importlib.util.find_spec("pydoc_data") is not None,
                               help_topics, HELP_MISSING),
    "fortunes": BuiltinText("fortunes: Debian's fortune cookies (built in, about 13,000 short texts)",
                            lambda: any(FORTUNES.glob("*")), lambda: fortunes(FORTUNES), BUILTIN_MISSING),
}
BUILTIN_TEXT = next(iter(BUILTIN_TEXTS))
SNIFF_BYTES = 1 << 16  # what is read of a text at a start, to tell an empty or binary file in words at once


@dataclass(frozen=True)
class PretrainPreset:
    """A model size and the settings that make it learn visibly within a class period (README, "Pretraining live,
    in class", has what `classroom` did in 10 minutes on 2 cores)."""

    label: str  # translated whole in the page: one line of the catalogue
    model: str  # a config.PRESETS name
    max_tokens: int
    lr: float
    warmup: int  # steps
    batch_size: int
    # The run's --steps is its minutes times this (one thread on a loaded 2-core machine): the snapshots are spaced
    # over the steps it will probably reach; --minutes ends it on time either way (the schedule is constant after
    # warmup, so stopping early leaves nothing half-decayed).
    steps_per_minute: int


PRETRAIN_PRESETS = {
    "classroom": PretrainPreset("classroom: 2 layers x 4 heads, hidden 128, 32 tokens (4.4 M parameters)",
                                "classroom", 32, 2e-3, 100, 32, 540),
    "tiny": PretrainPreset("tiny: 2 layers x 4 heads, hidden 32 (a quick check; learns little)", "tiny", 32, 2e-3, 10,
                           8, 1500),
}
PRETRAIN_MINUTES = (2, 5, 10, 15, 20)
PRETRAIN_SNAPSHOTS = 40


@dataclass(frozen=True)
class TextChoice:
    key: str  # the text list's value, which the page sends
    label: str  # what the list shows
    source: str  # the operator's file, never a visitor's; or, with `builtin`, a BUILTIN_TEXTS key
    builtin: bool = False


def pretraining_root() -> Path:
    """Where the Pretrain tab writes its runs: `pretrained/` in the user's cache, beside `finetuned/`."""
    return cache_dir().parent / "pretrained"


def pretrain_choices(files: Sequence[str | os.PathLike] = ()) -> dict[str, TextChoice]:
    """The built-in texts this server has (the help topics always, the fortunes where installed), then the operator's
    --pretrain-data files (by name; a second of the same name gets a number)."""
    choices = {key: TextChoice(key, text.label, key, builtin=True) for key, text in BUILTIN_TEXTS.items()
               if key == BUILTIN_TEXT or text.present()}
    for path in files:
        key = Path(path).name
        while key in choices:
            key = f"{Path(path).name} ({len(choices) + 1})"
        choices[key] = TextChoice(key, composed("{name} (named at launch)", {"name": key}), os.fspath(path))
    return choices


def text_problem(path: str | os.PathLike) -> Message | None:
    """Why the text at `path` cannot be pretrained on, in one sentence that names the file by its name only; None
    when its start reads as UTF-8 text."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
            more = bool(handle.read(1))
    except OSError as err:
        return Message("{name} could not be read ({why}).", name=path.name, why=err.strerror or type(err).__name__)
    advice = Message("a text to pretrain on is UTF-8 with one sentence per line and a blank line between documents")
    if not head.strip() and not more:
        return Message("{name} is empty: {advice}.", name=path.name, advice=advice)
    try:
        if b"\0" in head:
            raise UnicodeDecodeError("utf-8", head, head.index(b"\0"), head.index(b"\0") + 1, "NUL byte")
        codecs.getincrementaldecoder("utf-8")().decode(head, final=not more)  # a character cut at the end is fine
    except UnicodeDecodeError:
        return Message("{name} is not a text file: {advice}.", name=path.name, advice=advice)
    return None


def builtin_corpus(key: str = BUILTIN_TEXT) -> Path:
    """A built-in text as train.txt and heldout.txt (2% by each document's hash, as scripts/build_corpus.py splits
    them) in the user's cache, written at the first use. Raises ValueError in one sentence when it is not there."""
    text = BUILTIN_TEXTS[key]
    # the help topics are those of the Python that runs: another version has other ones
    name = f"{key}-{sys.version_info[0]}.{sys.version_info[1]}" if key == "python-help" else key
    folder = cache_dir().parent / "pretrain-data" / name
    if (folder / "heldout.txt").is_file():
        return folder
    documents = text.documents()
    if not documents:
        raise ValueError(text.missing)
    partial = folder.with_name(f".{name}-{os.getpid()}-{threading.get_native_id()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with (partial / "train.txt").open("w", encoding="utf-8") as train, \
            (partial / "heldout.txt").open("w", encoding="utf-8") as heldout:
        for document in documents:
            (heldout if is_heldout(document, 2.0) else train).write("\n".join(document) + "\n\n")
    try:
        partial.rename(folder)  # complete or absent: a server killed mid-write leaves only the hidden folder
    except OSError:  # another process wrote it meanwhile
        shutil.rmtree(partial, ignore_errors=True)
    return folder


def timeline_lines(sentence: TimelineInput) -> str:
    """The timeline's inputs as a --timeline-inputs file: the class's sentence first (input 0), then the probes."""
    lines = []
    for item in (sentence, *PRETRAINING_PROBES):
        line = item.text if item.text_pair is None else f"{item.text} [SEP] {item.text_pair}"
        lines.append(line + (f" => {', '.join(item.answers)}" if item.answers else ""))
    return "\n".join(lines) + "\n"


def class_sentence(text: str) -> TimelineInput:
    """The class's sentence as a timeline input; ValueError in one sentence when it cannot be one (an i18n.Message,
    or the timeline reader's own words)."""
    text = " ".join(text.split())
    if not text:
        raise ValueError(Message("Type a sentence with [MASK] where the model should guess a word, e.g. 'The "
                                 "capital of France is [MASK].'"))
    if len(text) > 200:
        raise ValueError(Message("The sentence is {n} characters long; the tiny model reads 32 tokens, so keep it "
                                 "under 200 characters.", n=len(text)))
    if "[MASK]" not in text:
        raise ValueError(Message("Put [MASK] where the model should guess a word, e.g. 'The capital of France is "
                                 "[MASK].': its top 5 guesses are what the class watches."))
    return parse_line(text, "The sentence")


def pretrain_settings(preset: str, minutes: float, text: TextChoice, output: Path, device: str = "cpu",
                      steps: int | None = None) -> PretrainSettings:
    """A tiny BERT from scratch at a PRETRAIN_PRESETS size on `text` for `minutes` (`steps`: None, the preset's pace
    times the minutes). The built-in text stands as its name: the lane writes it out at its first use."""
    chosen = PRETRAIN_PRESETS[preset]
    steps = steps or max(1, round(minutes * chosen.steps_per_minute))
    return PretrainSettings(
        corpus=text.source, output=output, preset=chosen.model, steps=steps, batch_size=chosen.batch_size,
        max_tokens=chosen.max_tokens, learning_rate=chosen.lr, schedule="constant",
        warmup_ratio=min(0.5, chosen.warmup / steps), minutes=minutes, device=device, log_every=steps, eval_every=0,
        save_every=steps, save_minutes=0, keep=1, timeline=min(PRETRAIN_SNAPSHOTS, steps + 1),
        timeline_inputs=Path(output) / "timeline-inputs.txt")


@dataclass(frozen=True)
class PretrainJob:
    """A tiny BERT from scratch (random weights, the default model's tokenizer) on `data`, with the settings
    `run_pretrain` runs with (`pretrain_settings`); the lane gives them the text it read."""

    data: TextChoice
    sentence: TimelineInput  # the class's, the timeline's input 0
    name: str
    settings: PretrainSettings
    limit_s: float | None = None

    @property
    def output(self) -> Path:
        return Path(self.settings.output)

    @property
    def minutes(self) -> float:
        return self.settings.minutes

    @property
    def device(self) -> str:
        return self.settings.device


def heldout_score(out: Path) -> dict | None:
    """The last held-out row of a pretraining's log.csv ({"step", "mlm_top1", "mlm_top5"}), or None."""
    try:
        with (out / "log.csv").open(newline="") as handle:
            rows = [r for r in csv.DictReader(handle) if r.get("split") == "heldout"]
        return {k: float(rows[-1][k]) for k in ("step", "mlm_top1", "mlm_top5")} if rows else None
    except (OSError, ValueError, KeyError):
        return None
