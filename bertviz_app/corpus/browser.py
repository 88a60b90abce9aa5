"""What the corpus views in the browser draw, made from a corpus's answers (questions.py): the head summary as a grid
of one subset, one head's details, the joint query/key map and the sentence map as compact blobs
(views/corpus_payload.py), and the nearest tokens of a search. One `CorpusViews` per corpus serves the app, the
notebook (`corpus.show()`) and the offline page (`corpus.save_html()`); each answer is plain JSON or bytes.

A map is computed once per head and kept (a bounded cache of blobs: about 1-2 MB each), so that a class opening the
same head costs the server one projection. Layers and heads are 0-based, as in the attention views."""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import threading
from pathlib import Path
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from .. import limits
from ..heads import GRID_STATISTICS
from ..views.corpus_payload import encode_qk_map, encode_sentence_map
from . import probes, questions
from .cards import CARD_STATISTICS, ROLE_STATISTIC
from .sources import CorpusError, Sentence, within_reach

# Points of a head's joint map: queries and keys of half as many tokens (AttentionViz's maps hold a few 10,000s).
MAP_POINTS = 100_000
# Blobs kept: every head of the default model is 72; the ones a class looks at are fewer.
CACHED_MAPS = 32
SUBSET_KINDS = ("label", "tag", "prediction", "error")
SHOWN_TAG_LINKS = 12
LINK_MIN_COUNT = 20  # a tag pair's links counted fewer times are left out (the page says so)
SHOWN_TAGS = 40  # tags offered as subsets, the commonest first
SEARCH_CHUNK = 65_536  # token vectors per product: a float32 copy of this many at a time, never of a whole layer
CARD_EXAMPLES = 6  # a card's top examples, each a forward pass of its sentence for its picture
CACHED_CARDS = 64  # ~5-20 kB each
# Searches kept: an answer is 5-150 kB (k hits, each with its sentence's pieces), so at most ~20 MB
CACHED_SEARCHES = 128


