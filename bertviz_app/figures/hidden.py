"""Figures of the hidden states through the layers: norms, how much each layer turns a token, token-to-token
similarity, and a 2-D projection shared by all layers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import Translator, english
from ._base import (PHONE_BOX, _colorbar, _escape_all, _f32, _figure, _tick_font_size, _token_axis, padded_range,
                    pca_axes, placed_labels, similarity_heatmap, under_colorbar)

def _layers_by_tokens(z: np.ndarray, labels: Sequence[str], row_names: Sequence[str], *, title: str,
                      colorscale: str, colorbar: str, zmin: float | None = None, zmax: float | None = None,
                      value_name: str = "value") -> go.Figure:
    z = np.asarray(z)
    n_rows, n = z.shape
    esc = _escape_all(labels)
    text = [[f"{row_names[r]}, {esc[j]} ({j})" for j in range(n)] for r in range(n_rows)]
    heat = dict(type="heatmap", z=_f32(z), x=np.arange(n), y=np.arange(n_rows), text=text, colorscale=colorscale,
                zmin=zmin, zmax=zmax, colorbar=_colorbar(colorbar),
                hovertemplate="%{text}<br>" + value_name + " %{z:.3f}<extra></extra>")
    layout = dict(xaxis=_token_axis(labels, tickangle=-90),
                  yaxis=dict(tickmode="array", tickvals=list(range(n_rows)), ticktext=list(row_names),
                             range=[n_rows - 0.5, -0.5], showgrid=False, zeroline=False),
                  margin=dict(l=70, r=30, t=80, b=90))
    # a rotated token label needs its font and a few pixels: squeezed into a phone's box they overlapped
    phone = 70 + n * (_tick_font_size(n) + 5) + 100
    return _figure([heat], layout, title, width=max(820, 220 + 16 * n), height=max(400, 220 + 36 * n_rows),
                   phone_width=phone)


def hidden_norms_figure(norms: np.ndarray, labels: Sequence[str], *, title: str | None = None,
                        tr: Translator = english) -> go.Figure:
    """norms: (L + 1, T), row 0 the embedding output."""
    rows = [tr("embeddings")] + [tr("layer {n}", n=l) for l in range(1, norms.shape[0])]
    return _layers_by_tokens(norms, labels, rows, title=title or tr("How long each token's vector is, layer by layer"),
                             colorscale="Viridis", colorbar=tr("length"), zmin=0, value_name=tr("norm"))


def layer_similarity_figure(similarity: np.ndarray, labels: Sequence[str], *, title: str | None = None,
                            tr: Translator = english) -> go.Figure:
    """similarity: (L, T), row l = cosine between the token's vector before and after layer l + 1 (row 0:
    embeddings -> layer 1). The colour scale runs from the lowest value (rounded down to 0.05) to 1: the cosines of
    a trained model lie between 0.8 and 1, and a -1..1 scale drew them all one colour."""
    rows = [tr("emb → 1")] + [f"{l} → {l + 1}" for l in range(1, similarity.shape[0])]
    values = np.asarray(similarity, dtype=np.float64)
    low = float(np.nanmin(values)) if values.size else -1.0
    zmin = max(-1.0, min(0.95, np.floor(low * 20) / 20))
    title = title or tr("How much each layer keeps a token's direction (1 = unchanged)")
    return _layers_by_tokens(similarity, labels, rows, title=title, colorscale="Viridis",
                             colorbar=tr("cosine"), zmin=zmin, zmax=1, value_name=tr("cosine"))


def hidden_projection_figure(xy: np.ndarray, labels: Sequence[str], *, explained: Sequence[float] | None = None,
                             title: str | None = None, tr: Translator = english) -> go.Figure:
    """xy: (L + 1, T, 2), one 2-D point per layer and token in a projection shared by all layers. Each token is a
    gray path from its embedding to its last layer, points colored by layer, the token written at its last
    point where it has room (tokens of one word end close together: "the" three times over itself)."""
    title = title or tr("Tokens through the layers, drawn flat (PCA)")
    xy = np.asarray(xy)
    n_layers, n, _ = xy.shape
    esc = _escape_all(labels)
    # all paths in one line trace: (T, L + 2) points per token, the last one NaN to break the line
    path = np.full((n, n_layers + 1, 2), np.nan, dtype=np.float32)
    path[:, :n_layers] = xy.transpose(1, 0, 2)  # (T, L + 1, 2)
    path = path.reshape(-1, 2)
    flat = xy.reshape(-1, 2)  # ((L + 1) * T, 2), layer-major
    layer_of = np.repeat(np.arange(n_layers), n)
    token_of = np.tile(np.arange(n), n_layers)
    layer_names = [tr("embeddings")] + [tr("layer {n}", n=l) for l in range(1, n_layers)]
    text = [f"{esc[t]} ({t}), {layer_names[l]}" for l, t in zip(layer_of, token_of)]
    font = _tick_font_size(n) + 1
    x_range, y_range = padded_range(flat[:, 0]), padded_range(flat[:, 1])
    # labels placed for the plot area of a phone's box (the smallest the figure is drawn at): they stay apart wider
    words, where = placed_labels(xy[-1, :, 0], xy[-1, :, 1], labels, x_range, y_range,
                                 (PHONE_BOX - MARGIN["l"] - MARGIN["r"], HEIGHT - MARGIN["t"] - MARGIN["b"]), font)
    data = [dict(type="scatter", x=_f32(path[:, 0]), y=_f32(path[:, 1]), mode="lines", hoverinfo="skip",
                 line=dict(color="rgba(120,120,120,0.35)", width=1), showlegend=False),
            dict(type="scatter", x=_f32(flat[:, 0]), y=_f32(flat[:, 1]), mode="markers", text=text,
                 hovertemplate="%{text}<extra></extra>", showlegend=False,
                 marker=dict(size=7, color=layer_of, colorscale="Viridis", cmin=0, cmax=max(n_layers - 1, 1),
                             colorbar=under_colorbar((0, n_layers - 1), (layer_names[0], layer_names[-1])))),
            dict(type="scatter", x=_f32(xy[-1, :, 0]), y=_f32(xy[-1, :, 1]), mode="text", text=words,
                 textposition=where, textfont=dict(size=font), hoverinfo="skip", showlegend=False)]
    layout = pca_axes(explained, tr)
    layout["xaxis"].update(range=x_range)
    layout["yaxis"].update(range=y_range)
    layout["margin"] = dict(MARGIN)
    return _figure(data, layout, title, width=700, height=HEIGHT, phone_width=PHONE_BOX)


# the projection's margins and height, which its label places are worked out for (under it: the colour bar)
MARGIN, HEIGHT = dict(l=70, r=20, t=80, b=130), 640




def token_similarity_figure(similarity: np.ndarray, labels: Sequence[str], *, layer: int | None = None,
                            tr: Translator = english) -> go.Figure:
    """(T, T) cosine between the tokens' hidden states at one layer (0 = the embeddings)."""
    title = (tr("Token-to-token cosine similarity") if layer is None
             else tr("Token-to-token cosine similarity at the embeddings") if layer == 0
             else tr("Token-to-token cosine similarity at layer {n}", n=layer))
    return similarity_heatmap(similarity, labels, title=title, tr=tr)
