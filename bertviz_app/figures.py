"""Plotly figure builders. Each takes plain numpy arrays and labels and returns a `go.Figure`; nothing here knows
about torch, a model or a `Run` (the Run methods in explorer.py compute the arrays and call these).

Conventions shared by every builder:
- Tokens are text, never markup: every label goes through `escape_label`, because plotly renders a subset of HTML
  (`<b>`, `<br>`, `<a>`, entities) inside tick text and hover labels.
- Token axes are numeric (one unit per token) with the token text as tick labels, so a token that occurs twice
  keeps its own row and column (plotly would merge equal category labels into one).
- Values are float32 rounded to 4 decimals; plotly sends numpy arrays as base64 typed arrays, so payloads stay
  small.
- Figures are assembled as plain dicts and wrapped without plotly's per-property validation, which costs ~100 ms
  per figure; tests/test_figures.py validates every builder's output instead.
"""

from __future__ import annotations

import base64
import html
import struct
import zlib
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import sample_colorscale, sequential

__all__ = [
    "attention_heatmap", "embedding_parts_figure", "escape_label", "head_map_figure", "head_overview_figure",
    "hidden_norms_figure", "hidden_projection_figure", "layer_similarity_figure", "position_path_figure",
    "position_similarity_figure", "query_key_figure", "save_html", "segment_comparison_figure",
    "similarity_heatmap", "token_attention_figure",
]

# White = no attention, dark blue = all of it; reads well on a projector. Spelled out because plotly.js's own
# "Blues" runs the other way (dark to light).
ATTENTION_COLORSCALE = [[i / (len(sequential.Blues) - 1), c] for i, c in enumerate(sequential.Blues)]
SIMILARITY_COLORSCALE = "RdBu_r"  # blue negative, white 0, red positive
FONT = dict(family="Arial, Helvetica, sans-serif", size=14)
MAX_CELL_HOVER = 64 * 64  # above this many cells, per-cell hover text would dominate the payload
BOUNDARY_LINE = dict(color="#d62728", width=2, dash="dash")


# --------------------------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------------------------
def escape_label(text: str) -> str:
    """A token as plotly should show it: literally. '&' first, so '&lt;' typed by a user also stays as typed."""
    return html.escape(str(text), quote=False)


def _escape_all(labels: Sequence[str]) -> list[str]:
    return [escape_label(t) for t in labels]


def _f32(values) -> np.ndarray:
    return np.round(np.asarray(values, dtype=np.float32), 4)


def _tick_font_size(n: int) -> int:
    return 14 if n <= 24 else 12 if n <= 48 else 10 if n <= 80 else 8


def _token_axis(labels: Sequence[str], title: str | None = None, **extra) -> dict:
    """A numeric axis with one tick per token, showing every token (no automatic thinning)."""
    n = len(labels)
    axis = dict(tickmode="array", tickvals=list(range(n)), ticktext=_escape_all(labels),
                tickfont=dict(size=_tick_font_size(n)), range=[-0.5, n - 0.5], showgrid=False, zeroline=False)
    if title:
        axis["title"] = dict(text=title)
    axis.update(extra)
    return axis


def _colorbar(title: str, **extra) -> dict:
    return dict(title=dict(text=title), thickness=14, **extra)


@lru_cache(maxsize=1)
def _template() -> dict:
    return pio.templates["plotly_white"].to_plotly_json()


def _figure(data: list[dict], layout: dict, title: str, width: int, height: int) -> go.Figure:
    base = dict(title=dict(text=title, x=0.01, xanchor="left"), font=FONT, template=_template(), width=width,
                height=height, margin=dict(l=90, r=30, t=80, b=90))
    base.update(layout)
    return go.Figure(dict(data=data, layout=base), _validate=False)


