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
    "attention_heatmap", "corruption_figure", "embedding_parts_figure", "escape_label", "fill_mask_figure",
    "head_map_figure", "head_overview_figure", "logit_lens_figure", "masked_token_figure",
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


# Token-by-token heatmaps: the plot area grows with the token count, from MIN_PLOT px (a short sentence) to
# MAX_PLOT px (which 48+ tokens reach), and every row gets at least its font size plus a few pixels; past the cap
# the font shrinks, and when even the smallest font does not fit (beyond ~64 tokens) only every k-th token is
# labelled (hover and the spike lines still name every cell).
MIN_PLOT, MAX_PLOT = 260, 840
MIN_TICK_FONT = 9
TICK_PADDING = 3  # pixels between two labels


def _heatmap_font(n: int) -> int:
    return 14 if n <= 16 else 13 if n <= 24 else 12 if n <= 36 else 11 if n <= 48 else 10 if n <= 64 else 9


def _plot_size(n: int) -> int:
    """Pixel height (and width) of the plot area of an n-token heatmap: each row gets its font plus 8 px."""
    return int(min(MAX_PLOT, max(MIN_PLOT, n * (_heatmap_font(n) + 8))))


def _tick_stride(n: int, plot: int, font: int) -> int:
    """Label every k-th token so that labels are at least font + TICK_PADDING pixels apart."""
    return max(1, int(np.ceil((font + TICK_PADDING) / (plot / max(n, 1)))))


def _label_margin(labels: Sequence[str], font: int) -> int:
    """Pixels a column of tick labels needs (about 0.6 em per character), bounded so a long token cannot eat
    the plot."""
    longest = max((len(str(t)) for t in labels), default=1)
    return int(min(160, max(40, 0.62 * font * longest + 24)))


def _sized_token_axes(row_labels: Sequence[str], col_labels: Sequence[str], row_title: str | None,
                      col_title: str | None, **extra) -> tuple[dict, dict, int, int]:
    """Axes and figure size for a rows x columns token heatmap that stays square-ish and readable from 5 to 128+
    tokens: returns (xaxis, yaxis, width, height)."""
    n_rows, n_cols = len(row_labels), len(col_labels)
    n = max(n_rows, n_cols)
    font = _heatmap_font(n)
    plot = _plot_size(n)
    cell = plot / max(n, 1)  # the same pixels per token on both axes: square cells

    def axis(labels, title):
        count = len(labels)
        stride = _tick_stride(count, plot, font)
        shown = list(range(0, count, stride))
        ax = dict(tickmode="array", tickvals=shown, ticktext=[escape_label(labels[i]) for i in shown],
                  tickfont=dict(size=font), range=[-0.5, count - 0.5], showgrid=False, zeroline=False)
        if title:
            ax["title"] = dict(text=title + (f" (one label in {stride})" if stride > 1 else ""))
        ax.update(extra)
        return ax

    xaxis, yaxis = axis(col_labels, col_title), axis(row_labels, row_title)
    xaxis["tickangle"] = -90
    yaxis["range"] = [n_rows - 0.5, -0.5]  # first token at the top, as text reads
    left = _label_margin(row_labels, font) + 30
    bottom = _label_margin(col_labels, font) + 30
    width = int(left + cell * n_cols + 150)  # 150: colour bar and right margin
    height = int(90 + cell * n_rows + bottom)  # 90: title
    margin = dict(l=left, r=30, t=80, b=bottom)
    return dict(xaxis, _margin=margin), yaxis, max(width, 520), max(height, 360)


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
    xaxis, yaxis, width, height = _sized_token_axes(row_labels, col_labels, "attending (query)",
                                                    "attended to (key)", **spikes)
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
# colour-bar ticks for the sqrt scale: the weights people read, placed where their square roots fall
_SQRT_TICKS = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0)


