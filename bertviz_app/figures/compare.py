"""Figures of two runs side by side, mirroring analysis/compare.py: how much each head changed, and one head's
attention of B minus A."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import Translator, english
from ._base import (SIMILARITY_COLORSCALE, _colorbar, _escape_all, _f32, _figure, _grid, _heads_grid,
                    _sized_token_axes, escape_label)


def attention_change_figure(head_change: np.ndarray, *, title: str | None = None,
                            layers_a: Sequence[int] | None = None, layers_b: Sequence[int] | None = None,
                            tr: Translator = english) -> go.Figure:
    """(L, h) total variation between two runs' attention rows, per head (0 = the same, 1 = disjoint). layers_a,
    layers_b: the layer of each side every row compares, when two models of different depths are paired by
    relative depth (rows then read "layer 1 ↔ 3")."""
    values = np.asarray(head_change, dtype=np.float32)
    labels = None
    if layers_a is not None and layers_b is not None and list(layers_a) != list(layers_b):
        labels = [tr("layer {a} ↔ {b}", a=a, b=b) for a, b in zip(layers_a, layers_b)]
    return _heads_grid(values, hover=tr("changed") + " %{z:.3f}", colorbar=tr("change (total variation)"), zmid=None,
                       colorscale="Reds", zmin=0, zmax=max(float(values.max()), 1e-6),
                       title=title or tr("How much each head changed"), layer_labels=labels, tr=tr)


def attention_difference_figure(difference: np.ndarray, tokens: Sequence[str], *,
                                title: str = "Attention B minus A") -> go.Figure:
    """(T, T) one head's B - A on a diverging scale centered at 0."""
    difference = np.asarray(difference, dtype=np.float32)
    span = float(max(np.abs(difference).max(), 1e-6))
    n = len(tokens)
    esc = _escape_all(tokens)
    heat = dict(type="heatmap", z=_f32(difference), x=np.arange(n), y=np.arange(n), colorscale=SIMILARITY_COLORSCALE,
                zmid=0, zmin=-span, zmax=span, colorbar=_colorbar("B − A"),
                text=[[f"{esc[i]} ({i}) → {esc[j]} ({j})" for j in range(n)] for i in range(n)] if n <= 64 else None,
                hovertemplate=("%{text}" if n <= 64 else "%{y} → %{x}") + ": %{z:+.3f}<extra></extra>")
    xaxis, yaxis, width, height = _sized_token_axes(list(tokens), list(tokens), "attending (query)",
                                                    "attended to (key)")
    return _figure([heat], dict(xaxis=xaxis, yaxis=yaxis, margin=xaxis.pop("_margin")), title, width=width,
                   height=height)


def layer_change_figure(changes: dict[str, np.ndarray], *, title: str | None = None,
                        tr: Translator = english) -> go.Figure:
    """One panel of bars per measure, each (L,) a change per layer (e.g. the attention's total variation on one
    input, the weights' relative change): panels side by side, each on its own scale, layers left to right."""
    # a name's "(unit)" on a line of its own: two panels side by side on a phone are 150 px wide each
    title = title or tr("How much each layer changed")
    titles = ["<br>(".join(escape_label(part) for part in tr(name).split(" (", 1)) for name in changes]
    layout, ref = _grid(1, len(changes), titles=titles, hspace=0.12)
    data = []
    for k, (name, values) in enumerate(changes.items(), 1):
        values = np.asarray(values, dtype=np.float64)
        x, y = ref(1, k)
        data.append(dict(type="bar", x=np.arange(len(values)), y=values, xaxis=x, yaxis=y, marker_color="#d62728",
                         name=escape_label(tr(name)), hovertemplate=tr("layer") + " %{x}: %{y:.4f}<extra></extra>"))
        layout[f"xaxis{'' if k == 1 else k}"].update(title=dict(text=tr("layer")), dtick=1)
    for note in layout["annotations"]:
        note["font"] = dict(size=13)
    layout.update(showlegend=False, margin=dict(l=60, r=20, t=110, b=60))
    return _figure(data, layout, title, width=None, height=340)
