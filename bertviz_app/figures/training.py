"""A training's loss curve, as the app's Fine-tune tab draws it while the model learns: the loss of every step (thin),
its running mean (thick), and a dashed line where each epoch ends; and, once it is done, the held-out confusion matrix
of a sentence classifier."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import Translator, english
from ._base import ATTENTION_COLORSCALE, _colorbar, _escape_all, _f32, _figure, _token_axis

MAX_POINTS = 2000  # a long run's steps are thinned to this many points: the page redraws the curve every second


def loss_curve_figure(steps: Sequence[int], losses: Sequence[float], steps_per_epoch: float | None = None, *,
                      total: int | None = None, title: str | None = None,
                      tr: Translator = english) -> go.Figure:
    """steps, losses: (N,) the optimizer step and its loss; `steps_per_epoch` places the epoch lines; `total` fixes the
    x axis to the whole run, so that the curve grows from the left instead of the axis stretching. `tr` translates
    its words (a given title is translated by the caller)."""
    steps, losses = np.asarray(steps, dtype=np.int64), _f32(losses)
    if len(steps) != len(losses):
        raise ValueError(f"{len(steps)} steps but {len(losses)} losses")
    if len(steps) > MAX_POINTS:
        keep = np.linspace(0, len(steps) - 1, MAX_POINTS).round().astype(int)
        steps, losses = steps[keep], losses[keep]
    window = max(1, min(20, len(losses) // 5))
    smooth = (np.convolve(losses, np.ones(window) / window, mode="valid") if len(losses) else losses)
    data = [dict(type="scatter", mode="lines", x=steps, y=losses, name=tr("each step"),
                 line=dict(color="#9ecae1", width=1), hovertemplate="step %{x}: loss %{y:.4f}<extra></extra>"),
            dict(type="scatter", mode="lines", x=steps[window - 1:], y=_f32(smooth),
                 name=tr("mean of {n}", n=window) if window > 1 else tr("loss"), line=dict(color="#08519c", width=3),
                 hovertemplate="step %{x}: mean loss %{y:.4f}<extra></extra>")]
    end = total or (int(steps[-1]) if len(steps) else 1)
    shapes = []
    if steps_per_epoch:
        data.append(dict(type="scatter", mode="lines", x=[None], y=[None], name=tr("an epoch ends"),  # legend only
                         line=dict(color="#888", width=1, dash="dash"), hoverinfo="skip"))
        shapes = [dict(type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1,
                       line=dict(color="#888", width=1, dash="dash"))
                  for x in np.arange(steps_per_epoch, end + 1e-9, steps_per_epoch)[:50]]
    layout = dict(xaxis=dict(title=dict(text=tr("step")), range=[0, max(end, 1)], zeroline=False),
                  yaxis=dict(title=dict(text=tr("loss")), rangemode="tozero"), shapes=shapes, autosize=True,
                  legend=dict(orientation="h", x=1, xanchor="right", y=1.02, yanchor="bottom"),
                  margin=dict(l=60, r=20, t=60, b=50))
    return _figure(data, layout, title or tr("Loss per step"), width=None, height=320)


def confusion_matrix_figure(matrix: Sequence[Sequence[int]], labels: Sequence[str], *,
                            title: str | None = None, tr: Translator = english) -> go.Figure:
    """matrix: (L, L) counts, `matrix[i][j]` the held-out examples of gold label i that the model predicted as label
    j; labels: (L,) their names. Gold runs down the rows (the first label on top), predicted across the columns; each
    cell shows its count, so that a class the model never predicts reads as an empty column."""
    counts = np.asarray(matrix, dtype=np.int64).reshape(len(labels), len(labels))  # (gold, predicted)
    n = len(labels)
    names = _escape_all(labels)
    gold = np.repeat(np.asarray(names, dtype=object)[:, None], n, axis=1)  # (L, L) the row's label in each cell
    predicted = np.repeat(np.asarray(names, dtype=object)[None, :], n, axis=0)
    heat = dict(type="heatmap", z=counts, x=np.arange(n), y=np.arange(n), colorscale=ATTENTION_COLORSCALE,
                zmin=0, zmax=max(int(counts.max()) if counts.size else 0, 1), text=counts.astype(str),
                texttemplate="%{text}", customdata=np.stack([gold, predicted], -1),
                hovertemplate="gold %{customdata[0]}, predicted %{customdata[1]}: %{z}<extra></extra>",
                colorbar=_colorbar(tr("examples")))
    side = 60 + 48 * n
    layout = dict(xaxis=_token_axis(labels, tr("predicted label")),
                  yaxis=_token_axis(labels, tr("gold label"), range=[n - 0.5, -0.5]),
                  margin=dict(l=110, r=20, t=60, b=90))
    return _figure([heat], layout, title or tr("Held-out confusion matrix"), width=None,
                   height=min(max(side + 150, 300), 640))
