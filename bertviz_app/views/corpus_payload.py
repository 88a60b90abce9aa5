"""The corpus views' maps as binary blobs, in the views' own container (payload.py: magic, JSON header, deflated
sections), so that the browser decodes them with the same `decodeBlob`.

A map's points are where they are only to the eye: their coordinates travel as uint16 over the map's bounds (the
header's `bounds`, [x0, x1, y0, y1]): 1/65535 of the map's width, far below a pixel at any zoom the page offers.
Strings (pieces, tags, sentences) never travel one per point: a point carries an index into a string table, and a
table is one section of UTF-8 bytes with one of offsets (`strings` below), so that the header stays small and the
text is deflated with the rest.

Two kinds, both built from plain arrays (corpus/browser.py reads them from a corpus):

    corpus_qk        one head's joint query/key map: 2n points, the n queries first, then the n keys of the same
                     tokens (point i and i + n belong to token i); per token its sentence (an index into the
                     sentences the map touches), position, piece and tag (indexes into `pieces`, `tags`; -1: none);
                     per touched sentence its pieces (`context`, offsets `context_at`), for "the token in its
                     sentence" on hover without asking the server
    corpus_sentences every sentence's point, its label, prediction (indexes into `labels`; -1: none) and its text
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .payload import PayloadError, _Writer, decode

COORD_MAX = 65535


def quantize_coordinates(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """(x codes, y codes, bounds [x0, x1, y0, y1]) as uint16: the value is x0 + code / 65535 * (x1 - x0)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise PayloadError("a map's coordinates must be finite")
    bounds = [float(x.min()), float(x.max()), float(y.min()), float(y.max())] if len(x) else [0.0, 1.0, 0.0, 1.0]

    def codes(v, lo, hi):
        span = hi - lo if hi > lo else 1.0
        return np.clip(np.rint((v - lo) / span * COORD_MAX), 0, COORD_MAX).astype(np.uint16)

    return codes(x, *bounds[:2]), codes(y, *bounds[2:]), bounds


def _strings(out: _Writer, name: str, values: Sequence[str]) -> None:
    """A string table: UTF-8 bytes back to back (section `name`) and each string's start, plus the end
    (`name`_at, int32, one more than the strings)."""
    encoded = [str(v).encode("utf-8", "surrogatepass") for v in values]
    at = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(b) for b in encoded], out=at[1:])
    if at[-1] >= 2**31:
        raise PayloadError(f"the strings of {name} are too long for one map ({at[-1]:,} bytes)")
    out.add(name, np.frombuffer(b"".join(encoded), np.uint8), "u8")
    out.add(f"{name}_at", at.astype(np.int32), "i32")


def _index(values: np.ndarray, size: int) -> tuple[np.ndarray, str]:
    """Indexes as the smallest dtype the container has: uint16 when they fit (65535 standing for -1), else int32."""
    values = np.asarray(values, np.int64)
    if size < COORD_MAX:
        return np.where(values < 0, COORD_MAX, values).astype(np.uint16), "u16"
    return values.astype(np.int32), "i32"


def encode_qk_map(x: np.ndarray, y: np.ndarray, *, sentence: np.ndarray, position: np.ndarray, piece: np.ndarray,
                  tag: np.ndarray, sentence_ids: np.ndarray, context_at: np.ndarray, context: np.ndarray,
                  pieces: Sequence[str], tags: Sequence[str], header: dict) -> bytes:
    """One head's joint map. x, y: (2n,) the queries' points then the keys'; sentence, position, piece, tag: (n,)
    per token (sentence: an index into `sentence_ids`, the corpus's ids of the touched sentences; piece into
    `pieces`, tag into `tags`, -1 for none); context_at (S + 1,) and context: every touched sentence's pieces
    (indexes into `pieces`). `header`: what the page shows beside it (corpus, layer, head, counts)."""
    n = len(sentence)
    if len(x) != 2 * n or len(y) != 2 * n:
        raise PayloadError(f"a query/key map has two points per token: {len(x)} points for {n} tokens")
    out = _Writer()
    qx, qy, bounds = quantize_coordinates(x, y)
    out.add("x", qx, "u16")
    out.add("y", qy, "u16")
    out.add("sentence", np.asarray(sentence, np.int32), "i32")
    out.add("position", np.asarray(position, np.int32), "i32")
    out.add("piece", *_index(piece, len(pieces)))
    out.add("tag", *_index(tag, len(tags)))
    out.add("sentence_ids", np.asarray(sentence_ids, np.int32), "i32")
    out.add("context_at", np.asarray(context_at, np.int32), "i32")
    out.add("context", *_index(context, len(pieces)))
    _strings(out, "pieces", pieces)
    _strings(out, "tags", tags)
    return out.finish({"kind": "corpus_qk", **header, "tokens": n, "bounds": bounds})


def encode_sentence_map(x: np.ndarray, y: np.ndarray, *, sentence_ids: np.ndarray, label: np.ndarray,
                        prediction: np.ndarray | None, texts: Sequence[str], labels: Sequence[str],
                        header: dict) -> bytes:
    """Every sentence's point: label and prediction as indexes into `labels` (-1: none; prediction None when the
    corpus's model has no classifier), and its text."""
    out = _Writer()
    qx, qy, bounds = quantize_coordinates(x, y)
    out.add("x", qx, "u16")
    out.add("y", qy, "u16")
    out.add("sentence_ids", np.asarray(sentence_ids, np.int32), "i32")
    out.add("label", *_index(label, len(labels)))
    if prediction is not None:
        out.add("prediction", *_index(prediction, len(labels)))
    _strings(out, "texts", texts)
    _strings(out, "labels", labels)
    return out.finish({"kind": "corpus_sentences", **header, "count": len(qx), "bounds": bounds,
                       "predictions": prediction is not None})


def decode_map(blob: bytes):
    """A corpus map read back (payload.Decoded), for tests and notebooks: `strings(decoded, name)` gives a table."""
    decoded = decode(blob)
    if decoded.header.get("kind") not in ("corpus_qk", "corpus_sentences"):
        raise PayloadError(f"expected a corpus map, got kind {decoded.header.get('kind')!r}")
    return decoded


def strings(decoded, name: str) -> list[str]:
    data, at = decoded.arrays[name].tobytes(), decoded.arrays[f"{name}_at"]
    return [data[at[i]:at[i + 1]].decode("utf-8", "surrogatepass") for i in range(len(at) - 1)]


def coordinates(decoded) -> tuple[np.ndarray, np.ndarray]:
    """The points' coordinates, dequantized."""
    x0, x1, y0, y1 = decoded.header["bounds"]
    x = decoded.arrays["x"].astype(np.float64) / COORD_MAX
    y = decoded.arrays["y"].astype(np.float64) / COORD_MAX
    return x0 + x * (x1 - x0), y0 + y * (y1 - y0)
