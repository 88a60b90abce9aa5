"""One small corpus for the corpus views' tests (conftest.py builds it once a session): 48 labelled sentences
(two labels, a pair among them, "bank" in both senses) built with the tiny random model of conftest.py, every
token's queries and keys kept. Cheap to build (a few seconds), and read only by the tests that open it."""

from __future__ import annotations

import csv
from pathlib import Path

ANIMALS = ["The cat sat by the river bank.", "A dog ran along the bank of the stream.", "Birds sing in the tall trees.",
           "The horse ate the green grass.", "Fish swim under the old bridge.", "A fox hid in the <b>dark</b> wood."]
MONEY = ["I paid at the bank.", "The bank raised its rates.", "She saved money in the bank.",
         "Prices rose again this year.", "He paid the bill & left.", "The market fell on Monday."]


def sentences() -> list[tuple[str, str, str]]:
    """(text, pair, label): each base sentence four times, made distinct, so the corpus has 48 of them."""
    rows = []
    for k, extra in enumerate(["", " Really.", " Twice over.", " At noon."]):
        rows += [(text + extra, "", "animals") for text in ANIMALS]
        rows += [(text + extra, "It was late." if k == 1 and text == MONEY[0] else "", "money") for text in MONEY]
    return rows


def build_small_corpus(folder: Path, model: str) -> Path:
    from bertviz_app import build_corpus

    source = folder.parent / f"{folder.name}.csv"
    with source.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "text_pair", "label"])
        writer.writerows(sentences())
    return build_corpus(source, folder, model=model, say=lambda text: None, qk_sample=1.0, device="cpu")
