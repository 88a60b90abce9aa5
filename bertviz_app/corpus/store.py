"""Reading a corpus folder (build.py writes it): `open_corpus(folder)` checks the manifest and every shard, maps the
arrays lazily, and asks them the questions of questions.py. Every point of an answer names its sentence, and
`corpus.run(i)` gives that sentence's full Run, so each leads back to the one-sentence views."""

from __future__ import annotations

import json
import os
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from ..analysis.attention import check_index
from ..files import JSON_LIMIT, VOCAB_LIMIT, inside, read_text
from . import questions
from .build import FORMAT, MANIFEST, PIECES, TOKEN_COLUMNS
from .sources import CorpusError
from .stats import OFFSETS, STATISTICS

# A shard's arrays: name -> its shape, from (sentences n, tokens N, kept for the map M, the model's sizes).
SHAPES = {
    "token_columns": lambda n, N, M, L, h, H, d: (N, len(TOKEN_COLUMNS)),
    "hidden": lambda n, N, M, L, h, H, d: (L + 1, N, H),
    "head_stats": lambda n, N, M, L, h, H, d: (N, L, h, len(STATISTICS)),
    "sentence_vectors": lambda n, N, M, L, h, H, d: (n, L + 1, 2, H),
    "offsets": lambda n, N, M, L, h, H, d: (L, h, len(OFFSETS)),
    "offset_counts": lambda n, N, M, L, h, H, d: (len(OFFSETS),),
    "qk_rows": lambda n, N, M, L, h, H, d: (M,),  # before qk, whose shape it gives
    "qk": lambda n, N, M, L, h, H, d: (L, h, 2, M, d),
    # optional: a head summary sums the shards' statistics itself where a shard lacks it
    "summary_sums": lambda n, N, M, L, h, H, d: (3, 1, L * h * (len(STATISTICS) + 1)),
}
OPTIONAL = ("summary_sums",)


def open_corpus(folder: str | os.PathLike, explorer=None) -> "Corpus":
    """The corpus in `folder` (built by `bertviz-app corpus build` or `build_corpus`). `explorer`: the loaded model
    it was built with, for `run(i)` and searches by text (default: loaded from the manifest when first needed, with
    the build's --max-tokens as its token limit)."""
    return Corpus(Path(folder), explorer)


