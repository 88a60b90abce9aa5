"""Figures of attention: one head or a layer's mean as a heatmap, every head at a glance, one token across the heads
of a layer, the head map of statistics, and the query/key arithmetic of one attention row."""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from ..i18n import Translator, english
from ._base import (ATTENTION_COLORSCALE, BOUNDARY_LINE, MAX_CELL_HOVER, SIMILARITY_COLORSCALE, _colorbar,
                    _escape_all, _f32, _figure, _grid, _sized_token_axes, _token_axis, escape_label)

def attention_title(layer: int, head: int | None, segments: str = "all") -> str:
    """The title of one head's heatmap, or of a layer's mean over heads (head None), with its segment filter."""
    which = "mean over heads" if head is None else f"head {head}"
    return f"Attention, layer {layer}, {which}" + ("" if segments == "all" else f", {segments}")


def rollout_title(last_layer: int, residual: float = 0.5) -> str:
    """The title of a rollout heatmap through layers 0..last_layer (residual as in analysis.attention_rollout)."""
    return (f"Attention rollout through layers 0-{last_layer} (residual as {1 - residual:g}·A + {residual:g}·I)")


def attention_heatmap(weights: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str], *,
                      row_positions: Sequence[int] | None = None, col_positions: Sequence[int] | None = None,
                      row_boundary: int | None = None, col_boundary: int | None = None, title: str = "Attention",
                      zmax: float | None = None, colorbar_title: str = "weight", tr: Translator = english) -> go.Figure:
    """A token-by-token heatmap: rows attend (from), columns are attended to (to).

    weights: (R, C); row_labels, col_labels: R and C token strings; row_positions/col_positions: the tokens'
    positions in the input (shown on hover; default 0..R-1); row_boundary/col_boundary: index of the first row /
    column of segment B, where a dashed line is drawn (None: no line). zmax: top of the color scale (default:
    the largest weight).
    """
    weights = np.asarray(weights)
    if weights.ndim != 2 or weights.shape != (len(row_labels), len(col_labels)):
        raise ValueError(f"weights {weights.shape} do not match {len(row_labels)} row and {len(col_labels)} "
                         "column labels")
    n_rows, n_cols = weights.shape
    rows = list(range(n_rows)) if row_positions is None else [int(p) for p in row_positions]
    cols = list(range(n_cols)) if col_positions is None else [int(p) for p in col_positions]
    z = _f32(weights)
    top = float(zmax) if zmax is not None else max(float(z.max()) if z.size else 0.0, 1e-6)
    heat = dict(type="heatmap", z=z, x=np.arange(n_cols), y=np.arange(n_rows), colorscale=ATTENTION_COLORSCALE,
                zmin=0.0, zmax=top, colorbar=_colorbar(colorbar_title))
    if n_rows * n_cols <= MAX_CELL_HOVER:
        r_esc, c_esc = _escape_all(row_labels), _escape_all(col_labels)
        heat["text"] = [[f"{r_esc[i]} ({rows[i]}) → {c_esc[j]} ({cols[j]})" for j in range(n_cols)]
                        for i in range(n_rows)]
        heat["hovertemplate"] = "%{text}<br>" + tr("weight") + " %{z:.3f}<extra></extra>"
    else:  # per-cell text would dominate the payload: show indices; spikes lead the eye to the tick labels
        heat["hovertemplate"] = tr("row") + " %{y} → " + tr("column") + " %{x}<br>" + tr("weight") + \
            " %{z:.3f}<extra></extra>"
    spikes = dict(showspikes=True, spikemode="across", spikethickness=1, spikecolor="#888", spikedash="dot")
    shapes = []
    if row_boundary is not None and 0 < row_boundary < n_rows:
        shapes.append(dict(type="line", x0=-0.5, x1=n_cols - 0.5, y0=row_boundary - 0.5, y1=row_boundary - 0.5,
                           line=BOUNDARY_LINE))
    if col_boundary is not None and 0 < col_boundary < n_cols:
        shapes.append(dict(type="line", y0=-0.5, y1=n_rows - 0.5, x0=col_boundary - 0.5, x1=col_boundary - 0.5,
                           line=BOUNDARY_LINE))
    xaxis, yaxis, width, height = _sized_token_axes(row_labels, col_labels, tr("attending (query)"),
                                                    tr("attended to (key)"), **spikes)
    layout = dict(xaxis=xaxis, yaxis=yaxis, shapes=shapes, margin=xaxis.pop("_margin"))
    return _figure([heat], layout, title, width=width, height=height)


