"""What every figure builder shares: color scales, escaping, token axes sized to the token count, subplot grids
without make_subplots, and offline HTML.

Conventions shared by every builder:
- Tokens are text, never markup: every label goes through `escape_label`, because plotly renders a subset of HTML
  (`<b>`, `<br>`, `<a>`, entities) inside tick text and hover labels.
- Token axes are numeric (one unit per token) with the token text as tick labels, so a token that occurs twice
  keeps its own row and column (plotly would merge equal category labels into one).
- Values are float32 rounded to 4 decimals; plotly sends numpy arrays as base64 typed arrays, so payloads stay
  small.
- Figures are assembled as plain dicts and wrapped without plotly's per-property validation, which is slow
  (docs/ARCHITECTURE.md, "Measured"); tests/test_figures.py validates every builder's output instead.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import sequential

from ..i18n import Translator, english

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
    return {"title": dict(text=title), "thickness": 14, **extra}


@lru_cache(maxsize=1)
def _template() -> dict:
    return pio.templates["plotly_white"].to_plotly_json()


# A title line holds at most this many characters: a 390 px phone gives a figure a box of about 324 px, where the
# page draws titles at 13 px (app/tabs/base.py); a longer line ran off the figure ("...P(IsNext)/P(NotNex").
TITLE_LINE = 44
PHONE_BOX = 320  # the narrowest box the page fits a figure to (a 390 px phone's, less the page's padding)


def wrap_title(text: str, width: int = TITLE_LINE) -> str:
    """`text` broken at spaces into lines of at most `width` characters; a `<sup>` line (a subtitle) stays small on
    each of its lines."""
    lines = []
    for line in text.split("<br>"):
        sup = line.startswith("<sup>") and line.endswith("</sup>")
        body = line[5:-6] if sup else line
        for piece in textwrap.wrap(body, width, break_long_words=False, break_on_hyphens=False) or [""]:
            lines.append(f"<sup>{piece}</sup>" if sup else piece)
    return "<br>".join(lines)


def _figure(data: list[dict], layout: dict, title: str, width: int | None, height: int, *,
            phone_width: int | None = None) -> go.Figure:
    """phone_width: the narrowest the figure stays readable (its labels apart); below it, the page lets it scroll in
    its box instead of squeezing it (app/tabs/base.py). A figure given one has its title wrapped to fit a phone and
    a top margin as tall as its lines."""
    base = dict(title=dict(text=title, x=0.01, xanchor="left"), font=FONT, template=_template(), width=width,
                height=height, margin=dict(l=90, r=30, t=80, b=90))
    if phone_width is not None:
        # a figure without a width takes its box's and keeps its title's size (about 17 px): shorter lines
        text = wrap_title(title, TITLE_LINE if width else 30)
        base["title"]["text"] = text
        base["meta"] = dict(phone_width=int(phone_width))
        # plotly centres a title's lines in the top margin (anchored at the top or bottom, lines of two or more ran
        # off the figure or into the plot): 25 px a line, and 35 px above and below them, for the label gradio lays
        # over the box's corner and a first row's subplot title
        top = 70 + 25 * (text.count("<br>") + 1)
    base.update(layout)
    if phone_width is not None:
        base["margin"] = {**base["margin"], "t": max(base["margin"].get("t", 0), top)}
    return go.Figure(dict(data=data, layout=base), _validate=False)


def placed_labels(x, y, labels: Sequence[str], x_range: Sequence[float], y_range: Sequence[float],
                  plot: tuple[float, float], font: int) -> tuple[list[str], list[str]]:
    """(text, textposition) for scatter points, so that no two labels overlap on a plot area of `plot` (width,
    height) pixels, the smallest it is drawn at (a wider one only moves them apart): each label takes the first free
    place of above, below, right and left of its point, in the order given; one with no free place is left out (the
    point's hover still names it). For a trace of text alone (mode "text"): a marker moves its text away. Labels are
    counted at 0.62 em a character and 1.3 em high, reaching 4 px past their point (as Chromium draws them)."""
    sx = plot[0] / (x_range[1] - x_range[0])
    sy = plot[1] / (y_range[1] - y_range[0])
    taken: list[tuple[float, float, float, float]] = []
    texts, positions = [], []
    for xi, yi, label in zip(x, y, labels):
        label = str(label)
        texts.append("")
        positions.append("top center")
        if not label or not (np.isfinite(xi) and np.isfinite(yi)):
            continue
        px, py = (xi - x_range[0]) * sx, (y_range[1] - yi) * sy
        w, h, gap = 0.62 * font * len(label) + 4, 1.3 * font, -4
        places = (("top center", (px - w / 2, py - gap - h)), ("bottom center", (px - w / 2, py + gap)),
                  ("middle right", (px + gap, py - h / 2)), ("middle left", (px - gap - w, py - h / 2)))
        for where, (left, top) in places:
            box = (left, top, left + w, top + h)
            inside = box[0] >= 0 and box[1] >= 0 and box[2] <= plot[0] and box[3] <= plot[1]
            if inside and not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in taken):
                taken.append(box)
                texts[-1], positions[-1] = escape_label(label), where
                break
    return texts, positions


def padded_range(values, pad: float = 0.08) -> list[float]:
    """An axis range around `values` with `pad` of their span on each side (fixed, so that label places are known)."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    span = hi - lo if hi > lo else 1.0
    return [lo - pad * span, hi + pad * span]


def under_colorbar(ends: tuple[float, float], names: tuple[str, str]) -> dict:
    """A colour bar across the bottom of the figure, its two ends named (`names` at the values `ends`), without a
    title: beside the plot it took a fifth of a phone's width, and a title above it sat on the bar. Leave the figure's
    bottom margin 130 px for it, its names and the x axis."""
    return dict(orientation="h", x=0.5, xanchor="center", xref="container", len=0.6, y=0, yref="container",
                yanchor="bottom", ypad=8, thickness=10, outlinewidth=0, tickvals=list(ends), ticktext=list(names))


def _grid(rows: int, cols: int, *, row_heights: Sequence[float] | None = None,
          col_widths: Sequence[float] | None = None, hspace: float = 0.05, vspace: float = 0.08,
          titles: Sequence[str] | None = None) -> tuple[dict, Callable[[int, int], tuple[str, str]]]:
    """Subplot axes without make_subplots (slow: docs/ARCHITECTURE.md, "Measured"). Returns the layout entries (axes with domains and
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


# Token-by-token heatmaps: the plot area grows with the token count, from MIN_PLOT px (a short sentence) to
# MAX_PLOT px (which 48+ tokens reach), and every row gets at least its font size plus a few pixels; past the cap
# the font shrinks, and when even the smallest font does not fit (beyond ~64 tokens) only every k-th token is
# labeled (hover and the spike lines still name every cell).
MIN_PLOT, MAX_PLOT = 260, 840
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
    width = int(left + cell * n_cols + 150)  # 150: color bar and right margin
    height = int(90 + cell * n_rows + bottom)  # 90: title
    margin = dict(l=left, r=30, t=80, b=bottom)
    return dict(xaxis, _margin=margin), yaxis, max(width, 520), max(height, 360)


def _heads_grid(values: np.ndarray, *, hover: str, colorbar: str, zmid: float | None, colorscale,
                title: str, zmin: float | None = None, zmax: float | None = None,
                layer_labels: Sequence[str] | None = None, tr: Translator = english) -> go.Figure:
    """A layers x heads heatmap, layer 0 at the top, every cell hoverable; layer_labels name the rows (default
    "layer l")."""
    n_layers, n_heads = values.shape
    labels = list(layer_labels) if layer_labels is not None else [tr("layer {n}", n=l) for l in range(n_layers)]
    heat = dict(type="heatmap", z=_f32(values), x=np.arange(n_heads), y=np.arange(n_layers), colorscale=colorscale,
                zmid=zmid, zmin=zmin, zmax=zmax, xgap=2, ygap=2,
                # under the grid, across it: beside it, its title took a third of a phone's width from the heads
                colorbar={**_colorbar(colorbar, orientation="h", x=0.5, xanchor="center", y=-0.24, yanchor="top",
                                      len=1, thickness=10), "title": dict(text=colorbar, side="top")},
                customdata=[[label] * n_heads for label in labels],
                hovertemplate="%{customdata}, " + tr("head") + " %{x}: " + hover + "<extra></extra>")
    layout = dict(xaxis=dict(tickmode="array", tickvals=list(range(n_heads)), title=dict(text=tr("head")),
                             showgrid=False, zeroline=False),
                  yaxis=dict(tickmode="array", tickvals=list(range(n_layers)), range=[n_layers - 0.5, -0.5],
                             ticktext=labels, showgrid=False, zeroline=False))
    # No width: the grid takes its box's (gradio's plots are responsive), so 12 heads and the colour bar fit beside
    # Compare's table at 1280 px and alone on a 390 px phone (at a fixed 626 px a phone showed 8 heads, no colour bar)
    layout["margin"] = dict(l=70 if layer_labels is None else 130, r=10, t=80, b=120)
    return _figure([heat], layout, title, width=None, height=max(400, 230 + 42 * n_layers), phone_width=PHONE_BOX)


def pca_axes(explained: Sequence[float] | None = None, tr: Translator = english) -> dict:
    """The x and y axes of a 2-D PCA picture, each titled with the share of variance its component explains."""
    ex = list(explained) if explained is not None else None

    def title(n: int) -> dict:
        return dict(text=tr("PC {n} ({share} of variance)", n=n + 1, share=f"{ex[n]:.0%}") if ex else f"PC {n + 1}")

    return dict(xaxis=dict(title=title(0)), yaxis=dict(title=title(1)))


def save_html(fig: go.Figure, path: str | Path) -> Path:
    """Write `fig` as one self-contained HTML file (plotly.js inlined, no CDN, no MathJax): it opens offline."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.write_html(str(path), include_plotlyjs=True, include_mathjax=False, full_html=True)
    return path


def percent(p: float) -> str:
    return f"{p:.1%}" if p >= 0.001 else "<0.1%"


def cosine_colors(similarity: np.ndarray, tr: Translator = english) -> dict:
    """Heatmap color settings that show a cosine matrix's contrast: the range of its off-diagonal values (the
    diagonal is always 1), on a diverging scale centered at 0 when they have both signs, else a sequential one.
    Hidden states late in BERT all point roughly the same way (cosines of 0.4 to 0.9): on a fixed [-1, 1] scale
    such a map is one flat color."""
    n = similarity.shape[0]
    off = similarity[~np.eye(n, dtype=bool)] if n > 1 else similarity.ravel()
    lo, hi = (float(off.min()), float(off.max())) if off.size else (-1.0, 1.0)
    if hi - lo < 1e-6:
        lo, hi = lo - 0.05, hi + 0.05
    # its range is this map's own: the tabs say so in words (a long title ran off a phone)
    bar = _colorbar(tr("cosine"))
    if lo < 0 < hi:
        return dict(colorscale=SIMILARITY_COLORSCALE, zmin=lo, zmax=hi, zmid=0, colorbar=bar)
    return dict(colorscale="Reds" if lo >= 0 else "Blues_r", zmin=lo, zmax=hi, colorbar=bar)


def similarity_heatmap(similarity: np.ndarray, labels: Sequence[str], *, title: str | None = None,
                       axis_title: str | None = None, tr: Translator = english) -> go.Figure:
    """A symmetric (N, N) cosine-similarity matrix, colored over its own range (`cosine_colors`)."""
    similarity = np.asarray(similarity)
    n = len(labels)
    if similarity.shape != (n, n):
        raise ValueError(f"similarity {similarity.shape} does not match {n} labels")
    title, axis_title = title or tr("Cosine similarity"), axis_title or tr("token")
    heat = dict(type="heatmap", z=_f32(similarity), x=np.arange(n), y=np.arange(n), **cosine_colors(similarity, tr))
    cosine = tr("cosine")
    if n * n <= MAX_CELL_HOVER:
        esc = _escape_all(labels)
        heat["text"] = [[f"{esc[i]} ({i}) · {esc[j]} ({j})" for j in range(n)] for i in range(n)]
        heat["hovertemplate"] = "%{text}<br>" + cosine + " %{z:.3f}<extra></extra>"
    else:
        heat["hovertemplate"] = "%{y} · %{x}<br>" + cosine + " %{z:.3f}<extra></extra>"
    xaxis, yaxis, width, height = _sized_token_axes(labels, labels, axis_title, axis_title)
    layout = dict(xaxis=xaxis, yaxis=yaxis, margin=xaxis.pop("_margin"))
    # on a phone, each shown label keeps its font and a few pixels (rotated, they overlapped at 324 px)
    phone = layout["margin"]["l"] + len(xaxis["tickvals"]) * (xaxis["tickfont"]["size"] + 5) + 110
    return _figure([heat], layout, title, width=width, height=height, phone_width=phone)