def _grid(rows: int, cols: int, *, row_heights: Sequence[float] | None = None,
          col_widths: Sequence[float] | None = None, hspace: float = 0.05, vspace: float = 0.08,
          titles: Sequence[str] | None = None) -> tuple[dict, Callable[[int, int], tuple[str, str]]]:
    """Subplot axes without make_subplots (which costs ~60 ms). Returns the layout entries (axes with domains and
    subplot-title annotations) and `ref(row, col) -> ('x3', 'y3')`, rows counted from the top, from 1."""
    heights = np.asarray(row_heights if row_heights is not None else [1] * rows, dtype=float)
    widths = np.asarray(col_widths if col_widths is not None else [1] * cols, dtype=float)
    heights = heights / heights.sum() * (1 - vspace * (rows - 1))
    widths = widths / widths.sum() * (1 - hspace * (cols - 1))
    layout: dict = {"annotations": []}

    def ref(r: int, c: int) -> tuple[str, str]:
        n = (r - 1) * cols + c
        return ("x" if n == 1 else f"x{n}"), ("y" if n == 1 else f"y{n}")

    for r in range(1, rows + 1):
        top = 1 - heights[:r - 1].sum() - vspace * (r - 1)
        for c in range(1, cols + 1):
            left = widths[:c - 1].sum() + hspace * (c - 1)
            x, y = ref(r, c)
            layout["xaxis" + x[1:]] = dict(domain=_clip01(left, left + widths[c - 1]), anchor=y)
            layout["yaxis" + y[1:]] = dict(domain=_clip01(top - heights[r - 1], top), anchor=x)
            title = titles[(r - 1) * cols + (c - 1)] if titles else ""
            if title:
                layout["annotations"].append(dict(text=title, x=left + widths[c - 1] / 2, y=top, xref="paper",
                                                  yref="paper", xanchor="center", yanchor="bottom",
                                                  showarrow=False, font=dict(size=15)))
    return layout, ref


def _clip01(*values: float) -> list[float]:
    return [min(1.0, max(0.0, round(float(v), 6))) for v in values]


def _square_size(n: int) -> int:
    """Pixel size of a token-by-token heatmap: roomy for a sentence, bounded for 128+ tokens."""
    return int(min(1000, max(420, 130 + 13 * n)))


def save_html(fig: go.Figure, path: str | Path) -> Path:
    """Write `fig` as one self-contained HTML file (plotly.js inlined, no CDN, no MathJax): it opens offline."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.write_html(str(path), include_plotlyjs=True, include_mathjax=False, full_html=True)
    return path


# --------------------------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------------------------
def attention_heatmap(weights: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str], *,
                      row_positions: Sequence[int] | None = None, col_positions: Sequence[int] | None = None,
                      row_boundary: int | None = None, col_boundary: int | None = None, title: str = "Attention",
                      zmax: float | None = None, colorbar_title: str = "weight") -> go.Figure:
    """A token-by-token heatmap: rows attend (from), columns are attended to (to).

    weights: (R, C); row_labels, col_labels: R and C token strings; row_positions/col_positions: the tokens'
    positions in the input (shown on hover; default 0..R-1); row_boundary/col_boundary: index of the first row /
    column of segment B, where a dashed line is drawn (None: no line). zmax: top of the colour scale (default:
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
        heat["hovertemplate"] = "%{text}<br>weight %{z:.3f}<extra></extra>"
    else:  # per-cell text would dominate the payload: show indices; spikes lead the eye to the tick labels
        heat["hovertemplate"] = "row %{y} → column %{x}<br>weight %{z:.3f}<extra></extra>"
    spikes = dict(showspikes=True, spikemode="across", spikethickness=1, spikecolor="#888", spikedash="dot")
    shapes = []
    if row_boundary is not None and 0 < row_boundary < n_rows:
        shapes.append(dict(type="line", x0=-0.5, x1=n_cols - 0.5, y0=row_boundary - 0.5, y1=row_boundary - 0.5,
                           line=BOUNDARY_LINE))
    if col_boundary is not None and 0 < col_boundary < n_cols:
        shapes.append(dict(type="line", y0=-0.5, y1=n_rows - 0.5, x0=col_boundary - 0.5, x1=col_boundary - 0.5,
                           line=BOUNDARY_LINE))
    layout = dict(xaxis=_token_axis(col_labels, "attended to (key)", tickangle=-90, **spikes),
                  yaxis=_token_axis(row_labels, "attending (query)", **spikes), shapes=shapes)
    layout["yaxis"]["range"] = [n_rows - 0.5, -0.5]  # first token at the top, as text reads
    size = _square_size(max(n_rows, n_cols))
    return _figure([heat], layout, title, width=size + 130, height=size)


def _palette(colorscale: str, levels: int) -> list[tuple[int, int, int]]:
    colors = sample_colorscale(colorscale, [i / (levels - 1) for i in range(levels)], colortype="tuple")
    return [tuple(int(round(c * 255)) if c <= 1 else int(round(c)) for c in rgb) for rgb in colors]


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
            + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + chunk(b"IEND", b""))


