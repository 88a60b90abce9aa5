"""Figures of the masked-LM head: fill-mask bars, predictions at one masked token, the logit lens through the layers,
and one sentence as pretraining corrupts it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import Translator, english
from ._base import ATTENTION_COLORSCALE, _colorbar, _escape_all, _f32, _figure, _grid, escape_label, percent

def probability_axis(probabilities, room: float = 1.3) -> float:
    """The end of a probability axis: the largest bar plus room for its label, so that a 5% answer is a bar one
    can see rather than a sliver on a 0-100% axis (the labels give the numbers)."""
    top = float(np.max(np.asarray(probabilities, dtype=float))) if len(probabilities) else 1.0
    return min(1.0, max(top, 0.01)) * room


PREDICTION_COLOR = "#6baed6"
ORIGINAL_COLOR = "#e6550d"  # the token that was really there: one warm color against the blue bars


def _check_predictions(predictions: Sequence[tuple[str, float]], what: str) -> list[tuple[str, float]]:
    rows = [(str(t), float(p)) for t, p in predictions]
    if not rows:
        raise ValueError(f"{what} has no predictions; ask for top_k >= 1")
    return rows


def fill_mask_figure(predictions: Sequence[Sequence[tuple[str, float]]], labels: Sequence[str] | None = None, *,
                     title: str | None = None, tr: Translator = english) -> go.Figure:
    """One horizontal bar chart per [MASK], best guess on top, probability on a shared 0..100 % axis.

    predictions: per mask, the top-k (token, probability) best first (as `masked_lm.fill_mask` returns them);
    labels: a panel title per mask (default "[MASK] 1", "[MASK] 2", ...; escaped here)."""
    if not predictions:
        raise ValueError("there is no [MASK] to show; write [MASK] where the model should guess a word")
    title = title or tr("What the model puts in each [MASK]")
    panels = [_check_predictions(p, f"[MASK] {i + 1}") for i, p in enumerate(predictions)]
    n = len(panels)
    if labels is not None and len(labels) != n:
        raise ValueError(f"{len(labels)} labels for {n} masks")
    titles = _escape_all(labels) if labels is not None else [f"[MASK] {i + 1}" for i in range(n)]
    cols = min(n, 3)  # side by side while the token names still fit; more masks wrap onto further rows
    rows = -(-n // cols)
    k = max(len(p) for p in panels)
    end = probability_axis([p for panel in panels for _, p in panel])  # one scale: masks stay comparable
    layout, ref = _grid(rows, cols, hspace=0.16 if cols > 1 else 0.0, vspace=0.12 if rows > 1 else 0.0,
                        titles=titles + [""] * (rows * cols - n))
    data = []
    for i, panel in enumerate(panels):
        x, y = ref(i // cols + 1, i % cols + 1)
        tokens = _escape_all([t for t, _ in panel])
        probs = _f32([p for _, p in panel])
        data.append(dict(type="bar", orientation="h", x=probs, y=np.arange(len(panel)), xaxis=x, yaxis=y,
                         text=[percent(p) for p in probs], textposition="outside", cliponaxis=False,
                         customdata=tokens, marker=dict(color=PREDICTION_COLOR), showlegend=False,
                         hovertemplate="%{customdata}: %{x:.2%}<extra></extra>"))
        layout["xaxis" + x[1:]].update(range=[0, end], tickformat=".0%",
                                       showgrid=True, zeroline=False,
                                       title=dict(text=tr("probability")) if i // cols + 1 == rows else None)
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
                        original_rank: int, *, index: int | None = None, title: str | None = None,
                        tr: Translator = english) -> go.Figure:
    """The predictions at one position after replacing its token by [MASK], best on top. The token that was there
    is drawn in orange; when it is outside the top k, it gets its own bar below a gap, labeled with its rank.

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
    data = [dict(type="bar", orientation="h", x=p, y=y, marker=dict(color=colors), text=[percent(v) for v in p],
                 textposition="outside", cliponaxis=False, customdata=names, showlegend=False,
                 hovertemplate="%{customdata}: %{x:.2%}<extra></extra>"),
            # legend entries only (no data): the colors explain themselves
            dict(type="bar", x=[None], y=[None], orientation="h", name=tr("prediction"),
                 marker=dict(color=PREDICTION_COLOR)),
            dict(type="bar", x=[None], y=[None], orientation="h", name=tr("original: {token}", token=esc_original),
                 marker=dict(color=ORIGINAL_COLOR))]
    n_rows = y[-1] + 1
    layout = dict(xaxis=dict(range=[0, probability_axis(p)], tickformat=".0%", title=dict(text=tr("probability")),
                             zeroline=False),
                  yaxis=dict(tickmode="array", tickvals=y, ticktext=names, range=[n_rows - 0.5, -0.5],
                             showgrid=False, zeroline=False),
                  legend=dict(orientation="h", x=0, y=-0.16, xanchor="left", yanchor="top"), bargap=0.25,
                  margin=dict(l=130, r=30, t=90, b=110))
    where = f" ({index})" if index is not None else ""
    sub = tr("the original <b>{token}</b> gets {share}, rank {rank}", token=esc_original,
             share=f"{original_probability:.2%}", rank=original_rank)
    head = title or tr("Masking {token}{where}: what the model predicts there", token=esc_original, where=where)
    return _figure(data, layout, f"{head}<br><sup>{sub}</sup>", width=760,
                   height=max(340, 200 + 30 * n_rows))