class Corpus:
    """A built corpus. Sentences are numbered 0.. in the order of the source; layers of attention 0..L-1; layers of
    hidden states 0..L (0: the embeddings)."""

    def __init__(self, folder: Path, explorer=None):
        self.folder = folder
        self.manifest = _read_manifest(folder)
        model = self.manifest["model"]
        self.num_layers, self.num_heads = model["layers"], model["heads"]
        self.hidden_size, self.head_size = model["hidden"], model["head_size"]
        self._explorer = explorer
        self.shards = [_Shard(folder, k, *bounds, self) for k, bounds in enumerate(self.manifest["shards"])]
        for shard in self.shards:
            shard.check()
        _check_counts(self.manifest, self.shards, folder)
        self._vectors: dict[int, np.ndarray] = {}  # layer -> unit vectors of every token, float32 (for search)

    def __repr__(self) -> str:
        m = self.manifest
        return (f"Corpus({str(self.folder)!r}: {len(self):,} sentences, {m['tokens']:,} tokens from "
                f"{m['source']['name']!r}, model {m['model']['name']!r}, {len(self.shards)} shards)")

    def __len__(self) -> int:
        return self.manifest["source"]["sentences"]

    @property
    def tags(self) -> list[str]:
        return self.manifest["tags"]

    @property
    def labels(self) -> list[str]:
        return self.manifest["labels"]

    # -- tables ---------------------------------------------------------------------------------------------------
    @cached_property
    def sentences(self) -> pd.DataFrame:
        """One row per sentence: id, text, pair, label, length, truncated (and prediction, probabilities, loss when
        the model was a fine-tuned classifier), indexed by id."""
        frames = [pd.read_json(inside(self.folder, shard.path / "sentences.jsonl", CorpusError), lines=True,
                               dtype=False) for shard in self.shards]
        return pd.concat(frames, ignore_index=True).set_index("id", drop=False)

    @cached_property
    def token_columns(self) -> np.ndarray:
        """(N, 6) int32: sentence, position, piece id, word id, tag id (-1: none), segment of every token."""
        return np.concatenate([np.asarray(s.array("token_columns")) for s in self.shards])

    @cached_property
    def pieces(self) -> np.ndarray:
        text = read_text(inside(self.folder, self.folder / PIECES, CorpusError), CorpusError, VOCAB_LIMIT)
        return np.asarray(json.loads(text), dtype=object)

    @cached_property
    def tokens(self) -> pd.DataFrame:
        """One row per token: sentence, position, piece, word (its id in the sentence), tag, segment."""
        c = self.token_columns
        pieces, tags = self.spelled(np.arange(len(c)))
        return pd.DataFrame({"sentence": c[:, 0], "position": c[:, 1], "piece": pieces, "word": c[:, 3],
                             "tag": tags, "segment": c[:, 5]})

    def spelled(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pieces and tags ("" for none) of token `rows`, without the whole token table (a search's ten)."""
        c = self.token_columns[rows]
        return self.pieces[c[:, 2]], np.asarray(self.tags + [""], dtype=object)[c[:, 4]]

    @cached_property
    def sentence_starts(self) -> np.ndarray:
        """(sentences + 1,) the first token row of each sentence, and the number of tokens at the end."""
        return np.searchsorted(self.token_columns[:, 0], np.arange(len(self) + 1))

    def statistic(self, name: str) -> np.ndarray:
        """(N, L, h) float32: one statistic of every head for every token (stats.STATISTICS)."""
        k = STATISTICS.index(name)
        return np.concatenate([np.asarray(s.array("head_stats")[..., k]) for s in self.shards])

    def hidden(self, layer: int) -> np.ndarray:
        """(N, H) float32 unit vectors of every token at hidden layer `layer` (0: embeddings), kept for searches."""
        layer = self.check_hidden_layer(layer)
        if layer not in self._vectors:
            self._vectors[layer] = self.unit_vectors(layer)
        return self._vectors[layer]

    def unit_vectors(self, layer: int) -> np.ndarray:
        """(N, H) float32 unit vectors of every token at hidden layer `layer`, read anew (not kept: `hidden` keeps
        them; a server keeps a few layers in a budget of its own)."""
        layer = self.check_hidden_layer(layer)
        vectors = np.empty((self.manifest["tokens"], self.hidden_size), np.float32)
        row = 0
        for shard in self.shards:
            part = shard.array("hidden")[layer]
            vectors[row:row + len(part)] = part
            row += len(part)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors

    # -- the way back to one sentence ---------------------------------------------------------------------------
    @property
    def explorer(self):
        if self._explorer is None:
            from ..explorer import load
            model = self.manifest["model"]
            source = model["folder"] if model["folder"] and Path(model["folder"]).is_dir() else model["name"]
            # the corpus's own token limit, so that a sentence it cut is cut the same way in its Run
            self._explorer = load(source, name=model["name"], max_tokens=self.manifest["settings"]["max_length"])
        return self._explorer

    def run(self, i: int):
        """Sentence `i`'s full Run (one forward pass of the corpus's model): every one-sentence view draws it."""
        row = self.sentences.loc[self.check_sentence(i)]
        return self.explorer.run(row["text"], row["pair"] if isinstance(row["pair"], str) else None)

    # -- questions (questions.py) -------------------------------------------------------------------------------
    def head_summary(self, by: str | None = None) -> pd.DataFrame:
        """One row per layer x head (and per group with `by`: "label", "tag", "prediction" or "error"): each
        statistic's mean and spread over the corpus's tokens, and the head's role."""
        return questions.head_summary(self, by)

    def tag_links(self, layer: int | None = None, head: int | None = None, min_count: int = 20) -> pd.DataFrame:
        """For a tagged corpus: the (from-tag, to-tag) pairs a head's strongest links join at least twice as often as
        chance and `min_count` times or more, each head's most telling first (`information`: count x log2 lift)."""
        return questions.tag_links(self, layer, head, min_count)

    def relation_heads(self) -> pd.DataFrame:
        """For a tagged corpus: per relation readable from tags, how often each head's strongest link finds it, the
        best head first, against always pointing at the next word."""
        return questions.relation_heads(self)

    def positional_profile(self, layer: int, head: int) -> pd.DataFrame:
        """Mean attention from a token to the token `offset` away (-10..+10), over the corpus."""
        return questions.positional_profile(self, self.check_layer(layer), self.check_head(head))

    def search(self, query, token_index: int | None = None, layer: int = -1, k: int = 10,
               text_pair: str | None = None) -> "questions.SearchResult":
        """The k tokens of the corpus nearest (cosine) to token `token_index` of the text `query` at hidden layer
        `layer`, or to `query` itself when it is a vector; exact."""
        return questions.search(self, query, token_index, layer, k, text_pair)

    def qk_map(self, layer: int, head: int, n: int | None = None) -> pd.DataFrame:
        """The joint query/key map of one head (AttentionViz): the queries and keys of up to `n` sampled tokens,
        normalized and projected to 2-D together; one row per point."""
        return questions.qk_map(self, self.check_layer(layer), self.check_head(head), n)

    def sentence_map(self, layer: int = -1, pooling: str = "cls") -> pd.DataFrame:
        """Every sentence's [CLS] ("cls") or mean ("mean") vector at hidden layer `layer` in 2-D (PCA)."""
        return questions.sentence_map(self, self.check_hidden_layer(layer), pooling)

    def head_card(self, layer: int, head: int, statistic: str | None = None, k: int = 5):
        """One head's report card: its role, statistics, top examples (the tokens, one per sentence, where it does
        its thing most: ranked by its role's statistic, or by `statistic`), positional profile and tag links."""
        from .cards import head_card
        return head_card(self, layer, head, statistic, k)

    def probe(self, target: str, layer: int | None = None, control: bool = True) -> pd.DataFrame:
        """What each layer knows: a linear probe of `target` ("tag", "label", "position" or "recurs") per hidden
        layer (0: the embeddings), scored on sentences it never saw, beside the control task (Hewitt & Liang) and
        the majority-class baseline: columns layer, accuracy, control_accuracy, selectivity, majority (probes.py
        says the recipe)."""
        from .probes import probe
        return probe(self, target, layer, control)

    def show(self, heads=None, layer: int | None = None, height: int = 900):
        """The corpus views in a notebook, in one isolated frame (as `run.show()`): heads over the corpus, the joint
        query/key maps of `heads` ([(layer, head), ...]; default: the middle layer's first head) and the sentence map
        at hidden layer `layer` (default: the last). A click names the sentence; `corpus.run(i).show()` opens it."""
        from ..views.corpus_page import CorpusNotebookView
        from .browser import CorpusViews, offline_data
        return CorpusNotebookView(offline_data(CorpusViews(self), heads, layer), title=self.folder.name,
                                  height=height)

    def save_html(self, path: str | os.PathLike, heads=None, layer: int | None = None) -> Path:
        """The same views as one offline page (no network, works from file://); returns its path."""
        return self.show(heads, layer).save(path)

    @cached_property
    def plot(self):
        """plotly figures of each question: corpus.plot.head_summary(), .positional_profile(l, h), ..."""
        from .plots import CorpusPlots
        return CorpusPlots(self)

    # -- checks ---------------------------------------------------------------------------------------------------
    def check_layer(self, layer) -> int:
        return check_index("layer", layer, self.num_layers)

    def check_head(self, head) -> int:
        return check_index("head", head, self.num_heads)

    def check_hidden_layer(self, layer) -> int:
        n = self.num_layers + 1
        if isinstance(layer, (int, np.integer)) and not isinstance(layer, bool) and -n <= layer < 0:
            layer += n
        return check_index("hidden layer", layer, n)

    def check_sentence(self, i) -> int:
        return check_index("sentence", i, len(self))


class _Shard:
    def __init__(self, folder: Path, index: int, start: int, stop: int, tokens: int, corpus: Corpus):
        self.index, self.start, self.stop, self.tokens, self.corpus = index, start, stop, tokens, corpus
        self.path = folder / f"shard-{index:05d}"
        self._arrays: dict[str, np.ndarray] = {}

    def check(self) -> None:
        if not self.path.is_dir():
            raise CorpusError(f"{self.path.name} of {self.path.parent} is missing (sentences {self.start:,} to "
                              f"{self.stop - 1:,}); run the same build command again: it rebuilds only what is missing")
        for name in SHAPES:
            if name not in OPTIONAL or self.has(name):
                self.array(name)
        if not (self.path / "sentences.jsonl").is_file():
            raise CorpusError(self._damaged("sentences.jsonl", "missing"))

    def has(self, name: str) -> bool:
        return (self.path / f"{name}.npy").is_file()

    def array(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            path = self.path / f"{name}.npy"
            real = inside(self.corpus.folder, path, CorpusError)  # its own sentence: a link out is not damage
            try:
                array = np.load(real, mmap_mode="r")
            except (OSError, ValueError) as err:
                raise CorpusError(self._damaged(path.name, str(err))) from None
            c = self.corpus
            kept = self._arrays["qk_rows"].shape[0] if name == "qk" else (array.shape[0] if name == "qk_rows" else 0)
            expected = SHAPES[name](self.stop - self.start, self.tokens, kept, c.num_layers, c.num_heads,
                                    c.hidden_size, c.head_size)
            if array.shape != expected:
                raise CorpusError(self._damaged(path.name, f"shape {array.shape}, expected {expected}"))
            self._arrays[name] = array
        return self._arrays[name]

    def _damaged(self, file: str, why: str) -> str:
        return (f"{self.path.name}/{file} of {self.path.parent} is damaged ({why}); delete the folder {self.path.name} "
                "and run the same build command again: it rebuilds only that shard")


def _check_counts(manifest: dict, shards: list[_Shard], folder: Path) -> None:
    """The manifest's sentences and tokens against its shards, whose arrays have been checked against their bounds
    (mapped, not read): a manifest that says 200,000,000 sentences made a server allocate 3.3 GB for the tables sized
    by it before anything else failed."""
    sentences, tokens, at = manifest["source"].get("sentences"), manifest.get("tokens"), 0
    for shard in shards:
        if any(type(v) is not int for v in (shard.start, shard.stop, shard.tokens)) or shard.start != at \
                or shard.stop <= shard.start:
            raise CorpusError(f"{folder / MANIFEST} lists {shard.path.name} from sentence {shard.start} to "
                              f"{shard.stop}, not from {at}; build the corpus again")
        at = shard.stop
    held = sum(shard.tokens for shard in shards)
    if type(sentences) is not int or type(tokens) is not int or sentences != at or tokens != held:
        raise CorpusError(f"{folder / MANIFEST} says {sentences!r} sentences and {tokens!r} tokens, but its shards "
                          f"hold {at:,} and {held:,}; build the corpus again")


def _read_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    if folder.is_file():  # a source given where its corpus goes: the build reads it into a new folder beside it
        output = next(p for k in range(1, 1000) if not (p := folder.with_name(
            f"{folder.stem}-corpus{'' if k == 1 else f'-{k}'}")).exists())
        raise CorpusError(f"{folder} is a file, and a corpus is a folder; to build one from it, run `bertviz-app "
                          f"corpus build {folder} --output {output}`, then give that folder")
    if not folder.is_dir():
        raise CorpusError(f"no corpus folder at {folder}; build one with `bertviz-app corpus build SOURCE --output "
                          f"{folder}`")
    if not path.is_file():
        raise CorpusError(f"{folder} holds no corpus (no {MANIFEST}); build one with `bertviz-app corpus build`")
    try:
        manifest = json.loads(read_text(inside(folder, path, CorpusError), CorpusError, JSON_LIMIT))
        if manifest.get("format") != FORMAT:
            raise ValueError(f"format {manifest.get('format')!r}, this version reads {FORMAT}")
        # the keys every reader needs
        manifest["model"]["layers"], manifest["shards"], manifest["source"]["sentences"]  # noqa: B018
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise CorpusError(f"{path} cannot be read ({err}); build the corpus again") from None
    if not manifest.get("complete"):
        built = sum((folder / f"shard-{k:05d}").is_dir() for k in range(len(manifest["shards"])))
        raise CorpusError(f"the build of {folder} has not finished ({built} of {len(manifest['shards'])} shards); run "
                          "the same build command again to finish it")
    return manifest
