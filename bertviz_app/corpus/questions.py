"""The questions a corpus answers, as functions of its arrays (store.Corpus reads them): what each head does over the
corpus (Clark et al. 2019, Dodrio), which tag relations a head's strongest link follows, its positional profile, the
tokens nearest to a token in context (exBERT), the joint query/key map of a head (AttentionViz) and the sentence map
(LIT). Each answer is a table whose rows name their sentence, so that any point leads back to `corpus.run(i)`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..analysis.attention import check_index
from ..heads import CORPUS_SHARES, MIXED, roles
from .sources import CorpusError
from .stats import OFFSETS, STATISTICS

# Relations read from part-of-speech tags alone, each (name, from-class, to-class, words it may look ahead):
# Clark et al.'s "which head tracks this dependency", measured with tags instead of a parse.
RELATIONS = (("determiner -> its noun", "DET", "NOUN", 4), ("adjective -> its noun", "ADJ", "NOUN", 3),
             ("preposition -> the noun after it", "ADP", "NOUN", 4), ("possessive -> its noun", "POSS", "NOUN", 3),
             ("auxiliary -> its verb", "AUX", "VERB", 3))
# Brown's auxiliaries (modals, and forms of be, have and do, which a verb follows when they are one) and the Penn
# Treebank's modals: its be/have/do are tagged as verbs, so only its modals are read as auxiliaries.
AUXILIARIES = {"md", "be", "bed", "bedz", "beg", "bem", "ben", "ber", "bez", "hv", "hvd", "hvg", "hvn", "hvz", "do",
               "dod", "doz"}
SPECIAL_TAGS = ("[CLS]", "[SEP]")
SUMMARY_COLUMNS = (*STATISTICS, "entropy_ratio")  # entropy_ratio: a row's entropy over a uniform row's


# ------------------------------------------------------------------------------------------------------------------
# What each head does
# ------------------------------------------------------------------------------------------------------------------
def head_summary(corpus, by: str | None) -> pd.DataFrame:
    L, h = corpus.num_layers, corpus.num_heads
    groups, names = _groups(corpus, by)
    lengths = np.diff(corpus.sentence_starts)
    totals, row = 0.0, 0
    for shard in corpus.shards:
        n = shard.tokens
        if by is None and shard.has("summary_sums"):  # the build summed the shard already
            totals = totals + np.asarray(shard.array("summary_sums"), dtype=np.float64)
        else:
            totals = totals + statistic_sums(shard.array("head_stats"), lengths[corpus.token_columns[row:row + n, 0]],
                                             groups[row:row + n], len(names))
        row += n
    sums, squares, counts = totals
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums / counts
        spread = np.sqrt(np.maximum(squares / counts - mean ** 2, 0.0))
    frames = []
    layer, head = np.meshgrid(np.arange(L), np.arange(h), indexing="ij")
    for k, name in enumerate(names):
        data = {} if by is None else {by: name}
        data.update(layer=layer.ravel(), head=head.ravel())
        m, s = mean[k].reshape(L * h, -1), spread[k].reshape(L * h, -1)
        for j, column in enumerate(SUMMARY_COLUMNS):
            data[column] = m[:, j]
            data[f"{column}_spread"] = s[:, j]
        data["tokens"] = counts[k].reshape(L * h, -1)[:, 0].astype(np.int64)
        frame = pd.DataFrame(data)
        frame["role"] = roles({name: frame[name] for name in CORPUS_SHARES}, frame["entropy_ratio"], CORPUS_SHARES)
        frames.append(frame)
    summary = pd.concat(frames, ignore_index=True)
    if corpus.tags and by is None:
        _linking_roles(corpus, summary)
    return summary


def statistic_sums(stats: np.ndarray, lengths: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """(3, G, L * h * C): per group, the sums, sums of squares and counts (NaN left out) of SUMMARY_COLUMNS of every
    head. stats: (n, L, h, S) per token; lengths: (n,) the token's sentence length; groups: (n,) 0..G-1 or -1."""
    x = np.asarray(stats, dtype=np.float64)
    n = len(x)
    ratio = x[..., 0] / np.log(np.maximum(lengths.astype(np.float64), 2))[:, None, None]  # of a uniform row's
    x = np.concatenate([x, ratio[..., None]], -1).reshape(n, -1)
    valid = ~np.isnan(x)
    x[~valid] = 0.0
    out = np.zeros((3, n_groups, x.shape[1]))
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    present = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])  # where each group's rows start, in `order`
    keep = g[present] >= 0
    for k, part in enumerate((x, x * x, valid.astype(np.float64))):
        sums = np.add.reduceat(part[order], present, axis=0)  # one pass over the rows, however many groups
        out[k, g[present[keep]]] = sums[keep]
    return out


