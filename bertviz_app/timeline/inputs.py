"""The inputs a training timeline watches: built-in probes, or a teacher's file (`--timeline-inputs FILE`).

The file is UTF-8 text, one input per line; blank lines and lines starting with # are skipped. A pair is written
`sentence A [SEP] sentence B`. A line with [MASK] may end with `=> word` (several masks: `=> word, word`): the
timeline then keeps that word's probability at each snapshot, not only the top five, so its rise can be drawn from
the first step on."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..inputs import check_text

MAX_INPUTS = 16
# Every snapshot keeps every head's attention for every input, which grows with the square of its length: 400
# characters (~100 tokens) is about 100 kB per input and snapshot for the default model.
MAX_LINE_CHARS = 400
MAX_FILE_BYTES = 64 * 1024
SEPARATOR = "[SEP]"
ANSWER = "=>"


class TimelineError(ValueError):
    """A timeline that cannot be written or read as asked, in one sentence."""


@dataclass(frozen=True)
class TimelineInput:
    """One input the timeline follows. answers: the words whose probability is kept at each [MASK], in order; gold:
    what the data says the answer is (a fine-tuning's held-out label, tags or answer text), or None."""

    text: str
    text_pair: str | None = None
    answers: tuple[str, ...] = ()
    gold: object = field(default=None, compare=False)

    def as_dict(self) -> dict:
        return {"text": self.text, "text_pair": self.text_pair, "answers": list(self.answers), "gold": self.gold}

    @classmethod
    def from_dict(cls, d: dict) -> "TimelineInput":
        return cls(d["text"], d.get("text_pair"), tuple(d.get("answers") or ()), d.get("gold"))


# What a pretraining watches by default: a fact and a grammar probe (their answers' probability by step), the BERT
# paper's next-sentence pair and its random second sentence, and a sentence whose "it" needs its antecedent.
PRETRAINING_PROBES = (
    TimelineInput("The capital of France is [MASK].", answers=("paris",)),
    TimelineInput("The children [MASK] playing in the park.", answers=("are",)),
    TimelineInput("The man went to the store.", "He bought a gallon of milk."),
    TimelineInput("The man went to the store.", "Penguins are flightless birds."),
    TimelineInput("The cat sat on the mat because it was tired."),
)


def read_inputs(path: str | os.PathLike) -> list[TimelineInput]:
    """The inputs of a --timeline-inputs file, or a TimelineError that names the file (and line) and what to do."""
    path = Path(path).expanduser()
    name = f"--timeline-inputs {path.name}"
    if not path.is_file():
        raise TimelineError(f"{name}: no such file; give a text file with one input sentence per line")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise TimelineError(f"{name} has {path.stat().st_size:,} bytes; a timeline follows at most {MAX_INPUTS} "
                            f"short inputs (at most {MAX_FILE_BYTES // 1024} kB of text)")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise TimelineError(f"{name} is not UTF-8 text (byte {err.start + 1} cannot be read); save it as UTF-8 "
                            "with one input sentence per line") from None
    inputs = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if len(line) > MAX_LINE_CHARS:
            raise TimelineError(f"{name} line {number} has {len(line):,} characters; a timeline input may have at "
                                f"most {MAX_LINE_CHARS} (each snapshot keeps every head's attention, which grows with "
                                "the square of the length)")
        inputs.append(parse_line(line, f"{name} line {number}"))
    if not inputs:
        raise TimelineError(f"{name} holds no inputs; write one sentence per line (a pair as 'sentence A [SEP] "
                            "sentence B')")
    if len(inputs) > MAX_INPUTS:
        raise TimelineError(f"{name} holds {len(inputs)} inputs; a timeline follows at most {MAX_INPUTS}")
    return inputs


def choose_inputs(path: str | os.PathLike | None, default, vocab) -> list[TimelineInput]:
    """The inputs of `path` (--timeline-inputs), each watched word checked against the vocabulary, or `default`."""
    if path is None:
        return list(default)
    inputs = read_inputs(path)
    for item in inputs:
        for word in item.answers:
            if word not in vocab:
                raise TimelineError(f"--timeline-inputs {Path(path).name}: {word!r} is not one word piece of the "
                                    "model's vocabulary, so the model can never put it at a [MASK]; watch another "
                                    "word")
    return inputs


def parse_line(line: str, where: str) -> TimelineInput:
    """One line of an inputs file: `A`, `A [SEP] B`, either with `=> word, ...` after a [MASK]."""
    answers: tuple[str, ...] = ()
    if ANSWER in line:
        line, _, watched = line.rpartition(ANSWER)
        answers = tuple(w.strip().lower() for w in watched.split(",") if w.strip())
        if not answers:
            raise TimelineError(f"{where}: '=>' names no word; write e.g. 'The capital of France is [MASK]. => paris'")
    text, _, pair = line.partition(SEPARATOR)
    try:
        text, pair = check_text(text.strip(), pair.strip() or None)
    except (TypeError, ValueError) as err:
        raise TimelineError(f"{where}: {err}") from None
    masks = (text + " " + (pair or "")).upper().count("[MASK]")
    if answers and len(answers) != masks:
        raise TimelineError(f"{where}: {len(answers)} word(s) after '=>' for {masks} [MASK]; name one word per "
                            "[MASK], in order")
    return TimelineInput(text, pair, answers)