def _pool_tiles(attentions: np.ndarray, size: int) -> np.ndarray:
    """Shrink (L, h, T, T) tiles to at most (size, size) by block maximum, so a sharp pattern never fades."""
    t = attentions.shape[-1]
    if t <= size:
        return attentions
    starts = np.linspace(0, t, size + 1).astype(int)[:-1]
    rows = np.maximum.reduceat(attentions, starts, axis=2)  # (L, h, size, T)
    return np.maximum.reduceat(rows, starts, axis=3)  # (L, h, size, size)


def head_overview_figure(attentions: np.ndarray, head_summaries: Sequence[Sequence[str]] | None = None, *,
                         title: str = "Every head at a glance", max_tile: int = 128) -> go.Figure:
    """Every layer x head attention matrix as ONE tiled image (rows = layers, columns = heads), plus one invisible
    marker per tile whose hover text is that head's summary. Light however many heads: the image is an 8-bit
    palette PNG and the figure has two traces.

    attentions: (L, h, T, T) in [0, 1]; head_summaries: (L, h) strings for the hover (escaped here), or None.
    max_tile: tiles larger than this many pixels are max-pooled down to it.
    """
    attentions = np.asarray(attentions, dtype=np.float32)
    if attentions.ndim != 4 or attentions.shape[2] != attentions.shape[3]:
        raise ValueError(f"attentions must have shape (layers, heads, T, T), got {attentions.shape}")
    n_layers, n_heads, t, _ = attentions.shape
    pooled = _pool_tiles(attentions, max_tile)
    tile = pooled.shape[-1]
    gap = max(2, tile // 10)
    levels = 64  # shades in the palette (index 64 is the gap): plenty for a thumbnail, and 255 compress far worse
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
                             colorscale=ATTENTION_COLORSCALE, showscale=True, colorbar=_colorbar("weight")))]
    layout = dict(xaxis=dict(tickmode="array", tickvals=centers_x, ticktext=[f"head {h}" for h in range(n_heads)],
                             side="top", showgrid=False, zeroline=False),
                  yaxis=dict(tickmode="array", tickvals=centers_y, ticktext=[f"layer {l}" for l in range(n_layers)],
                             showgrid=False, zeroline=False, autorange="reversed", scaleanchor="x"),
                  hovermode="closest", hoverdistance=-1, margin=dict(l=90, r=30, t=130, b=30))
    width = 1000
    plot_h = int((width - 220) * image.shape[0] / image.shape[1])
    sub = f"{t} tokens; in each tile rows attend to columns; hover a tile for the head's statistics"
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
    """A layers x heads heatmap of one head statistic, each cell labelled by the head's dominant behaviour; the
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
    return _figure([heat], layout, f"{title}: colour = {statistic}, text = dominant behaviour",
                   width=max(760, 170 + 84 * n_heads), height=max(400, 190 + 50 * n_layers))


def query_key_figure(query: np.ndarray, keys: np.ndarray, scores: np.ndarray, weights: np.ndarray,
                     labels: Sequence[str], token: int, *, scale: float, title: str | None = None) -> go.Figure:
    """How one attention row is made: the query q (d,), every key k_j (T, d), their elementwise products q*k_j,
    the scaled dot products s_j = q·k_j * scale and the softmax of s (the attention row).
    scores, weights: (T,); labels: T tokens; token: the query's position."""
    query, keys = np.asarray(query), np.asarray(keys)
    n, d = keys.shape
    products = query[None, :] * keys  # (T, d)
    esc = _escape_all(labels)
    titles = ("query q", "", "", "", "keys k<sub>j</sub>", "q × k<sub>j</sub> (elementwise)",
              f"q·k<sub>j</sub> × {scale:.3g}", "softmax = attention")
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
    return _figure(data, layout, title or f"Query of {esc[token]} ({token}) against every key", width=1250,
                   height=height)