def _groups(corpus, by: str | None) -> tuple[np.ndarray, list[str]]:
    """Each token's group (-1: in none) and the groups' names."""
    c = corpus.token_columns
    if by is None:
        return np.zeros(len(c), dtype=np.int64), ["all"]
    if by == "tag":
        if not corpus.tags:
            raise CorpusError("this corpus has no tags; by='tag' needs a tagged source (CoNLL, brown, wsj-pos)")
        return c[:, 4].astype(np.int64), list(corpus.tags)
    if by not in ("label", "prediction", "error"):
        raise CorpusError(f"by must be None, 'label', 'tag', 'prediction' or 'error', not {by!r}")
    sentences = corpus.sentences
    needed = "label" if by == "label" else "prediction"
    if needed not in sentences or sentences[needed].isna().all():
        what = "labels" if by == "label" else "predictions of a fine-tuned classifier"
        raise CorpusError(f"this corpus has no {what}; by={by!r} needs them")
    if by == "error":
        values = (sentences["prediction"] != sentences["label"]).where(sentences["label"].notna(), None)
    else:
        values = sentences[by]
    names = sorted({str(v) for v in values if v is not None and v == v})
    code = {name: k for k, name in enumerate(names)}
    per_sentence = np.array([code.get(str(v), -1) if v is not None and v == v else -1 for v in values])
    return per_sentence[c[:, 0]], names


def _linking_roles(corpus, summary: pd.DataFrame) -> None:
    """A mixed head that is the best at a tag relation, and beats always-the-next-word at it, is named for it."""
    best = relation_heads(corpus)
    for r in best.itertuples():
        if r.accuracy > r.next_word_baseline:
            where = (summary["layer"] == r.layer) & (summary["head"] == r.head) & (summary["role"] == MIXED)
            summary.loc[where, "role"] = f"links {r.relation}"


# ------------------------------------------------------------------------------------------------------------------
# Tags
# ------------------------------------------------------------------------------------------------------------------
def coarse_tag(tag: str) -> str:
    """Brown's and the Penn Treebank's tags in the classes the relations read (DET, ADJ, ADP, NOUN, POSS, AUX,
    VERB) and "" for the rest."""
    raw = tag.lower().split("-")[0]
    if raw in ("pp$", "prp$", "wp$"):
        return "POSS"
    t = raw.rstrip("$*")
    if t in AUXILIARIES:
        return "AUX"
    if t.startswith("vb"):
        return "VERB"
    if t.startswith(("nn", "np")):
        return "NOUN"
    if t == "at" or t.startswith("dt") or t == "pdt":
        return "DET"
    if t.startswith("jj"):
        return "ADJ"
    return "ADP" if t == "in" else ""


def _strongest_targets(corpus, rows: np.ndarray) -> np.ndarray:
    """(R, L, h) the token row each head's strongest link from token `rows` lands on."""
    strongest = corpus.statistic("strongest")[rows]  # (R, L, h) offsets
    return rows[:, None, None] + strongest.astype(np.int64)


def _word_starts(corpus) -> np.ndarray:
    """Rows of the tokens that begin a tagged word (the word's query)."""
    c = corpus.token_columns
    new_word = np.ones(len(c), dtype=bool)
    new_word[1:] = (c[1:, 3] != c[:-1, 3]) | (c[1:, 0] != c[:-1, 0])
    return np.flatnonzero(new_word & (c[:, 4] >= 0))


