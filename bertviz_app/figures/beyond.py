"""Figures beyond raw attention: what a prediction depends on (integrated gradients and blank-out as colored
tokens), how well attention-based scores agree with that (the faithfulness chart), each head's effect on the
prediction when silenced (compare.py draws how much each head changed between two inputs or two models)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..i18n import Translator, english
from ._base import PHONE_BOX, _colorbar, _escape_all, _f32, _figure, _grid, _heads_grid, escape_label

# One colour meaning across the tab: blue where a word or a head raises the prediction, red where it lowers it (the
# attention views' blue is "more").
RAISES, LOWERS = "blue: raises it", "red: lowers it"
SIGNED_COLORSCALE = [[0.0, "#b2182b"], [0.25, "#ef8a62"], [0.5, "#f7f7f7"], [0.75, "#67a9cf"], [1.0, "#2166ac"]]
REFERENCE_COLORS = {"integrated gradients": "#2166ac", "blank-out": "#f4a582"}


def attribution_figure(tokens: Sequence[str], scores: Mapping[str, np.ndarray], fixed=None, *, per_line: int = 16,
                       title: str | None = None, tr: Translator = english) -> go.Figure:
    """The input's tokens, colored by each method's scores: one row per method (e.g. integrated gradients,
    blank-out), wrapped every `per_line` tokens. Each method's scores are scaled by its own largest |score| (the
    methods measure on different scales); the hover gives the raw score. fixed: (T,) positions kept as they are
    ([CLS], [SEP], [MASK]), drawn gray."""
    title = title or tr("What the prediction depends on")
    names = list(scores)
    shown = [escape_label(tr(name)) for name in names]  # the methods' names: "integrated gradients", "blank-out"
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
            hover[row][col] = (tr("{method}: {token} ({n}) is kept as it is", method=shown[m], token=esc[i], n=i)
                               if fixed[i] else f"{shown[m]}: {esc[i]} ({i}) {raw[i]:+.4f}")
            z[row, col] = np.nan if fixed[i] else (raw[i] / scale if scale > 0 else 0.0)
    tickvals = [line * stride + m for line in range(lines) for m in range(len(names))]
    data = [dict(type="heatmap", z=z, x=np.arange(width), y=np.arange(rows), text=text, customdata=hover,
                 texttemplate="%{text}", textfont=dict(size=14), colorscale=SIGNED_COLORSCALE, zmin=-1, zmax=1,
                 zmid=0, xgap=3, ygap=3, hoverongaps=False, hovertemplate="%{customdata}<extra></extra>",
                 # no title: above the bar it sat on "raises it"; the figure's subtitle says how a row is scaled
                 colorbar=dict(_colorbar("", tickvals=[-1, 0, 1], ticktext=[tr("lowers it"), "0", tr("raises it")]),
                               title=None))]
    layout = dict(xaxis=dict(visible=False, range=[-0.5, width - 0.5]),
                  yaxis=dict(tickmode="array", tickvals=tickvals, ticktext=shown * lines,
                             range=[rows - 0.5, -0.5], showgrid=False, zeroline=False),
                  plot_bgcolor="#e8e8e8", margin=dict(l=170, r=20, t=90, b=20),
                  # no pan or zoom: on a phone a swipe then scrolls the chart's box instead of moving its axes
                  dragmode=False)
    layout["xaxis"]["fixedrange"] = layout["yaxis"]["fixedrange"] = True
    # keeps its width on a phone, where it scrolls in its box (a word needs its cell)
    figure_width = max(620, 230 + 78 * width)
    sub = tr("{raises}, {lowers}; gray: kept as it is; each row scaled to its largest", raises=tr(RAISES),
             lowers=tr(LOWERS))
    return _figure(data, layout, f"{title}<br><sup>{sub}</sup>", figure_width,
                   height=170 + 34 * rows, phone_width=figure_width)


def contrast_title(answer: str, other: str, tr: Translator = english) -> str:
    """The title of a contrastive attribution chart (attribution_figure of a logit difference)."""
    return tr("Why {answer} and not {other}?", answer=escape_label(repr(answer)), other=escape_label(repr(other)))


def faithfulness_figure(table: pd.DataFrame, *, agreement: float | None = None,
                        title: str | None = None, tr: Translator = english) -> go.Figure:
    """Spearman correlation of each attention-based score (rows of `table`) with each reference (columns), as
    grouped horizontal bars on [-1, 1]. agreement: the two references' correlation with each other, drawn as a
    dotted line: a point of comparison."""
    # a measure's name on two lines ("attention,<br>mean of all layers"): a narrow left margin leaves the bars room
    title = title or tr("Does attention point at<br>what the prediction depends on?")
    measures = [escape_label(tr(str(m))).replace(", ", ",<br>") for m in table.index]
    data = []
    for reference in table.columns:
        values = _f32(table[reference].to_numpy(dtype=np.float64))
        name = escape_label(tr(str(reference)))
        data.append(dict(type="bar", orientation="h", x=values, y=measures, name=name,
                         marker=dict(color=REFERENCE_COLORS.get(reference, "#888")),
                         text=[f"{v:+.2f}" for v in values], textposition="outside", cliponaxis=False,
                         # plotly's %{...} go in as values: a template's own braces would read as placeholders
                         hovertemplate=tr("{measure} vs {reference}: {value}", measure="%{y}", reference=name,
                                          value="%{x:.2f}") + "<extra></extra>"))
    shapes = []
    if agreement is not None and np.isfinite(agreement):
        shapes.append(dict(type="line", x0=agreement, x1=agreement, y0=-0.5, y1=len(measures) - 0.5,
                           line=dict(color="#555", dash="dot", width=2)))
    layout = dict(barmode="group", shapes=shapes, bargap=0.3,
                  # the axis title in short lines: centred under a phone's narrow plot, a long one ran off the figure
                  xaxis=dict(range=[-1.15, 1.15], title=dict(text=tr("same ranking?<br>Spearman, 1: same order")),
                             zeroline=True, zerolinecolor="#999"),
                  # the legend at the figure's foot: at a fraction under the plot, a two-line title above pushed it
                  # onto the axis title
                  yaxis=dict(autorange="reversed"),
                  legend=dict(orientation="h", x=0, yref="container", y=0, yanchor="bottom"),
                  margin=dict(l=130, r=30, t=90, b=110))
    sub = ("<br><sup>" + tr("dotted: the two references agree with each other at {r}", r=f"{agreement:+.2f}")
           + "</sup>"
           if agreement is not None and np.isfinite(agreement) else "")
    return _figure(data, layout, title + sub, width=600, height=270 + 70 * len(measures), phone_width=PHONE_BOX)


def head_effects_figure(effects: np.ndarray, *, target: str | None = None, title: str | None = None,
                        tr: Translator = english) -> go.Figure:
    """effects: (L, h) change of the target when each head alone is silenced. Drawn is what each head does to the
    prediction, the target with the head minus without it (-effects), in the word chart's colours: blue where the head
    raises the prediction (silencing it lowers it), red where it lowers it."""
    does = -np.asarray(effects, dtype=np.float32)
    span = float(max(np.abs(does).max(), 1e-6))
    target = target or tr("the prediction")
    return _heads_grid(does, hover="%{z:+.3f} " + tr("(with the head, minus without it)"),
                       colorbar=tr("what the head does to it<br>({raises}, {lowers})", raises=tr(RAISES),
                                   lowers=tr(LOWERS)), zmid=0,
                       colorscale=SIGNED_COLORSCALE, zmin=-span, zmax=span, tr=tr,
                       title=title or tr("What each head does to {target} (found by silencing it)",
                                         target=escape_label(target)))


# One color and one marker per method of the faithfulness curves, the colours apart in the three common colour-vision
# deficiencies too (tests/test_figure_colours.py); the prediction's own measures dashed, the attention family solid,
# so that the two kinds of explanation read apart.
CURVE_COLORS = {"attention": "#56B4E9", "rollout": "#332288", "attention flow": "#117733", "value zeroing": "#8c8c8c",
                "integrated gradients": "#000000", "blank-out": "#E69F00"}
CURVE_MARKERS = {"attention": "circle", "rollout": "square", "attention flow": "triangle-up", "value zeroing": "x",
                 "integrated gradients": "diamond", "blank-out": "star"}
PREDICTION_MEASURES = ("integrated gradients", "blank-out")


def faithfulness_curves_figure(deletion: Mapping[str, np.ndarray], insertion: Mapping[str, np.ndarray],
                               aopc: pd.DataFrame, *, metric: str = "the metric", removal: str = "[MASK]",
                               title: str | None = None, tr: Translator = english) -> go.Figure:
    """Deletion (top: the metric as each method's top tokens are replaced by `removal`, one more at each step) and
    insertion (bottom: restored into the input with them all replaced) curves, one line per method, the AOPC of each
    (aopc: rows = methods, columns deletion and insertion) in the legend. A faithful method falls first in the top
    panel and rises first in the bottom one. The panels are stacked so that a phone's width shows both."""
    names = list(deletion)
    if not names or list(insertion) != names or any(len(deletion[k]) != len(insertion[k]) for k in names):
        raise ValueError("give the deletion and insertion curves of the same methods, each of one length")
    title = title or tr("Which explanation<br>predicts the model?")
    layout, ref = _grid(2, 1, vspace=0.2, titles=[tr("deletion: top tokens removed"),
                                                  tr("insertion: top tokens restored")])
    data = []
    for name in names:
        color = CURVE_COLORS.get(name, "#888")
        row = aopc.loc[name]
        label = f"{escape_label(tr(name))} ({row['deletion']:+.2f} / {row['insertion']:+.2f})"
        for panel, curve in ((1, deletion[name]), (2, insertion[name])):
            x, y = ref(panel, 1)
            data.append(dict(type="scatter", mode="lines+markers", x=np.arange(len(curve)), y=_f32(curve), xaxis=x,
                             yaxis=y, name=label, legendgroup=name, showlegend=panel == 1,
                             line=dict(color=color, width=2, dash="dash" if name in PREDICTION_MEASURES else "solid"),
                             marker=dict(size=7, symbol=CURVE_MARKERS.get(name, "circle")),
                             hovertemplate=tr("{method}, {n} tokens: {value}", method=escape_label(tr(name)),
                                              n="%{x}", value="%{y:.3f}") + "<extra></extra>"))
    n = len(deletion[names[0]]) - 1
    for panel, axis in ((1, tr("tokens removed (of {n})", n=n)), (2, tr("tokens restored (of {n})", n=n))):
        x, y = ref(panel, 1)
        layout["xaxis" + x[1:]].update(title=dict(text=axis, standoff=4), range=[-0.3, n + 0.3],
                                       fixedrange=True, dtick=max(1, n // 8))
        layout["yaxis" + y[1:]].update(title=dict(text=tr("metric")), fixedrange=True, zeroline=True,
                                       zerolinecolor="#bbb")
    layout.update(legend=dict(orientation="h", x=0, y=-0.12, yanchor="top",
                              title=dict(text=tr("AOPC (deletion / insertion):"), side="top")),
                  margin=dict(l=70, r=20, t=190, b=40), dragmode=False)
    sub = ("<br><sup>" + tr("metric: {metric}", metric=escape_label(metric)) + "<br>"
           + tr("{token} takes a removed token's place", token=escape_label(removal)) + "<br>"
           + tr("higher AOPC: more faithful") + "</sup>")
    # five lines of title from the top down: centred in the margin they ran into the first panel's title
    layout["title"] = dict(text=title + sub, x=0.01, xanchor="left", y=0.965, yanchor="top", yref="container")
    return _figure(data, layout, "", width=None, height=820)


def patching_figure(shares: np.ndarray, *, metric: str = "the metric", title: str | None = None,
                    tr: Translator = english) -> go.Figure:
    """(L, h) an activation patching over heads (causal/patching.py): the share of the clean run's metric that each
    head restores, 0 = the corrupted run, 1 = the clean one; blue towards the clean run, red away from it."""
    shares = np.asarray(shares, dtype=np.float32)
    span = float(max(1.0, np.nanmax(np.abs(shares))))
    return _heads_grid(shares, hover="%{z:+.2f} " + tr("restored"),
                       colorbar=tr("share restored (0: corrupted, 1: clean)"), zmid=0,
                       colorscale=SIGNED_COLORSCALE, zmin=-span, zmax=span, tr=tr,
                       title=title or tr("Patching one head at a time:<br>{metric}", metric=escape_label(metric)))