def _palette(colorscale: str, levels: int) -> list[tuple[int, int, int]]:
    colors = sample_colorscale(colorscale, [i / (levels - 1) for i in range(levels)], colortype="tuple")
    return [tuple(int(round(c * 255)) if c <= 1 else int(round(c)) for c in rgb) for rgb in colors]


# zlib level for the overview image: level 6 took ~30 ms of a 35 ms figure (6 x 12 heads, 64 tokens) for 8 % less
# payload than level 4; the 12 x 12 x 128-token worst case stays under 1 MB at 4 (tested).
PNG_COMPRESSION = 4


def _indexed_png(indices: np.ndarray, palette: list[tuple[int, int, int]]) -> bytes:
    """A minimal 8-bit palette PNG (stdlib only): one byte per pixel compresses far better than RGB."""
    height, width = indices.shape
    raw = np.zeros((height, width + 1), dtype=np.uint8)  # (H, 1 + W): filter byte 0 ("none") before each row
    raw[:, 1:] = indices

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)
    plte = b"".join(bytes(rgb) for rgb in palette)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"PLTE", plte)
            + chunk(b"IDAT", zlib.compress(raw.tobytes(), PNG_COMPRESSION)) + chunk(b"IEND", b""))


def _pool_tiles(attentions: np.ndarray, size: int) -> np.ndarray:
    """Shrink (L, h, T, T) tiles to at most (size, size) by block maximum, so a sharp pattern never fades."""
    t = attentions.shape[-1]
    if t <= size:
        return attentions
    starts = np.linspace(0, t, size + 1).astype(int)[:-1]
    rows = np.maximum.reduceat(attentions, starts, axis=2)  # (L, h, size, T)
    return np.maximum.reduceat(rows, starts, axis=3)  # (L, h, size, size)


OVERVIEW_SCALES = ("sqrt", "head_max", "linear")
OVERVIEW_WIDTH = 1000
# color-bar ticks for the sqrt scale: the weights people read, placed where their square roots fall
_SQRT_TICKS = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0)


def _overview_scale(pooled: np.ndarray, scale: str) -> tuple[np.ndarray, dict, str]:
    """(L, h, t, t) weights -> (colors in [0, 1], the color bar, the subtitle's words for the scale)."""
    if scale == "sqrt":
        colorbar = _colorbar("weight (sqrt scale)", tickvals=[float(np.sqrt(v)) for v in _SQRT_TICKS],
                             ticktext=[f"{v:g}" for v in _SQRT_TICKS])
        return np.sqrt(np.clip(pooled, 0.0, 1.0)), colorbar, "color = √weight (pale cells are small, not zero)"
    if scale == "head_max":
        peak = pooled.max(axis=(2, 3), keepdims=True)  # (L, h, 1, 1)
        return (pooled / np.maximum(peak, 1e-12), _colorbar("weight / head max"),
                "color = weight / that head's max (heads not comparable)")
    return pooled, _colorbar("weight"), "color = weight"