def _require_tags(corpus) -> None:
    if not corpus.tags:
        raise CorpusError("this corpus has no tags; tag links need a tagged source (CoNLL, brown, wsj-pos)")


def link_information(count, lift):
    """How much a (from-tag, to-tag) pair tells about where a head looks: its count times log2 of its lift, the
    pair's part of the mutual information between a word's tag and the tag its strongest link lands on (in bits, times
    the corpus's words). Ranked by lift alone, rare tags led (a 37-token pair at 1434x chance above thousands of
    determiners finding their nouns at 5x); ranked by count alone, any common tag would."""
    return np.asarray(count, dtype=np.float64) * np.log2(np.maximum(np.asarray(lift, dtype=np.float64), 1e-300))


def tag_links(corpus, layer: int | None, head: int | None, min_count: int) -> pd.DataFrame:
    _require_tags(corpus)
    c = corpus.token_columns
    names = list(corpus.tags) + list(SPECIAL_TAGS)
    T = len(names)
    codes = np.where(c[:, 4] >= 0, c[:, 4], np.where(c[:, 1] == 0, T - 2, T - 1))  # specials: [CLS] first, [SEP]
    chance = np.bincount(codes, minlength=T) / len(codes)  # a link landing on a token at random
    rows = _word_starts(corpus)
    targets = _strongest_targets(corpus, rows)
    from_codes = codes[rows]
    from_counts = np.bincount(from_codes, minlength=T)
    layers = range(corpus.num_layers) if layer is None else [corpus.check_layer(layer)]
    heads = range(corpus.num_heads) if head is None else [corpus.check_head(head)]
    out = []
    for l in layers:
        for hd in heads:
            pairs = np.bincount(from_codes * T + codes[targets[:, l, hd]], minlength=T * T).reshape(T, T)
            expected = from_counts[:, None] * chance[None, :]
            f, t = np.nonzero(pairs >= min_count)
            lift = pairs[f, t] / expected[f, t]
            keep = lift >= 2
            out.append(pd.DataFrame({"layer": l, "head": hd, "from_tag": np.asarray(names)[f[keep]],
                                     "to_tag": np.asarray(names)[t[keep]], "count": pairs[f, t][keep],
                                     "share": pairs[f, t][keep] / from_counts[f[keep]],
                                     "chance": chance[t[keep]], "lift": lift[keep],
                                     "information": link_information(pairs[f, t][keep], lift[keep])}))
    frame = pd.concat(out, ignore_index=True)
    return frame.sort_values(["layer", "head", "information"], ascending=[True, True, False], ignore_index=True)


