"""A training's loss curve, as the app's Fine-tune tab draws it while the model learns: the loss of every step (thin),
its running mean (thick), and a dashed line where each epoch ends."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ._base import _f32, _figure

MAX_POINTS = 2000  # a long run's steps are thinned to this many points: the page redraws the curve every second


def loss_curve_figure(steps: Sequence[int], losses: Sequence[float], steps_per_epoch: float | None = None, *,
                      total: int | None = None, title: str = "Loss per step") -> go.Figure:
    """steps, losses: (N,) the optimizer step and its loss; `steps_per_epoch` places the epoch lines; `total` fixes the
    x axis to the whole run, so that the curve grows from the left instead of the axis stretching."""
    steps, losses = np.asarray(steps, dtype=np.int64), _f32(losses)
    if len(steps) != len(losses):
        raise ValueError(f"{len(steps)} steps but {len(losses)} losses")
    if len(steps) > MAX_POINTS:
        keep = np.linspace(0, len(steps) - 1, MAX_POINTS).round().astype(int)
        steps, losses = steps[keep], losses[keep]
    window = max(1, min(20, len(losses) // 5))
    smooth = (np.convolve(losses, np.ones(window) / window, mode="valid") if len(losses) else losses)
    data = [dict(type="scatter", mode="lines", x=steps, y=losses, name="each step",
                 line=dict(color="#9ecae1", width=1), hovertemplate="step %{x}: loss %{y:.4f}<extra></extra>"),
            dict(type="scatter", mode="lines", x=steps[window - 1:], y=_f32(smooth),
                 name=f"mean of {window}" if window > 1 else "loss", line=dict(color="#08519c", width=3),
                 hovertemplate="step %{x}: mean loss %{y:.4f}<extra></extra>")]
    end = total or (int(steps[-1]) if len(steps) else 1)
    shapes = []
    if steps_per_epoch:
        data.append(dict(type="scatter", mode="lines", x=[None], y=[None], name="an epoch ends",  # legend only
                         line=dict(color="#888", width=1, dash="dash"), hoverinfo="skip"))
        shapes = [dict(type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1,
                       line=dict(color="#888", width=1, dash="dash"))
                  for x in np.arange(steps_per_epoch, end + 1e-9, steps_per_epoch)[:50]]
    layout = dict(xaxis=dict(title=dict(text="step"), range=[0, max(end, 1)], zeroline=False),
                  yaxis=dict(title=dict(text="loss"), rangemode="tozero"), shapes=shapes, autosize=True,
                  legend=dict(orientation="h", x=1, xanchor="right", y=1.02, yanchor="bottom"),
                  margin=dict(l=60, r=20, t=60, b=50))
    return _figure(data, layout, title, width=None, height=320)