def head_overview_figure(attentions: np.ndarray, head_summaries: Sequence[Sequence[str]] | None = None, *,
                         title: str = "Every head at a glance", max_tile: int = 128,
                         scale: str = "sqrt", levels: int | None = None) -> go.Figure:
    """Every layer x head attention matrix as ONE tiled image (rows = layers, columns = heads), plus one invisible
    marker per tile whose hover text is that head's summary. Light however many heads: the image is an 8-bit
    palette PNG and the figure has two traces.

    attentions: (L, h, T, T) in [0, 1]; head_summaries: (L, h) strings for the hover (escaped here), or None.
    max_tile: tiles larger than this many pixels are max-pooled down to it.
    scale: how weights map to color. Most weights of a T-token row are near 1/T, so a linear scale leaves
    everything but the sharpest heads pale. "sqrt" (default): color = sqrt(weight), the same scale for every
    head, so heads stay comparable; "head_max": color = weight / that head's largest weight, so each tile shows
    its own pattern at full contrast (but a diffuse head looks as strong as a sharp one); "linear": the weight.
    The subtitle and color bar say which.
    levels: shades in the palette (default 32 for sqrt, 64 otherwise; at most 255). The payload grows with it, and
    the square root spreads small weights over more shades, so sqrt gets fewer: a 12 x 12 model at 128 tokens
    stays under 1 MB; a thumbnail needs no more.
    """
    attentions = np.asarray(attentions, dtype=np.float32)
    if attentions.ndim != 4 or attentions.shape[2] != attentions.shape[3]:
        raise ValueError(f"attentions must have shape (layers, heads, T, T), got {attentions.shape}")
    if scale not in OVERVIEW_SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(OVERVIEW_SCALES)}")
    if levels is not None and not 2 <= levels <= 255:
        raise ValueError(f"levels must be from 2 to 255, got {levels}")
    n_layers, n_heads, t, _ = attentions.shape
    # a tile is drawn about (width - 220) / heads pixels wide: more than 1.5 image pixels per screen pixel is never
    # seen, only sent (and pooling keeps every sharp cell visible)
    shown = int(1.5 * (OVERVIEW_WIDTH - 220) / n_heads)
    pooled = _pool_tiles(attentions, min(max_tile, max(32, shown)))  # pooled before scaling: max-pooling commutes with both scalings
    pooled, colorbar, how = _overview_scale(pooled, scale)
    tile = pooled.shape[-1]
    gap = max(2, tile // 10)
    levels = levels or (32 if scale == "sqrt" else 64)  # shades in the palette (index `levels` is the gap)
    quantized = np.clip(np.rint(pooled * (levels - 1)), 0, levels - 1).astype(np.uint8)  # (L, h, tile, tile)
    canvas = np.full((n_layers, tile + gap, n_heads, tile + gap), levels, dtype=np.uint8)
    canvas[:, :tile, :, :tile] = quantized.transpose(0, 2, 1, 3)  # (L, tile, h, tile)
    image = np.full((n_layers * (tile + gap) + gap, n_heads * (tile + gap) + gap), levels, dtype=np.uint8)
    image[gap:, gap:] = canvas.reshape(n_layers * (tile + gap), n_heads * (tile + gap))
    png = base64.b64encode(_indexed_png(image, _palette(ATTENTION_COLORSCALE, levels) + [(190, 190, 190)]))
    centers_x = [gap + h * (tile + gap) + tile / 2 for h in range(n_heads)]
    centers_y = [gap + l * (tile + gap) + tile / 2 for l in range(n_layers)]
    texts = []
    for l in range(n_layers):
        for h in range(n_heads):
            summary = escape_label(head_summaries[l][h]) if head_summaries is not None else ""
            texts.append(f"layer {l}, head {h}" + (f"<br>{summary}" if summary else ""))
    data = [dict(type="image", source="data:image/png;base64," + png.decode("ascii"), hoverinfo="skip"),
            dict(type="scatter", mode="markers", x=np.tile(centers_x, n_layers), y=np.repeat(centers_y, n_heads),
                 text=texts, hovertemplate="%{text}<extra></extra>", showlegend=False,
                 marker=dict(size=1, opacity=0, color=np.zeros(n_layers * n_heads), cmin=0, cmax=1,
                             colorscale=ATTENTION_COLORSCALE, showscale=True, colorbar=colorbar))]
    layout = dict(xaxis=dict(tickmode="array", tickvals=centers_x, ticktext=[f"head {h}" for h in range(n_heads)],
                             side="top", showgrid=False, zeroline=False),
                  yaxis=dict(tickmode="array", tickvals=centers_y, ticktext=[f"layer {l}" for l in range(n_layers)],
                             showgrid=False, zeroline=False, autorange="reversed", scaleanchor="x"),
                  hovermode="closest", hoverdistance=-1, margin=dict(l=90, r=30, t=130, b=30))
    width = OVERVIEW_WIDTH
    plot_h = int((width - 220) * image.shape[0] / image.shape[1])
    sub = f"{t} tokens; in each tile rows attend to columns; {how}; hover a tile for the head's statistics"
    return _figure(data, layout, f"{title}<br><sup>{sub}</sup>", width=width, height=plot_h + 170)


def token_attention_figure(from_weights: np.ndarray, to_weights: np.ndarray, labels: Sequence[str], token: int, *,
                           layer: int | None = None, title: str | None = None) -> go.Figure:
    """Attention of one token across the heads of a layer: what it attends to (top) and what attends to it
    (bottom). from_weights, to_weights: (h, T); labels: T tokens; token: the chosen position."""
    from_weights, to_weights = np.asarray(from_weights), np.asarray(to_weights)
    if from_weights.shape != to_weights.shape or from_weights.shape[1] != len(labels):
        raise ValueError(f"from {from_weights.shape} / to {to_weights.shape} do not match {len(labels)} labels")
    n_heads, n = from_weights.shape
    who = f"{escape_label(labels[token])} ({token})"
    layout, ref = _grid(2, 1, vspace=0.14, titles=(f"{who} attends to …", f"… attend to {who}"))
    esc = _escape_all(labels)
    text = [[f"head {h}, {esc[j]} ({j})" for j in range(n)] for h in range(n_heads)]
    data, shapes = [], []
    for row, weights, verb in ((1, from_weights, "attended"), (2, to_weights, "attending")):
        x, y = ref(row, 1)
        data.append(dict(type="heatmap", z=_f32(weights), x=np.arange(n), y=np.arange(n_heads), xaxis=x, yaxis=y,
                         text=text, zmin=0, zmax=1, colorscale=ATTENTION_COLORSCALE, showscale=row == 1,
                         colorbar=_colorbar("weight"), hovertemplate="%{text}<br>weight %{z:.3f}<extra></extra>"))
        layout["xaxis" + x[1:]].update(_token_axis(labels, f"token {verb}", tickangle=-90))
        layout["yaxis" + y[1:]].update(tickmode="array", tickvals=list(range(n_heads)),
                                       ticktext=[f"head {h}" for h in range(n_heads)],
                                       range=[n_heads - 0.5, -0.5], showgrid=False)
        shapes.append(dict(type="rect", xref=x, yref=y, x0=token - 0.5, x1=token + 0.5, y0=-0.5, y1=n_heads - 0.5,
                           line=dict(color="#d62728", width=2)))
    layout["shapes"] = shapes
    where = f" in layer {layer}" if layer is not None else ""
    return _figure(data, layout, title or f"Attention from and to {who}{where}", width=max(760, 220 + 16 * n),
                   height=int(2 * (90 + 24 * n_heads) + 260))


def head_map_figure(stats: Mapping[str, np.ndarray], dominant: np.ndarray, statistic: str = "entropy", *,
                    title: str = "Head map") -> go.Figure:
    """A layers x heads heatmap of one head statistic, each cell labeled by the head's dominant behavior; the
    dropdown switches statistic, the hover shows them all.

    stats: name -> (L, h) array (e.g. entropy, distance, cls, sep, self, previous, next; names other than
    entropy and distance are shares in [0, 1]); dominant: (L, h) strings.
    """
    names = list(stats)
    if statistic not in stats:
        raise ValueError(f"unknown statistic {statistic!r}; choose one of {', '.join(names)}")
    n_layers, n_heads = np.asarray(stats[names[0]]).shape
    dominant = np.asarray(dominant, dtype=object)
    custom = np.stack([_f32(stats[k]) for k in names], axis=-1)  # (L, h, S)
    hover = "<br>".join(f"{k}: %{{customdata[{i}]:.3f}}" for i, k in enumerate(names))
    text = [[escape_label(dominant[l, h]) for h in range(n_heads)] for l in range(n_layers)]

    def zrange(k):
        return (0.0, 1.0) if k not in ("entropy", "distance") else (0.0, max(float(np.max(stats[k])), 1e-6))

    zmin, zmax = zrange(statistic)
    heat = dict(type="heatmap", z=_f32(stats[statistic]), x=np.arange(n_heads), y=np.arange(n_layers),
                customdata=custom, text=text, texttemplate="%{text}", textfont=dict(size=11), colorscale="Viridis",
                zmin=zmin, zmax=zmax, colorbar=_colorbar(statistic),
                hovertemplate="layer %{y}, head %{x}: <b>%{text}</b><br>" + hover + "<extra></extra>")
    buttons = [dict(label=k, method="restyle", args=[{"z": [_f32(stats[k])], "zmin": [zrange(k)[0]],
                                                      "zmax": [zrange(k)[1]], "colorbar.title.text": [k]}])
               for k in names]
    layout = dict(updatemenus=[dict(buttons=buttons, direction="down", x=1.0, xanchor="right", y=1.02,
                                    yanchor="bottom", active=names.index(statistic))],
                  xaxis=dict(tickmode="array", tickvals=list(range(n_heads)), title=dict(text="head"),
                             showgrid=False, zeroline=False),
                  yaxis=dict(tickmode="array", tickvals=list(range(n_layers)), showgrid=False, zeroline=False,
                             ticktext=[f"layer {l}" for l in range(n_layers)], range=[n_layers - 0.5, -0.5]))
    return _figure([heat], layout, f"{title}: color = {statistic}, text = dominant behavior",
                   width=max(760, 170 + 84 * n_heads), height=max(400, 190 + 50 * n_layers))


def query_key_figure(query: np.ndarray, keys: np.ndarray, scores: np.ndarray, weights: np.ndarray,
                     labels: Sequence[str], token: int, *, scale: float, layer: int | None = None,
                     head: int | None = None, title: str | None = None, terms: Sequence[str] = ("q.k",)) -> go.Figure:
    """How one attention row is made: the query q (d,), every key k_j (T, d), their elementwise products q*k_j,
    the scores s_j (the model's score terms added up: q·k_j * scale and any other) and the softmax of s (the
    attention row). scores, weights: (T,); labels: T tokens; token: the query's position; layer, head: named in the
    title; terms: the names of the model's score terms (the scores' column title lists those beyond q.k)."""
    query, keys = np.asarray(query), np.asarray(keys)
    n, d = keys.shape
    products = query[None, :] * keys  # (T, d)
    esc = _escape_all(labels)
    others = "".join(f" + {t}" for t in _escape_all([t for t in terms if t != "q.k"]))  # DeBERTa: + c2p + p2c
    titles = ("query q", "", "", "", "keys k<sub>j</sub>", "q × k<sub>j</sub> (elementwise)",
              f"q·k<sub>j</sub> × {scale:.3g}" + others,
              "softmax = attention")
    query_height = 1.0 / max(n, 8)
    layout, ref = _grid(2, 4, row_heights=[query_height, 1 - query_height], col_widths=[0.3, 0.3, 0.2, 0.2],
                        hspace=0.035, vspace=0.07, titles=titles)
    span = float(max(np.abs(keys).max(), np.abs(query).max(), 1e-6))
    pspan = float(max(np.abs(products).max(), 1e-6))
    dims = np.arange(d)
    text = [[f"{esc[j]} ({j}), dim {i}" for i in range(d)] for j in range(n)] if n * d <= 64 * 64 else None
    hover_cell = "%{text}" if text is not None else "token %{y}, dim %{x}"
    common = dict(colorscale=SIMILARITY_COLORSCALE, zmid=0, showscale=False, x=dims)
    (xq, yq), (xk, yk), (xp, yp), (xs, ys), (xw, yw) = (ref(1, 1), ref(2, 1), ref(2, 2), ref(2, 3), ref(2, 4))
    data = [
        dict(type="heatmap", z=_f32(query[None, :]), y=[0], xaxis=xq, yaxis=yq, zmin=-span, zmax=span,
             hovertemplate="q[%{x}] = %{z:.3f}<extra></extra>", **common),
        dict(type="heatmap", z=_f32(keys), y=np.arange(n), xaxis=xk, yaxis=yk, zmin=-span, zmax=span, text=text,
             hovertemplate="k: " + hover_cell + " = %{z:.3f}<extra></extra>", **common),
        dict(type="heatmap", z=_f32(products), y=np.arange(n), xaxis=xp, yaxis=yp, zmin=-pspan, zmax=pspan,
             text=text, hovertemplate="q×k: " + hover_cell + " = %{z:.3f}<extra></extra>", **common),
        dict(type="bar", x=_f32(scores), y=np.arange(n), orientation="h", xaxis=xs, yaxis=ys, text=esc,
             textposition="none", marker=dict(color=["#d62728" if s < 0 else "#1f77b4" for s in scores]),
             hovertemplate="%{text}: %{x:.3f}<extra></extra>", showlegend=False),
        dict(type="bar", x=_f32(weights), y=np.arange(n), orientation="h", xaxis=xw, yaxis=yw, text=esc,
             textposition="none", marker=dict(color="#08519c"), hovertemplate="%{text}: %{x:.3f}<extra></extra>",
             showlegend=False),
    ]
    layout["xaxis"].update(showticklabels=False, showgrid=False, zeroline=False, matches=xk)
    layout["yaxis"].update(showticklabels=False, showgrid=False, zeroline=False)
    for x, y, axis_title in ((xk, yk, "dimension"), (xp, yp, "dimension"), (xs, ys, "scaled score"),
                             (xw, yw, "weight")):
        layout["xaxis" + x[1:]].update(title=dict(text=axis_title), zeroline=False)
        layout["yaxis" + y[1:]].update(_token_axis(labels, showticklabels=y == yk))
        layout["yaxis" + y[1:]]["range"] = [n - 0.5, -0.5]
    layout["xaxis" + xw[1:]]["range"] = [0, 1]
    layout["xaxis" + xp[1:]]["matches"] = xk
    # the query token's own row, outlined in every panel
    layout["shapes"] = [dict(type="rect", xref=f"{x} domain", yref=y, x0=0, x1=1, y0=token - 0.5, y1=token + 0.5,
                             line=dict(color="#2ca02c", width=2)) for x, y in ((xk, yk), (xp, yp), (xs, ys), (xw, yw))]
    height = int(min(1100, max(500, 230 + 14 * n)))
    where = f"Layer {layer}, head {head}: query" if layer is not None and head is not None else "Query"
    return _figure(data, layout, title or f"{where} of {esc[token]} ({token}) against every key", width=1250,
                   height=height)


