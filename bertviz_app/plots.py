"""`run.plot`: the plotly figures of a Run. Each method takes the Run's numbers (run.py), picks the slice the view
shows, and hands arrays and labels to a builder of `bertviz_app.figures`. Numbers stay on the Run; this is glue.

It lives above run.py: a `Run` holds numbers only and imports no plotting (the TransformerLens ActivationCache
habit). `PlottedRun` is the Run that `Explorer.run` gives, a Run with `.plot`; figures (and with them plotly) are
imported with the first picture, not with the package."""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING

import numpy as np

from . import analysis
from .i18n import Translator, english
from .run import Run

if TYPE_CHECKING:
    import plotly.graph_objects as go


def _figures():
    from . import figures  # plotly (~0.5 s to import) only once a picture is asked for

    return figures


class PlottedRun(Run):
    """A `Run` with its pictures: `run.plot.attention(layer=2, head=3)`, `run.plot.head_overview()`, ..."""

    @property
    def plot(self) -> RunPlots:
        # A new (stateless, tiny) RunPlots each time, not one cached on the Run: a cached one would close a reference
        # cycle (Run -> RunPlots -> Run), and a Run in a cycle outlives its eviction from the cache until the cyclic
        # garbage collector happens to run, which counts objects, not bytes. A server then held every 512-token Run
        # it had ever drawn (~55 MB each) and grew past 4 GB in 100 inputs.
        return RunPlots(self)

    explorer = None  # a weak reference to the Explorer that made this Run (explorer.py sets it)

    def patch(self, corrupted: Run, metric=("are", "is"), over: str = "heads", direction: str = "denoise"):
        """Activation patching with this Run as the clean input: `Explorer.patch(self, corrupted, ...)`."""
        return self._explorer("patch").patch(self, corrupted, metric, over, direction)

    def value_zeroing(self) -> np.ndarray:
        """(L, T, T) value zeroing (Mohebbi et al. 2023): `Explorer.value_zeroing(self)`."""
        return self._explorer("value_zeroing").value_zeroing(self)

    def contrast(self, answer: str, other: str, mask_index: int = 0, steps: int = 50):
        """Why `answer` and not `other` at a [MASK] (contrast.py): `Explorer.contrast(self, ...)`."""
        return self._explorer("contrast").contrast(self, answer, other, mask_index=mask_index, steps=steps)

    def faithfulness(self, metric=None, removal: str = "mask", steps: int = 50):
        """Deletion and insertion curves of `metric` for every attribution method (curves.py):
        `Explorer.faithfulness_curves(self, ...)`."""
        return self._explorer("faithfulness_curves").faithfulness_curves(self, metric, removal=removal, steps=steps)

    def _explorer(self, method: str):
        explorer = self.explorer() if self.explorer is not None else None
        if explorer is None:
            raise ValueError(f"this Run was not made by an Explorer that is still loaded; use explorer.{method}(...) "
                             "instead")
        return explorer

    def __getattr__(self, name: str):
        # The figure methods lived on Run itself before `run.plot`; the README promised them, so they still answer.
        if name in _FIGURE_ALIASES:
            warnings.warn(f"Run.{name} is deprecated; use run.plot.{_FIGURE_ALIASES[name]}", DeprecationWarning,
                          stacklevel=2)
            return getattr(self.plot, _FIGURE_ALIASES[name])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


# Run.<old name> -> run.plot.<new name>
_FIGURE_ALIASES = {"attention_figure": "attention", "head_overview_figure": "head_overview",
                   "token_attention_figure": "token_attention", "rollout_figure": "rollout",
                   "head_map_figure": "head_map", "query_key_figure": "query_key",
                   "embedding_figure": "embedding_parts", "position_similarity_figure": "position_similarity",
                   "position_path_figure": "position_path", "segment_figure": "segment_comparison",
                   "hidden_norms_figure": "hidden_norms", "layer_similarity_figure": "layer_similarity",
                   "token_similarity_figure": "token_similarity", "hidden_projection_figure": "hidden_projection"}


def figures_survive_export() -> None:
    """In a Jupyter kernel plotly picks the renderer 'plotly_mimetype', an output that only a front end with plotly's
    extension draws: an nbconvert HTML export shows nothing. Plotly's 'plotly_mimetype+notebook' adds HTML that
    draws offline, with plotly.js inlined once per kernel (in the first figure's cell), not in every figure. Only
    plotly's own automatic choice is changed: a renderer set by the user (pio.renderers.default, PLOTLY_RENDERER)
    stays."""
    import plotly.io as pio

    if pio.renderers.default == "plotly_mimetype" and "PLOTLY_RENDERER" not in os.environ:
        pio.renderers.default = "plotly_mimetype+notebook"