def relation_targets(corpus) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per relation: the query rows (a word's first token) and the id of the word they should link to (the first word
    of the target class within the relation's window, in the same sentence)."""
    c = corpus.token_columns
    classes = np.array([coarse_tag(t) for t in corpus.tags] + [""], dtype=object)[c[:, 4]]
    starts = _word_starts(corpus)
    kinds, sentence = classes[starts], c[starts, 0]
    found = {}
    for name, source, target, window in RELATIONS:
        queries = np.flatnonzero(kinds == source)  # indexes into `starts`
        goal = np.full(len(queries), -1)
        for ahead in range(window, 0, -1):  # the nearest last, so that it wins
            j = queries + ahead
            inside = j < len(starts)
            hit = np.zeros(len(queries), dtype=bool)
            hit[inside] = (kinds[j[inside]] == target) & (sentence[j[inside]] == sentence[queries[inside]])
            goal[hit] = j[hit]
        keep = goal >= 0
        found[name] = (starts[queries[keep]].astype(np.int64), c[starts[goal[keep]], 3].astype(np.int64))
    return found


def relation_heads(corpus, all_heads: bool = False) -> pd.DataFrame:
    _require_tags(corpus)
    c = corpus.token_columns
    out = []
    for name, (rows, words) in relation_targets(corpus).items():
        if not len(rows):
            continue
        hits = c[_strongest_targets(corpus, rows), 3] == words[:, None, None]  # (R, L, h)
        accuracy = hits.mean(0)
        baseline = float(np.mean(words == c[rows, 3] + 1))  # always the next word
        layer, head = np.meshgrid(np.arange(corpus.num_layers), np.arange(corpus.num_heads), indexing="ij")
        frame = pd.DataFrame({"relation": name, "layer": layer.ravel(), "head": head.ravel(),
                              "accuracy": accuracy.ravel(), "next_word_baseline": baseline, "count": len(rows)})
        frame = frame.sort_values("accuracy", ascending=False, kind="stable")
        out.append(frame if all_heads else frame.head(1))
    if not out:
        raise CorpusError("no word of this corpus starts a relation read from tags (a determiner, adjective, "
                          "preposition or possessive before a noun, an auxiliary before a verb); are its tags "
                          "Brown's or the Penn Treebank's?")
    return pd.concat(out, ignore_index=True)


# ------------------------------------------------------------------------------------------------------------------
# Position
# ------------------------------------------------------------------------------------------------------------------
def positional_profile(corpus, layer: int, head: int) -> pd.DataFrame:
    sums = sum(np.asarray(s.array("offsets")[layer, head]) for s in corpus.shards)
    counts = sum(np.asarray(s.array("offset_counts")) for s in corpus.shards)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return pd.DataFrame({"offset": OFFSETS, "attention": mean, "pairs": counts})


# ------------------------------------------------------------------------------------------------------------------
# Search by meaning
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class SearchResult:
    """The nearest tokens (`table`, nearest first) and what dominates them (`words`, `tags`: counts)."""

    query: str
    layer: int
    table: pd.DataFrame
    words: pd.Series
    tags: pd.Series

    def __repr__(self) -> str:
        top = ", ".join(f"{w} ({n})" for w, n in self.words.head(5).items())
        return f"SearchResult({self.query!r} at layer {self.layer}: {len(self.table)} tokens; words {top})"


def query_vector(corpus, query, token_index: int | None, layer: int, text_pair: str | None) -> tuple[np.ndarray, str]:
    if isinstance(query, str):
        if token_index is None:
            raise CorpusError("a search by text needs the token to look for: give token_index (its position, "
                              "[CLS] being 0)")
        run = corpus.explorer.run(query, text_pair)
        token_index = check_index("token", token_index, len(run))
        return run.hidden_states[layer][token_index].astype(np.float32), f"{run.labels[token_index]} in {query!r}"
    vector = np.asarray(query, dtype=np.float32)
    if vector.shape != (corpus.hidden_size,):
        raise CorpusError(f"a search vector must have {corpus.hidden_size} numbers (this model's hidden size), not "
                          f"shape {vector.shape}")
    if not np.isfinite(vector).all() or not np.any(vector):
        raise CorpusError("a search vector must be finite and not all zeros")
    return vector, "a vector"


def search(corpus, query, token_index: int | None, layer: int, k: int, text_pair: str | None) -> SearchResult:
    layer = corpus.check_hidden_layer(layer)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise CorpusError(f"k must be a whole number of 1 or more, not {k!r}")
    vector, described = query_vector(corpus, query, token_index, layer, text_pair)
    vectors = corpus.hidden(layer)
    unit = vector / np.linalg.norm(vector)
    scores = vectors @ unit  # (N,) cosine: the corpus's vectors are unit length
    k = min(int(k), len(scores))
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.lexsort((best, -scores[best]))]  # nearest first; equal scores by row, as a stable sort gives
    return _result(corpus, described, layer, best, scores[best])


def _result(corpus, described: str, layer: int, rows: np.ndarray, scores: np.ndarray) -> SearchResult:
    c, sentences = corpus.token_columns, corpus.sentences
    pieces, tags = corpus.spelled(rows)
    words = [_word_text(corpus, row) for row in rows]
    ids = c[rows, 0]
    table = pd.DataFrame({"score": scores, "sentence": ids, "position": c[rows, 1],
                          "piece": pieces, "word": words, "tag": tags,
                          "label": sentences["label"].reindex(ids).to_numpy(),
                          "text": sentences["text"].reindex(ids).to_numpy(), "row": rows})
    tag_counts = Counter(t for t in tags if t)
    return SearchResult(described, layer, table, pd.Series(Counter(w.lower() for w in words)).sort_values(
        ascending=False, kind="stable"), pd.Series(tag_counts, dtype=np.int64).sort_values(ascending=False,
                                                                                             kind="stable"))


