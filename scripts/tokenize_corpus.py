#!/usr/bin/env python3
"""Tokenize a corpus folder of scripts/build_corpus.py once, into the token-id format bertviz_app.pretraining reads
(`.npz`: uint16 ids, sentence and document ends, each training document's source), so that a lent GPU machine
spends its minutes training rather than tokenizing, and the corpus travels in a fifth of the text's size.

    python scripts/tokenize_corpus.py runs/corpus --out runs/device/corpus

Writes train.npz (with the sources named in sources.json, in the order build_corpus.py wrote them), and heldout.npz,
heldout-broad.npz and unseen.npz for the files that exist.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bertviz_app.catalog import ENGLISH_MLM_PATH  # noqa: E402
from bertviz_app.pretraining.data import read_documents, save_token_corpus, tokenize_documents  # noqa: E402
from bertviz_app.tokenizer import Tokenizer  # noqa: E402

SPLITS = ("train", "heldout", "heldout-broad", "unseen")


def train_sources(summary: dict, documents: int) -> tuple[list[int], list[str]]:
    """Each training document's source index, from sources.json's per-source counts: build_corpus.py writes the
    training documents source by source, in the order sources.json lists them."""
    names = [name for name, counts in summary["sources"].items() if counts.get("train_documents")]
    sources = [i for i, name in enumerate(names) for _ in range(summary["sources"][name]["train_documents"])]
    if len(sources) != documents:
        raise ValueError(f"sources.json counts {len(sources)} training documents but train.txt holds {documents}; "
                         "rebuild the corpus with scripts/build_corpus.py")
    return sources, names


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="folder that scripts/build_corpus.py wrote")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tokenizer", type=Path, default=ENGLISH_MLM_PATH)
    args = parser.parse_args(argv)
    tokenizer = Tokenizer.from_folder(args.tokenizer)
    summary = json.loads((args.corpus / "sources.json").read_text()) if (args.corpus / "sources.json").exists() \
        else None
    for split in SPLITS:
        text = args.corpus / f"{split}.txt"
        if not text.exists():
            continue
        documents = read_documents(text)
        sources, names = (train_sources(summary, len(documents)) if split == "train" and summary else (None, None))
        ids = tokenize_documents(documents, tokenizer)
        path = save_token_corpus(args.out / f"{split}.npz", ids, sources, names)
        tokens = sum(len(s) for d in ids for s in d)
        print(f"{path}: {len(ids)} documents, {tokens} tokens, {path.stat().st_size / 1e6:.1f} MB "
              f"(text {text.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
