"""The fixture that the JavaScript unit tests decode: a tiny payload and query/key blob written by our Python encoder,
with the numbers the JavaScript must get back, so both sides provably agree on the format.

    python tests/js/make_fixture.py      # rewrites tests/js/fixtures/ (tests/test_views.py checks it is current)

The data are arithmetic, not random, so they do not depend on a random generator's version: 2 layers x 3 heads,
9 tokens with a word split into three pieces, markup-like tokens and a pair of sentences.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bertviz_app.analysis import attention_rollout, head_statistics  # noqa: E402
from bertviz_app.views import payload as views_payload  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TOKENS = ["[CLS]", "un", "##believ", "##able", "<b>", "[SEP]", "it", "&amp;", "[SEP]"]
SEGMENTS = [0, 0, 0, 0, 0, 0, 1, 1, 1]
SPECIAL = [1, 0, 0, 0, 0, 1, 0, 0, 1]
LAYERS, HEADS, HEAD_SIZE = 2, 3, 4
MERGE_AT = (1, 2)  # layer, head whose word matrix the fixture spells out
QUERY_AT = (1, 2, 4)  # layer, head, token of the query/key row


def arrays() -> dict[str, np.ndarray]:
    t = len(TOKENS)
    l, h, i, j = np.meshgrid(np.arange(LAYERS), np.arange(HEADS), np.arange(t), np.arange(t), indexing="ij")
    logits = 3.0 * np.sin(1.3 * i + 0.7 * j + l + 2.1 * h)  # (L, h, T, T)
    logits[1, 0, :, 5] += 12.0  # a [SEP] head: almost everything on token 5, little left once [SEP] is hidden
    att = np.exp(logits - logits.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    e = np.arange(HEAD_SIZE)
    lq, hq, tq, eq = np.meshgrid(np.arange(LAYERS), np.arange(HEADS), np.arange(t), e, indexing="ij")
    queries = np.cos(0.9 * tq + 1.7 * eq + lq - hq) * (1.0 + hq)  # (L, h, T, d)
    keys = np.sin(0.4 * tq - 1.1 * eq + 2.0 * lq + hq) * 2.0
    return {"attentions": att.astype(np.float32), "queries": queries.astype(np.float32),
            "keys": keys.astype(np.float32)}


def score_terms(queries: np.ndarray, keys: np.ndarray, extra: bool) -> dict[str, np.ndarray]:
    """The model's score terms, name -> (L, h, T, T), each scaled: "q.k" alone (BERT), or with two more terms of
    arithmetic values (a family member whose score has three terms, as DeBERTa's has; their names are the blob's)."""
    t = len(TOKENS)
    scale = 1 / np.sqrt((3 if extra else 1) * HEAD_SIZE)
    terms = {"q.k": (queries @ np.swapaxes(keys, -1, -2)) * scale}
    if extra:
        l, h, i, j = np.meshgrid(np.arange(LAYERS), np.arange(HEADS), np.arange(t), np.arange(t), indexing="ij")
        terms["c2p"] = 1.5 * np.cos(0.5 * (i - j) + l + 0.3 * h)
        terms["p2c"] = np.sin(0.8 * (i - j) - l + h) - 0.2 * j
    return {name: term.astype(np.float32) for name, term in terms.items()}


def terms_expected(qk_blob: bytes) -> dict:
    """The row at QUERY_AT from the decoded int8 terms, as the JavaScript must rebuild it: each term, their sum and
    its softmax."""
    dec = views_payload.decode_query_key(qk_blob)
    ql, qh, qt = QUERY_AT
    terms = dec.values("score_terms")[ql, qh, :, qt]  # (n, T)
    scores = terms.sum(0)
    return {"names": dec.header["score_terms"]["names"], "terms": rounded(terms, 6), "scores": rounded(scores, 6),
            "weights": rounded(softmax(scores), 6)}


def build() -> tuple[bytes, bytes, dict]:
    """(payload, query/key blob, expected numbers for the JavaScript tests); the DeBERTa blob is `build_relative`."""
    a = arrays()
    att = a["attentions"]
    stats = head_statistics(att, np.asarray(SPECIAL, dtype=bool))
    names = ("entropy", "distance", "cls", "sep", "self", "previous", "next")
    blob = views_payload.encode_payload(TOKENS, SEGMENTS, SPECIAL, att, rollout=attention_rollout(att),
                                        statistics={n: getattr(stats, n) for n in names}, dominant=stats.dominant,
                                        model="fixture-model", title="a <b>fixture</b>", text="un believable")
    qk = views_payload.encode_query_key(a["queries"], a["keys"], key=views_payload.run_key("fixture-model", TOKENS),
                                        score_terms=score_terms(a["queries"], a["keys"], False),
                                        scale=1 / np.sqrt(HEAD_SIZE))

    decoded = views_payload.decode_payload(blob)
    values = decoded.values("attention")  # (L, h, T, T) as the JavaScript should dequantize them
    words = np.asarray(views_payload.wordpiece_word_ids(TOKENS, SPECIAL))
    layer, head = MERGE_AT
    merged = merge_words(values[layer, head], words)
    q_dec = views_payload.decode_query_key(qk)
    ql, qh, qt = QUERY_AT
    q = q_dec.values("queries")[ql, qh, qt]
    k = q_dec.values("keys")[ql, qh]
    scores = q_dec.values("score_terms")[ql, qh, 0, qt]  # the one term, "q.k", is the score
    weights = softmax(scores)
    expected = {
        "tokens": TOKENS, "layers": LAYERS, "heads": HEADS, "length": len(TOKENS), "words": words.tolist(),
        "attention": rounded(att, 7), "dequantized": rounded(values, 7),
        "rollout": rounded(attention_rollout(att), 7),
        "statistics": {n: rounded(getattr(stats, n), 6) for n in names},
        "dominant": stats.dominant.tolist(), "merge_at": list(MERGE_AT), "merged": rounded(merged, 7),
        "query_at": list(QUERY_AT), "scores": rounded(scores, 6), "weights": rounded(weights, 7),
        "exact_weights": rounded(softmax(a["keys"][ql, qh] @ a["queries"][ql, qh, qt] / np.sqrt(HEAD_SIZE)), 7),
    }
    return blob, qk, expected


def build_terms(extra: bool = True) -> tuple[bytes, dict]:
    """The query/key blob of a model whose score has three terms for the same input (or, extra False, a blob with
    queries and keys only, as a page that computes no terms sends), and its expected row."""
    a = arrays()
    key = views_payload.run_key("fixture-model", TOKENS)
    if not extra:
        return views_payload.encode_query_key(a["queries"], a["keys"], key=key), {}
    qk = views_payload.encode_query_key(a["queries"], a["keys"], key=key,
                                        score_terms=score_terms(a["queries"], a["keys"], True),
                                        scale=1 / np.sqrt(3 * HEAD_SIZE))
    return qk, terms_expected(qk)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def rounded(x, digits: int = 7) -> list:
    return np.asarray(x, dtype=np.float64).round(digits).tolist()


def merge_words(matrix: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Clark et al. (2019): attention to a word is summed over its pieces, attention from a word averaged."""
    ids = np.unique(words)
    to_words = np.stack([matrix[:, words == w].sum(1) for w in ids], axis=1)  # (T, W)
    return np.stack([to_words[words == w].mean(0) for w in ids])  # (W, W)


def main() -> None:
    blob, qk, expected = build()
    FIXTURES.mkdir(exist_ok=True)
    (FIXTURES / "small.bvz").write_bytes(blob)
    (FIXTURES / "small.qk.bvz").write_bytes(qk)
    terms_qk, expected["terms"] = build_terms()
    (FIXTURES / "small.terms.qk.bvz").write_bytes(terms_qk)
    (FIXTURES / "small.noterms.qk.bvz").write_bytes(build_terms(extra=False)[0])
    (FIXTURES / "small.json").write_text(json.dumps(expected) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURES}: payload {len(blob)} bytes, query/key {len(qk)} bytes")


if __name__ == "__main__":
    main()