# --------------------------------------------------------------------------------------------------------------
# Similarity heatmaps (positions, hidden states)
# --------------------------------------------------------------------------------------------------------------
def similarity_heatmap(similarity: np.ndarray, labels: Sequence[str], *, title: str = "Cosine similarity",
                       axis_title: str = "token") -> go.Figure:
    """A symmetric (N, N) cosine-similarity matrix on a diverging scale fixed to [-1, 1]."""
    similarity = np.asarray(similarity)
    n = len(labels)
    if similarity.shape != (n, n):
        raise ValueError(f"similarity {similarity.shape} does not match {n} labels")
    heat = dict(type="heatmap", z=_f32(similarity), x=np.arange(n), y=np.arange(n), colorscale=SIMILARITY_COLORSCALE,
                zmin=-1, zmax=1, zmid=0, colorbar=_colorbar("cosine"))
    if n * n <= MAX_CELL_HOVER:
        esc = _escape_all(labels)
        heat["text"] = [[f"{esc[i]} ({i}) · {esc[j]} ({j})" for j in range(n)] for i in range(n)]
        heat["hovertemplate"] = "%{text}<br>cosine %{z:.3f}<extra></extra>"
    else:
        heat["hovertemplate"] = "%{y} · %{x}<br>cosine %{z:.3f}<extra></extra>"
    layout = dict(xaxis=_token_axis(labels, axis_title, tickangle=-90), yaxis=_token_axis(labels, axis_title))
    layout["yaxis"]["range"] = [n - 0.5, -0.5]
    size = _square_size(n)
    return _figure([heat], layout, title, width=size + 130, height=size)


def position_similarity_figure(similarity: np.ndarray, *,
                               title: str = "Cosine similarity of learned position embeddings") -> go.Figure:
    """(N, N) similarity between the first N position embeddings. Up to 64 positions every one is labelled;
    beyond, plotly picks numeric ticks."""
    n = similarity.shape[0]
    if n <= 64:
        return similarity_heatmap(similarity, [str(p) for p in range(n)], title=title, axis_title="position")
    heat = dict(type="heatmap", z=_f32(similarity), colorscale=SIMILARITY_COLORSCALE, zmin=-1, zmax=1, zmid=0,
                colorbar=_colorbar("cosine"), hovertemplate="position %{y} · %{x}<br>cosine %{z:.3f}<extra></extra>")
    layout = dict(xaxis=dict(title=dict(text="position"), showgrid=False, zeroline=False, constrain="domain"),
                  yaxis=dict(title=dict(text="position"), autorange="reversed", showgrid=False, zeroline=False,
                             scaleanchor="x"))
    return _figure([heat], layout, title, width=860, height=780)


