"""The binary payload our JavaScript views draw from: one per analysis, plus an optional query/key blob.

Layout of a blob (all integers little-endian):

    bytes 0..3    magic b"BVIZ"
    byte  4       container version (1); a reader refuses a version it does not know
    byte  5..7    zero (reserved)
    bytes 8..11   u32 N, the length of the header
    N bytes       header: UTF-8 JSON (strings such as tokens travel here, escaped by JSON, never as markup)
    the rest      the sections' bytes, back to back; header["sections"] gives each one's place

A section is {"name", "dtype" (u8 | i8 | u16 | i32 | f32), "shape", "codec" ("deflate-raw" | "none"), "offset",
"length"} with offset counted from the end of the header, plus what its kind needs (for a matrix set: "quant").
A reader ignores sections and header keys it does not know, so later additions (value-weighted attention as
another matrix set, per-token attribution scores) need no new container version.

Matrix sets (header["matrix_sets"], name -> description) are what a view picks from: "attention" is (L, h, T, T)
per head, "rollout" (L, T, T) per layer. Their values are 8-bit codes c = min(floor(v / max * 255), 255), so
the true value lies in [c, c + 1) * max / 255. Floor, not rounding: the near-uniform rows of long inputs sit at
1/T, which for T = 512 is exactly half a step, and rounding turns that into a noise pattern that costs 60 % more
bytes after deflate. Deflate runs with Z_RLE: smaller and faster than the default strategy on these codes
(docs/ARCHITECTURE.md, "Measured").

The query/key blob has the same container with kind "query_key": int8 queries and keys (L, h, T, d) with one
float32 scale per (layer, head) (value = code * scale). It is separate because it is dense (a few MB at 512
tokens) and only the query/key view needs it; the app fetches it when that view is first opened.

It also carries the model's score terms (header "score_terms": their names, the model's factor of q·k, and the
section): the named additive terms of every pre-softmax score as the model computed them, each already scaled ("q.k";
DeBERTa adds "c2p" and "p2c"), (L, h, n, T, T) int8 with one float32 scale per row (L, h, n, T). The view adds them up
and takes the softmax, whatever their names: it knows no family's rule. A row's scale keeps a row of small scores as
precise as one of large ones (the softmax reads differences within a row).
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..tokenizer import wordpiece_word_ids

MAGIC = b"BVIZ"
VERSION = 1
_PREFIX = struct.Struct("<4sB3xI")  # magic, version, 3 reserved bytes, header length
_DTYPES = {"u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i32": np.int32, "f32": np.float32}
# Beyond this many tokens the views still work, but nobody should wait for the payload (BERT itself stops at 512).
MAX_TOKENS = 4096


class PayloadError(ValueError):
    """A payload that cannot be built from these arrays, or bytes that are not a payload we can read."""


def run_key(model: str, tokens: Sequence[str]) -> str:
    """A short fingerprint of one analysis, written into both blobs so a view refuses a query/key blob that
    belongs to another input (the app fetches that blob later, when the input may have changed)."""
    digest = hashlib.sha256(json.dumps([model, list(tokens)], ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:16]


def quantize_floor8(values: np.ndarray, maximum: float = 1.0) -> np.ndarray:
    """codes = min(floor(values / maximum * 255), 255) as uint8; negative values become 0."""
    values = np.asarray(values)
    codes = np.empty(values.shape, dtype=np.uint8)
    if values.size == 0:
        return codes
    # One leading slice at a time through one float32 buffer: a float32 copy of all 18.9 M weights of a 512-token
    # input (75 MB of fresh pages) cost more than the arithmetic.
    flat_in = values.reshape(-1, values.shape[-1]) if values.ndim > 1 else values.reshape(1, -1)
    flat_out = codes.reshape(flat_in.shape)
    rows = max(1, (1 << 20) // flat_in.shape[1])
    buffer = np.empty((min(rows, flat_in.shape[0]), flat_in.shape[1]), dtype=np.float32)
    scale = np.float32(255.0 / maximum)
    for start in range(0, flat_in.shape[0], rows):
        part = flat_in[start:start + rows]
        scaled = buffer[:len(part)]
        np.multiply(part, scale, out=scaled, dtype=np.float32, casting="unsafe")
        np.floor(scaled, out=scaled)
        np.clip(scaled, 0, 255, out=scaled)
        flat_out[start:start + rows] = scaled  # float32 -> uint8, exact: whole numbers in [0, 255]
    return codes


def dequantize_floor8(codes: np.ndarray, maximum: float = 1.0, rows_sum_to_one: bool = False) -> np.ndarray:
    """Values back from floor codes, float32. Each code only says that the value lies in [c, c + 1) * step. When
    every row sums to one (softmax rows, rollout) the missing mass r = 1 - sum(c * step) of a row is the sum of
    what floor cut off its cells, so each cell gets c * step + r / T: rows sum to one again, and the near-zero
    cells of a peaked row stay near zero. Otherwise each cell gets the middle of its interval."""
    step = maximum / 255.0
    lower = codes.astype(np.float32) * step
    if not rows_sum_to_one:
        return np.minimum(lower + step / 2, maximum).astype(np.float32)
    t = codes.shape[-1]
    missing = np.clip(1.0 - lower.sum(axis=-1, keepdims=True), 0.0, t * step)  # (..., 1)
    return (lower + missing / t).astype(np.float32)


def _deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_RLE)  # wbits -15: raw deflate, no zlib header
    return packer.compress(data) + packer.flush()


class _Writer:
    """Collects sections, then writes the container."""

    def __init__(self):
        self.sections: list[dict] = []
        self.chunks: list[bytes] = []
        self.offset = 0

    def add(self, name: str, array: np.ndarray, dtype: str, compress: bool = True, **meta) -> None:
        array = np.ascontiguousarray(array, dtype=np.dtype(_DTYPES[dtype]).newbyteorder("<"))
        raw = array.tobytes()
        data = _deflate(raw) if compress else raw
        self.sections.append({"name": name, "dtype": dtype, "shape": list(array.shape),
                              "codec": "deflate-raw" if compress else "none", "offset": self.offset,
                              "length": len(data), **meta})
        self.chunks.append(data)
        self.offset += len(data)

    def finish(self, header: dict) -> bytes:
        header = {"format": "bertviz-views", "version": VERSION, **header, "sections": self.sections}
        text = json.dumps(header, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        return _PREFIX.pack(MAGIC, VERSION, len(text)) + text + b"".join(self.chunks)


def encode_payload(tokens: Sequence[str], segment_ids, special_mask, attentions: np.ndarray, *,
                   rollout: np.ndarray | None = None, value_weighted: np.ndarray | None = None,
                   statistics: Mapping[str, np.ndarray] | None = None,
                   dominant=None, word_ids: Sequence[int] | None = None, model: str = "", title: str = "",
                   text: str = "", key: str | None = None) -> bytes:
    """The attention payload of one analysis.

    tokens: T strings; segment_ids: (T,) 0 for A, 1 for B; special_mask: (T,) true for [CLS]/[SEP];
    attentions: (L, h, T, T) softmax rows in [0, 1]; rollout: optional (L, T, T), rows summing to one;
    value_weighted: optional (L, h, T, T), value-weighted attention with each row scaled to sum to one;
    statistics: optional name -> (L, h) float arrays (entropy, distance, cls, ... as analysis.head_statistics);
    dominant: optional (L, h) labels; word_ids: (T,) pieces of one word share an id (default: `wordpiece_word_ids`);
    model, title, text: shown by the views; key: the run's fingerprint (default: `run_key(model, tokens)`).
    """
    tokens = [str(t) for t in tokens]
    att = np.asarray(attentions)
    if att.ndim != 4 or att.shape[2] != att.shape[3]:
        raise PayloadError(f"attentions must be (layers, heads, T, T), got shape {att.shape}")
    n_layers, n_heads, t, _ = att.shape
    if len(tokens) != t:
        raise PayloadError(f"{len(tokens)} tokens but attention matrices of {t} x {t}")
    if not 0 < t <= MAX_TOKENS:
        raise PayloadError(f"an input of {t} tokens is outside what the views draw (1 to {MAX_TOKENS})")
    segments = np.asarray(segment_ids).reshape(-1)
    special = np.asarray(special_mask, dtype=bool).reshape(-1)
    words = np.asarray(wordpiece_word_ids(tokens, special) if word_ids is None else word_ids).reshape(-1)
    for name, arr in (("segment_ids", segments), ("special_mask", special), ("word_ids", words)):
        if len(arr) != t:
            raise PayloadError(f"{name} has {len(arr)} entries for {t} tokens")
    if not np.isfinite(att).all():
        raise PayloadError("attentions contain NaN or infinity")

    out = _Writer()
    out.add("segments", segments, "u8")  # (T,)
    out.add("special", special, "u8")  # (T,)
    out.add("words", words, "i32")  # (T,)
    quant = {"scheme": "floor", "bits": 8, "max": 1.0}
    sets = {"attention": {"section": "attention", "label": "attention", "per_head": True, "rows_sum_to_one": True}}
    out.add("attention", quantize_floor8(att), "u8", quant=quant)  # (L, h, T, T)
    if rollout is not None:
        roll = np.asarray(rollout)
        if roll.shape != (n_layers, t, t):
            raise PayloadError(f"rollout must be (layers, T, T) = {(n_layers, t, t)}, got {roll.shape}")
        sets["rollout"] = {"section": "rollout", "label": "attention rollout", "per_head": False,
                           "rows_sum_to_one": True}
        out.add("rollout", quantize_floor8(roll), "u8", quant=quant)  # (L, T, T)
    if value_weighted is not None:
        vw = np.asarray(value_weighted)
        if vw.shape != att.shape:
            raise PayloadError(f"value_weighted must have the shape of attentions {att.shape}, got {vw.shape}")
        sets["value_weighted"] = {"section": "value_weighted", "label": "value-weighted", "per_head": True,
                                  "rows_sum_to_one": True}
        out.add("value_weighted", quantize_floor8(vw), "u8", quant=quant)  # (L, h, T, T)
    header = {"kind": "attention", "key": key or run_key(model, tokens), "model": str(model), "title": str(title),
              "text": str(text), "tokens": tokens, "layers": n_layers, "heads": n_heads, "length": t,
              "matrix_sets": sets}
    if statistics:
        names = list(statistics)
        stacked = np.stack([np.asarray(statistics[n], dtype=np.float32) for n in names])  # (S, L, h)
        if stacked.shape[1:] != (n_layers, n_heads):
            raise PayloadError(f"each statistic must be (layers, heads) = {(n_layers, n_heads)}")
        out.add("statistics", stacked, "f32", compress=False)
        header["statistics"] = {"section": "statistics", "names": names}
    if dominant is not None:
        labels = np.asarray(dominant, dtype=object)
        if labels.shape != (n_layers, n_heads):
            raise PayloadError(f"dominant must be (layers, heads) = {(n_layers, n_heads)}, got {labels.shape}")
        header["dominant"] = [[str(x) for x in row] for row in labels]
    return out.finish(header)


def _add_int8(out: "_Writer", name: str, x: np.ndarray, leading: int = 2) -> None:
    """(L, h, ...) float32 as int8 codes with one float32 scale per index of the first `leading` axes (per (layer,
    head) by default): value = code * scale."""
    scale = np.abs(x).max(axis=tuple(range(leading, x.ndim))) / 127.0  # (L, h) or more
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    codes = np.clip(np.rint(x / scale.reshape(scale.shape + (1,) * (x.ndim - leading))), -127, 127).astype(np.int8)
    out.add(name, codes, "i8", quant={"scheme": "symmetric", "bits": 8, "scale": f"{name}_scale"})
    out.add(f"{name}_scale", scale, "f32", compress=False)


def encode_query_key(queries: np.ndarray, keys: np.ndarray, *, key: str | None = None,
                     score_terms: Mapping[str, np.ndarray] | None = None, scale: float | None = None) -> bytes:
    """The query/key blob: queries and keys (L, h, T, d), as before the model's scaling. key: the fingerprint of
    the attention payload they belong to (see `run_key`). score_terms: the model's named additive terms of every
    score, name -> (L, h, T, T), each already scaled (`Run.score_terms` of each layer); scale: the model's factor of
    q·k (shown beside the arithmetic). Without terms the view shows the vectors but no scores."""
    q, k = np.asarray(queries, dtype=np.float32), np.asarray(keys, dtype=np.float32)
    if q.ndim != 4 or q.shape != k.shape:
        raise PayloadError(f"queries and keys must both be (layers, heads, T, d), got {q.shape} and {k.shape}")
    if not (np.isfinite(q).all() and np.isfinite(k).all()):
        raise PayloadError("queries or keys contain NaN or infinity")
    n_layers, n_heads, t, d = q.shape
    out = _Writer()
    for name, x in (("queries", q), ("keys", k)):
        _add_int8(out, name, x)  # (L, h, T, d)
    header = {"kind": "query_key", "key": key, "layers": n_layers, "heads": n_heads, "length": t, "head_size": d}
    if score_terms:
        names = [str(n) for n in score_terms]
        # (L, h, n, T, T): a query row's n terms lie together, as the view reads them
        stacked = np.stack([np.asarray(score_terms[n], dtype=np.float32) for n in score_terms], axis=2)
        if stacked.shape != (n_layers, n_heads, len(names), t, t):
            raise PayloadError(f"each score term must be (layers, heads, T, T) = {(n_layers, n_heads, t, t)}, "
                               f"got {stacked.shape[:2] + stacked.shape[3:]}")
        if not np.isfinite(stacked).all():
            raise PayloadError("score terms contain NaN or infinity")
        _add_int8(out, "score_terms", stacked, leading=4)  # (L, h, n, T, T), a scale per row (L, h, n, T)
        header["score_terms"] = {"section": "score_terms", "names": names,
                                 "scale": None if scale is None else float(scale)}
    return out.finish(header)


@dataclass
class Decoded:
    """A blob read back: its header and each section as a numpy array of its stored dtype and shape (codes, not
    values: see `values`)."""

    header: dict
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    def values(self, name: str) -> np.ndarray:
        """A section as float32 values: floor codes dequantized (rows summing to one where the matrix set says
        so), symmetric int8 codes times their scale, anything else as stored."""
        meta = next(s for s in self.header["sections"] if s["name"] == name)
        quant = meta.get("quant")
        codes = self.arrays[name]
        if not quant:
            return codes.astype(np.float32)
        if quant["scheme"] == "floor":
            sets = self.header.get("matrix_sets", {})
            rows = any(s["section"] == name and s.get("rows_sum_to_one") for s in sets.values())
            return dequantize_floor8(codes, quant["max"], rows)
        scale = self.arrays[quant["scale"]]
        return codes.astype(np.float32) * scale.reshape(scale.shape + (1,) * (codes.ndim - scale.ndim))


def read_header(blob: bytes) -> tuple[dict, int]:
    """(the header, where the sections start) of any blob of this format, without unpacking its sections."""
    if len(blob) < _PREFIX.size:
        raise PayloadError("too short to be a bertviz views payload")
    magic, version, length = _PREFIX.unpack_from(blob)
    if magic != MAGIC:
        raise PayloadError("not a bertviz views payload (wrong magic bytes)")
    if version != VERSION:
        raise PayloadError(f"payload format version {version}; this bertviz-app reads version {VERSION}")
    start = _PREFIX.size + length
    return json.loads(bytes(blob[_PREFIX.size:start]).decode("utf-8")), start


def check_blob(blob: bytes, kind: str = "attention") -> dict:
    """The header of `blob` if it is what it claims, without inflating it: our magic and version, a JSON header of
    `kind`, and every section within the blob's bytes. For bytes read from disk before they are sent or written
    into a page (a timeline's stored payloads)."""
    try:
        header, start = read_header(blob)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise PayloadError(f"not a bertviz views payload (its header cannot be read: {type(err).__name__})") from None
    if not isinstance(header, dict) or header.get("kind") != kind:
        raise PayloadError(f"expected a payload of kind {kind!r}")
    sections = header.get("sections")
    if not isinstance(sections, list):
        raise PayloadError("not a bertviz views payload (no list of sections)")
    for s in sections:
        if not (isinstance(s, dict) and all(isinstance(s.get(k), int) and s[k] >= 0 for k in ("offset", "length"))
                and start + s["offset"] + s["length"] <= len(blob)):
            raise PayloadError("not a whole bertviz views payload (a section lies beyond its end)")
    return header


def decode(blob: bytes) -> Decoded:
    """Read any blob of this format (attention payload or query/key blob)."""
    blob = bytes(blob)
    header, start = read_header(blob)
    out = Decoded(header)
    for s in header["sections"]:
        data = blob[start + s["offset"]:start + s["offset"] + s["length"]]
        if s["codec"] == "deflate-raw":
            data = zlib.decompress(data, -15)
        dtype = np.dtype(_DTYPES[s["dtype"]]).newbyteorder("<")
        out.arrays[s["name"]] = np.frombuffer(data, dtype=dtype).reshape(s["shape"])
    return out


def decode_payload(blob: bytes) -> Decoded:
    decoded = decode(blob)
    if decoded.header.get("kind") != "attention":
        raise PayloadError(f"expected an attention payload, got kind {decoded.header.get('kind')!r}")
    return decoded


def decode_query_key(blob: bytes) -> Decoded:
    decoded = decode(blob)
    if decoded.header.get("kind") != "query_key":
        raise PayloadError(f"expected a query/key blob, got kind {decoded.header.get('kind')!r}")
    return decoded


# Value-weighted attention doubles the payload; up to this length it travels with every analysis (585 kB at 256
# tokens for the default model), beyond it the views offer raw attention and rollout only.
VALUE_WEIGHTED_MAX_TOKENS = 256


# The score terms grow with T² (int8, a scale per row): they travel while there are at most this many values
# (layers x heads x terms x T², the default model's at 256 tokens), beyond it the query/key view shows the vectors,
# q·k and the model's own weights, without terms. Measured, the default model's blob: 0.22 MB at 32 tokens against
# 0.14 for queries and keys alone, 1.65 MB at 128 (0.54), 5.4 MB at 256 (1.06); a DeBERTa v3 base-sized one (12 x 12
# heads, three terms): 1.02 MB at 32 tokens (0.54), terms up to 104 tokens.
SCORE_TERMS_MAX_VALUES = 6 * 12 * 256 * 256


def input_text(encoding) -> str:
    """The input as one line: sentence A, or "A | B" for a pair."""
    return encoding.text if encoding.text_pair is None else f"{encoding.text} | {encoding.text_pair}"


def input_title(encoding, model: str = "", limit: int = 100) -> str:
    """The title of an input's views: its text shortened to `limit` characters, then " · model" when given."""
    text = input_text(encoding)
    text = text if len(text) <= limit else text[:limit - 1].rstrip() + "\u2026"
    return f"{text} · {model}" if model else text
