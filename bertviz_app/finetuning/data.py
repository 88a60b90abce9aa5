"""Labelled data from files, read strictly: every problem is one sentence that names the file and the line.

- text classification: CSV, TSV or JSON Lines with named columns (a text, optionally a second text, a label);
- token classification: CoNLL-style columns (the token first, its tag last, a blank line between sentences) or JSON
  Lines `{"tokens": [...], "tags": [...]}`;
- question answering: SQuAD v1.1 JSON.
"""

from __future__ import annotations

import csv
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

# A line (or a CSV field) longer than this is refused: no sentence, tagged sentence or SQuAD question is that long,
# and reading on would hold the whole of a broken file in memory.
MAX_LINE_CHARS = 1_000_000
# SQuAD files are one JSON document; the real v1.1 training set is 30 MB.
MAX_JSON_BYTES = 200_000_000
# More than a class's CPU fine-tunes in an afternoon (the recipes: 10,662 reviews, 3,914 tagged sentences); a million
# one-character rows took 2.5 GB of memory scoring the held-out part. Refused with what to do, never cut silently.
MAX_EXAMPLES = 100_000


class DataError(ValueError):
    """Data that cannot be used; the message says where and what to change."""


@dataclass
class TextExample:
    text: str
    label: str
    text_pair: str | None = None


@dataclass
class TaggedExample:
    words: list[str]
    tags: list[str]


@dataclass
class QAExample:
    id: str
    question: str
    context: str
    answers: list[tuple[str, int]] = field(default_factory=list)  # (text, character start in context)


def _check_file(path: str | os.PathLike) -> Path:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"no data file at {path}")
    return path


