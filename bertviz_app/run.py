"""A `Run`: one input and the numbers one forward pass computed for it, as numpy arrays on the CPU, with the analyses
of `bertviz_app.analysis` as methods. Pictures of a Run are `run.plot.<view>(...)` (see plots.py); the interactive
attention views are `run.show()` and `run.save_html(path)`.

Attention is kept in float16: a Run of 512 tokens holds 72 heads x 512 x 512 weights, 38 MB in float16 against 75 MB
in float32, and three significant digits are more than a picture or a CSV of weights needs. Analyzes that sum or
multiply many weights (rollout, head statistics) upcast first; the query/key view recomputes its row in float32.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import analysis, views
from .config import BertConfig
from .plots import RunPlots
from .tokenizer import Encoding

if TYPE_CHECKING:
    import pandas as pd


@dataclass(eq=False)
class ModelTables:
    """The learned tables of a model that every Run of it shares (not copied per Run): position embeddings (P, H),
    segment embeddings (S, H), and analyses of them cached per size."""

    positions: np.ndarray
    segments: np.ndarray
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
    attentions: (L, h, T, T) float16, row i = how token i distributes its attention
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

    # Layers and heads count from 0; attention layers are 0..L-1, hidden-state layers 0..L (0 = embeddings).
    # Bad indices or filter names raise ValueError with the valid range.

    @property
    def tokens(self) -> list[str]:
        return self.encoding.tokens

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

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays this Run holds (the shared model tables not counted): what a cache of Runs weighs."""
        arrays = (self.hidden_states, self.attentions, self.queries, self.keys, self.token_embeddings,
                  self.segment_embeddings, self.position_embeddings, self.value_grams, self.pooler_output)
        derived = self.__dict__.get("_derived_nbytes", 0)
        return sum(a.nbytes for a in arrays if a is not None) + derived

    @property
    def plot(self) -> RunPlots:
        """The figures of this Run: `run.plot.attention(layer=2, head=3)`, `run.plot.head_overview()`, ..."""
        # A new (stateless, tiny) RunPlots each time, not one cached on the Run: a cached one would close a reference
        # cycle (Run -> RunPlots -> Run), and a Run in a cycle outlives its eviction from the cache until the cyclic
        # garbage collector happens to run, which counts objects, not bytes. A server then held every 512-token Run
        # it had ever drawn (~55 MB each) and grew past 4 GB in 100 inputs.
        return RunPlots(self)

    def __getattr__(self, name: str):
        # The figure methods lived on Run itself before `run.plot`; the README promised them, so they still answer.
        if name in _FIGURE_ALIASES:
            warnings.warn(f"Run.{name} is deprecated; use run.plot.{_FIGURE_ALIASES[name]}", DeprecationWarning,
                          stacklevel=2)
            return getattr(self.plot, _FIGURE_ALIASES[name])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

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

    def attention_frame(self, layers=None, heads=None) -> "pd.DataFrame":
        """Tidy attention: one row per (layer, head, from, to) with from_token, to_token and weight."""
        return analysis.attention_frame(self.attentions, self.tokens, layers, heads)

    def attention_csv(self, path: str | Path, layers=None, heads=None) -> Path:
        """Write `attention_frame(layers, heads)` to a CSV file; returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.attention_frame(layers, heads).to_csv(path, index=False)
        return path

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
        words = analysis.group_words(self.tokens, self.special_mask)
        return words.words, analysis.word_attention(self.attention(layer, head), words)

    def compare(self, other: "Run") -> "analysis.AttentionDifference":
        """Attention of `other` minus this Run's, head by head, with the heads ranked by how much they changed: two
        inputs of the same length (a minimal pair) or two models on one input."""
        return analysis.compare_attentions(self.attentions, other.attentions, self.tokens, other.tokens)

    def head_statistics(self) -> "analysis.HeadStatistics":
        """Per-head entropy, attended distance, shares to [CLS]/[SEP]/self/previous/next, dominant behavior;
        `.to_frame()` gives a table."""
        return self._derived("head_statistics", lambda: analysis.head_statistics(self.attentions, self.special_mask))

    def query_key(self, layer: int, head: int, token: int) -> "analysis.QueryKey":
        """The query of `token`, every key, products, dot products, scaling and softmax of one attention row."""
        return analysis.query_key(self.queries, self.keys, layer, head, token)

    # --- embeddings --------------------------------------------------------------------------------------------
    def embedding_parts(self) -> "pd.DataFrame":
        """Per token: norms of token/segment/position parts, their sum and the LayerNorm output; parts' shares."""
        return analysis.embedding_parts(self.tokens, self.segment_ids, self.token_embeddings,
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
        statistics, tokens (computed once)."""
        return self._derived("views_payload", lambda: views.payload_from_run(self))

    def query_key_payload(self) -> bytes:
        """The queries and keys of every head for the query/key view, a separate blob (computed once)."""
        return self._derived("query_key_payload", lambda: views.query_key_from_run(self))

    def show(self, view: str | None = None, height: int = 760) -> "views.NotebookView":
        """The interactive attention views, inline in Jupyter, VS Code or Colab (offline, no widgets to install):
        make it the last line of a cell. view: 'lines' (default), 'matrix', 'overview' or 'query_key'."""
        return views.NotebookView(self.views_payload(), self.query_key_payload(), title=self._title(),
                                  height=height, view=view)

    def save_html(self, path: str | Path, view: str | None = None) -> Path:
        """The interactive attention views as one self-contained HTML file that opens offline; returns the path."""
        return views.NotebookView(self.views_payload(), self.query_key_payload(), title=self._title(),
                                  view=view).save(path)

    def _title(self) -> str:
        enc = self.encoding
        text = enc.text if enc.text_pair is None else f"{enc.text} | {enc.text_pair}"
        return f"{text[:60]}{'…' if len(text) > 60 else ''} · {self.model_name}"

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


# Run.<old name> -> run.plot.<new name>
_FIGURE_ALIASES = {"attention_figure": "attention", "head_overview_figure": "head_overview",
                   "token_attention_figure": "token_attention", "rollout_figure": "rollout",
                   "head_map_figure": "head_map", "query_key_figure": "query_key",
                   "embedding_figure": "embedding_parts", "position_similarity_figure": "position_similarity",
                   "position_path_figure": "position_path", "segment_figure": "segment_comparison",
                   "hidden_norms_figure": "hidden_norms", "layer_similarity_figure": "layer_similarity",
                   "token_similarity_figure": "token_similarity", "hidden_projection_figure": "hidden_projection"}