class RunPlots:
    """The figures of one Run. Layers and heads count from 0; bad indices raise ValueError with the valid range."""

    def __init__(self, run: Run, tr: Translator = english):
        self._run, self._tr = run, tr
        figures_survive_export()

    def speaking(self, tr: Translator) -> RunPlots:
        """The same figures with their titles, axes and legends written by `tr` (i18n.translator(lang)); the tokens
        stay the model's."""
        return RunPlots(self._run, tr)

    # --- attention ---------------------------------------------------------------------------------------------
    def attention(self, layer: int = 0, head: int | None = 0, *, hide_special: bool = False,
                  segments: str = "all") -> go.Figure:
        """Heatmap of one head (or of the mean over the layer's heads when head is None). hide_special drops
        [CLS]/[SEP] rows and columns; segments is one of 'all', 'A->A', 'A->B', 'B->A', 'B->B'."""
        matrix = self._run.attention(layer, head)
        return self._block(matrix, _figures().attention_title(layer, head, segments), hide_special, segments)

    def rollout(self, layer: int | None = None, *, hide_special: bool = False, segments: str = "all") -> go.Figure:
        """Attention rollout through layers 0..layer (default: all) as a heatmap."""
        last = self._run.num_layers - 1 if layer is None else layer
        return self._block(self._run.rollout(layer), _figures().rollout_title(last), hide_special, segments,
                           colorbar_title="share")

    def _block(self, matrix: np.ndarray, title: str, hide_special: bool, segments: str,
               colorbar_title: str = "weight") -> go.Figure:
        run = self._run
        keep = ~run.special_mask if hide_special else None
        rows, cols = analysis.segment_block(run.segment_ids, segments, keep)
        if len(rows) == 0 or len(cols) == 0:
            raise ValueError(f"the {segments} block is empty for this input (a single sentence has no B; hidden "
                             "special tokens leave nothing?); choose another segment filter")
        tokens = np.asarray(run.labels, dtype=object)
        seg = run.segment_ids

        def boundary(index):  # first displayed index in segment B, if the axis shows both segments
            b = np.flatnonzero(seg[index] == 1)
            return int(b[0]) if len(b) and b[0] > 0 else None

        return _figures().attention_heatmap(matrix[np.ix_(rows, cols)], list(tokens[rows]), list(tokens[cols]),
                                         row_positions=rows, col_positions=cols, row_boundary=boundary(rows),
                                         col_boundary=boundary(cols), title=title, colorbar_title=colorbar_title)

    def head_overview(self) -> go.Figure:
        """Every layer x head as one tiled image; hover a tile for that head's statistics."""
        return _figures().head_overview_figure(self._run.attentions, self._run.head_statistics().summaries())

    def token_attention(self, layer: int = 0, token: int = 0) -> go.Figure:
        """What `token` attends to and what attends to it, in every head of `layer`."""
        from_w, to_w = self._run.token_attention(layer, token)
        return _figures().token_attention_figure(from_w, to_w, self._run.labels, token, layer=layer)

    def head_map(self, statistic: str = "entropy") -> go.Figure:
        """Layers x heads colored by `statistic` (one of analysis.HEAD_STATISTICS), labeled by behavior."""
        stats = self._run.head_statistics()
        return _figures().head_map_figure(stats.as_dict(), stats.dominant, statistic)

    def query_key(self, layer: int = 0, head: int = 0, token: int = 0) -> go.Figure:
        """How one attention row is made from the query of `token` and every key."""
        run = self._run
        qk = run.query_key(layer, head, token)
        return _figures().query_key_figure(qk.query, qk.keys, qk.scores, qk.weights, run.labels, qk.token,
                                           scale=qk.scale, layer=qk.layer, head=qk.head,
                                           terms=list(qk.terms))

    # --- what the prediction depends on (these run the model again) -----------------------------------------
    def contrast(self, answer: str, other: str, mask_index: int = 0, steps: int = 50) -> go.Figure:
        """The tokens colored by integrated gradients and blank-out of logit(answer) - logit(other)."""
        result = self._run.contrast(answer, other, mask_index, steps)
        return _figures().attribution_figure(result.tokens, result.scores(), result.integrated_gradients.fixed,
                                             title=_figures().contrast_title(result.target.token, result.target.other))

    def patch(self, corrupted: Run, metric=("are", "is"), direction: str = "denoise") -> go.Figure:
        """Activation patching over heads with this Run as the clean input: the share each head restores."""
        frame = self._run.patch(corrupted, metric, "heads", direction)
        return _figures().patching_figure(frame.to_numpy(), metric=frame.attrs["metric"])

    def faithfulness(self, metric=None, removal: str = "mask", steps: int = 50) -> go.Figure:
        """The deletion and insertion curves of every method, their AOPC in the legend."""
        result = self._run.faithfulness(metric, removal, steps)
        return _figures().faithfulness_curves_figure(result.deletion, result.insertion, result.aopc,
                                                     metric=result.target.describe(), removal=f"[{removal.upper()}]")

    # --- embeddings --------------------------------------------------------------------------------------------
    def embedding_parts(self) -> go.Figure:
        return _figures().embedding_parts_figure(self._run.embedding_parts(), tr=self._tr)

    def position_similarity(self, n: int | None = None) -> go.Figure:
        """n positions means positions 0 .. n-1, as in `Run.position_similarity`."""
        return _figures().position_similarity_figure(self._run.position_similarity(n), tr=self._tr)

    def position_path(self, n: int | None = None) -> go.Figure:
        xy, explained = self._run.position_path(n)
        return _figures().position_path_figure(xy, explained=explained, tr=self._tr)

    def segment_comparison(self) -> go.Figure:
        vectors = dict(self._run.segment_vectors())
        if "B" in vectors:
            vectors["B − A"] = vectors["B"] - vectors["A"]
        return _figures().segment_comparison_figure(vectors, cosine=self._run.segment_comparison()["cosine"],
                                                    tr=self._tr)

    # --- hidden states -----------------------------------------------------------------------------------------
    def hidden_norms(self) -> go.Figure:
        return _figures().hidden_norms_figure(self._run.hidden_norms(), self._run.labels, tr=self._tr)

    def layer_similarity(self) -> go.Figure:
        return _figures().layer_similarity_figure(self._run.layer_similarity(), self._run.labels, tr=self._tr)

    def token_similarity(self, layer: int | None = None) -> go.Figure:
        layer = self._run.num_layers if layer is None else layer
        return _figures().token_similarity_figure(self._run.token_similarity(layer), self._run.labels, layer=layer,
                                                  tr=self._tr)

    def hidden_projection(self) -> go.Figure:
        xy, explained = self._run.hidden_projection()
        return _figures().hidden_projection_figure(xy, self._run.labels, explained=explained, tr=self._tr)