def position_path_figure(xy: np.ndarray, *, explained: Sequence[float] | None = None,
                         title: str = "Position embeddings, first two principal components") -> go.Figure:
    """The 2-D PCA path through consecutive position embeddings 0..N-1. xy: (N, 2); explained: the variance
    fraction of each component (shown on the axes)."""
    xy = np.asarray(xy)
    n = xy.shape[0]
    positions = np.arange(n)
    step = max(1, n // 16)
    labels = [str(p) if p % step == 0 or p == n - 1 else "" for p in positions]
    data = [dict(type="scatter", x=_f32(xy[:, 0]), y=_f32(xy[:, 1]), mode="lines+markers+text", text=labels,
                 textposition="top center", customdata=positions, line=dict(color="#bbbbbb", width=1),
                 marker=dict(size=7, color=positions, colorscale="Viridis", showscale=True,
                             colorbar=_colorbar("position")),
                 hovertemplate="position %{customdata}<br>(%{x:.2f}, %{y:.2f})<extra></extra>", showlegend=False)]
    ex = list(explained) if explained is not None else None
    layout = dict(xaxis=dict(title=dict(text="PC 1" + (f" ({ex[0]:.0%} of variance)" if ex else ""))),
                  yaxis=dict(title=dict(text="PC 2" + (f" ({ex[1]:.0%} of variance)" if ex else ""))))
    return _figure(data, layout, title, width=860, height=660)


# --------------------------------------------------------------------------------------------------------------
# Embeddings
# --------------------------------------------------------------------------------------------------------------
EMBEDDING_PARTS = (("token", "#1f77b4"), ("segment", "#ff7f0e"), ("position", "#2ca02c"))


def embedding_parts_figure(table: pd.DataFrame, *, title: str = "Embedding = token + segment + position, "
                           "then LayerNorm") -> go.Figure:
    """Per token: the norms of each part, of their sum and of the LayerNorm output (top), and each part's share of
    the sum (bottom; share = part·sum / |sum|², so the three shares add up to 1 and may be negative).

    table: one row per token with columns token, norm_token, norm_segment, norm_position, norm_sum,
    norm_layernorm, share_token, share_segment, share_position (as `analysis.embedding_table` makes it).
    """
    labels = list(table["token"])
    n = len(labels)
    esc = _escape_all(labels)
    x = np.arange(n)
    layout, ref = _grid(2, 1, vspace=0.1, titles=("vector norms", "share of the sum (part·sum / |sum|²)"))
    data = []
    for i, (name, color) in enumerate(list(EMBEDDING_PARTS) + [("sum", "#7f7f7f")]):
        data.append(dict(type="bar", x=x, y=_f32(table[f"norm_{name}"]), name=f"|{name}|", width=0.2,
                         offsetgroup=name,
                         offset=-0.4 + 0.2 * i, marker=dict(color=color), text=esc, textposition="none",
                         legendgroup="norm", legendgrouptitle=dict(text="norm"),
                         hovertemplate=f"%{{text}} (%{{x}}): |{name}| = %{{y:.3f}}<extra></extra>"))
    # the LayerNorm output lives on another scale (about sqrt(H) times the gain): its own axis, on the right
    data.append(dict(type="scatter", x=x, y=_f32(table["norm_layernorm"]), name="|LayerNorm output|",
                     yaxis="y3", mode="markers", marker=dict(color="#9467bd", symbol="diamond", size=8), text=esc,
                     legendgroup="norm", hovertemplate="%{text} (%{x}): |LayerNorm| = %{y:.2f}<extra></extra>"))
    x2, y2 = ref(2, 1)
    for name, color in EMBEDDING_PARTS:
        data.append(dict(type="bar", x=x, y=_f32(table[f"share_{name}"]), name=f"{name} share", xaxis=x2, yaxis=y2,
                         width=0.8, offset=-0.4, offsetgroup="share", marker=dict(color=color), text=esc,
                         textposition="none",
                         legendgroup="share", legendgrouptitle=dict(text="share of the sum"),
                         hovertemplate=f"%{{text}} (%{{x}}): {name} share %{{y:.1%}}<extra></extra>"))
    # relative mode stacks the three shares (negatives below zero); the norms sit side by side by their offsets
    layout.update(barmode="relative", legend=dict(x=1.08, xanchor="left"))
    layout["xaxis"].update(_token_axis(labels, showticklabels=False), matches=x2)
    layout["xaxis" + x2[1:]].update(_token_axis(labels, tickangle=-90))
    layout["yaxis"].update(title=dict(text="L2 norm of the parts"))
    layout["yaxis3"] = dict(overlaying="y", side="right", anchor="x", showgrid=False, rangemode="tozero",
                            title=dict(text="LayerNorm output", font=dict(color="#9467bd")),
                            tickfont=dict(color="#9467bd"))
    layout["yaxis" + y2[1:]].update(title=dict(text="share"), tickformat=".0%")
    return _figure(data, layout, title, width=max(950, 200 + 22 * n), height=780)


def segment_comparison_figure(vectors: Mapping[str, np.ndarray], *, cosine: float | None = None,
                              title: str = "Segment embeddings: sentence A vs sentence B") -> go.Figure:
    """The segment embedding vectors as strips over the hidden dimensions (and their difference when given).
    vectors: name -> (H,), e.g. {"A": ..., "B": ..., "B − A": ...}; cosine: cos(A, B) for the subtitle."""
    names = list(vectors)
    z = np.stack([np.asarray(vectors[k]) for k in names])  # (S, H)
    span = float(max(np.abs(z).max(), 1e-6))
    norms = ", ".join(f"|{escape_label(k)}| = {np.linalg.norm(vectors[k]):.2f}" for k in names)
    sub = norms + (f", cos(A, B) = {cosine:.3f}" if cosine is not None else "")
    heat = dict(type="heatmap", z=_f32(z), x=np.arange(z.shape[1]), y=np.arange(len(names)),
                colorscale=SIMILARITY_COLORSCALE, zmid=0, zmin=-span, zmax=span, colorbar=_colorbar("value"),
                hovertemplate="dimension %{x}: %{z:.3f}<extra></extra>")
    layout = dict(yaxis=dict(tickmode="array", tickvals=list(range(len(names))), showgrid=False, zeroline=False,
                             ticktext=[escape_label(k) for k in names], range=[len(names) - 0.5, -0.5]),
                  xaxis=dict(title=dict(text="hidden dimension"), showgrid=False, zeroline=False))
    return _figure([heat], layout, f"{title}<br><sup>{sub}</sup>", width=1000, height=230 + 70 * len(names))


# --------------------------------------------------------------------------------------------------------------
# Hidden states
# --------------------------------------------------------------------------------------------------------------
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
                             range=[n_rows - 0.5, -0.5], showgrid=False, zeroline=False))
    return _figure([heat], layout, title, width=max(820, 220 + 16 * n), height=max(400, 220 + 36 * n_rows))


