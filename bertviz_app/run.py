"""A `Run`: one input and the numbers one forward pass computed for it, as numpy arrays on the CPU, with the analyses
of `bertviz_app.analysis` as methods. A Run holds numbers and draws nothing (the TransformerLens ActivationCache
habit): its plotly pictures are `run.plot.<view>(...)`, added above this module by plots.py to the Runs an Explorer
makes (`RunPlots(run)` draws any other); the interactive attention views are `run.show()`, `run.save_html(path)`
and `run.widget()` (two-way, with a kernel).

Attention is kept in float32 by default, the model's own numbers: rows sum to 1 within 1e-6 and every weight equals
transformers' within 1e-5. A server may ask its explorer for float16 (`cache_dtype`) to keep twice as many long
inputs in its cache (a 512-token Run of the default model: 72 MiB of attention in float32, 36 in float16); each
weight is then within 2**-11 of itself, and the tables say so (their `precision` column). Analyses that sum or
multiply many weights (rollout, head statistics, value-weighted attention) compute in float32 or float64 either way.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch

from . import analysis, views
from .config import BertConfig
from .tokenizer import Encoding

if TYPE_CHECKING:
    import pandas as pd

MATRICES = ("attention", "rollout", "value_weighted")  # what attention_frame can tabulate


class ScoreTerms(Protocol):
    """The model's own split of one layer's pre-softmax scores, which explorer.py makes from the model:
    `terms(layer, queries (h, T, d), keys (h, T, d)) -> {name: (h, T, T) float32}`, each term already scaled, their
    sum's softmax the layer's attention. `scale`: what the model multiplies q·k by (shown beside the arithmetic)."""

    scale: float

    def __call__(self, layer: int, queries: np.ndarray, keys: np.ndarray) -> dict[str, np.ndarray]: ...


@dataclass(eq=False)
class ModelTables:
    """What every Run of a model shares (not copied per Run): position embeddings (P, H), segment embeddings (S, H),
    the model's score terms (see `ScoreTerms`; None where no model is at hand), and analyses cached per size."""

    positions: np.ndarray
    segments: np.ndarray
    score_terms: ScoreTerms | None = None
    _paths: dict = field(default_factory=dict, repr=False)

    def position_path(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """((n, 2) coordinates, (2,) explained variance) of `analysis.position_path` over positions 0..n-1."""
        if n not in self._paths:  # the same for every input of this model: computed once per size
            self._paths[n] = analysis.position_path(self.positions, n)
        return self._paths[n]


@dataclass(eq=False)
class Run:
    """One input and everything the model computed for it. L layers, h heads, T tokens, H hidden size, d head size.

    hidden_states: (L + 1, T, H) float32, the embedding output first
    attentions: (L, h, T, T) float32 (float16 when the explorer's cache_dtype asks), row i = how token i distributes
        its attention
    queries, keys: (L, h, T, d) float32, before the 1/sqrt(d) scaling
    token_embeddings, segment_embeddings, position_embeddings: (T, H) float32, summed then LayerNorm-ed into
        hidden_states[0]
    value_grams: (L, T, h, h) float32, per layer and token the Gram matrix of what the token sends through each head
        (its value carried through that head's slice of the output projection): value-weighted attention needs only
        these; None when the model was not asked for them
    pooler_output: (H,) or None
    is_next_probability: P(B follows A) from the next-sentence head, or None
    tables: the model's whole position and segment tables, or None (then only this input's rows are known)
    """

    encoding: Encoding
    model_name: str
    config: BertConfig
    hidden_states: np.ndarray
    attentions: np.ndarray
    queries: np.ndarray
    keys: np.ndarray
    token_embeddings: np.ndarray
    segment_embeddings: np.ndarray
    position_embeddings: np.ndarray
    value_grams: np.ndarray | None = None
    pooler_output: np.ndarray | None = None
    is_next_probability: float | None = None
    seconds: float = 0.0
    tables: ModelTables | None = None

    # The model's named points (model/points.py) a Run is made of: what the serving pass captures.
    POINTS = ("embeddings", "layer.*.output", "layer.*.attention.probs", "layer.*.attention.queries",
              "layer.*.attention.keys", "layer.*.attention.value_grams", "embeddings.token", "embeddings.segment",
              "embeddings.position")

    @classmethod
    def from_output(cls, out, b: int, encoding: Encoding, model_name: str, config: BertConfig,
                    attention_dtype: torch.dtype = torch.float32, tables: ModelTables | None = None,
                    seconds: float = 0.0) -> "Run":
        """The Run of input `b` of a (padded) pass that captured `Run.POINTS` (a BertModelOutput, its `captured` read
        by name), cut to the input's own tokens; the attention in `attention_dtype` (the explorer's cache_dtype)."""
        n, points = len(encoding), out.captured

        def stack(names, cut, dtype=torch.float32) -> np.ndarray:
            # each layer converted before stacking: no float32 copy of all the layers' attention (75 MB at 512
            # tokens) when a float16 Run is asked for
            return torch.stack([points[name][b][cut].to(dtype) for name in names]).cpu().numpy()

        def tokens(name: str) -> np.ndarray:
            # a copy: a view would keep the whole batch's tensor alive with the Run, unseen by its nbytes
            return points[name][b, :n].float().cpu().numpy().copy()  # (n, ...)

        L, rows, square = config.num_hidden_layers, (slice(None), slice(n)), (slice(None), slice(n), slice(n))
        layers = lambda point: [f"layer.{i}.{point}" for i in range(L)]  # noqa: E731
        pooled = points.get("pooler")
        return cls(encoding=encoding, model_name=model_name, config=config,
                   hidden_states=stack(["embeddings", *layers("output")], slice(n)),
                   attentions=stack(layers("attention.probs"), square, attention_dtype),
                   queries=stack(layers("attention.queries"), rows), keys=stack(layers("attention.keys"), rows),
                   value_grams=stack(layers("attention.value_grams"), slice(n)),
                   token_embeddings=tokens("embeddings.token"), segment_embeddings=tokens("embeddings.segment"),
                   position_embeddings=tokens("embeddings.position"),
                   pooler_output=None if pooled is None else pooled[b].float().cpu().numpy().copy(),
                   seconds=seconds, tables=tables)

    # Layers and heads count from 0; attention layers are 0..L-1, hidden-state layers 0..L (0 = embeddings).
    # Bad indices or filter names raise ValueError with the valid range.

    @property
    def tokens(self) -> list[str]:
        """The tokenizer's own pieces ('Ġcat' for RoBERTa, '▁cat' for ALBERT), as in its vocabulary."""
        return self.encoding.tokens

    @property
    def labels(self) -> list[str]:
        """The tokens as a person reads them ('cat', '##s'): what tables and pictures show (`Encoding.labels`)."""
        return self.encoding.labels

    @property
    def num_layers(self) -> int:
        return self.attentions.shape[0]

    @property
    def num_heads(self) -> int:
        return self.attentions.shape[1]

    def __len__(self) -> int:
        return len(self.encoding)

    def __repr__(self) -> str:
        return (f"Run({len(self)} tokens, {self.num_layers} layers x {self.num_heads} heads, model={self.model_name!r}, "
                f"text={self.encoding.text[:40]!r}{', pair' if self.encoding.is_pair else ''})")

    def __setattr__(self, name, value):
        self.__dict__.pop("_held_nbytes", None)  # an array set after construction counts (see nbytes)
        super().__setattr__(name, value)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays this Run holds (the shared model tables not counted): what a cache of Runs weighs."""
        held = self.__dict__.get("_held_nbytes")
        if held is None:  # counted once, again after an array is set (a cache sums every Run's at each new input)
            arrays = (self.hidden_states, self.attentions, self.queries, self.keys, self.token_embeddings,
                      self.segment_embeddings, self.position_embeddings, self.value_grams, self.pooler_output)
            held = self.__dict__["_held_nbytes"] = sum(a.nbytes for a in arrays if a is not None)
        return held + self.__dict__.get("_derived_nbytes", 0)

    # --- tokens ------------------------------------------------------------------------------------------------
    @property
    def segment_ids(self) -> np.ndarray:
        """(T,) 0 for [CLS], sentence A and the separator(s) after it; 1 for sentence B and the last separator. Read
        from which sentence each token came from, not from the model's token_type_ids: RoBERTa gives both sentences
        segment 0 (it has one segment row), and the views still need to tell A from B."""
        sequence = self.encoding.sequence_ids
        first_b = next((i for i, seq in enumerate(sequence) if seq == 1), len(sequence))
        return (np.arange(len(sequence)) >= first_b).astype(np.asarray(self.encoding.segment_ids).dtype)

    @property
    def special_mask(self) -> np.ndarray:
        """(T,) True for [CLS]/[SEP]."""
        return np.asarray(self.encoding.special_tokens_mask, dtype=bool)

    def token_table(self) -> "pd.DataFrame":
        """position, token, id, segment (A/B), start, end (character span), text, special."""
        return analysis.token_table(self.encoding)

    # --- attention ---------------------------------------------------------------------------------------------
    def attention(self, layer: int, head: int | None = None) -> np.ndarray:
        """(T, T) float32 attention of one head, or the mean over the heads of `layer` when head is None."""
        layer = analysis.check_index("layer", layer, self.num_layers)
        if head is None:
            return self.attentions[layer].astype(np.float32).mean(axis=0)
        return self.attentions[layer, analysis.check_index("head", head, self.num_heads)].astype(np.float32)

    def attention_frame(self, layers=None, heads=None, matrix: str = "attention") -> "pd.DataFrame":
        """A tidy table, one row per (layer, head, from, to) with from_token, to_token, the number and `precision`
        (the dtype this Run keeps attention in). matrix: "attention" (column weight), "rollout" (weight; head
        "rollout", one per layer) or "value_weighted" (column norm, ||alpha_ij f(x_j)|| of each head)."""
        matrices, layers, heads, value = self._tidy(layers, heads, matrix)
        return analysis.tidy_frame(matrices, self.labels, layers, heads, value=value,
                                   precision=self.attentions.dtype.name)

    def attention_csv(self, path: str | Path | None = None, layers=None, heads=None,
                      matrix: str = "attention") -> Path | str:
        """`attention_frame(layers, heads, matrix)` as CSV, every number as exactly as the Run holds it (its
        `precision` column says float32 or float16), written row by row without building the table: to `path`
        (returned), or returned as text when path is None."""
        matrices, layers, heads, value = self._tidy(layers, heads, matrix)
        parts = (matrices, self.labels, layers, heads)
        if path is None:
            out = io.StringIO()
            analysis.write_tidy_csv(out, *parts, value=value, precision=self.attentions.dtype.name)
            return out.getvalue()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as out:
            analysis.write_tidy_csv(out, *parts, value=value, precision=self.attentions.dtype.name)
        return path

    def _tidy(self, layers, heads, matrix: str):
        """(matrices (l', h', T, T), layer labels, head labels, value column) of what attention_frame tabulates."""
        if matrix not in MATRICES:
            raise ValueError(f"unknown matrix {matrix!r}; choose one of {', '.join(MATRICES)}")
        layers = list(range(self.num_layers)) if layers is None else [
            analysis.check_index("layer", layer, self.num_layers) for layer in layers]
        if matrix == "rollout":
            return self.rollouts()[layers][:, None], layers, ["rollout"], "weight"
        heads = list(range(self.num_heads)) if heads is None else [
            analysis.check_index("head", head, self.num_heads) for head in heads]
        if matrix == "attention":
            return self.attentions[np.ix_(layers, heads)], layers, heads, "weight"  # (l', h', T, T)
        norms = np.stack([[self.value_weighted_attention(layer, head) for head in heads] for layer in layers])
        return norms, layers, heads, "norm"

    def token_attention(self, layer: int, token: int) -> tuple[np.ndarray, np.ndarray]:
        """(from (h, T), to (h, T)): what `token` attends to, and how much every token attends to it, per head."""
        return analysis.token_attention(self.attentions, layer, token)

    def rollout(self, layer: int | None = None) -> np.ndarray:
        """(T, T) attention rollout (Abnar & Zuidema 2020) through layers 0..layer (default: all)."""
        layer = self.num_layers - 1 if layer is None else analysis.check_index("layer", layer, self.num_layers)
        return self.rollouts()[layer]

    def rollouts(self) -> np.ndarray:
        """(L, T, T) rollout through layers 0..l for every l (computed once)."""
        return self._derived("rollouts", lambda: analysis.attention_rollout(self.attentions))

    def attention_flow(self) -> np.ndarray:
        """(T, T) attention flow (Abnar & Zuidema 2020): the maximum flow from output token i to input token j through
        the layers' head-averaged attention with the residual (analysis/flow.py); refused above FLOW_MAX_TOKENS."""
        return self._derived("attention_flow", lambda: analysis.attention_flow(self.attentions))

    def value_weighted_attention(self, layer: int, head: int | None = None) -> np.ndarray:
        """(T, T) ||alpha_ij f(x_j)|| (Kobayashi et al. 2020): how much of token j reaches token i through one head of
        `layer`, or through all its heads together (head None). Not rows of weights: a head that puts its weight on
        [SEP] but moves almost nothing through it shows that here."""
        if self.value_grams is None:
            raise ValueError("this Run has no value Grams; make it with Explorer.run, which asks the model for them")
        return analysis.value_weighted_attention(self.attentions, self.value_grams, layer, head)

    def word_attention(self, layer: int, head: int | None = None) -> tuple[list[str], np.ndarray]:
        """(words, (W, W) matrix): attention between whole words, as Clark et al. (2019) merge word pieces: the
        attention to a word is the sum over its pieces, from a word the mean over its pieces; rows still sum to 1."""
        words = analysis.group_words(self.labels, self.special_mask, self.encoding.word_ids)
        return words.words, analysis.word_attention(self.attention(layer, head), words)

    def compare(self, other: "Run") -> "analysis.AttentionDifference":
        """Attention of `other` minus this Run's, head by head, with the heads ranked by how much they changed: two
        inputs of the same length (a minimal pair) or two models on one input."""
        return analysis.compare_attentions(self.attentions, other.attentions, self.labels, other.labels)

    def head_statistics(self) -> "analysis.HeadStatistics":
        """Per-head entropy, attended distance, shares to [CLS]/[SEP]/self/previous/next, dominant behavior;
        `.to_frame()` gives a table."""
        return self._derived("head_statistics", lambda: analysis.head_statistics(self.attentions, self.special_mask))

    def score_terms(self, layer: int) -> dict[str, np.ndarray]:
        """Layer `layer`'s pre-softmax scores as the model's named additive terms, name -> (h, T, T) float32, each
        scaled ("q.k" for every member; DeBERTa adds "c2p" and "p2c"): the softmax of their sum is
        `attentions[layer]`. Computed by the model from this Run's queries and keys (a few milliseconds), not kept."""
        terms = self.tables.score_terms if self.tables is not None else None
        if terms is None:
            raise ValueError("this Run was made without its model's score terms (Explorer.run makes Runs that have "
                             "them), so its scores cannot be split as the model adds them up")
        layer = analysis.check_index("layer", layer, self.num_layers)
        return terms(layer, self.queries[layer], self.keys[layer])

    def query_key(self, layer: int, head: int, token: int) -> "analysis.QueryKey":
        """The query of `token`, every key, their products and dot products, the model's score terms of that row,
        their sum and its softmax: one attention row as the model computes it."""
        layer = analysis.check_index("layer", layer, self.num_layers)
        return analysis.query_key(self.queries, self.keys, layer, head, token, self.score_terms(layer),
                                  self.tables.score_terms.scale)

    # --- embeddings --------------------------------------------------------------------------------------------
    def embedding_parts(self) -> "pd.DataFrame":
        """Per token: norms of token/segment/position parts, their sum and the LayerNorm output; parts' shares."""
        return analysis.embedding_parts(self.labels, self.segment_ids, self.token_embeddings,
                                        self.segment_embeddings, self.position_embeddings, self.hidden_states[0])

    def position_table(self) -> np.ndarray:
        """The learned position embeddings: the model's whole table (P, H) when known, else this input's T rows."""
        return self.position_embeddings if self.tables is None else self.tables.positions

    def positions_shown(self, n: int | None = None) -> int:
        """How many positions the position views compare: n, or by default 128 or all, whichever is fewer (the
        interesting structure is near the start, and 512 x 512 cells weigh 1 MB in a figure)."""
        return min(128, len(self.position_table())) if n is None else n

    def position_similarity(self, n: int | None = None) -> np.ndarray:
        """(n, n) cosine similarity of the first n position embeddings (positions 0 .. n-1)."""
        return analysis.position_similarity(self.position_table(), self.positions_shown(n))

    def position_path(self, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """((n, 2), (2,)): PCA path through the first n position embeddings, each scaled to unit length first."""
        n = self.positions_shown(n)
        if self.tables is None:
            return analysis.position_path(self.position_table(), n)
        analysis.first_positions(self.tables.positions, n, minimum=2)  # the range check, before the cache
        return self.tables.position_path(n)

    def segment_vectors(self) -> dict[str, np.ndarray]:
        """{'A': (H,), 'B': (H,)} from the model's segment table, else from this input's rows (B is missing for a
        single sentence)."""
        if self.tables is not None and len(self.tables.segments) >= 2:
            return {"A": self.tables.segments[0], "B": self.tables.segments[1]}
        out = {}
        for name, sid in (("A", 0), ("B", 1)):
            rows = np.flatnonzero(self.segment_ids == sid)
            if len(rows):
                out[name] = self.segment_embeddings[rows[0]]
        return out

    def segment_comparison(self) -> dict:
        """norm_a, norm_b, norm_difference, cosine of the segment A and B embeddings (None when B is unknown)."""
        vectors = self.segment_vectors()
        return analysis.segment_comparison(vectors["A"], vectors.get("B"))

    # --- hidden states -----------------------------------------------------------------------------------------
    def hidden_norms(self) -> np.ndarray:
        """(L + 1, T) norm of each token's vector at each layer (row 0: embeddings)."""
        return analysis.hidden_norms(self.hidden_states)

    def layer_similarity(self) -> np.ndarray:
        """(L, T) cosine of each token's vector between consecutive layers."""
        return analysis.layer_similarity(self.hidden_states)

    def token_similarity(self, layer: int | None = None) -> np.ndarray:
        """(T, T) cosine between tokens at hidden-state `layer` (0 = embeddings; default: the last layer)."""
        return analysis.token_similarity(self.hidden_states, self.num_layers if layer is None else layer)

    def hidden_projection(self) -> tuple[np.ndarray, np.ndarray]:
        """((L + 1, T, 2) coordinates, (2,) explained variance) of one PCA shared by all layers (computed once)."""
        return self._derived("hidden_projection", lambda: analysis.hidden_projection(self.hidden_states))

    # --- the interactive attention views (bertviz_app.views) ---------------------------------------------------
    def views_payload(self) -> bytes:
        """The compact payload the browser views draw from: every layer and head as 8-bit codes, rollout,
        statistics, tokens (computed once). The builder takes arrays, not a Run (views/payload.py)."""
        return self._derived("views_payload", self._views_payload)

    def _views_payload(self) -> bytes:
        stats = self.head_statistics()
        value_weighted = None
        if self.value_grams is not None and len(self) <= views.VALUE_WEIGHTED_MAX_TOKENS:
            value_weighted = analysis.value_weighted_shares(self.attentions, self.value_grams)
        # The views show the tokens as a person reads them and group them into the tokenizer's own words; the key
        # stays the vocabulary's pieces, which tell two inputs apart where labels may not.
        return views.encode_payload(self.labels, self.segment_ids, self.special_mask, self.attentions,
                                    word_ids=self.encoding.word_ids, key=views.run_key(self.model_name, self.tokens),
                                    rollout=self.rollouts(), value_weighted=value_weighted,
                                    statistics={n: getattr(stats, n) for n in analysis.HEAD_STATISTICS},
                                    dominant=stats.dominant, model=self.model_name,
                                    text=views.input_text(self.encoding), title=views.input_title(self.encoding))

    def query_key_payload(self) -> bytes:
        """The queries and keys of every head and, while they number at most `views.SCORE_TERMS_MAX_VALUES`, the
        model's score terms of every layer, for the query/key view: a separate blob (computed once, when asked)."""
        return self._derived("query_key_payload", self._query_key_payload)

    def _query_key_payload(self) -> bytes:
        terms = scale = None
        model_terms = self.tables.score_terms if self.tables is not None else None
        if model_terms is not None:
            first = self.score_terms(0)
            if self.num_layers * self.num_heads * len(first) * len(self) ** 2 <= views.SCORE_TERMS_MAX_VALUES:
                layers = [first] + [self.score_terms(layer) for layer in range(1, self.num_layers)]
                terms = {name: np.stack([layer[name] for layer in layers]) for name in first}  # (L, h, T, T) each
                scale = model_terms.scale
        return views.encode_query_key(self.queries, self.keys, key=views.run_key(self.model_name, self.tokens),
                                      score_terms=terms, scale=scale)

    def show(self, view: str | None = None, height: int = 760) -> "views.NotebookView":
        """The interactive attention views, inline in Jupyter, VS Code or Colab (offline, no widgets to install):
        make it the last line of a cell. view: 'lines' (default), 'matrix', 'overview' or 'query_key'."""
        return views.NotebookView(self.views_payload(), self.query_key_payload(), title=self.title,
                                  height=height, view=view)

    def widget(self, view: str = "lines", layer: int | None = None, head: int | str | None = None,
               token: int | None = None, height: int = 520):
        """The same views as a notebook widget that talks back (anywidget: JupyterLab, Notebook 7, VS Code, Colab,
        marimo): `w.layer = 3` moves the picture, a click sets `w.layer`, `w.head`, `w.token` (and `w.view`) for
        the next cell, and `w.observe(...)` follows them. Needs a kernel and `pip install bertviz-app[notebook]`;
        `show()` draws without either. height: a view box's pixels."""
        from .views.widget import attention_widget  # imports anywidget: the package works without it

        return attention_widget(self.views_payload(), self.query_key_payload(), view=view, layer=layer,
                                head=head, token=token, height=height)

    def save_html(self, path: str | Path, view: str | None = None) -> Path:
        """The interactive attention views as one self-contained HTML file that opens offline; returns the path."""
        return views.NotebookView(self.views_payload(), self.query_key_payload(), title=self.title,
                                  view=view).save(path)

    @property
    def title(self) -> str:
        """The input, shortened, and the model: what a page of this Run's views is called."""
        return views.input_title(self.encoding, self.model_name)

    # --- derived numbers, computed once per Run ----------------------------------------------------------------
    def _derived(self, name: str, compute):
        cache = self.__dict__.setdefault("_derived_cache", {})
        if name not in cache:
            cache[name] = value = compute()
            self.__dict__["_derived_nbytes"] = self.__dict__.get("_derived_nbytes", 0) + _nbytes(value)
        return cache[name]


def _nbytes(value) -> int:
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    if hasattr(value, "__dict__"):
        return sum(_nbytes(v) for v in vars(value).values())
    return 0
