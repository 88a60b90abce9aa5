"""`run.plot`: the plotly figures of a Run. Each method takes the Run's numbers (run.py), picks the slice the view
shows, and hands arrays and labels to a builder of `bertviz_app.figures`. Numbers stay on the Run; this is glue."""

from __future__ import annotations

import os

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from . import analysis, figures


def figures_survive_export() -> None:
    """In a Jupyter kernel plotly picks the renderer 'plotly_mimetype', an output that only a front end with plotly's
    extension draws: an nbconvert HTML export shows nothing. Plotly's 'plotly_mimetype+notebook' adds HTML that
    draws offline, with plotly.js inlined once per kernel (in the first figure's cell), not in every figure. Only
    plotly's own automatic choice is changed: a renderer set by the user (pio.renderers.default, PLOTLY_RENDERER)
    stays."""
    if pio.renderers.default == "plotly_mimetype" and "PLOTLY_RENDERER" not in os.environ:
        pio.renderers.default = "plotly_mimetype+notebook"


class RunPlots:
    """The figures of one Run (run.py; not imported here: the Run holds its RunPlots, not the other way round).
    Layers and heads count from 0; bad indices raise ValueError with the valid range."""

    def __init__(self, run):
        self._run = run
        figures_survive_export()

    # --- attention ---------------------------------------------------------------------------------------------
    def attention(self, layer: int = 0, head: int | None = 0, *, hide_special: bool = False,
                  segments: str = "all") -> go.Figure:
        """Heatmap of one head (or of the mean over the layer's heads when head is None). hide_special drops
        [CLS]/[SEP] rows and columns; segments is one of 'all', 'A->A', 'A->B', 'B->A', 'B->B'."""
        matrix = self._run.attention(layer, head)
        which = "mean over heads" if head is None else f"head {head}"
        suffix = "" if segments == "all" else f", {segments}"
        return self._block(matrix, f"Attention, layer {layer}, {which}{suffix}", hide_special, segments)

    def rollout(self, layer: int | None = None, *, hide_special: bool = False, segments: str = "all") -> go.Figure:
        """Attention rollout through layers 0..layer (default: all) as a heatmap."""
        last = self._run.num_layers - 1 if layer is None else layer
        return self._block(self._run.rollout(layer), f"Attention rollout through layers 0-{last} "
                           "(residual as 0.5·A + 0.5·I)", hide_special, segments, colorbar_title="share")

    def _block(self, matrix: np.ndarray, title: str, hide_special: bool, segments: str,
               colorbar_title: str = "weight") -> go.Figure:
        run = self._run
        keep = ~run.special_mask if hide_special else None
        rows, cols = analysis.segment_block(run.segment_ids, segments, keep)
        if len(rows) == 0 or len(cols) == 0:
            raise ValueError(f"the {segments} block is empty for this input (a single sentence has no B; hidden "
                             "special tokens leave nothing?); choose another segment filter")
        tokens = np.asarray(run.tokens, dtype=object)
        seg = run.segment_ids

        def boundary(index):  # first displayed index in segment B, if the axis shows both segments
            b = np.flatnonzero(seg[index] == 1)
            return int(b[0]) if len(b) and b[0] > 0 else None

        return figures.attention_heatmap(matrix[np.ix_(rows, cols)], list(tokens[rows]), list(tokens[cols]),
                                         row_positions=rows, col_positions=cols, row_boundary=boundary(rows),
                                         col_boundary=boundary(cols), title=title, colorbar_title=colorbar_title)

    def head_overview(self) -> go.Figure:
        """Every layer x head as one tiled image; hover a tile for that head's statistics."""
        return figures.head_overview_figure(self._run.attentions, self._run.head_statistics().summaries())

    def token_attention(self, layer: int = 0, token: int = 0) -> go.Figure:
        """What `token` attends to and what attends to it, in every head of `layer`."""
        from_w, to_w = self._run.token_attention(layer, token)
        return figures.token_attention_figure(from_w, to_w, self._run.tokens, token, layer=layer)

    def head_map(self, statistic: str = "entropy") -> go.Figure:
        """Layers x heads colored by `statistic` (one of analysis.HEAD_STATISTICS), labeled by behavior."""
        stats = self._run.head_statistics()
        return figures.head_map_figure(stats.as_dict(), stats.dominant, statistic)

    def query_key(self, layer: int = 0, head: int = 0, token: int = 0) -> go.Figure:
        """How one attention row is made from the query of `token` and every key."""
        run = self._run
        qk = run.query_key(layer, head, token)
        return figures.query_key_figure(qk.query, qk.keys, qk.scores, qk.weights, run.tokens, qk.token,
                                        scale=qk.scale, title=f"Layer {qk.layer}, head {qk.head}: query of "
                                        f"{figures.escape_label(run.tokens[qk.token])} ({qk.token}) against every key")

    # --- embeddings --------------------------------------------------------------------------------------------
    def embedding_parts(self) -> go.Figure:
        return figures.embedding_parts_figure(self._run.embedding_parts())

    def position_similarity(self, n: int | None = None) -> go.Figure:
        """n positions means positions 0 .. n-1, as in `Run.position_similarity`."""
        sim = self._run.position_similarity(n)
        return figures.position_similarity_figure(sim, title=f"Cosine similarity of the first {len(sim)} learned "
                                                  f"position embeddings (positions 0–{len(sim) - 1})")

    def position_path(self, n: int | None = None) -> go.Figure:
        xy, explained = self._run.position_path(n)
        n = len(xy)
        return figures.position_path_figure(xy, explained=explained,
                                            title=f"Path through the first {n} position embeddings (positions "
                                            f"0–{n - 1}; PCA of unit-length vectors)")

    def segment_comparison(self) -> go.Figure:
        vectors = dict(self._run.segment_vectors())
        if "B" in vectors:
            vectors["B − A"] = vectors["B"] - vectors["A"]
        return figures.segment_comparison_figure(vectors, cosine=self._run.segment_comparison()["cosine"])

    # --- hidden states -----------------------------------------------------------------------------------------
    def hidden_norms(self) -> go.Figure:
        return figures.hidden_norms_figure(self._run.hidden_norms(), self._run.tokens)

    def layer_similarity(self) -> go.Figure:
        return figures.layer_similarity_figure(self._run.layer_similarity(), self._run.tokens)

    def token_similarity(self, layer: int | None = None) -> go.Figure:
        layer = self._run.num_layers if layer is None else layer
        return figures.token_similarity_figure(self._run.token_similarity(layer), self._run.tokens, layer=layer)

    def hidden_projection(self) -> go.Figure:
        xy, explained = self._run.hidden_projection()
        return figures.hidden_projection_figure(xy, self._run.tokens, explained=explained)