def hidden_norms_figure(norms: np.ndarray, labels: Sequence[str], *,
                        title: str = "Norm of each token's hidden state, layer by layer") -> go.Figure:
    """norms: (L + 1, T), row 0 the embedding output."""
    rows = ["embeddings"] + [f"layer {l}" for l in range(1, norms.shape[0])]
    return _layers_by_tokens(norms, labels, rows, title=title, colorscale="Viridis", colorbar="L2 norm",
                             zmin=0, value_name="norm")


def layer_similarity_figure(similarity: np.ndarray, labels: Sequence[str], *,
                            title: str = "How much each layer turns a token (cosine before vs after the layer)"
                            ) -> go.Figure:
    """similarity: (L, T), row l = cosine between the token's vector before and after layer l + 1 (row 0:
    embeddings -> layer 1)."""
    rows = ["emb → 1"] + [f"{l} → {l + 1}" for l in range(1, similarity.shape[0])]
    return _layers_by_tokens(similarity, labels, rows, title=title, colorscale=SIMILARITY_COLORSCALE,
                             colorbar="cosine", zmin=-1, zmax=1, value_name="cosine")


def hidden_projection_figure(xy: np.ndarray, labels: Sequence[str], *, explained: Sequence[float] | None = None,
                             title: str = "Tokens through the layers (2-D PCA of unit-length hidden states)"
                             ) -> go.Figure:
    """xy: (L + 1, T, 2), one 2-D point per layer and token in a projection shared by all layers. Each token is a
    grey path from its embedding to its last layer, points coloured by layer, the token written at its last
    point."""
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
    text = [f"{esc[t]} ({t}), {'embeddings' if l == 0 else f'layer {l}'}" for l, t in zip(layer_of, token_of)]
    data = [dict(type="scatter", x=_f32(path[:, 0]), y=_f32(path[:, 1]), mode="lines", hoverinfo="skip",
                 line=dict(color="rgba(120,120,120,0.35)", width=1), showlegend=False),
            dict(type="scatter", x=_f32(flat[:, 0]), y=_f32(flat[:, 1]), mode="markers", text=text,
                 hovertemplate="%{text}<extra></extra>", showlegend=False,
                 marker=dict(size=7, color=layer_of, colorscale="Viridis", cmin=0, cmax=max(n_layers - 1, 1),
                             colorbar=_colorbar("layer"))),
            dict(type="scatter", x=_f32(xy[-1, :, 0]), y=_f32(xy[-1, :, 1]), mode="text", text=esc,
                 textposition="top center", textfont=dict(size=_tick_font_size(n) + 1), hoverinfo="skip",
                 showlegend=False)]
    ex = list(explained) if explained is not None else None
    layout = dict(xaxis=dict(title=dict(text="PC 1" + (f" ({ex[0]:.0%} of variance)" if ex else ""))),
                  yaxis=dict(title=dict(text="PC 2" + (f" ({ex[1]:.0%} of variance)" if ex else ""))))
    return _figure(data, layout, title, width=920, height=740)
