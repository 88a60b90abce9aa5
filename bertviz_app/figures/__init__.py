"""Plotly figure builders, mirroring `bertviz_app.analysis`: each takes plain numpy arrays and labels and returns a
`go.Figure`. Nothing here knows about torch, a model or a `Run` (`run.plot`, in plots.py, picks the arrays and
calls these). Titles are built here too, from the numbers they name. Tokens are always text, never markup (see
`escape_label`)."""

from ._base import ATTENTION_COLORSCALE, SIMILARITY_COLORSCALE, escape_label, save_html, similarity_heatmap
from .attention import (OVERVIEW_SCALES, attention_heatmap, attention_title, head_map_figure, head_overview_figure,
                        query_key_figure, rollout_title, token_attention_figure)
from .beyond import (attribution_figure, contrast_title, faithfulness_curves_figure, faithfulness_figure,
                     head_effects_figure, patching_figure)
from .compare import attention_change_figure, attention_difference_figure, layer_change_figure
from .embeddings import (embedding_parts_figure, position_path_figure, position_similarity_figure,
                         segment_comparison_figure)
from .hidden import hidden_norms_figure, hidden_projection_figure, layer_similarity_figure, token_similarity_figure
from .masked_lm import corruption_figure, fill_mask_figure, logit_lens_figure, masked_token_figure

__all__ = ["ATTENTION_COLORSCALE", "OVERVIEW_SCALES", "SIMILARITY_COLORSCALE", "attention_change_figure",
           "attention_difference_figure", "attention_heatmap", "attention_title", "attribution_figure",
           "contrast_title", "corruption_figure", "embedding_parts_figure", "escape_label",
           "faithfulness_curves_figure", "faithfulness_figure", "fill_mask_figure",
           "head_effects_figure", "head_map_figure", "head_overview_figure", "hidden_norms_figure",
           "hidden_projection_figure", "layer_change_figure", "layer_similarity_figure", "logit_lens_figure", "masked_token_figure",
           "patching_figure",
           "position_path_figure", "position_similarity_figure", "query_key_figure", "rollout_title", "save_html",
           "segment_comparison_figure", "similarity_heatmap", "token_attention_figure", "token_similarity_figure"]