def _lines(path: Path):
    """(line number, line without its newline), refusing overlong lines and text that is not UTF-8. Each line is
    decoded on its own: a text decoder reads ahead, and named the line before a bad byte's."""
    with path.open("rb") as handle:
        number = 0
        while True:
            raw = handle.readline(MAX_LINE_CHARS + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_CHARS and not raw.endswith(b"\n"):
                raise DataError(f"{path.name} line {number}: longer than {MAX_LINE_CHARS:,} characters; is this the "
                                "right file? (one example a line)")
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise DataError(f"{path.name} line {number}: not UTF-8 text ({err.reason}); save the file as "
                                "UTF-8") from None
            yield number, line.rstrip("\r\n")


# ------------------------------------------------------------------------------------------------------------------
# Text classification
# ------------------------------------------------------------------------------------------------------------------
def read_text_examples(path: str | os.PathLike, text_column: str = "text", pair_column: str | None = "text_pair",
                       label_column: str = "label", pair_required: bool = False) -> list[TextExample]:
    """Examples from a CSV (.csv), TSV (.tsv, .tab) or JSON Lines (.jsonl, .json) file with a header (the first row,
    or the keys of each object). `pair_column` is used when the file has it; `pair_required` makes it compulsory."""
    path = _check_file(path)
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        rows = _json_rows(path)
    else:
        rows = _table_rows(path, "\t" if path.suffix.lower() in (".tsv", ".tab") else ",")
    examples: list[TextExample] = []
    columns_checked = False
    for where, row in rows:
        if not columns_checked:
            needed = [text_column, label_column] + ([pair_column] if pair_required and pair_column else [])
            missing = [c for c in needed if c not in row]
            if missing:
                raise DataError(f"{path.name} has no column {', '.join(repr(c) for c in missing)} (its columns: "
                                f"{', '.join(map(str, row)) or 'none'}); name the right ones with --text-column, "
                                "--pair-column and --label-column")
            use_pair = bool(pair_column) and pair_column in row
            columns_checked = True
        text, label = row.get(text_column), row.get(label_column)
        pair = row.get(pair_column) if use_pair else None
        for name, value in ((text_column, text), (label_column, label)):
            if value is None or not str(value).strip():
                raise DataError(f"{where}: the {name!r} field is empty; remove the row or fill it in")
        if use_pair and (pair is None or not str(pair).strip()):
            raise DataError(f"{where}: the {pair_column!r} field is empty; every row of a pair task needs both "
                            "texts")
        for name, value in ((text_column, text), (label_column, label), (pair_column, pair)):
            if isinstance(value, (dict, list)):
                kind = "object" if isinstance(value, dict) else "list"
                raise DataError(f"{where}: the {name!r} field is a JSON {kind}, expected text; give it as a string")
        examples.append(TextExample(str(text), str(label).strip(), str(pair) if use_pair else None))
        _check_count(examples, path)
    if not examples:
        raise DataError(f"{path.name} has no examples")
    return examples


def _table_rows(path: Path, delimiter: str):
    csv.field_size_limit(MAX_LINE_CHARS)
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        try:
            header = next(reader, None)
            if header is None:
                raise DataError(f"{path.name} is empty; give a header row (for example text,label) and examples")
            header = [h.strip() for h in header]
            for row in reader:
                where = f"{path.name} line {reader.line_num}"
                if not row:
                    continue  # a blank line
                if not any(c.strip() for c in row):
                    raise DataError(f"{where}: an empty row (every field blank); remove it")
                if len(row) != len(header):
                    raise DataError(f"{where}: {len(row)} fields, expected {len(header)} ({', '.join(header)}); "
                                    "quote fields that contain the delimiter")
                yield where, dict(zip(header, row))
        except csv.Error as err:
            raise DataError(f"{path.name} line {reader.line_num}: {_csv_reason(err)}") from None
        except UnicodeDecodeError as err:
            raise DataError(f"{path.name}: not UTF-8 text ({err.reason}); save the file as UTF-8") from None


def _csv_reason(err: csv.Error) -> str:
    text = str(err)
    if "field larger than field limit" in text:
        return f"a field longer than {MAX_LINE_CHARS:,} characters; is this the right file?"
    return f"not valid CSV ({text})"


def _json_rows(path: Path):
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except RecursionError:
            raise DataError(f"{path.name} line {number}: nested too deeply to read; one flat object a line") from None
        except ValueError as err:
            raise DataError(f"{path.name} line {number}: not a JSON object ({err}); one object a line") from None
        if not isinstance(row, dict):
            raise DataError(f"{path.name} line {number}: a JSON {type(row).__name__}, expected an object")
        yield f"{path.name} line {number}", row


# ------------------------------------------------------------------------------------------------------------------
# Token classification
# ------------------------------------------------------------------------------------------------------------------
def read_tagged_examples(path: str | os.PathLike) -> list[TaggedExample]:
    """Tagged sentences from JSON Lines (`{"tokens": [...], "tags": [...]}`; "words" and "ner_tags"/"labels" are
    accepted too) or CoNLL-style columns: the token first, its tag last, whitespace between, a blank line between
    sentences, `-DOCSTART-` lines skipped. Every line of a CoNLL file has the same number of columns."""
    path = _check_file(path)
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        examples = []
        for where, row in _json_rows(path):
            words = _first_key(row, ("tokens", "words"))
            tags = _first_key(row, ("tags", "labels", "ner_tags", "pos_tags"))
            if words is None or tags is None:
                raise DataError(f"{where}: expected the keys 'tokens' and 'tags', found {', '.join(row) or 'none'}")
            if not (isinstance(words, list) and isinstance(tags, list) and all(isinstance(w, str) for w in words)
                    and all(isinstance(t, (str, int)) for t in tags)):
                raise DataError(f"{where}: 'tokens' and 'tags' must be lists of strings")
            if len(words) != len(tags):
                raise DataError(f"{where}: {len(words)} tokens but {len(tags)} tags")
            if words:
                examples.append(TaggedExample(words, [str(t) for t in tags]))
                _check_count(examples, path)
    else:
        examples = _conll(path)
    if not examples:
        raise DataError(f"{path.name} has no tagged sentences")
    return examples


def _check_count(examples: list, path: Path) -> None:
    if len(examples) > MAX_EXAMPLES:
        raise DataError(f"{path.name} has more than {MAX_EXAMPLES:,} examples, the most a fine-tuning reads here; "
                        f"give a sample of them (for example the first {MAX_EXAMPLES:,}, or `shuf -n {MAX_EXAMPLES}`)")


def _first_key(row: dict, keys: tuple[str, ...]):
    return next((row[k] for k in keys if k in row), None)


def _conll(path: Path) -> list[TaggedExample]:
    examples, words, tags = [], [], []
    columns, first = None, 0
    for number, line in _lines(path):
        parts = line.split()
        if not parts or parts[0] == "-DOCSTART-":
            if words:
                examples.append(TaggedExample(words, tags))
                _check_count(examples, path)
                words, tags = [], []
            continue
        if columns is None:
            columns, first = len(parts), number
            if columns < 2:
                raise DataError(f"{path.name} line {number}: one column; expected the token and its tag (CoNLL: "
                                "token first, tag last, separated by whitespace)")
        elif len(parts) != columns:
            raise DataError(f"{path.name} line {number}: {len(parts)} columns, expected {columns} like line {first} "
                            "(the token first, its tag last)")
        words.append(parts[0])
        tags.append(parts[-1])
    if words:
        examples.append(TaggedExample(words, tags))
    return examples


# ------------------------------------------------------------------------------------------------------------------
# Question answering
# ------------------------------------------------------------------------------------------------------------------
def read_squad(path: str | os.PathLike) -> list[QAExample]:
    """Questions from a SQuAD v1.1 file ({"data": [{"paragraphs": [{"context", "qas": [{"id", "question",
    "answers": [{"text", "answer_start"}]}]}]}]}). Every answer must stand in its context at answer_start."""
    path = _check_file(path)
    if path.stat().st_size > MAX_JSON_BYTES:
        raise DataError(f"{path.name} is larger than {MAX_JSON_BYTES // 1_000_000} MB; is this a SQuAD file?")
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as err:
        raise DataError(f"{path.name}: not UTF-8 text ({err.reason})") from None
    except ValueError as err:
        raise DataError(f"{path.name}: not valid JSON ({err})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise DataError(f"{path.name}: expected a SQuAD v1.1 object with a 'data' list")
    examples = []
    for a, article in enumerate(doc["data"]):
        for p, paragraph in enumerate(article.get("paragraphs", []) if isinstance(article, dict) else []):
            where = f"{path.name} data[{a}].paragraphs[{p}]"
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            if not isinstance(context, str) or not context.strip():
                raise DataError(f"{where}: no 'context' text")
            for q, qa in enumerate(paragraph.get("qas", [])):
                if not isinstance(qa, dict) or not isinstance(qa.get("question"), str) or not qa["question"].strip():
                    raise DataError(f"{where}.qas[{q}]: no 'question' text")
                qid = str(qa.get("id", f"{a}-{p}-{q}"))
                answers = []
                for answer in qa.get("answers", []):
                    text = answer.get("text") if isinstance(answer, dict) else None
                    start = answer.get("answer_start") if isinstance(answer, dict) else None
                    if not isinstance(text, str) or not isinstance(start, int) or isinstance(start, bool):
                        raise DataError(f"{path.name}, question {qid}: each answer needs 'text' and an integer "
                                        "'answer_start'")
                    if context[start:start + len(text)] != text:
                        raise DataError(f"{path.name}, question {qid}: the answer {_short(text)} is not in its context "
                                        f"at character {start} (there: {_short(context[start:start + len(text)])}); "
                                        "fix answer_start")
                    answers.append((text, start))
                if not answers:
                    raise DataError(f"{path.name}, question {qid}: no answers (SQuAD v1.1 questions all have one)")
                examples.append(QAExample(qid, qa["question"], context, answers))
    if not examples:
        raise DataError(f"{path.name} has no questions")
    return examples


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


# ------------------------------------------------------------------------------------------------------------------
# Labels and splits
# ------------------------------------------------------------------------------------------------------------------
def label_names(examples, what: str = "training data") -> list[str]:
    """The labels (classification) or tags (tagging) of `examples`, sorted; at least two."""
    names = sorted({t for e in examples for t in (e.tags if isinstance(e, TaggedExample) else [e.label])})
    if len(names) < 2:
        raise DataError(f"the {what} has a single label ({names[0]!r}); a classifier needs examples of two or more")
    return names


def unseen_labels(examples, known: list[str], listed: int = 100) -> dict:
    """The labels of `examples` (held-out) that the training data never shows: rare tags are normal, so they are not
    refused; the model cannot predict them, and the held-out score counts them as wrong. {count: how many words
    (tagging) or examples carry one, of: how many there are, unit, labels: {label: count}, where: the first `listed`
    as {example (1-based), label}}."""
    known_set = set(known)
    tagged = bool(examples) and isinstance(examples[0], TaggedExample)
    counts: dict[str, int] = {}
    where, total = [], 0
    for index, e in enumerate(examples, 1):
        for tag in e.tags if isinstance(e, TaggedExample) else [e.label]:
            total += 1
            if tag not in known_set:
                counts[tag] = counts.get(tag, 0) + 1
                if len(where) < listed:
                    where.append({"example": index, "label": tag})
    return {"count": sum(counts.values()), "of": total, "unit": "words" if tagged else "examples",
            "labels": counts, "where": where}


def unseen_sentence(unseen: dict, what: str = "held-out") -> str:
    """What `unseen_labels` found, in words ('' when nothing)."""
    if not unseen["count"]:
        return ""
    names = ", ".join(f"{label!r} ({n})" for label, n in list(unseen["labels"].items())[:8])
    more = ", ..." if len(unseen["labels"]) > 8 else ""
    first = unseen["where"][0]
    return (f"{unseen['count']} of {unseen['of']} {what} {unseen['unit']} carry a label the training data never "
            f"shows ({names}{more}; the first in example {first['example']}): the model cannot predict them, and "
            "the held-out score counts them as wrong")


def split(examples: list, fraction: float, seed: int) -> tuple[list, list]:
    """(train, held-out): a seeded random `fraction` held out, at least one example on each side."""
    if len(examples) < 2:
        raise DataError(f"{len(examples)} example: too few to hold any out for evaluation; give more, or a "
                        "--validation file")
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    held = min(len(examples) - 1, max(1, round(len(examples) * fraction)))
    heldout = sorted(order[:held])
    kept = sorted(order[held:])
    return [examples[i] for i in kept], [examples[i] for i in heldout]