def head_overview_figure(attentions: np.ndarray, head_summaries: Sequence[Sequence[str]] | None = None, *,
                         title: str = "Every head at a glance", max_tile: int = 128,
                         scale: str = "sqrt", levels: int | None = None) -> go.Figure:
    """Every layer x head attention matrix as ONE tiled image (rows = layers, columns = heads), plus one invisible
    marker per tile whose hover text is that head's summary. Light however many heads: the image is an 8-bit
    palette PNG and the figure has two traces.

    attentions: (L, h, T, T) in [0, 1]; head_summaries: (L, h) strings for the hover (escaped here), or None.
    max_tile: tiles larger than this many pixels are max-pooled down to it.
    scale: how weights map to colour. Most weights of a T-token row are near 1/T, so a linear scale leaves
    everything but the sharpest heads pale. "sqrt" (default): colour = sqrt(weight), the same scale for every
    head, so heads stay comparable; "head_max": colour = weight / that head's largest weight, so each tile shows
    its own pattern at full contrast (but a diffuse head looks as strong as a sharp one); "linear": the weight.
    The subtitle and colour bar say which.
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
    if scale == "sqrt":
        pooled = np.sqrt(np.clip(pooled, 0.0, 1.0))
        colorbar = _colorbar("weight (sqrt scale)", tickvals=[float(np.sqrt(v)) for v in _SQRT_TICKS],
                             ticktext=[f"{v:g}" for v in _SQRT_TICKS])
        how = "colour = √weight (pale cells are small, not zero)"
    elif scale == "head_max":
        peak = pooled.max(axis=(2, 3), keepdims=True)  # (L, h, 1, 1)
        pooled = pooled / np.maximum(peak, 1e-12)
        colorbar = _colorbar("weight / head max")
        how = "colour = weight / that head's max (heads not comparable)"
    else:
        colorbar = _colorbar("weight")
        how = "colour = weight"
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
    xaxis, yaxis, width, height = _sized_token_axes(labels, labels, axis_title, axis_title)
    layout = dict(xaxis=xaxis, yaxis=yaxis, margin=xaxis.pop("_margin"))
    return _figure([heat], layout, title, width=width, height=height)


def position_similarity_figure(similarity: np.ndarray, *,
                               title: str = "Cosine similarity of learned position embeddings") -> go.Figure:
    """(N, N) similarity between the first N position embeddings, positions 0 .. N-1. Up to 64 positions every one
    is labelled; beyond, plotly picks numeric ticks on axes that span exactly 0 .. N-1."""
    similarity = np.asarray(similarity)
    if similarity.ndim != 2 or similarity.shape[0] != similarity.shape[1]:
        raise ValueError(f"similarity must be a square (N, N) matrix, got shape {similarity.shape}")
    n = similarity.shape[0]
    if n <= 64:
        return similarity_heatmap(similarity, [str(p) for p in range(n)], title=title, axis_title="position")
    heat = dict(type="heatmap", z=_f32(similarity), x=np.arange(n), y=np.arange(n), colorscale=SIMILARITY_COLORSCALE,
                zmin=-1, zmax=1, zmid=0, colorbar=_colorbar("cosine"),
                hovertemplate="position %{y} · %{x}<br>cosine %{z:.3f}<extra></extra>")
    layout = dict(xaxis=dict(title=dict(text=f"position (0–{n - 1})"), showgrid=False, zeroline=False,
                             range=[-0.5, n - 0.5], constrain="domain"),
                  yaxis=dict(title=dict(text=f"position (0–{n - 1})"), range=[n - 0.5, -0.5], showgrid=False,
                             zeroline=False, scaleanchor="x", constrain="domain"))
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
                 textposition="top center", customdata=positions, line=dict(color="rgba(150,150,150,0.5)",
                                                                            width=1),
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


# --------------------------------------------------------------------------------------------------------------
# Masked language model
# --------------------------------------------------------------------------------------------------------------
PREDICTION_COLOR = "#6baed6"
ORIGINAL_COLOR = "#e6550d"  # the token that was really there: one warm colour against the blue bars


def _percent(p: float) -> str:
    return f"{p:.1%}" if p >= 0.001 else "<0.1%"


def _check_predictions(predictions: Sequence[tuple[str, float]], what: str) -> list[tuple[str, float]]:
    rows = [(str(t), float(p)) for t, p in predictions]
    if not rows:
        raise ValueError(f"{what} has no predictions; ask for top_k >= 1")
    return rows


def fill_mask_figure(predictions: Sequence[Sequence[tuple[str, float]]], labels: Sequence[str] | None = None, *,
                     title: str = "What the model puts in each [MASK]") -> go.Figure:
    """One horizontal bar chart per [MASK], best guess on top, probability on a shared 0..100 % axis.

    predictions: per mask, the top-k (token, probability) best first (as `masked_lm.fill_mask` returns them);
    labels: a panel title per mask (default "[MASK] 1", "[MASK] 2", ...; escaped here)."""
    if not predictions:
        raise ValueError("there is no [MASK] to show; write [MASK] where the model should guess a word")
    panels = [_check_predictions(p, f"[MASK] {i + 1}") for i, p in enumerate(predictions)]
    n = len(panels)
    if labels is not None and len(labels) != n:
        raise ValueError(f"{len(labels)} labels for {n} masks")
    titles = _escape_all(labels) if labels is not None else [f"[MASK] {i + 1}" for i in range(n)]
    cols = min(n, 3)  # side by side while the token names still fit; more masks wrap onto further rows
    rows = -(-n // cols)
    k = max(len(p) for p in panels)
    layout, ref = _grid(rows, cols, hspace=0.16 if cols > 1 else 0.0, vspace=0.12 if rows > 1 else 0.0,
                        titles=titles + [""] * (rows * cols - n))
    data = []
    for i, panel in enumerate(panels):
        x, y = ref(i // cols + 1, i % cols + 1)
        tokens = _escape_all([t for t, _ in panel])
        probs = _f32([p for _, p in panel])
        data.append(dict(type="bar", orientation="h", x=probs, y=np.arange(len(panel)), xaxis=x, yaxis=y,
                         text=[_percent(p) for p in probs], textposition="outside", cliponaxis=False,
                         customdata=tokens, marker=dict(color=PREDICTION_COLOR), showlegend=False,
                         hovertemplate="%{customdata}: %{x:.2%}<extra></extra>"))
        layout["xaxis" + x[1:]].update(range=[0, 1.18], tickformat=".0%", tickvals=[0, 0.25, 0.5, 0.75, 1],
                                       showgrid=True, zeroline=False,
                                       title=dict(text="probability") if i // cols + 1 == rows else None)
        layout["yaxis" + y[1:]].update(tickmode="array", tickvals=list(range(len(panel))), ticktext=tokens,
                                       range=[k - 0.5, -0.5], showgrid=False, zeroline=False)
    for c in range(n, rows * cols):  # empty cells of the last row
        x, y = ref(c // cols + 1, c % cols + 1)
        layout["xaxis" + x[1:]].update(visible=False)
        layout["yaxis" + y[1:]].update(visible=False)
    layout["bargap"] = 0.25
    width = 1100 if cols == 3 else 820 if cols == 2 else 620
    height = 130 + rows * (60 + 28 * k)
    return _figure(data, layout, title, width=width, height=max(320, height))


def masked_token_figure(original: str, predictions: Sequence[tuple[str, float]], original_probability: float,
                        original_rank: int, *, index: int | None = None, title: str | None = None) -> go.Figure:
    """The predictions at one position after replacing its token by [MASK], best on top. The token that was there
    is drawn in orange; when it is outside the top k, it gets its own bar below a gap, labelled with its rank.

    original: the token that was there; predictions: top-k (token, probability) best first;
    original_probability, original_rank (1 = best): how the model rates the original; index: its position."""
    rows = _check_predictions(predictions, "the masked position")
    if not isinstance(original_rank, (int, np.integer)) or original_rank < 1:
        raise ValueError(f"original_rank must be a positive integer (1 = best), got {original_rank!r}")
    k = len(rows)
    tokens = _escape_all([t for t, _ in rows])
    probs = [p for _, p in rows]
    colors = [PREDICTION_COLOR] * k
    names = list(tokens)
    y = list(range(k))
    esc_original = escape_label(original)
    if original_rank <= k:
        colors[original_rank - 1] = ORIGINAL_COLOR
        names[original_rank - 1] = f"<b>{tokens[original_rank - 1]}</b>"
    else:  # one empty row as a gap says "many tokens in between"
        probs.append(float(original_probability))
        colors.append(ORIGINAL_COLOR)
        names.append(f"<b>{esc_original}</b> (#{original_rank})")
        y.append(k + 1)
    p = _f32(probs)
    data = [dict(type="bar", orientation="h", x=p, y=y, marker=dict(color=colors), text=[_percent(v) for v in p],
                 textposition="outside", cliponaxis=False, customdata=names, showlegend=False,
                 hovertemplate="%{customdata}: %{x:.2%}<extra></extra>"),
            # legend entries only (no data): the colours explain themselves
            dict(type="bar", x=[None], y=[None], orientation="h", name="prediction",
                 marker=dict(color=PREDICTION_COLOR)),
            dict(type="bar", x=[None], y=[None], orientation="h", name=f"original: {esc_original}",
                 marker=dict(color=ORIGINAL_COLOR))]
    n_rows = y[-1] + 1
    layout = dict(xaxis=dict(range=[0, 1.15], tickformat=".0%", title=dict(text="probability"), zeroline=False),
                  yaxis=dict(tickmode="array", tickvals=y, ticktext=names, range=[n_rows - 0.5, -0.5],
                             showgrid=False, zeroline=False),
                  legend=dict(orientation="h", x=0, y=-0.16, xanchor="left", yanchor="top"), bargap=0.25,
                  margin=dict(l=130, r=30, t=90, b=110))
    where = f" ({index})" if index is not None else ""
    sub = (f"the original <b>{esc_original}</b> gets {original_probability:.2%}, rank {original_rank}")
    head = title or f"Masking {esc_original}{where}: what the model predicts there"
    return _figure(data, layout, f"{head}<br><sup>{sub}</sup>", width=760,
                   height=max(340, 200 + 30 * n_rows))


def logit_lens_figure(layers: Sequence[Sequence[tuple[str, float]]], final_token: str,
                      final_token_probability: Sequence[float], position_label: str, *,
                      title: str | None = None) -> go.Figure:
    """How the answer forms through the network: the masked-LM head read out of every layer's hidden state.

    Left, a table with one row per layer (embeddings at the top, the last layer at the bottom) and one column per
    rank: each cell is a top-k token, coloured by its probability, the final answer in bold. Right, the
    probability each layer gives the final answer.

    layers: L + 1 lists of top-k (token, probability) best first (row 0 = the embedding output);
    final_token: the last layer's best token; final_token_probability: L + 1 values;
    position_label: the position read, e.g. "[MASK] (5)" (escaped here)."""
    if not layers:
        raise ValueError("the logit lens has no layers")
    if len(final_token_probability) != len(layers):
        raise ValueError(f"{len(final_token_probability)} final-token probabilities for {len(layers)} layers")
    n = len(layers)
    k = max(len(row) for row in layers)
    if k == 0:
        raise ValueError("the logit lens has no predictions; ask for top_k >= 1")
    z = np.full((n, k), np.nan, dtype=np.float32)
    text = [[""] * k for _ in range(n)]
    raw = [[""] * k for _ in range(n)]
    for l, row in enumerate(layers):
        for r, (token, p) in enumerate(row):
            z[l, r] = p
            raw[l][r] = escape_label(token)
            text[l][r] = f"<b>{raw[l][r]}</b>" if token == final_token else raw[l][r]
    names = ["embeddings"] + [f"layer {l}" for l in range(1, n)]
    layout, ref = _grid(1, 2, col_widths=[0.74, 0.26], hspace=0.04,
                        titles=("top predictions per layer (colour = probability)",
                                f"P({escape_label(final_token)}) by layer"))
    (x1, y1), (x2, y2) = ref(1, 1), ref(1, 2)
    data = [dict(type="heatmap", z=_f32(z), x=np.arange(k), y=np.arange(n), xaxis=x1, yaxis=y1, text=text,
                 customdata=raw, texttemplate="%{text}", textfont=dict(size=13 if k <= 6 else 11),
                 colorscale=ATTENTION_COLORSCALE, zmin=0, zmax=1, xgap=2, ygap=2,
                 colorbar=_colorbar("probability", tickformat=".0%"),
                 hovertemplate="%{customdata}: %{z:.2%}<extra></extra>"),
            dict(type="scatter", x=_f32(final_token_probability), y=np.arange(n), xaxis=x2, yaxis=y2,
                 mode="lines+markers", line=dict(color=ORIGINAL_COLOR, width=2), marker=dict(size=8),
                 customdata=names, showlegend=False,
                 hovertemplate="%{customdata}: %{x:.2%}<extra></extra>")]
    layout["xaxis"].update(tickmode="array", tickvals=list(range(k)), ticktext=[f"#{r + 1}" for r in range(k)],
                           title=dict(text="rank"), showgrid=False, zeroline=False)
    layout["yaxis"].update(tickmode="array", tickvals=list(range(n)), ticktext=names, range=[n - 0.5, -0.5],
                           showgrid=False, zeroline=False)
    layout["xaxis" + x2[1:]].update(range=[0, 1.02], tickformat=".0%", zeroline=False,
                                    title=dict(text="probability"))
    layout["yaxis" + y2[1:]].update(matches=y1, showticklabels=False, showgrid=True, zeroline=False)
    layout["margin"] = dict(l=110, r=30, t=110, b=70)
    head = title or (f"Logit lens at {escape_label(position_label)}: the final answer is "
                     f"<b>{escape_label(final_token)}</b>")
    return _figure(data, layout, head, width=max(900, 380 + 110 * k), height=max(380, 190 + 34 * n))


CORRUPTION_KINDS = (("", "not chosen", "#f0f0f0"), ("mask", "→ [MASK] (80 %)", "#fdae6b"),
                    ("random", "→ random token (10 %)", "#c994c7"), ("kept", "kept as is (10 %)", "#a1d99b"))


def corruption_figure(tokens: Sequence[str], input_tokens: Sequence[str], labels_tokens: Sequence[str],
                      kinds: Sequence[str], *, per_line: int = 16,
                      title: str = "What pretraining sees: one example corrupted by the 80/10/10 rule"
                      ) -> go.Figure:
    """The clean tokens, what the model reads, and what it must predict, as a table of three rows (wrapped every
    `per_line` tokens), each chosen token coloured by what happened to it.

    tokens, input_tokens: the clean and corrupted tokens; labels_tokens: the token to predict, '' where there is
    none; kinds: '' (not chosen), 'mask', 'random' or 'kept' (as `masked_lm.CorruptedExample` has them)."""
    n = len(tokens)
    if not (len(input_tokens) == len(labels_tokens) == len(kinds) == n):
        raise ValueError(f"tokens ({n}), input_tokens ({len(input_tokens)}), labels_tokens ({len(labels_tokens)}) "
                         f"and kinds ({len(kinds)}) must have one entry per token")
    if n == 0:
        raise ValueError("there are no tokens to show")
    codes = {kind: i for i, (kind, _, _) in enumerate(CORRUPTION_KINDS)}
    unknown = sorted({k for k in kinds if k not in codes})
    if unknown:
        raise ValueError(f"unknown kinds {unknown}; expected '', 'mask', 'random' or 'kept'")
    if per_line < 1:
        raise ValueError(f"per_line must be at least 1, got {per_line}")
    width_tokens = min(n, per_line)
    lines = -(-n // width_tokens)
    stride = 4  # three rows per line of tokens, then an empty row as a gap
    n_rows = lines * stride - 1
    z = np.full((n_rows, width_tokens), np.nan, dtype=np.float32)
    text = [[""] * width_tokens for _ in range(n_rows)]
    hover = [[""] * width_tokens for _ in range(n_rows)]
    kind_name = {kind: name for kind, name, _ in CORRUPTION_KINDS}
    for i in range(n):
        line, col = divmod(i, width_tokens)
        code = codes[kinds[i]]
        for r, value in enumerate((tokens[i], input_tokens[i], labels_tokens[i])):
            row = line * stride + r
            z[row, col] = code if (r != 2 or kinds[i]) else np.nan  # no label: an empty cell
            text[row][col] = escape_label(value)
            hover[row][col] = f"token {i}: {escape_label(tokens[i])} — {kind_name[kinds[i]]}"
    steps = len(CORRUPTION_KINDS)
    colorscale = []
    for i, (_, _, color) in enumerate(CORRUPTION_KINDS):  # a stepped scale: one flat colour per kind code
        colorscale += [[i / steps, color], [(i + 1) / steps, color]]
    data = [dict(type="heatmap", z=z, x=np.arange(width_tokens), y=np.arange(n_rows), text=text, customdata=hover,
                 texttemplate="%{text}", textfont=dict(size=13), colorscale=colorscale, zmin=-0.5,
                 zmax=steps - 0.5, showscale=False, xgap=3, ygap=3, hoverongaps=False,
                 hovertemplate="%{customdata}<extra></extra>")]
    for kind, name, color in CORRUPTION_KINDS:  # legend entries only
        data.append(dict(type="scatter", x=[None], y=[None], mode="markers", name=name,
                         marker=dict(symbol="square", size=14, color=color, line=dict(color="#999", width=1))))
    row_names = ["original", "model input", "label"]
    tickvals = [line * stride + r for line in range(lines) for r in range(3)]
    layout = dict(xaxis=dict(visible=False, range=[-0.5, width_tokens - 0.5]),
                  yaxis=dict(tickmode="array", tickvals=tickvals, ticktext=row_names * lines,
                             range=[n_rows - 0.5, -0.5], showgrid=False, zeroline=False),
                  legend=dict(orientation="h", x=0, y=1.0, xanchor="left", yanchor="bottom"),
                  plot_bgcolor="white", margin=dict(l=110, r=20, t=110, b=20))
    chosen = sum(1 for k in kinds if k)
    sub = f"{chosen} of {n} tokens chosen; the loss is computed only where there is a label"
    return _figure(data, layout, f"{title}<br><sup>{sub}</sup>", width=max(600, 150 + 75 * width_tokens),
                   height=170 + 31 * n_rows)
