"""Figures beyond raw attention: what a prediction depends on (integrated gradients and blank-out as colored
tokens), how well attention-based scores agree with that (the faithfulness chart), each head's effect on the
prediction when silenced (compare.py draws how much each head changed between two inputs or two models)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ._base import PHONE_BOX, _colorbar, _escape_all, _f32, _figure, _heads_grid, escape_label

# One colour meaning across the tab: blue where a word or a head raises the prediction, red where it lowers it (the
# attention views' blue is "more").
RAISES, LOWERS = "blue: raises it", "red: lowers it"
SIGNED_COLORSCALE = [[0.0, "#b2182b"], [0.25, "#ef8a62"], [0.5, "#f7f7f7"], [0.75, "#67a9cf"], [1.0, "#2166ac"]]
REFERENCE_COLORS = {"integrated gradients": "#2166ac", "blank-out": "#f4a582"}


def attribution_figure(tokens: Sequence[str], scores: Mapping[str, np.ndarray], fixed=None, *, per_line: int = 16,
                       title: str = "What the prediction depends on") -> go.Figure:
    """The input's tokens, colored by each method's scores: one row per method (e.g. integrated gradients,
    blank-out), wrapped every `per_line` tokens. Each method's scores are scaled by its own largest |score| (the
    methods measure on different scales); the hover gives the raw score. fixed: (T,) positions kept as they are
    ([CLS], [SEP], [MASK]), drawn gray."""
    names = list(scores)
    n = len(tokens)
    if not names or any(len(np.asarray(scores[k])) != n for k in names):
        raise ValueError(f"every method needs one score per token ({n})")
    fixed = np.zeros(n, dtype=bool) if fixed is None else np.asarray(fixed, dtype=bool)
    width = max(1, min(n, per_line))
    lines = -(-n // width)
    stride = len(names) + 1  # one row per method, then a gap
    rows = lines * stride - 1
    z = np.full((rows, width), np.nan, dtype=np.float32)
    text = [[""] * width for _ in range(rows)]
    hover = [[""] * width for _ in range(rows)]
    esc = _escape_all(tokens)
    for m, name in enumerate(names):
        raw = np.asarray(scores[name], dtype=np.float64)
        scale = float(np.abs(raw[~fixed]).max()) if (~fixed).any() else 0.0
        for i in range(n):
            line, col = divmod(i, width)
            row = line * stride + m
            text[row][col] = esc[i]
            hover[row][col] = (f"{escape_label(name)}: {esc[i]} ({i}) is kept as it is" if fixed[i]
                               else f"{escape_label(name)}: {esc[i]} ({i}) {raw[i]:+.4f}")
            z[row, col] = np.nan if fixed[i] else (raw[i] / scale if scale > 0 else 0.0)
    tickvals = [line * stride + m for line in range(lines) for m in range(len(names))]
    data = [dict(type="heatmap", z=z, x=np.arange(width), y=np.arange(rows), text=text, customdata=hover,
                 texttemplate="%{text}", textfont=dict(size=14), colorscale=SIGNED_COLORSCALE, zmin=-1, zmax=1,
                 zmid=0, xgap=3, ygap=3, hoverongaps=False, hovertemplate="%{customdata}<extra></extra>",
                 # no title: above the bar it sat on "raises it"; the figure's subtitle says how a row is scaled
                 colorbar=dict(_colorbar("", tickvals=[-1, 0, 1], ticktext=["lowers it", "0", "raises it"]),
                               title=None))]
    layout = dict(xaxis=dict(visible=False, range=[-0.5, width - 0.5]),
                  yaxis=dict(tickmode="array", tickvals=tickvals, ticktext=[escape_label(k) for k in names] * lines,
                             range=[rows - 0.5, -0.5], showgrid=False, zeroline=False),
                  plot_bgcolor="#e8e8e8", margin=dict(l=170, r=20, t=90, b=20),
                  # no pan or zoom: on a phone a swipe then scrolls the chart's box instead of moving its axes
                  dragmode=False)
    layout["xaxis"]["fixedrange"] = layout["yaxis"]["fixedrange"] = True
    # keeps its width on a phone, where it scrolls in its box (a word needs its cell)
    figure_width = max(620, 230 + 78 * width)
    return _figure(data, layout, f"{title}<br><sup>{RAISES}, {LOWERS}; gray: kept as it is; each row scaled to its "
                                 "largest</sup>", figure_width,
                   height=170 + 34 * rows, phone_width=figure_width)


def faithfulness_figure(table: pd.DataFrame, *, agreement: float | None = None,
                        title: str = "Does attention point at<br>what the prediction depends on?") -> go.Figure:
    """Spearman correlation of each attention-based score (rows of `table`) with each reference (columns), as
    grouped horizontal bars on [-1, 1]. agreement: the two references' correlation with each other, drawn as a
    dotted line: a point of comparison."""
    # a measure's name on two lines ("attention,<br>mean of all layers"): a narrow left margin leaves the bars room
    measures = [escape_label(str(m)).replace(", ", ",<br>") for m in table.index]
    data = []
    for reference in table.columns:
        values = _f32(table[reference].to_numpy(dtype=np.float64))
        data.append(dict(type="bar", orientation="h", x=values, y=measures, name=escape_label(str(reference)),
                         marker=dict(color=REFERENCE_COLORS.get(reference, "#888")),
                         text=[f"{v:+.2f}" for v in values], textposition="outside", cliponaxis=False,
                         hovertemplate="%{y} vs " + escape_label(str(reference)) + ": %{x:.2f}<extra></extra>"))
    shapes = []
    if agreement is not None and np.isfinite(agreement):
        shapes.append(dict(type="line", x0=agreement, x1=agreement, y0=-0.5, y1=len(measures) - 0.5,
                           line=dict(color="#555", dash="dot", width=2)))
    layout = dict(barmode="group", shapes=shapes, bargap=0.3,
                  # the axis title in short lines: centred under a phone's narrow plot, a long one ran off the figure
                  xaxis=dict(range=[-1.15, 1.15], title=dict(text="same ranking?<br>Spearman, 1: same order"),
                             zeroline=True, zerolinecolor="#999"),
                  # the legend at the figure's foot: at a fraction under the plot, a two-line title above pushed it
                  # onto the axis title
                  yaxis=dict(autorange="reversed"),
                  legend=dict(orientation="h", x=0, yref="container", y=0, yanchor="bottom"),
                  margin=dict(l=130, r=30, t=90, b=110))
    sub = (f"<br><sup>dotted: the two references agree with each other at {agreement:+.2f}</sup>"
           if agreement is not None and np.isfinite(agreement) else "")
    return _figure(data, layout, title + sub, width=600, height=270 + 70 * len(measures), phone_width=PHONE_BOX)


def head_effects_figure(effects: np.ndarray, *, target: str = "the prediction",
                        title: str | None = None) -> go.Figure:
    """effects: (L, h) change of the target when each head alone is silenced. Drawn is what each head does to the
    prediction, the target with the head minus without it (-effects), in the word chart's colours: blue where the head
    raises the prediction (silencing it lowers it), red where it lowers it."""
    does = -np.asarray(effects, dtype=np.float32)
    span = float(max(np.abs(does).max(), 1e-6))
    return _heads_grid(does, hover="%{z:+.3f} (with the head, minus without it)",
                       colorbar=f"what the head does to it<br>({RAISES}, {LOWERS})", zmid=0,
                       colorscale=SIGNED_COLORSCALE, zmin=-span, zmax=span,
                       title=title or f"What each head does to {escape_label(target)} (found by silencing it)")
