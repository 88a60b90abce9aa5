"""Activation patching (Meng et al. 2022; Wang et al. 2023): two inputs of the same length, a clean one and a corrupted
one, and how much putting one component's activation from one run into the other moves a metric.

Denoising (the default): each component's clean activation restored into the corrupted run. Noising: each component's
corrupted activation put into the clean run. Either way the table is the fraction (m - m_corrupted) / (m_clean -
m_corrupted) of the metric m of the patched pass: 0 is the corrupted run's value, 1 the clean run's.

Components, each through the model's named points (model/points.py):
- heads: one head's output `layer.{l}.attention.context` (before the output projection), every position: (L, h);
- positions: the residual stream entering layer l (`embeddings` for l = 0, `layer.{l-1}.output` after) at one
  position: (L, T);
- layers: a layer's whole attention output `layer.{l}.attention.output` or feed-forward output `layer.{l}.ffn.output`,
  before the residual: (L, 2).

Batched: the cells of one layer go through together, and each starts at its own layer from the captured input of the
run it patches (the layers below compute nothing new), so a heads map of the default model (6 x 12 cells) is 6 batched
calls of 6, 5, ... 1 layers, not 72 whole passes."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from ..masked_lm import evaluating, mask_positions
from ..model import BertForPreTraining, Points
from ..targets import batch_size_for
from ..tokenizer import Encoding, Tokenizer

OVER = ("heads", "positions", "layers")
DIRECTIONS = ("denoise", "noise")


@dataclass(frozen=True)
class Metric:
    """What a patching measures, from the encoder's last hidden states (B, T, H): the logit difference of two answers
    at a [MASK] (`kind` "logit_diff", token ids `a` and `b` at `position`), or the next-sentence head's IsNext logit
    minus its NotNext logit ("is_next")."""

    kind: str
    position: int = 0
    a: int | None = None
    b: int | None = None
    label: str = ""

    def __call__(self, model: BertForPreTraining, hidden: Tensor) -> Tensor:
        """(B,) the metric of each example, in float64 for the fractions."""
        if self.kind == "logit_diff":
            logits = model.cls.predictions(hidden[:, self.position])  # (B, vocab): the head at one position only
            return (logits[:, self.a] - logits[:, self.b]).double()
        logits = model.cls.seq_relationship(model.bert.pooler(hidden))  # (B, 2), index 0 = IsNext
        return (logits[:, 0] - logits[:, 1]).double()


def resolve_metric(model: BertForPreTraining, tokenizer: Tokenizer, clean: Encoding, corrupted: Encoding,
                   metric) -> Metric:
    """("are", "is"): their logit difference at the clean input's [MASK] (which the corrupted input must have at the same
    place); "is_next": the IsNext logit of a sentence pair. Anything else: a sentence saying what is possible."""
    if metric == "is_next":
        if not model.has_nsp_head:
            raise ValueError("this model has no next-sentence head, so P(IsNext) cannot be patched; give two answers "
                             "for a [MASK] instead, e.g. metric=('are', 'is')")
        if not (clean.is_pair and corrupted.is_pair):
            raise ValueError("the IsNext metric needs two sentence pairs (text and text_pair on both sides)")
        return Metric("is_next", label="IsNext logit - NotNext logit")
    if not (isinstance(metric, (tuple, list)) and len(metric) == 2 and all(isinstance(w, str) for w in metric)):
        raise ValueError(f"metric must be two answers for the [MASK], e.g. ('are', 'is'), or 'is_next'; got {metric!r}")
    if not model.has_mlm_head:
        raise ValueError("this model has no masked-LM head, so there is no answer at a [MASK] to measure; use a model "
                         "with one, or metric='is_next' with a next-sentence head")
    masks = mask_positions(tokenizer, clean)
    if not masks:
        raise ValueError("the clean input has no [MASK]: write [MASK] where the two answers go, e.g. 'The keys to the "
                         "cabinet [MASK] on the table.'")
    position = masks[0]
    if corrupted.ids[position] != clean.ids[position]:
        raise ValueError(f"the corrupted input must have its [MASK] at the clean one's place (token {position}), so "
                         "that the metric reads the same position in both")
    ids = []
    for word in metric:
        token_id = tokenizer.token_to_id(word)
        if token_id is None:
            token_id = tokenizer.token_to_id(word.strip().lower())
        if token_id is None:
            raise ValueError(f"{word!r} is not one word piece of this model's vocabulary; choose answers that are")
        ids.append(token_id)
    return Metric("logit_diff", position, ids[0], ids[1], f"logit({metric[0]}) - logit({metric[1]}) at [MASK]")


def check_same_length(clean: Encoding, corrupted: Encoding) -> None:
    if len(clean) != len(corrupted):
        raise ValueError(
            f"the two inputs must have the same number of tokens to be patched position by position, but the clean one "
            f"has {len(clean)} ({' '.join(clean.tokens)}) and the corrupted one {len(corrupted)} "
            f"({' '.join(corrupted.tokens)}); change a word so that both tokenize to the same length")


@torch.inference_mode()
def patch(model: BertForPreTraining, tokenizer: Tokenizer, clean: Encoding, corrupted: Encoding, metric=("are", "is"),
          over: str = "heads", direction: str = "denoise", memory_budget: int | None = None) -> pd.DataFrame:
    """The patching table of `over` (see the module's docstring): rows are layers, the value the recovered fraction
    (0 = corrupted, 1 = clean). `frame.attrs` keeps the metric's two ends ("clean", "corrupted"), its description,
    the direction, the raw metric of every cell ("raw", same shape) and the seconds it took."""
    if over not in OVER:
        raise ValueError(f"over must be one of {', '.join(OVER)}; got {over!r}")
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'denoise' (clean restored into the corrupted run) or 'noise' (corrupted "
                         f"put into the clean run); got {direction!r}")
    check_same_length(clean, corrupted)
    measure = resolve_metric(model, tokenizer, clean, corrupted, metric)
    start = time.perf_counter()
    with evaluating(model):
        states = _capture(model, clean, corrupted)
        end_clean, end_corrupted = states.ends(model, measure)
        base, source = (states.corrupted, states.clean) if direction == "denoise" else (states.clean, states.corrupted)
        raw = _cells(model, states, base, source, over, measure, memory_budget)
    span = end_clean - end_corrupted
    fraction = (raw - end_corrupted) / span if span != 0 else np.full_like(raw, np.nan)
    config = model.config
    columns = {"heads": [f"head {h}" for h in range(config.num_attention_heads)],
               "positions": [f"{i} {t}" for i, t in enumerate(clean.labels)],
               "layers": ["attention", "feed-forward"]}[over]
    frame = pd.DataFrame(fraction, index=pd.Index(range(config.num_hidden_layers), name="layer"), columns=columns)
    frame.attrs.update(clean=end_clean, corrupted=end_corrupted, metric=measure.label, direction=direction,
                       over=over, raw=raw, seconds=time.perf_counter() - start,
                       clean_tokens=list(clean.labels), corrupted_tokens=list(corrupted.labels))
    return frame


POINTS = ("embeddings", "layer.*.output", "layer.*.attention.context", "layer.*.attention.output",
          "layer.*.ffn.output")


@dataclass
class _States:
    """Both runs' captured activations, batch index 0 = clean, 1 = corrupted."""

    captured: dict[str, Tensor]
    last: Tensor  # (2, T, H)

    def run(self, b: int) -> dict[str, Tensor]:
        return {name: x[b:b + 1] for name, x in self.captured.items()}

    @property
    def clean(self) -> dict[str, Tensor]:
        return self.run(0)

    @property
    def corrupted(self) -> dict[str, Tensor]:
        return self.run(1)

    def ends(self, model, measure: Metric) -> tuple[float, float]:
        values = measure(model, self.last)
        return float(values[0]), float(values[1])


def _capture(model: BertForPreTraining, clean: Encoding, corrupted: Encoding) -> _States:
    device = model.device
    ids = torch.tensor([clean.ids, corrupted.ids], device=device)
    segments = torch.tensor([clean.segment_ids, corrupted.segment_ids], device=device)
    out = model.bert(ids, segments, capture=POINTS)
    return _States(out.captured, out.last_hidden_state)


def _layer_input(run: dict[str, Tensor], layer: int) -> Tensor:
    return run["embeddings"] if layer == 0 else run[f"layer.{layer - 1}.output"]  # (1, T, H)


def _cells(model: BertForPreTraining, states: _States, base: dict[str, Tensor], source: dict[str, Tensor], over: str,
           measure: Metric, memory_budget: int | None) -> np.ndarray:
    """(L, columns) the metric of every patched pass."""
    config = model.config
    L, T = config.num_hidden_layers, base["embeddings"].shape[1]
    width = {"heads": config.num_attention_heads, "positions": T, "layers": 2}[over]
    batch = batch_size_for(config, T, False, memory_budget, width)
    encoder = model.bert.encoder
    raw = np.empty((L, width))
    for layer in range(L):
        for lo in range(0, width, batch):
            cells = list(range(lo, min(width, lo + batch)))
            n = len(cells)
            hidden = _layer_input(base, layer).expand(n, -1, -1)  # (n, T, H)
            points = Points()
            rows = torch.arange(n, device=hidden.device)
            if over == "positions":  # the residual stream entering this layer, one position per example
                hidden = hidden.clone()
                hidden[rows, cells] = _layer_input(source, layer)[0, cells]
            elif over == "heads":
                name = f"layer.{layer}.attention.context"  # (n, h, T, d)
                points = Points(intervene={name: _put(rows, cells, source[name][0, cells])})
            else:  # attention output (cell 0) or feed-forward output (cell 1), every position
                names = [f"layer.{layer}.attention.output", f"layer.{layer}.ffn.output"]
                points = Points(intervene={names[c]: _put(rows[i:i + 1], None, source[names[c]][0])
                                           for i, c in enumerate(cells)})
            hidden = encoder.apply_layer(layer, hidden, None, points)
            for above in range(layer + 1, L):
                hidden = encoder.apply_layer(above, hidden)
            raw[layer, cells] = measure(model, hidden).cpu().numpy()
    return raw


def _put(rows: Tensor, index, value: Tensor):
    """An intervention that writes `value` into example rows[k] (at index[k] along the next axis, a head, when index
    is given; value[k] then), leaving the other examples as they are."""

    def edit(x: Tensor) -> Tensor:
        x = x.clone()
        if index is None:
            x[rows] = value.to(x.dtype)
        else:
            x[rows, index] = value.to(x.dtype)
        return x

    return edit