def _word_text(corpus, row: int) -> str:
    """The whole word token `row` belongs to, its pieces joined."""
    c = corpus.token_columns
    start, stop = corpus.sentence_starts[c[row, 0]], corpus.sentence_starts[c[row, 0] + 1]
    same = start + np.flatnonzero(c[start:stop, 3] == c[row, 3])
    if c[row, 3] < 0:
        same = np.array([row])
    return "".join(p.removeprefix("##") if i else p for i, p in enumerate(corpus.pieces[c[same, 2]]))


# ------------------------------------------------------------------------------------------------------------------
# Maps
# ------------------------------------------------------------------------------------------------------------------
def project(points: np.ndarray) -> np.ndarray:
    """(n, 2) PCA of `points` (n, d), each axis's sign fixed so that its largest loading is positive."""
    centered = points - points.mean(0)
    values, vectors = np.linalg.eigh(centered.T @ centered)
    axes = vectors[:, ::-1][:, :2]  # (d, 2) the two directions of largest variance
    axes *= np.sign(axes[np.abs(axes).argmax(0), [0, 1]])
    return centered @ axes


def qk_map(corpus, layer: int, head: int, n: int | None) -> pd.DataFrame:
    queries, keys, rows = [], [], []
    offset = 0
    for shard in corpus.shards:
        qk = shard.array("qk")[layer, head]  # (2, M, d)
        queries.append(np.asarray(qk[0], np.float32))
        keys.append(np.asarray(qk[1], np.float32))
        rows.append(np.asarray(shard.array("qk_rows")) + offset)
        offset += shard.tokens
    q, k, rows = np.concatenate(queries), np.concatenate(keys), np.concatenate(rows)
    if not len(rows):
        raise CorpusError("this corpus kept no queries and keys (built with --qk-sample 0); build it again with "
                          "--qk-sample 0.1 for the joint map")
    if n is not None and n < len(rows):
        keep = np.sort(np.random.default_rng(0).choice(len(rows), size=max(int(n), 1), replace=False))
        q, k, rows = q[keep], k[keep], rows[keep]
    q, k = normalize_qk(q, k)
    xy = project(np.concatenate([q, k]))
    c = corpus.token_columns
    both = np.concatenate([rows, rows])
    pieces, tags = corpus.spelled(both)
    return pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "kind": np.repeat(["query", "key"], len(rows)),
                         "sentence": c[both, 0], "position": c[both, 1], "piece": pieces, "tag": tags,
                         "row": both})


def normalize_qk(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AttentionViz's normalization, which leaves every attention pattern as it was: queries times c and keys over c
    (dot products unchanged) so that their mean norms agree, then the keys moved so that their centroid meets the
    queries' (adds the same amount to every score of a query: its softmax is unchanged)."""
    c = np.sqrt(np.linalg.norm(k, axis=1).mean() / max(np.linalg.norm(q, axis=1).mean(), 1e-12))
    q, k = q * c, k / c
    return q, k - k.mean(0) + q.mean(0)


def sentence_map(corpus, layer: int, pooling: str) -> pd.DataFrame:
    if pooling not in ("cls", "mean"):
        raise CorpusError(f"pooling must be 'cls' or 'mean', not {pooling!r}")
    which = 0 if pooling == "cls" else 1
    vectors = np.concatenate([np.asarray(s.array("sentence_vectors")[:, layer, which]) for s in corpus.shards])
    xy = project(vectors.astype(np.float64))
    sentences = corpus.sentences
    frame = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "sentence": sentences["id"].to_numpy(),
                          "text": sentences["text"].to_numpy(), "label": sentences["label"].to_numpy()})
    if "prediction" in sentences:
        frame["prediction"] = sentences["prediction"].to_numpy()
        frame["error"] = (frame["prediction"] != frame["label"]) & frame["label"].notna()
        if "loss" in sentences:
            frame["loss"] = sentences["loss"].to_numpy()
    return frame
