"""A training timeline's pictures (bertviz_app.timeline reads the snapshots and calls these): every head's role at
every snapshot, one prediction's probability by step, and the loss with the learning rate. Snapshots are log-spaced
early, so the role picture puts one column per snapshot (labelled with its step), and the line figures use a
logarithmic step axis when the steps span more than two decades."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ..heads import ROLE_COLORS
from ..i18n import Translator, english
from ._base import PHONE_BOX, _escape_all, _f32, _figure, escape_label


def _step_axis(steps: np.ndarray, tr: Translator = english) -> dict:
    positive = steps[steps > 0]
    log = len(positive) > 1 and positive.max() / positive.min() >= 100
    return dict(title=dict(text=tr("step (log scale; step 0 not shown)") if log and (steps == 0).any() else tr("step")),
                type="log" if log else "linear", zeroline=False)


def head_roles_figure(steps: Sequence[int], roles: Sequence[Sequence[Sequence[str]]], *,
                      title: str = "Each head's role at each snapshot") -> go.Figure:
    """steps: (S,) the snapshots' steps; roles: (S, L, h) role labels (ROLE_COLORS' names). One row per head (layer 0
    head 0 on top), one column per snapshot, colored by role; hover names the head, the step and the role."""
    steps = np.asarray(steps, dtype=np.int64)
    labels = np.asarray(roles, dtype=object)
    if labels.ndim != 3 or labels.shape[0] != len(steps):
        raise ValueError(f"roles must be (snapshots, layers, heads) for {len(steps)} snapshots, got {labels.shape}")
    n_steps, n_layers, n_heads = labels.shape
    names = list(ROLE_COLORS) + sorted({str(r) for r in labels.ravel()} - set(ROLE_COLORS))
    code = {name: i for i, name in enumerate(names)}
    flat = labels.reshape(n_steps, n_layers * n_heads).T  # (heads, snapshots)
    z = np.asarray([[code[str(r)] for r in row] for row in flat], dtype=np.float32).reshape(flat.shape)
    colors = [ROLE_COLORS.get(n, "#000000") for n in names]
    k = len(names)
    # a stepped color scale: code i fills [i, i + 1) / k of it
    scale = [pair for i, c in enumerate(colors) for pair in ([i / k, c], [(i + 1) / k, c])]
    heads = [f"layer {l} head {h}" for l in range(n_layers) for h in range(n_heads)]
    custom = np.stack([np.repeat(np.asarray(heads, dtype=object)[:, None], n_steps, 1),
                       np.repeat(steps.astype(str).astype(object)[None, :], len(heads), 0),
                       np.asarray(_escape_all(flat.ravel()), dtype=object).reshape(flat.shape)], -1)
    heat = dict(type="heatmap", z=z + 0.5, x=np.arange(n_steps), y=np.arange(len(heads)), zmin=0, zmax=k,
                colorscale=scale, showscale=False, customdata=custom, xgap=1, ygap=1,
                hovertemplate="%{customdata[0]}, step %{customdata[1]}: %{customdata[2]}<extra></extra>")
    legend = [dict(type="scatter", mode="markers", x=[None], y=[None], name=name, hoverinfo="skip",
                   marker=dict(color=ROLE_COLORS[name], size=12, symbol="square", line=dict(color="#999", width=1)))
              for name in ROLE_COLORS if name in code and (labels == name).any()]
    ticks = np.unique(np.linspace(0, n_steps - 1, min(n_steps, 12)).round().astype(int)) if n_steps else []
    layout = dict(xaxis=dict(title=dict(text="step (one column per snapshot)"), tickmode="array",
                             tickvals=list(map(int, ticks)), ticktext=[str(int(steps[i])) for i in ticks],
                             range=[-0.5, n_steps - 0.5], showgrid=False, zeroline=False),
                  yaxis=dict(tickmode="array", tickvals=list(range(0, len(heads), max(1, n_heads))),
                             ticktext=[f"layer {l}" for l in range(n_layers)], range=[len(heads) - 0.5, -0.5],
                             showgrid=False, zeroline=False),
                  legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"), margin=dict(l=80, r=20, t=90, b=60))
    return _figure([heat, *legend], layout, title, width=None, height=min(max(220 + 9 * len(heads), 320), 900))


def prediction_figure(steps: Sequence[int], series: Mapping[str, Sequence[float | None]], *,
                      title: str = "Prediction by step", y_title: str = "probability") -> go.Figure:
    """steps: (S,); series: name -> (S,) probabilities, None where a snapshot does not know it (a word outside its
    top five). One line per series, with a point at each snapshot."""
    steps = np.asarray(steps, dtype=np.int64)
    data = []
    for name, values in series.items():
        y = np.asarray([np.nan if v is None else v for v in values], dtype=np.float32)
        if len(y) != len(steps):
            raise ValueError(f"{name!r} has {len(y)} values for {len(steps)} steps")
        label = _escape_all([name])[0]
        data.append(dict(type="scatter", mode="lines+markers", x=steps, y=_f32(y), name=label,
                         hovertemplate=f"{label}: %{{y:.3f}} at step %{{x}}<extra></extra>", connectgaps=False))
    layout = dict(xaxis=_step_axis(steps), yaxis=dict(title=dict(text=y_title), range=[0, 1.02]),
                  legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"), margin=dict(l=60, r=20, t=90, b=50))
    return _figure(data, layout, title, width=None, height=360)


def timeline_loss_figure(steps: Sequence[int], loss: Sequence[float | None], lr: Sequence[float] | None = None, *,
                         title: str = "Training loss at each snapshot") -> go.Figure:
    """steps: (S,); loss: (S,) the mean training loss since the previous snapshot (None before the first step);
    lr: (S,) the learning rate, on a second axis."""
    steps = np.asarray(steps, dtype=np.int64)
    y = np.asarray([np.nan if v is None else v for v in loss], dtype=np.float32)
    data = [dict(type="scatter", mode="lines+markers", x=steps, y=_f32(y), name="loss",
                 line=dict(color="#08519c", width=3), hovertemplate="step %{x}: loss %{y:.4f}<extra></extra>")]
    layout = dict(xaxis=_step_axis(steps), yaxis=dict(title=dict(text="loss"), rangemode="tozero"),
                  legend=dict(orientation="h", x=1, xanchor="right", y=1.02, yanchor="bottom"),
                  margin=dict(l=60, r=70, t=80, b=50))
    if lr is not None:
        data.append(dict(type="scatter", mode="lines", x=steps, y=np.asarray(lr, dtype=np.float64),
                         name="learning rate", yaxis="y2", line=dict(color="#888", width=1, dash="dot"),
                         hovertemplate="step %{x}: learning rate %{y:.2e}<extra></extra>"))
        layout["yaxis2"] = dict(title=dict(text="learning rate"), overlaying="y", side="right", rangemode="tozero",
                                showgrid=False, exponentformat="e")
    return _figure(data, layout, title, width=None, height=340)


def probe_timeline_figure(frame, source: str = "", *, title: str | None = None,
                          tr: Translator = english) -> go.Figure:
    """frame: Timeline.probe's table (step, target, layer, accuracy, majority, ...); source: what was probed, in
    words (a subtitle). The held-out accuracy of the probe by step, one line per layer (0: the embeddings, lightest;
    the last layer darkest), and the majority-class baseline dashed: when each layer's states began to tell the
    target's classes apart. `tr` translates its words (the source comes in words already: ProbeSet.describe(tr))."""
    from plotly.colors import sample_colorscale

    target = escape_label(str(frame["target"].iloc[0])) if len(frame) else ""
    layers = sorted({int(v) for v in frame["layer"]})
    colours = sample_colorscale("Viridis", [0.85 - 0.85 * k / max(1, len(layers) - 1) for k in range(len(layers))])
    data = []
    for layer, colour in zip(layers, colours):
        rows = frame[frame["layer"] == layer].sort_values("step")
        name = tr("embeddings (layer 0)") if layer == 0 else tr("layer {n}", n=layer)
        data.append(dict(type="scatter", mode="lines+markers", x=np.asarray(rows["step"], np.int64),
                         y=_f32(rows["accuracy"]), name=name, line=dict(color=colour, width=2),
                         hovertemplate=f"{name}, {tr('step')} %{{x}}: {tr('accuracy')} %{{y:.3f}}<extra></extra>"))
    if len(frame):
        first = frame[frame["layer"] == layers[0]].sort_values("step")
        data.append(dict(type="scatter", mode="lines", x=np.asarray(first["step"], np.int64),
                         y=_f32(first["majority"]), name=tr("always the commonest class"),
                         line=dict(color="#888", width=1, dash="dash"),
                         hovertemplate=tr("always the commonest class") + ": %{y:.3f}<extra></extra>"))
    steps = np.asarray(frame["step"], np.int64) if len(frame) else np.zeros(0, np.int64)
    heading = title or {"tag": tr("What each layer knew of part of speech"),
                        "label": tr("What each layer knew of the sentence's label"),
                        "position": tr("What each layer knew of the token's position"),
                        "recurs": tr("What each layer knew of whether a word recurs")}.get(
        target, tr("What each layer knew of {what}", what=target))
    heading += f"<br><sup>{escape_label(source)}</sup>" if source and not title else ""
    # the legend under the plot: above it, it ran into the title once the title wrapped for a phone
    layout = dict(xaxis=_step_axis(steps, tr), yaxis=dict(title=dict(text=tr("held-out accuracy")), range=[0, 1.02]),
                  legend=dict(orientation="h", x=0, y=-0.3, yanchor="top"), margin=dict(l=60, r=20, b=130))
    return _figure(data, layout, heading, width=None, height=480, phone_width=PHONE_BOX)
