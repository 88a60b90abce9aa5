"""Faithfulness you can read: for each way of scoring the input's tokens (attention, rollout, attention flow, value
zeroing, integrated gradients, blank-out), the explained metric as the tokens are removed in that method's order
(deletion) and as they are restored into an input with all of them removed (insertion), with the areas (AOPC,
analysis/faithfulness.py). A method whose first tokens are the ones the model needs makes the deletion curve fall and
the insertion curve rise first. Removal writes [MASK] (default) or [PAD] in the token's place, position unchanged;
[CLS], [SEP] and every [MASK] stay.

The attention-based scores are read from the row of the explained position (the [MASK], or [CLS] for IsNext), as
attribution.faithfulness reads them; integrated gradients and blank-out are signed (a token that favours the metric
comes first), for the same metric."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from . import analysis, causal
from .attribution import Report, attribute, blank_out
from .masked_lm import evaluating, mask_positions
from .model import BertForPreTraining
from .targets import Target, batch_size_for, forward_ids, resolve_contrast, resolve_target
from .tokenizer import Encoding, Tokenizer

METHODS = ("attention", "rollout", "attention flow", "value zeroing", "integrated gradients", "blank-out")
REMOVALS = ("mask", "pad")


@dataclass
class FaithfulnessCurves:
    """n = the tokens that can be removed (not [CLS], [SEP] or a [MASK]).

    orders: method -> (n,) positions, most important first; deletion, insertion: method -> (n + 1,) the metric with
    the first k tokens of the order removed (restored); aopc: one row per method, columns deletion and insertion
    (higher is more faithful); skipped: method -> the sentence why it has no curve here."""

    tokens: list[str]
    target: Target
    removal: str
    orders: dict[str, np.ndarray]
    deletion: dict[str, np.ndarray]
    insertion: dict[str, np.ndarray]
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def aopc(self) -> pd.DataFrame:
        rows = {name: analysis.aopc(self.deletion[name], self.insertion[name]) for name in self.deletion}
        frame = pd.DataFrame.from_dict(rows, orient="index", columns=["deletion", "insertion"])
        frame.index.name = "method"
        return frame

    def to_frame(self) -> pd.DataFrame:
        """method, curve ('deletion' or 'insertion'), removed (k tokens removed, or n - k restored), token (the k-th
        of the order, '' at k = 0), value."""
        rows = []
        for name, order in self.orders.items():
            for curve, values in (("deletion", self.deletion[name]), ("insertion", self.insertion[name])):
                for k, value in enumerate(values):
                    removed = k if curve == "deletion" else len(order) - k
                    token = self.tokens[order[k - 1]] if k else ""
                    rows.append((name, curve, removed, token, float(value)))
        return pd.DataFrame(rows, columns=["method", "curve", "removed", "token", "value"])


def resolve(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, metric=None) -> Target:
    """The metric as a Target: two answers (their logit difference at the first [MASK]), one answer (its log P there),
    'is_next', or None (log P of the model's top prediction at the first [MASK])."""
    if isinstance(metric, (tuple, list)) and len(metric) == 2:
        return resolve_contrast(model, tokenizer, encoding, metric[0], metric[1])
    if metric == "is_next":
        return resolve_target(model, tokenizer, encoding, "is_next")
    if metric is None or isinstance(metric, (str, int)):
        return resolve_target(model, tokenizer, encoding, "mask", 0, metric)
    raise ValueError(f"metric must be two answers for the [MASK] ('are', 'is'), one answer, 'is_next' or None; "
                     f"got {metric!r}")


def fixed_positions(tokenizer: Tokenizer, encoding: Encoding) -> np.ndarray:
    fixed = np.asarray(encoding.special_tokens_mask, dtype=bool).copy()
    fixed[mask_positions(tokenizer, encoding)] = True
    return fixed


def method_scores(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, target: Target,
                  steps: int = 50, report: Report | None = None,
                  known: dict[str, np.ndarray] | None = None) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(scores: method -> (T,), skipped: method -> why not) for every method of METHODS, read for `target`; `known`
    gives some already computed for that target (a Contrast's integrated gradients and blank-out), not computed
    again."""
    known = dict(known or {})
    position = target.position
    with evaluating(model), torch.inference_mode():
        out = forward_ids(model, encoding, capture=("layer.*.attention.probs",))
        attentions = torch.stack([a[0] for a in out.layers("attention.probs")]).double().cpu().numpy()  # (L, h, T, T)
    scores = {"attention": attentions[-1].mean(axis=0)[position],
              "rollout": analysis.attention_rollout(attentions)[-1][position]}
    skipped = {}
    if len(encoding) > analysis.FLOW_MAX_TOKENS:
        skipped["attention flow"] = (f"attention flow is computed up to {analysis.FLOW_MAX_TOKENS} tokens and this "
                                     f"input has {len(encoding)}")
    else:
        scores["attention flow"] = analysis.attention_flow(attentions)[position]
    scores["value zeroing"] = causal.aggregate(causal.value_zeroing(model, encoding))[-1][position]
    if "integrated gradients" not in known:
        known["integrated gradients"] = attribute(model, tokenizer, encoding, steps=steps, target=target,
                                                  report=report).scores
    if "blank-out" not in known:
        known["blank-out"] = blank_out(model, tokenizer, encoding, target=target, report=report).scores
    scores.update(known)
    return {name: scores[name] for name in METHODS if name in scores}, skipped


@torch.inference_mode()
def evaluate(model: BertForPreTraining, encoding: Encoding, target: Target, rows: np.ndarray,
             memory_budget: int | None = None) -> np.ndarray:
    """(N,) the target of each row of token ids (N, T), the input's segments and positions; each distinct row once."""
    unique, back = np.unique(rows, axis=0, return_inverse=True)
    T = rows.shape[1]
    batch = batch_size_for(model.config, T, False, memory_budget, len(unique))
    types = torch.tensor([encoding.segment_ids], device=model.device)
    values = []
    with evaluating(model):
        for start in range(0, len(unique), batch):
            ids = torch.as_tensor(unique[start:start + batch], device=model.device)
            out = model.bert(ids, types.expand(len(ids), -1))
            values.append(target.value(model, out).double().cpu().numpy())
    return np.concatenate(values)[back.reshape(-1)]


def faithfulness_curves(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, metric=None,
                        removal: str = "mask", steps: int = 50, scores: dict[str, np.ndarray] | None = None,
                        memory_budget: int | None = None, report: Report | None = None,
                        known: dict[str, np.ndarray] | None = None) -> FaithfulnessCurves:
    """The deletion and insertion curves of `metric` (see `resolve`) for every method of METHODS, or for the methods
    of `scores` (name -> (T,)) when given. removal: 'mask' or 'pad', what takes a removed token's place; known: see
    `method_scores`."""
    if removal not in REMOVALS:
        raise ValueError(f"removal must be 'mask' ([MASK] in the token's place) or 'pad' ([PAD]); got {removal!r}")
    blank = tokenizer.mask_token_id if removal == "mask" else tokenizer.pad_token_id
    if blank is None:
        raise ValueError(f"this tokenizer has no [{removal.upper()}] token; use the other removal")
    target = metric if isinstance(metric, Target) else resolve(model, tokenizer, encoding, metric)
    keep = ~fixed_positions(tokenizer, encoding)
    if not keep.any():
        raise ValueError("the input has no word to remove (only [CLS], [SEP] and [MASK]); write a sentence around the "
                         "[MASK]")
    skipped: dict[str, str] = {}
    if scores is None:
        scores, skipped = method_scores(model, tokenizer, encoding, target, steps, report, known)
    orders = {name: analysis.removal_order(values, keep) for name, values in scores.items()}
    blocks = [analysis.curve_inputs(encoding.ids, order, blank) for order in orders.values()]
    rows = np.concatenate([np.concatenate(pair) for pair in blocks])  # per method: deletion rows, insertion rows
    values = evaluate(model, encoding, target, rows, memory_budget).reshape(len(orders), 2, -1)
    return FaithfulnessCurves(list(encoding.labels), target, removal, orders,
                              {name: values[m, 0] for m, name in enumerate(orders)},
                              {name: values[m, 1] for m, name in enumerate(orders)}, skipped)
