"""Figures of the input embedding: its token + segment + position parts, the learned position table (similarity,
PCA path) and the two segment vectors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..i18n import Translator, english
from ._base import (PHONE_BOX, SIMILARITY_COLORSCALE, _colorbar, _escape_all, _f32, _figure, _grid, _tick_font_size,
                    _token_axis, cosine_colors, escape_label, padded_range, pca_axes, placed_labels, similarity_heatmap,
                    under_colorbar)


def position_similarity_figure(similarity: np.ndarray, *, title: str | None = None,
                               tr: Translator = english) -> go.Figure:
    """(N, N) similarity between the first N position embeddings, positions 0 .. N-1. Up to 64 positions every one
    is labeled; beyond, plotly picks numeric ticks on axes that span exactly 0 .. N-1."""
    similarity = np.asarray(similarity)
    if similarity.ndim != 2 or similarity.shape[0] != similarity.shape[1]:
        raise ValueError(f"similarity must be a square (N, N) matrix, got shape {similarity.shape}")
    n = similarity.shape[0]
    title = title or tr("How alike the first {n} positions are (positions 0–{last})", n=n, last=n - 1)
    if n <= 64:
        return similarity_heatmap(similarity, [str(p) for p in range(n)], title=title, axis_title=tr("position"),
                                  tr=tr)
    heat = dict(type="heatmap", z=_f32(similarity), x=np.arange(n), y=np.arange(n), **cosine_colors(similarity, tr),
                hovertemplate=tr("position") + " %{y} · %{x}<br>" + tr("cosine") + " %{z:.3f}<extra></extra>")
    axis = tr("position (0–{last})", last=n - 1)
    layout = dict(xaxis=dict(title=dict(text=axis), showgrid=False, zeroline=False,
                             range=[-0.5, n - 0.5], constrain="domain"),
                  yaxis=dict(title=dict(text=axis), range=[n - 0.5, -0.5], showgrid=False,
                             zeroline=False, scaleanchor="x", constrain="domain"))
    # a square map fitted to a phone: a narrow left margin and a short colour-bar title leave it ~170 px, not 64
    layout["margin"] = dict(l=70, r=20, t=80, b=70)
    return _figure([heat], layout, title, width=700, height=640, phone_width=PHONE_BOX)


def position_path_figure(xy: np.ndarray, *, explained: Sequence[float] | None = None,
                         title: str | None = None, tr: Translator = english) -> go.Figure:
    """The 2-D PCA path through consecutive position embeddings 0..N-1. xy: (N, 2); explained: the variance
    fraction of each component (shown on the axes)."""
    xy = np.asarray(xy)
    n = xy.shape[0]
    title = title or tr("The first {n} positions, one after the other, drawn flat (PCA)", n=n)
    positions = np.arange(n)
    step = max(1, n // 16)
    labels = [str(p) if p % step == 0 or p == n - 1 else "" for p in positions]
    x_range, y_range = padded_range(xy[:, 0]), padded_range(xy[:, 1])
    margin, height = dict(l=70, r=20, t=80, b=130), 600
    # labels placed for the plot area of a phone's box (the smallest the figure is drawn at): they stay apart wider
    text, where = placed_labels(xy[:, 0], xy[:, 1], labels, x_range, y_range,
                                (PHONE_BOX - margin["l"] - margin["r"], height - margin["t"] - margin["b"]), 14)
    data = [dict(type="scatter", x=_f32(xy[:, 0]), y=_f32(xy[:, 1]), mode="lines+markers", customdata=positions,
                 line=dict(color="rgba(150,150,150,0.5)", width=1),
                 marker=dict(size=7, color=positions, colorscale="Viridis", showscale=True,
                             colorbar=under_colorbar((0, n - 1), (tr("position {n}", n=0),
                                                                  tr("position {n}", n=n - 1)))),
                 hovertemplate=tr("position") + " %{customdata}<br>(%{x:.2f}, %{y:.2f})<extra></extra>",
                 showlegend=False),
            dict(type="scatter", x=_f32(xy[:, 0]), y=_f32(xy[:, 1]), mode="text", text=text, textposition=where,
                 textfont=dict(size=14), hoverinfo="skip", showlegend=False)]
    layout = pca_axes(explained, tr)
    layout["xaxis"].update(range=x_range)
    layout["yaxis"].update(range=y_range)
    layout["margin"] = margin
    return _figure(data, layout, title, width=700, height=height, phone_width=PHONE_BOX)


# Okabe & Ito's and Tol's colours, apart in the three common colour-vision deficiencies too
# (tests/test_figure_colours.py); the bars also keep their order and the LayerNorm output is a diamond on its own axis.
EMBEDDING_COLORS = {"token": "#332288", "segment": "#E69F00", "position": "#117733", "sum": "#8c8c8c",
                    "LayerNorm output": "#000000"}
EMBEDDING_PARTS = ("token", "segment", "position")


def embedding_parts_figure(table: pd.DataFrame, *, title: str | None = None, tr: Translator = english
                           ) -> go.Figure:
    """Per token: the norms of each part, of their sum and of the LayerNorm output (top), and each part's share of
    the sum (bottom; share = part·sum / |sum|², so the three shares add up to 1 and may be negative).

    table: one row per token with columns token, norm_token, norm_segment, norm_position, norm_sum,
    norm_layernorm, share_token, share_segment, share_position (as `analysis.embedding_table` makes it).
    """
    title = title or tr("What each token's starting vector is made of")
    # the parts' names as the legend shows them (the keys stay English: they name the table's columns)
    named = {"token": tr("token"), "segment": tr("segment"), "position": tr("position"), "sum": tr("sum")}
    labels = list(table["token"])
    n = len(labels)
    esc = _escape_all(labels)
    x = np.arange(n)
    layout, ref = _grid(2, 1, vspace=0.1, titles=(tr("how long each part is"), tr("each part's share of the sum")))
    data = []
    for i, name in enumerate(EMBEDDING_PARTS + ("sum",)):
        color = EMBEDDING_COLORS[name]
        data.append(dict(type="bar", x=x, y=_f32(table[f"norm_{name}"]), name=f"|{named[name]}|", width=0.2,
                         offsetgroup=name,
                         offset=-0.4 + 0.2 * i, marker=dict(color=color), text=esc, textposition="none",
                         legendgroup="norm", legendgrouptitle=dict(text=tr("norm")),
                         hovertemplate=f"%{{text}} (%{{x}}): |{named[name]}| = %{{y:.3f}}<extra></extra>"))
    # the LayerNorm output lives on another scale (about sqrt(H) times the gain): its own axis, on the right
    data.append(dict(type="scatter", x=x, y=_f32(table["norm_layernorm"]), name=f"|{tr('LayerNorm output')}|",
                     yaxis="y3", mode="markers", text=esc,
                     marker=dict(color=EMBEDDING_COLORS["LayerNorm output"], symbol="diamond", size=8),
                     legendgroup="norm", hovertemplate="%{text} (%{x}): |LayerNorm| = %{y:.2f}<extra></extra>"))
    x2, y2 = ref(2, 1)
    for name in EMBEDDING_PARTS:
        share = tr("{part} share", part=named[name])
        data.append(dict(type="bar", x=x, y=_f32(table[f"share_{name}"]), name=share, xaxis=x2, yaxis=y2,
                         width=0.8, offset=-0.4, offsetgroup="share", marker=dict(color=EMBEDDING_COLORS[name]),
                         text=esc, textposition="none",
                         legendgroup="share", legendgrouptitle=dict(text=tr("share of the sum")),
                         hovertemplate=f"%{{text}} (%{{x}}): {share} %{{y:.1%}}<extra></extra>"))
    # relative mode stacks the three shares (negatives below zero); the norms sit side by side by their offsets
    layout.update(barmode="relative", legend=dict(x=1.08, xanchor="left"))
    layout["xaxis"].update(_token_axis(labels, showticklabels=False), matches=x2)
    layout["xaxis" + x2[1:]].update(_token_axis(labels, tickangle=-90))
    layout["yaxis"].update(title=dict(text=tr("L2 norm of the parts")))
    output_colour = EMBEDDING_COLORS["LayerNorm output"]
    layout["yaxis3"] = dict(overlaying="y", side="right", anchor="x", showgrid=False, rangemode="tozero",
                            title=dict(text=tr("LayerNorm output"), font=dict(color=output_colour)),
                            tickfont=dict(color=output_colour))
    layout["yaxis" + y2[1:]].update(title=dict(text=tr("share")), tickformat=".0%")
    # on a phone each rotated token label keeps its font and a few pixels (squeezed, they overlapped)
    return _figure(data, layout, title, width=max(950, 200 + 22 * n), height=780,
                   phone_width=90 + n * (_tick_font_size(n) + 5) + 110)


def segment_comparison_figure(vectors: Mapping[str, np.ndarray], *, cosine: float | None = None,
                              title: str | None = None, tr: Translator = english) -> go.Figure:
    """The segment embedding vectors as strips over the hidden dimensions (and their difference when given).
    vectors: name -> (H,), e.g. {"A": ..., "B": ..., "B − A": ...}; cosine: cos(A, B) for the subtitle."""
    title = title or tr("Segment embeddings: sentence A vs sentence B")
    names = list(vectors)
    z = np.stack([np.asarray(vectors[k]) for k in names])  # (S, H)
    span = float(max(np.abs(z).max(), 1e-6))
    norms = ", ".join(f"|{escape_label(k)}| = {np.linalg.norm(vectors[k]):.2f}" for k in names)
    sub = norms + (f", cos(A, B) = {cosine:.3f}" if cosine is not None else "")
    heat = dict(type="heatmap", z=_f32(z), x=np.arange(z.shape[1]), y=np.arange(len(names)),
                colorscale=SIMILARITY_COLORSCALE, zmid=0, zmin=-span, zmax=span, colorbar=_colorbar(tr("value")),
                hovertemplate=tr("dimension") + " %{x}: %{z:.3f}<extra></extra>")
    layout = dict(yaxis=dict(tickmode="array", tickvals=list(range(len(names))), showgrid=False, zeroline=False,
                             ticktext=[escape_label(k) for k in names], range=[len(names) - 0.5, -0.5]),
                  xaxis=dict(title=dict(text=tr("hidden dimension")), showgrid=False, zeroline=False))
    return _figure([heat], layout, f"{title}<br><sup>{sub}</sup>", width=1000, height=250 + 70 * len(names),
                   phone_width=PHONE_BOX)


