"""Figures of a corpus (bertviz_app.corpus): a head's positional profile, a map of points (the joint query/key map,
the sentence map) coloured by a category, and the tag links of a head. Tables in, `go.Figure` out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from ._base import _figure, _f32, escape_label

# More categories than colours: the rest are drawn grey and named "other" (a legend of 400 Brown tags helps nobody).
MAX_COLOURS = len(qualitative.Dark24)


def positional_profile_figure(offsets: Sequence[int], attention: np.ndarray, layer: int, head: int) -> go.Figure:
    """Mean attention from a token to the token `offset` away, over a corpus."""
    bar = dict(type="bar", x=list(offsets), y=_f32(attention), marker=dict(color="#1f77b4"),
               hovertemplate="offset %{x}: %{y:.3f}<extra></extra>")
    layout = dict(xaxis=dict(title=dict(text="offset of the key from the query (-1: the previous token)"),
                             tickmode="array", tickvals=list(offsets)),
                  yaxis=dict(title=dict(text="mean attention"), rangemode="tozero"), bargap=0.15)
    return _figure([bar], layout, f"Layer {layer}, head {head}: attention by relative position, over the corpus",
                   width=760, height=420)


def point_map_figure(x: np.ndarray, y: np.ndarray, categories: Sequence, hover: Sequence[str], *, title: str,
                     colour_title: str, symbols: Sequence[str] | None = None) -> go.Figure:
    """A 2-D map of many points (WebGL), one trace per category (the commonest first; past MAX_COLOURS, "other")."""
    categories = np.asarray([str(c) if c is not None and c == c else "(none)" for c in categories], dtype=object)
    names, counts = np.unique(categories, return_counts=True)
    order = names[np.argsort(-counts, kind="stable")]
    shown = list(order[:MAX_COLOURS - 1]) if len(order) > MAX_COLOURS else list(order)
    grouped = np.where(np.isin(categories, shown), categories, "other")
    hover = np.asarray([escape_label(h) for h in hover], dtype=object)
    traces = []
    for k, name in enumerate(shown + (["other"] if len(shown) < len(order) else [])):
        where = np.flatnonzero(grouped == name)
        colour = "#bbbbbb" if name == "other" else qualitative.Dark24[k % MAX_COLOURS]
        marker = dict(size=4, color=colour, opacity=0.7)
        if symbols is not None:
            marker["symbol"] = list(np.asarray(symbols, dtype=object)[where])
        traces.append(dict(type="scattergl", mode="markers", name=escape_label(name), x=_f32(x[where]),
                           y=_f32(y[where]), text=list(hover[where]), marker=marker,
                           hovertemplate="%{text}<extra>" + escape_label(name) + "</extra>"))
    layout = dict(legend=dict(title=dict(text=colour_title), itemsizing="constant"),
                  xaxis=dict(title=dict(text="first principal axis"), zeroline=False),
                  yaxis=dict(title=dict(text="second principal axis"), zeroline=False, scaleanchor="x"))
    return _figure(traces, layout, title, width=860, height=720)


def tag_links_figure(from_tags: Sequence[str], to_tags: Sequence[str], lift: np.ndarray, share: np.ndarray,
                     layer: int, head: int, top: int = 20) -> go.Figure:
    """A head's tag pairs joined more often than chance, the strongest lift first."""
    order = np.argsort(-np.asarray(lift), kind="stable")[:top][::-1]
    labels = [escape_label(f"{from_tags[i]} -> {to_tags[i]}") for i in order]
    bar = dict(type="bar", orientation="h", x=_f32(np.asarray(lift)[order]), y=labels,
               customdata=_f32(np.asarray(share)[order]),
               hovertemplate="%{y}: %{x:.1f}x chance, %{customdata:.0%} of the first tag's words<extra></extra>")
    layout = dict(xaxis=dict(title=dict(text="times more often than chance")), margin=dict(l=160, r=30, t=80, b=60))
    return _figure([bar], layout, f"Layer {layer}, head {head}: where the strongest link goes, by tag",
                   width=760, height=max(320, 120 + 22 * len(labels)))


def probe_figure(frames: Sequence, title: str = "What each layer knows") -> go.Figure:
    """Linear probes by layer (corpus.probe's tables, one per target): the held-out accuracy as a solid line, the
    selectivity (accuracy minus the control task's) dotted, the majority-class baseline dashed, one colour a target."""
    traces = []
    for k, frame in enumerate(frames):
        target, colour = escape_label(str(frame["target"].iloc[0])), qualitative.D3[k % len(qualitative.D3)]
        layers = [int(v) for v in frame["layer"]]
        traces.append(dict(type="scatter", mode="lines+markers", name=f"{target}: accuracy", x=layers,
                           y=_f32(frame["accuracy"]), line=dict(color=colour),
                           hovertemplate=f"{target}, layer %{{x}}: accuracy %{{y:.3f}}<extra></extra>"))
        if frame["selectivity"].notna().any():
            traces.append(dict(type="scatter", mode="lines+markers", name=f"{target}: selectivity", x=layers,
                               y=_f32(frame["selectivity"]), line=dict(color=colour, dash="dot"),
                               marker=dict(symbol="diamond"),
                               hovertemplate=f"{target}, layer %{{x}}: accuracy minus the control task's "
                                             f"%{{y:.3f}}<extra></extra>"))
        traces.append(dict(type="scatter", mode="lines", name=f"{target}: majority class", x=layers,
                           y=_f32(frame["majority"]), line=dict(color=colour, dash="dash", width=1),
                           hovertemplate=f"{target}: always the commonest class %{{y:.3f}}<extra></extra>"))
    layout = dict(xaxis=dict(title=dict(text="layer (0: the embeddings)"), dtick=1),
                  yaxis=dict(title=dict(text="held-out accuracy"), range=[0, 1.02]),
                  legend=dict(orientation="h", y=-0.25))
    return _figure(traces, layout, title, width=760, height=460)


def heads_scatter_figure(x: np.ndarray, y: np.ndarray, layers: np.ndarray, heads: np.ndarray, roles: Sequence[str],
                         x_name: str, y_name: str, title: str) -> go.Figure:
    """Every head as one point on two statistics, one colour per role; the hover names layer, head and role."""
    roles = np.asarray([str(r) for r in roles], dtype=object)
    traces = []
    for k, role in enumerate(sorted(set(roles))):
        where = np.flatnonzero(roles == role)
        label = escape_label(role)
        traces.append(dict(type="scatter", mode="markers", name=label, x=_f32(x[where]), y=_f32(y[where]),
                           customdata=np.stack([layers[where], heads[where]], 1).tolist(),
                           marker=dict(size=9, color=qualitative.D3[k % len(qualitative.D3)]),
                           hovertemplate=(f"layer %{{customdata[0]}}, head %{{customdata[1]}} ({label})<br>"
                                          f"{escape_label(x_name)} %{{x:.3f}}, {escape_label(y_name)} %{{y:.3f}}"
                                          "<extra></extra>")))
    layout = dict(xaxis=dict(title=dict(text=escape_label(x_name))), yaxis=dict(title=dict(text=escape_label(y_name))),
                  legend=dict(title=dict(text="role")))
    return _figure(traces, layout, title, width=760, height=520)