def logit_lens_figure(layers: Sequence[Sequence[tuple[str, float]]], final_token: str,
                      final_token_probability: Sequence[float], position_label: str, *,
                      title: str | None = None, tr: Translator = english) -> go.Figure:
    """How the answer forms through the network: the masked-LM head read out of every layer's hidden state.

    Left, a table with one row per layer (embeddings at the top, the last layer at the bottom) and one column per
    rank: each cell is a top-k token, colored by its probability, the final answer in bold. Right, the
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
    names = [tr("embeddings")] + [tr("layer {n}", n=l) for l in range(1, n)]
    layout, ref = _grid(1, 2, col_widths=[0.74, 0.26], hspace=0.04,
                        titles=(tr("top predictions per layer (color = probability)"),
                                tr("P({token}) by layer", token=escape_label(final_token))))
    (x1, y1), (x2, y2) = ref(1, 1), ref(1, 2)
    data = [dict(type="heatmap", z=_f32(z), x=np.arange(k), y=np.arange(n), xaxis=x1, yaxis=y1, text=text,
                 customdata=raw, texttemplate="%{text}", textfont=dict(size=13 if k <= 6 else 11),
                 colorscale=ATTENTION_COLORSCALE, zmin=0, zmax=1, xgap=2, ygap=2,
                 colorbar=_colorbar(tr("probability"), tickformat=".0%"),
                 hovertemplate="%{customdata}: %{z:.2%}<extra></extra>"),
            dict(type="scatter", x=_f32(final_token_probability), y=np.arange(n), xaxis=x2, yaxis=y2,
                 mode="lines+markers", line=dict(color=ORIGINAL_COLOR, width=2), marker=dict(size=8),
                 customdata=names, showlegend=False,
                 hovertemplate="%{customdata}: %{x:.2%}<extra></extra>")]
    layout["xaxis"].update(tickmode="array", tickvals=list(range(k)), ticktext=[f"#{r + 1}" for r in range(k)],
                           title=dict(text=tr("rank")), showgrid=False, zeroline=False)
    layout["yaxis"].update(tickmode="array", tickvals=list(range(n)), ticktext=names, range=[n - 0.5, -0.5],
                           showgrid=False, zeroline=False)
    layout["xaxis" + x2[1:]].update(range=[0, probability_axis(final_token_probability, room=1.1)],
                                    tickformat=".0%", zeroline=False,
                                    title=dict(text=tr("probability")))
    layout["yaxis" + y2[1:]].update(matches=y1, showticklabels=False, showgrid=True, zeroline=False)
    layout["margin"] = dict(l=110, r=30, t=110, b=70)
    head = title or tr("Logit lens at {where}: the final answer is <b>{token}</b>",
                       where=escape_label(position_label), token=escape_label(final_token))
    return _figure(data, layout, head, width=max(900, 380 + 110 * k), height=max(380, 190 + 34 * n))


CORRUPTION_KINDS = (("", "not chosen", "#f0f0f0"), ("mask", "→ [MASK] (80 %)", "#fdae6b"),
                    ("random", "→ random token (10 %)", "#c994c7"), ("kept", "kept as is (10 %)", "#a1d99b"))


def corruption_figure(tokens: Sequence[str], input_tokens: Sequence[str], labels_tokens: Sequence[str],
                      kinds: Sequence[str], *, per_line: int = 16, title: str | None = None,
                      tr: Translator = english) -> go.Figure:
    """The clean tokens, what the model reads, and what it must predict, as a table of three rows (wrapped every
    `per_line` tokens), each chosen token colored by what happened to it.

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
    title = title or tr("What pretraining sees: one example corrupted by the 80/10/10 rule")
    width_tokens = min(n, per_line)
    lines = -(-n // width_tokens)
    stride = 4  # three rows per line of tokens, then an empty row as a gap
    n_rows = lines * stride - 1
    z = np.full((n_rows, width_tokens), np.nan, dtype=np.float32)
    text = [[""] * width_tokens for _ in range(n_rows)]
    hover = [[""] * width_tokens for _ in range(n_rows)]
    kind_name = {kind: tr(name) for kind, name, _ in CORRUPTION_KINDS}
    for i in range(n):
        line, col = divmod(i, width_tokens)
        code = codes[kinds[i]]
        for r, value in enumerate((tokens[i], input_tokens[i], labels_tokens[i])):
            row = line * stride + r
            z[row, col] = code if (r != 2 or kinds[i]) else np.nan  # no label: an empty cell
            text[row][col] = escape_label(value)
            hover[row][col] = tr("token {n}: {token} — {kind}", n=i, token=escape_label(tokens[i]),
                                 kind=kind_name[kinds[i]])
    steps = len(CORRUPTION_KINDS)
    colorscale = []
    for i, (_, _, color) in enumerate(CORRUPTION_KINDS):  # a stepped scale: one flat color per kind code
        colorscale += [[i / steps, color], [(i + 1) / steps, color]]
    data = [dict(type="heatmap", z=z, x=np.arange(width_tokens), y=np.arange(n_rows), text=text, customdata=hover,
                 texttemplate="%{text}", textfont=dict(size=13), colorscale=colorscale, zmin=-0.5,
                 zmax=steps - 0.5, showscale=False, xgap=3, ygap=3, hoverongaps=False,
                 hovertemplate="%{customdata}<extra></extra>")]
    for kind, name, color in CORRUPTION_KINDS:  # legend entries only
        data.append(dict(type="scatter", x=[None], y=[None], mode="markers", name=kind_name[kind],
                         marker=dict(symbol="square", size=14, color=color, line=dict(color="#999", width=1))))
    row_names = [tr("original"), tr("model input"), tr("label")]
    tickvals = [line * stride + r for line in range(lines) for r in range(3)]
    layout = dict(xaxis=dict(visible=False, range=[-0.5, width_tokens - 0.5]),
                  yaxis=dict(tickmode="array", tickvals=tickvals, ticktext=row_names * lines,
                             range=[n_rows - 0.5, -0.5], showgrid=False, zeroline=False),
                  legend=dict(orientation="h", x=0, y=1.0, xanchor="left", yanchor="bottom"),
                  plot_bgcolor="white", margin=dict(l=110, r=20, t=110, b=20))
    chosen = sum(1 for k in kinds if k)
    sub = tr("{chosen} of {n} tokens chosen; the loss is computed only where there is a label", chosen=chosen, n=n)
    return _figure(data, layout, f"{title}<br><sup>{sub}</sup>", width=max(600, 150 + 75 * width_tokens),
                   height=170 + 31 * n_rows)

