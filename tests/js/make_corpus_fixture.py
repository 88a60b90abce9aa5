"""The corpus maps that the JavaScript unit tests decode (tests/js/corpus.test.mjs), written by our Python encoder
(bertviz_app/views/corpus_payload.py), so that both sides provably agree on the format.

    python tests/js/make_corpus_fixture.py      # rewrites tests/js/fixtures/corpus.* (tests/test_corpus_views.py checks it)

A query/key map of 4 tokens from 2 sentences (a word in two pieces, markup-like pieces, a token without a tag) and a
sentence map of 3 sentences with labels and predictions (one wrong, one unlabelled).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bertviz_app.views.corpus_payload import encode_qk_map, encode_sentence_map  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PIECES = ["[CLS]", "the", "bank", "##s", ".", "[SEP]", "<b>", "&amp;"]
# sentence 7: [CLS] the bank ##s . [SEP]; sentence 12: [CLS] <b> &amp; [SEP]
CONTEXT = [[0, 1, 2, 3, 4, 5], [0, 6, 7, 5]]
SENTENCE_IDS = [7, 12]
TOKENS = [(0, 2), (0, 3), (1, 1), (0, 1)]  # (sentence index, position): bank, ##s, <b>, the
TAGS = ["nns", "at"]
TOKEN_TAGS = [0, 0, -1, 1]


def qk_blob() -> bytes:
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0])  # queries of the 4 tokens, then their keys
    y = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0])
    sentence = [s for s, _ in TOKENS]
    position = [p for _, p in TOKENS]
    piece = [CONTEXT[s][p] for s, p in TOKENS]
    at = np.cumsum([0] + [len(c) for c in CONTEXT])
    return encode_qk_map(x, y, sentence=sentence, position=position, piece=piece, tag=TOKEN_TAGS,
                         sentence_ids=SENTENCE_IDS, context_at=at, context=np.concatenate(CONTEXT), pieces=PIECES,
                         tags=TAGS, header={"corpus": "tiny", "layer": 1, "head": 2, "sentences": 2, "of_tokens": 10})


def sentences_blob() -> bytes:
    return encode_sentence_map(np.array([0.0, 1.0, 2.0]), np.array([2.0, 1.0, 0.0]), sentence_ids=[0, 1, 2],
                               label=[0, 1, -1], prediction=[0, 0, 1], texts=["A <b>bold</b> one.", "Two.", "Três."],
                               labels=["news", "fiction"], header={"corpus": "tiny", "layer": 2, "pooling": "cls"})


def main() -> None:
    FIXTURES.mkdir(exist_ok=True)
    (FIXTURES / "corpus.qk.bvz").write_bytes(qk_blob())
    (FIXTURES / "corpus.sentences.bvz").write_bytes(sentences_blob())


if __name__ == "__main__":
    main()