class _Cache:
    """A small LRU of computed answers; one computation per key at a time (a class asking for the same head at once
    waits for the first, instead of projecting it 50 times)."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._making: dict = {}

    def get(self, key, make: Callable[[], object]):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            lock = self._making.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            try:
                value = make()
            except BaseException:  # a key that failed (a bad head) leaves nothing behind
                with self._lock:
                    self._making.pop(key, None)
                raise
            with self._lock:
                self._items[key] = value
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
                self._making.pop(key, None)
            return value


class CorpusViews:
    """The browser's answers about one corpus. `name`: what the page calls it."""

    def __init__(self, corpus, name: str | None = None, map_points: int = MAP_POINTS, cached_maps: int = CACHED_MAPS,
                 model_name: str | None = None, search_cache_bytes: int = limits.CORPUS_SEARCH_CACHE_BYTES):
        self.corpus = corpus
        self.name = name or corpus.folder.name
        # what the page calls the corpus's model: the app's name for it, else its own (a folder's name, never the path)
        self.model_name = model_name or Path(corpus.manifest["model"]["name"]).name
        self.map_points = map_points
        self._maps = _Cache(cached_maps)
        self._texts = _Cache(cached_maps)
        self._summaries = _Cache(len(SUBSET_KINDS) + 3)  # by nothing, by each kind, the links and the relations
        self._heads = _Cache(corpus.num_layers * corpus.num_heads)
        self._grids = _Cache(64)  # a subset's grid, as the page gets it
        self._probes = _Cache(len(probes.TARGETS))  # a probe trains 2 x (L + 1) regressions: made once per target
        self._cards = _Cache(CACHED_CARDS)
        self._searches = _Cache(CACHED_SEARCHES)  # by (vector, layer, k, what it is): a class's same token is one
        self._norms: dict[int, np.ndarray] = {}
        # float32 unit vectors of as many layers as the budget holds, the least recently searched dropped first
        layer_bytes = corpus.manifest["tokens"] * corpus.hidden_size * 4
        self._vectors = _Cache(search_cache_bytes // layer_bytes) if search_cache_bytes >= layer_bytes else None

    # -- a sentence by its text (the Task tab's held-out table and the sentence map select together) -----------------
    @functools.cached_property
    def _by_text(self) -> dict[tuple[str, str], int]:
        """(text, pair) -> the first sentence with them, built once (dict assignment makes a race harmless)."""
        sentences = self.corpus.sentences
        index: dict[tuple[str, str], int] = {}
        for i, text, pair in zip(sentences["id"], sentences["text"], sentences["pair"]):
            index.setdefault((same_text(text), same_text(pair)), int(i))
        return index

    def find(self, text, pair=None) -> dict:
        """{"sentence": the corpus's sentence with this text and pair, or None}: a row of a held-out table found in
        the corpus built from that held-out set (spaces are not compared: a table's cell may show them otherwise)."""
        if not isinstance(text, str) or not (pair is None or isinstance(pair, str)):
            raise CorpusError("A sentence is found by its text (and its second text, when it has one).")
        # as the build kept it: a long sentence only as far as its tokens reach
        kept = within_reach(Sentence(text, pair or None), self.corpus.manifest["settings"]["max_length"])
        return {"sentence": self._by_text.get((same_text(kept.text), same_text(kept.pair)))}

    # -- what the page opens with -----------------------------------------------------------------------------------
    def info(self) -> dict:
        """The corpus in a few numbers, and the subsets it can be split into (kind -> [(name, tokens)])."""
        c, m = self.corpus, self.corpus.manifest
        return {"name": self.name, "sentences": len(c), "tokens": int(m["tokens"]), "source": m["source"]["name"],
                "model": self.model_name, "layers": c.num_layers, "heads": c.num_heads,
                "hidden_layers": c.num_layers + 1, "tagged": bool(c.tags),
                "predictions": "prediction" in c.sentences,
                "statistics": list(GRID_STATISTICS), "probe_targets": list(probes.TARGETS),
                "card_statistics": list(CARD_STATISTICS), "map_points": self.map_points, "subsets": self.subsets(),
                "kept_for_map": int(sum(s.array("qk_rows").shape[0] for s in c.shards))}

    def subsets(self) -> dict:
        """kind -> [[name, tokens], ...], the largest first: the labels (and a fine-tuned classifier's predictions
        and errors) by their sentences' tokens, the tags by their tokens (SHOWN_TAGS of them). Counted from the token
        table, not from a summary: a summary by Brown's 283 tags takes half a minute, and is made only when asked."""
        c = self.corpus
        per_sentence = np.diff(c.sentence_starts)
        sentences = c.sentences
        out = {}
        columns = {"label": sentences["label"]}
        if "prediction" in sentences and sentences["prediction"].notna().any():
            columns["prediction"] = sentences["prediction"]
            known = sentences["prediction"].notna() & sentences["label"].notna()
            columns["error"] = (sentences["prediction"] != sentences["label"]).where(known)
        for kind, column in columns.items():
            counts: dict[str, int] = {}
            for value, tokens in zip(column, per_sentence[sentences["id"].to_numpy()]):
                if _present(value):
                    counts[str(value)] = counts.get(str(value), 0) + int(tokens)
            if counts:
                out[kind] = sorted(([k, v] for k, v in counts.items()), key=lambda kv: (-kv[1], kv[0]))
        if c.tags:
            tags = c.token_columns[:, 4]
            counts = np.bincount(tags[tags >= 0], minlength=len(c.tags))
            order = np.argsort(-counts, kind="stable")[:SHOWN_TAGS]
            out["tag"] = [[c.tags[t], int(counts[t])] for t in order if counts[t]]
        return out

    def warm(self) -> None:
        """Compute now what the first visitors would otherwise wait for: the whole corpus's summary, the labels',
        the relations a head's details name, and the vectors of the layer a search starts at (the app runs this in a
        thread of its own at start)."""
        for kind in (None, *[k for k in self.subsets() if k != "tag"]):
            self._summary(kind)
        if self.corpus.tags:
            self._links()
            self._relations()
        if self._vectors is not None:  # the last layer: the search pane's first choice
            last = self.corpus.num_layers
            self._vectors.get(last, lambda: self.corpus.unit_vectors(last))

    # -- heads over the corpus --------------------------------------------------------------------------------------
    def _summary(self, kind: str | None):
        return self._summaries.get(kind, lambda: self.corpus.head_summary(by=kind))

    def summary(self, subset: str | None = None) -> dict:
        """One subset's grid: each head's role, and each statistic's mean and spread, layer by layer (L * h values,
        layer-major). `subset`: None or "all" for the whole corpus, else "KIND:NAME" ("label:news", "tag:nn")."""
        kind, name = parse_subset(subset)
        return self._grids.get((kind, name), lambda: self._make_grid(kind, name))

    def _make_grid(self, kind: str | None, name: str | None) -> dict:
        frame = self._summary(kind)
        if kind is not None:
            frame = frame[frame[kind].astype(str) == name]
            if frame.empty:
                raise CorpusError(f"this corpus has no {kind} {name!r}")
        frame = frame.sort_values(["layer", "head"], kind="stable")
        grid = {"subset": "all" if kind is None else f"{kind}:{name}", "tokens": int(frame["tokens"].max()),
                "role": frame["role"].tolist()}
        for stat in GRID_STATISTICS:
            grid[stat] = _floats(frame[stat])
            grid[f"{stat}_spread"] = _floats(frame[f"{stat}_spread"])
        return grid

    def head(self, layer, head) -> dict:
        """One head: its positional profile, its strongest tag links (a tagged corpus) and the tag relations it is
        the best head at; made once per head (a class clicking the same tile asks the arrays nothing more)."""
        c = self.corpus
        layer, head = c.check_layer(layer), c.check_head(head)
        return self._heads.get((layer, head), lambda: self._make_head(layer, head))

    def _make_head(self, layer: int, head: int) -> dict:
        c = self.corpus
        profile = c.positional_profile(layer, head)
        out = {"layer": layer, "head": head, "offsets": profile["offset"].tolist(),
               "profile": _floats(profile["attention"]), "links": [], "link_min_count": LINK_MIN_COUNT,
               "relations": []}
        if c.tags:
            links = self._links()
            links = links[(links["layer"] == layer) & (links["head"] == head)].head(SHOWN_TAG_LINKS)
            out["links"] = [{"from": r.from_tag, "to": r.to_tag, "lift": round(float(r.lift), 2),
                             "share": round(float(r.share), 4), "count": int(r.count)} for r in links.itertuples()]
            best = self._relations()
            if best is not None:
                mine = best[(best["layer"] == layer) & (best["head"] == head)]
                for r in mine.itertuples():
                    top = best[best["relation"] == r.relation]["accuracy"].max()
                    out["relations"].append({"relation": r.relation, "accuracy": round(float(r.accuracy), 4),
                                             "best": round(float(top), 4),
                                             "next_word": round(float(r.next_word_baseline), 4)})
        return out

    def _links(self):
        """Every head's tag links at once (one read of the strongest links of every token: 78 MB for 10,000 Brown
        sentences, which a call per head read again each time)."""
        return self._summaries.get("links", lambda: self.corpus.tag_links(min_count=LINK_MIN_COUNT))

    def _relations(self):
        """Every head's accuracy at each tag relation (questions.relation_heads), once; None when no word of the
        corpus starts one."""
        def make():
            try:
                return questions.relation_heads(self.corpus, all_heads=True)
            except CorpusError:
                return None
        return self._summaries.get("relations", make)

    # -- what each layer knows, what each head does -----------------------------------------------------------------
    def probe(self, target) -> dict:
        """What each layer knows of `target` (probes.py): accuracy, control accuracy, selectivity and the majority
        baseline per hidden layer (0 = the embeddings); trained once per target and kept. A target the corpus lacks
        (tags of an untagged corpus) is one sentence, and so is a corpus too small to split."""
        if not isinstance(target, str) or target not in probes.TARGETS:
            raise CorpusError(f"a probe's target is one of {', '.join(probes.TARGETS)}, not {str(target)[:40]!r}")
        return self._probes.get(target, lambda: self._make_probe(target))

    def _make_probe(self, target: str) -> dict:
        table = self.corpus.probe(target)
        out = {"target": target, **{k: int(v) for k, v in table.attrs.items()}}
        for column in ("layer", "accuracy", "control_accuracy", "selectivity", "majority"):
            out[column] = _floats(table[column])
        return out

    def card(self, layer, head, statistic=None) -> dict:
        """One head's report card (cards.py): its role, statistics and top examples, each with the head's attention
        from that token over its sentence (the sentence's own Run: the picture, and the proof of the value)."""
        c = self.corpus
        layer, head = c.check_layer(layer), c.check_head(head)
        if statistic is not None and (not isinstance(statistic, str) or statistic not in CARD_STATISTICS):
            raise CorpusError(f"a card ranks its examples by one of {', '.join(CARD_STATISTICS)}, not "
                              f"{str(statistic)[:40]!r}")
        return self._cards.get((layer, head, statistic), lambda: self._make_card(layer, head, statistic))

    def _make_card(self, layer: int, head: int, statistic: str | None) -> dict:
        card = self.corpus.head_card(layer, head, statistic, CARD_EXAMPLES)
        examples = []
        for e in card.examples.itertuples():
            run = self.corpus.run(int(e.sentence))
            row = np.asarray(run.attention(layer=layer, head=head), np.float64)[int(e.position)]
            examples.append({"sentence": int(e.sentence), "position": int(e.position), "value": round(float(e.value), 5),
                             "pieces": list(run.labels), "weights": [round(float(w), 4) for w in row]})
        largest = statistic != "entropy" if statistic else ROLE_STATISTIC.get(card.role, ("entropy", False))[1]
        return {"layer": layer, "head": head, "role": card.role, "ranked_by": card.ranked_by, "largest": largest,
                "statistics": {k: None if v != v else round(v, 5) for k, v in card.statistics.items()},
                "examples": examples}

    # -- maps -------------------------------------------------------------------------------------------------------
    def qk_map(self, layer, head) -> bytes:
        """One head's joint query/key map as a blob (views/corpus_payload.py), computed once and cached."""
        layer, head = self.corpus.check_layer(layer), self.corpus.check_head(head)
        return self._maps.get(("qk", layer, head), lambda: self._make_qk_map(layer, head))

    def _make_qk_map(self, layer: int, head: int) -> bytes:
        c = self.corpus
        points = c.qk_map(layer, head, self.map_points // 2)
        n = len(points) // 2
        rows = points["row"].to_numpy()[:n]
        columns = c.token_columns
        sentence_ids, sentence = np.unique(columns[rows, 0], return_inverse=True)
        starts = c.sentence_starts
        context_rows = np.concatenate([np.arange(starts[s], starts[s + 1]) for s in sentence_ids])
        context_at = np.zeros(len(sentence_ids) + 1, np.int64)
        np.cumsum(starts[sentence_ids + 1] - starts[sentence_ids], out=context_at[1:])
        piece_ids, piece_index = np.unique(columns[context_rows, 2], return_inverse=True)
        token_piece = piece_index[context_at[sentence] + columns[rows, 1]]
        tag_codes = columns[rows, 4]
        used_tags, tag_index = np.unique(tag_codes[tag_codes >= 0], return_inverse=True)
        tag = np.full(n, -1, np.int64)
        tag[tag_codes >= 0] = tag_index
        header = {"corpus": self.name, "layer": layer, "head": head, "sentences": len(sentence_ids),
                  "of_tokens": int(c.manifest["tokens"])}
        return encode_qk_map(points["x"].to_numpy(), points["y"].to_numpy(), sentence=sentence,
                             position=columns[rows, 1], piece=token_piece, tag=tag, sentence_ids=sentence_ids,
                             context_at=context_at, context=piece_index, pieces=list(c.pieces[piece_ids]),
                             tags=[c.tags[t] for t in used_tags], header=header)

    def qk_map_text(self, layer, head) -> str:
        """`qk_map` in base64, as a server function's JSON answer carries it; encoded once per head."""
        layer, head = self.corpus.check_layer(layer), self.corpus.check_head(head)
        return self._texts.get(("qk", layer, head), lambda: _base64(self.qk_map(layer, head)))

    def sentence_map_text(self, layer=-1, pooling: str = "cls") -> str:
        layer = self.corpus.check_hidden_layer(layer)
        _check_pooling(pooling)  # before it is a cache key: a list from the page's JSON cannot be one
        return self._texts.get(("sentences", layer, pooling), lambda: _base64(self.sentence_map(layer, pooling)))

    def sentence_map(self, layer=-1, pooling: str = "cls") -> bytes:
        """Every sentence's [CLS] or mean vector at hidden layer `layer` in 2-D, as a blob; cached."""
        layer = self.corpus.check_hidden_layer(layer)
        _check_pooling(pooling)
        return self._maps.get(("sentences", layer, pooling), lambda: self._make_sentence_map(layer, pooling))

    def _make_sentence_map(self, layer: int, pooling: str) -> bytes:
        frame = self.corpus.sentence_map(layer, pooling)
        names = sorted({str(v) for column in ("label", "prediction") if column in frame
                        for v in frame[column] if _present(v)})
        code = {name: k for k, name in enumerate(names)}

        def codes(column):
            return np.array([code[str(v)] if _present(v) else -1 for v in frame[column]], np.int64)

        header = {"corpus": self.name, "layer": layer, "pooling": pooling}
        return encode_sentence_map(frame["x"].to_numpy(), frame["y"].to_numpy(),
                                   sentence_ids=frame["sentence"].to_numpy(), label=codes("label"),
                                   prediction=codes("prediction") if "prediction" in frame else None,
                                   texts=[_sentence_text(t, p) for t, p in zip(
                                       frame["text"], self.corpus.sentences["pair"].reindex(frame["sentence"]))],
                                   labels=names, header=header)

    # -- search by meaning ------------------------------------------------------------------------------------------
    def search(self, vector: np.ndarray, layer, k: int = 10, described: str = "") -> dict:
        """The k corpus tokens nearest (cosine) to `vector` at hidden layer `layer`, with their sentences' pieces
        (the token's position marked) and what words and tags dominate them. Exact, as `corpus.search`: from the
        layer's float32 unit vectors while the server's budget (limits.CORPUS_SEARCH_CACHE_BYTES) holds them (the
        first search of a layer reads them once), else from the mapped float16 states a chunk at a time."""
        c = self.corpus
        layer = c.check_hidden_layer(layer)
        vector = np.asarray(vector, np.float32)
        if vector.shape != (c.hidden_size,) or not np.isfinite(vector).all() or not vector.any():
            raise CorpusError(f"a search needs a finite vector of {c.hidden_size} numbers, not all zeros")
        unit = vector / np.linalg.norm(vector)
        scores = self._scores(layer, unit)
        k = min(max(int(k), 1), len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.lexsort((best, -scores[best]))]
        result = questions._result(c, described, layer, best, scores[best])
        return self._search_answer(result)

    def _scores(self, layer: int, unit: np.ndarray) -> np.ndarray:
        c = self.corpus
        if self._vectors is not None:
            return self._vectors.get(layer, lambda: c.unit_vectors(layer)) @ unit  # (N,) cosine
        norms = self._norms.get(layer)
        parts, fresh = [], norms is None
        found_norms = []
        for shard in c.shards:
            states = shard.array("hidden")[layer]  # (N_shard, H) float16, mapped
            for start in range(0, len(states), SEARCH_CHUNK):
                chunk = np.asarray(states[start:start + SEARCH_CHUNK], np.float32)
                parts.append(chunk @ unit)
                if fresh:
                    found_norms.append(np.maximum(np.linalg.norm(chunk, axis=1), 1e-12))
        if fresh:
            norms = self._norms[layer] = np.concatenate(found_norms)
        return np.concatenate(parts) / norms

    def _search_answer(self, result) -> dict:
        c = self.corpus
        table = result.table
        hits = []
        for r in table.itertuples():
            start, stop = c.sentence_starts[r.sentence], c.sentence_starts[r.sentence + 1]
            hits.append({"score": round(float(r.score), 4), "sentence": int(r.sentence), "position": int(r.position),
                         "piece": r.piece, "word": r.word, "tag": r.tag or "", "label": _label(r.label),
                         "text": r.text, "pieces": list(c.pieces[c.token_columns[start:stop, 2]])})
        return {"query": result.query, "layer": result.layer, "hits": hits,
                "words": [[w, int(n)] for w, n in result.words.head(8).items()],
                "tags": [[t, int(n)] for t, n in result.tags.head(8).items()]}

    def search_run(self, run, token, layer, k: int = 10) -> dict:
        """A search from token `token` of an analysed Run (its hidden state at `layer`, as the Run holds it)."""
        layer = self.corpus.check_hidden_layer(layer)
        if token is None:
            raise CorpusError("Select a token first (click one in the views or the token table), then search.")
        if isinstance(token, bool) or not isinstance(token, (int, np.integer)) or not 0 <= token < len(run):
            raise CorpusError(f"A token is named by its number in the analysed input, from 0 to {len(run) - 1}.")
        described = f"{run.labels[token]} in {run.encoding.text!r}"
        vector = np.asarray(run.hidden_states[layer][token], np.float32)
        key = (hashlib.sha256(vector.tobytes()).hexdigest(), layer, int(k), described)
        return self._searches.get(key, lambda: self.search(vector, layer, k, described))




def _check_pooling(pooling) -> None:
    if not isinstance(pooling, str) or pooling not in ("cls", "mean"):
        raise CorpusError(f"pooling must be 'cls' or 'mean', not {str(pooling)[:40]!r}")


def _base64(blob: bytes) -> str:
    return base64.b64encode(blob).decode("ascii")


def parse_subset(subset) -> tuple[str | None, str | None]:
    """("label", "news") of "label:news"; (None, None) for the whole corpus (None, "" or "all")."""
    if subset in (None, "", "all"):
        return None, None
    if not isinstance(subset, str) or ":" not in subset:
        raise CorpusError(f"a subset is written KIND:NAME (kind one of {', '.join(SUBSET_KINDS)}), not "
                          f"{str(subset)[:60]!r}")
    kind, name = subset.split(":", 1)
    if kind not in SUBSET_KINDS:
        raise CorpusError(f"a subset's kind is one of {', '.join(SUBSET_KINDS)}, not {kind[:40]!r}")
    return kind, name


def _floats(series) -> list:
    return [None if v != v else round(float(v), 5) for v in series]


def _present(v) -> bool:
    return v is not None and v == v


def _label(v):
    return str(v) if _present(v) else None


def same_text(text) -> str:
    """A text as two places compare it: one space between words, none at the ends; '' for no text (a missing
    pair). corpus-data.mjs `sentenceKey` does the same in the page."""
    return re.sub(r"\s+", " ", text).strip() if isinstance(text, str) else ""


def _sentence_text(text, pair) -> str:
    return f"{text} | {pair}" if isinstance(pair, str) and pair else str(text)


def offline_data(views: CorpusViews, heads=None, layer: int | None = None, pooling: str = "cls") -> dict:
    """What an offline page of the corpus views holds (views/corpus_page.py): the description, the summaries of the
    whole corpus and of each label, the details and joint maps of `heads` ([(layer, head), ...]; default: the
    middle layer's first head) and the sentence map at hidden layer `layer` (default: the last). Each map is about
    1 MB at 50,000 tokens, so a page holds the heads asked for, not all of them."""
    c = views.corpus
    heads = [(c.num_layers // 2, 0)] if heads is None else [(c.check_layer(l), c.check_head(h)) for l, h in heads]
    if not heads:
        raise CorpusError("an offline page needs at least one head, as [(layer, head), ...]")
    layer = c.check_hidden_layer(-1 if layer is None else layer)
    info = views.info()
    summaries = {"all": views.summary()}
    for name, _ in info["subsets"].get("label", []):
        summaries[f"label:{name}"] = views.summary(f"label:{name}")
    return {"info": info, "state": {"view": "heads", "layer": heads[0][0], "head": heads[0][1]},
            "summaries": summaries, "heads": {f"{l},{h}": views.head(l, h) for l, h in heads},
            "qk": {f"{l},{h}": views.qk_map_text(l, h) for l, h in heads},
            "sentences": {f"{layer},{pooling}": views.sentence_map_text(layer, pooling)}}
