"""Silence attention heads and see what changes: the predictions at each [MASK] and the IsNext probability before and
after, and every head ranked by its effect on one prediction, measured (one forward pass per head, batched) or
estimated from one gradient (Michel et al. 2019). Functions of (model, tokenizer, encoding) like masked_lm.py.

Silencing a head multiplies its attention probabilities by 0 (the model's head_mask), which removes its context from
the attention output exactly as zeroing that head's columns of the output projection does; the tests check this
against transformers with those columns zeroed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from .masked_lm import Prediction, check_top_k, evaluating, mask_positions, top_predictions
from .model import BertForPreTraining, BertModelOutput, Edit, Points
from .spare_cores import in_chunks
from .targets import Target, batch_size_for, forward_ids, resolve_target
from .tokenizer import Encoding, Tokenizer

Head = tuple[int, int]  # (layer, head), both from 0
RANKING_METHODS = ("ablation", "gradient")


def check_heads(heads: Iterable, num_layers: int, num_heads: int) -> list[Head]:
    """`heads` as a list of (layer, head) int pairs, duplicates dropped, or a ValueError that names the bad one."""
    if isinstance(heads, (str, bytes)) or not isinstance(heads, Iterable):
        raise ValueError(f"heads must be a list of (layer, head) pairs, e.g. [(0, 3), (5, 11)]; got {heads!r}")
    out: list[Head] = []
    for item in heads:
        pair = tuple(item) if isinstance(item, (tuple, list)) else None
        if pair is None or len(pair) != 2 or any(isinstance(x, bool) or not isinstance(x, (int, np.integer))
                                                 for x in pair):
            raise ValueError(f"each head is a (layer, head) pair of integers, got {item!r}")
        layer, head = int(pair[0]), int(pair[1])
        if not 0 <= layer < num_layers:
            raise ValueError(f"layer {layer} in {item!r} is out of range: the model has {num_layers} layers, "
                             f"numbered 0 to {num_layers - 1}")
        if not 0 <= head < num_heads:
            raise ValueError(f"head {head} in {item!r} is out of range: each layer has {num_heads} heads, "
                             f"numbered 0 to {num_heads - 1}")
        if (layer, head) not in out:
            out.append((layer, head))
    return out


def head_mask_for(heads: list[Head], num_layers: int, num_heads: int, device=None) -> Tensor:
    """(L, h) ones, with 0 at every silenced (layer, head)."""
    mask = torch.ones(num_layers, num_heads, device=device)
    for layer, head in heads:
        mask[layer, head] = 0.0
    return mask


# ------------------------------------------------------------------------------------------------------------------
# Silencing a set of heads
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class MaskAblation:
    """One [MASK] before and after silencing. before, after: top_k (token, probability), best first; token: the top
    prediction before silencing, probability_before / probability_after: its probability, rank_after: its rank after
    (1 = still the best)."""

    position: int
    before: list[Prediction]
    after: list[Prediction]
    token: str
    probability_before: float
    probability_after: float
    rank_after: int

    @property
    def change(self) -> float:
        """probability_after - probability_before of the original top prediction."""
        return self.probability_after - self.probability_before


@dataclass
class Ablation:
    """What silencing `heads` changes. masks: one entry per [MASK], in order (empty when the input has none);
    is_next_before / is_next_after: P(B follows A), None without a sentence pair or an NSP head."""

    tokens: list[str]
    heads: list[Head]
    masks: list[MaskAblation]
    is_next_before: float | None = None
    is_next_after: float | None = None

    def to_frame(self) -> pd.DataFrame:
        """One row per [MASK]: position, top prediction before, its probability before and after, the change, and
        the top prediction after."""
        return pd.DataFrame({"position": [m.position for m in self.masks], "token": [m.token for m in self.masks],
                             "probability_before": [m.probability_before for m in self.masks],
                             "probability_after": [m.probability_after for m in self.masks],
                             "change": [m.change for m in self.masks],
                             "rank_after": [m.rank_after for m in self.masks],
                             "top_after": [m.after[0][0] for m in self.masks]})


def ablate(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, heads: Iterable,
           top_k: int = 5) -> Ablation:
    """Predictions at every [MASK] of the input, and P(IsNext) for a sentence pair, with and without the `heads`
    ((layer, head) pairs; an empty list silences nothing and changes nothing, exactly)."""
    check_top_k(top_k)
    config = model.config
    silenced = check_heads(heads, config.num_hidden_layers, config.num_attention_heads)
    masks = mask_positions(tokenizer, encoding)
    has_mlm, has_nsp = model.has_mlm_head, model.has_nsp_head
    if masks and not has_mlm:
        raise ValueError("this model has no masked-LM head, so it cannot predict the [MASK]; load a model with one "
                         "(the default minilm-l6-mlm-nsp-en)")
    if not masks and not (has_nsp and encoding.is_pair):
        raise ValueError("there is no prediction to compare: write [MASK] where the model should guess a word"
                         + (", or give a second sentence to see the next-sentence probability" if has_nsp else ""))
    pair = has_nsp and encoding.is_pair
    results = []
    with evaluating(model), torch.inference_mode():
        for mask in (head_mask_for([], config.num_hidden_layers, config.num_attention_heads, model.device),
                     head_mask_for(silenced, config.num_hidden_layers, config.num_attention_heads, model.device)):
            # Both passes take the same path with a head mask (all ones before), so that silencing nothing gives
            # the very same numbers, bit for bit.
            out = forward_ids(model, encoding, head_mask=mask)
            probs = (model.cls.predictions(out.last_hidden_state[0, masks]).float().softmax(-1)  # (masks, vocab)
                     if masks else None)
            is_next = (float(model.cls.seq_relationship(out.pooler_output)[0].float().softmax(-1)[0])
                       if pair else None)
            results.append((probs, is_next))
    (before, is_next_before), (after, is_next_after) = results
    rows = []
    for k, position in enumerate(masks):
        best = int(before[k].argmax())
        rows.append(MaskAblation(position, top_predictions(before[k], tokenizer, top_k), top_predictions(after[k], tokenizer, top_k),
                                 tokenizer.id_to_token(best), float(before[k, best]), float(after[k, best]),
                                 int((after[k] > after[k, best]).sum()) + 1))
    return Ablation(list(encoding.labels), silenced, rows, is_next_before, is_next_after)


# ------------------------------------------------------------------------------------------------------------------
# Ranking every head
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class HeadRanking:
    """Each head's effect on one target (see `Target`: log P of a token at a [MASK], or the IsNext logit).

    effects: (L, h) f(input with that head alone silenced) - f(input); negative where the head supports the
        prediction. For method 'gradient' the first-order estimate -df/dm of the head's mask m at 1 (one backward
        pass; Michel et al. 2019 rank heads by its absolute value).
    f_input: the target on the unchanged input."""

    tokens: list[str]
    target: Target
    method: str
    f_input: float
    effects: np.ndarray

    def ranking(self) -> pd.DataFrame:
        """One row per head, the largest |effect| first: layer, head, effect, probability_after (the target's
        probability with the head silenced; for 'gradient' the linear estimate's), rank."""
        n_layers, n_heads = self.effects.shape
        layer, head = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")  # (L, h) each
        effect = self.effects.ravel().astype(np.float64)
        frame = pd.DataFrame({"layer": layer.ravel(), "head": head.ravel(), "effect": effect,
                              "probability_after": [self.target.probability(self.f_input + e) for e in effect]})
        frame["magnitude"] = np.abs(effect)
        frame = frame.sort_values(["magnitude", "layer", "head"], ascending=[False, True, True], kind="mergesort")
        frame["rank"] = np.arange(1, len(frame) + 1)
        return frame.drop(columns="magnitude").reset_index(drop=True)

    def top(self, k: int = 5) -> list[Head]:
        """The k heads with the largest |effect|."""
        frame = self.ranking().head(k)
        return list(zip(frame["layer"].tolist(), frame["head"].tolist()))


def _finish(model: BertForPreTraining, hidden: Tensor, rows: list[int] | None = None) -> BertModelOutput:
    """The encoder's output as a whole pass returns it, from the last layer's `hidden` (at `rows` only if given)."""
    pooled = (model.bert.pooler(hidden) if model.bert.pooler is not None and (rows is None or rows[0] == 0)
              else None)
    return BertModelOutput(last_hidden_state=hidden, pooler_output=pooled)


def _ablation_effects(model: BertForPreTraining, encoding, target: Target, memory_budget: int | None,
                      report: Callable[[float], None] | None = None) -> tuple[float, np.ndarray]:
    """f with each head silenced in turn, one example per head. Layers before a head's own compute what they do on
    the plain input, so each example joins the batch at its head's layer, starting from the plain run's hidden state
    there: the batch grows as it goes down (12, 24, ... 72 for the default model), 252 example-layer passes
    instead of 72 x 6 = 432, in one call per layer. When the memory budget allows fewer examples at once, they go in
    consecutive groups, each growing the same way."""
    config = model.config
    n_layers, n_heads = config.num_hidden_layers, config.num_attention_heads
    encoder = model.bert.encoder
    plain = forward_ids(model, encoding, capture=("embeddings", "layer.*.output"))
    states = [plain.captured["embeddings"], *plain.layers("output")]  # (1, T, H) each: layer i's input at i
    f_input = float(target.value(model, plain)[0])
    read, local = target.reads()
    examples = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]  # in layer order
    batch = batch_size_for(config, len(encoding), False, memory_budget, len(examples))
    groups = [examples[lo:lo + batch] for lo in range(0, len(examples), batch)]

    def silenced_values(g: int, told: Callable[[float], None]) -> np.ndarray:
        group = groups[g]
        hidden = states[group[0][0]][:0]  # (0, T, H): nobody has joined yet
        for index in range(group[0][0], n_layers):
            joining = sum(layer == index for layer, _ in group)
            if joining:  # these examples start here, from the plain input of this layer
                hidden = torch.cat([hidden, states[index].expand(joining, -1, -1)])  # (n, T, H)
            mask = torch.ones(len(hidden), n_heads, device=hidden.device)  # (n, h)
            rows = [row for row, (layer, _) in enumerate(group) if layer == index]
            mask[rows, [group[row][1] for row in rows]] = 0.0  # each joining example silences its head here
            silence = Points(intervene={f"layer.{index}.attention.probs": Edit(factor=mask[:, :, None, None])})
            # ALBERT's shared weights, DeBERTa's positions; the last layer only where the target reads it
            hidden = encoder.apply_layer(index, hidden, None, silence, read if index == n_layers - 1 else None)
            told(len(hidden) / n_layers)  # in passes of the whole input: one layer of each example
        return local.value(model, _finish(model, hidden, read)).double().cpu().numpy()

    values = in_chunks(silenced_values, len(groups), report)
    return f_input, np.concatenate(values).reshape(n_layers, n_heads) - f_input


def ablation_passes(config) -> float:
    """The work of silencing every head in turn, in forward passes of the whole input: a head of layer l runs the
    layers from l on, L - l of L."""
    layers = config.num_hidden_layers
    return config.num_attention_heads * (layers + 1) / 2


def _gradient_effects(model: BertForPreTraining, encoding, target: Target) -> tuple[float, np.ndarray]:
    config = model.config
    with torch.inference_mode(False), torch.enable_grad():  # also under a caller's no_grad or inference_mode
        mask = torch.ones(config.num_hidden_layers, config.num_attention_heads, device=model.device,
                          requires_grad=True)
        value = target.value(model, forward_ids(model, encoding, head_mask=mask))[0]
        (grad,) = torch.autograd.grad(value, mask)  # (L, h) df/dm at m = 1
    return float(value.detach()), -grad.double().cpu().numpy()


def rank_heads(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, mask_index: int = 0,
               token: str | int | None = None, target: str | Target = "mask", method: str = "ablation",
               memory_budget: int | None = None, report: Callable[[float], None] | None = None) -> HeadRanking:
    """Every head ranked by its effect on log P(`token` at the `mask_index`-th [MASK]) (default: the top
    prediction), on the IsNext logit (target='is_next'), or on a fine-tuned head's `Target` (`model` the head
    model). method 'ablation' silences each head in turn (exact;
    batched, one forward pass per head from its own layer on); 'gradient' estimates all of them from one backward
    pass, a fast first pass. report: told the work done after each layer's call, in forward passes of the whole input
    (`ablation_passes` in all)."""
    if method not in RANKING_METHODS:
        raise ValueError(f"unknown method {method!r}; choose 'ablation' (silence each head: exact) or 'gradient' "
                         "(one backward pass: a first-order estimate)")
    resolved = target if isinstance(target, Target) else resolve_target(model, tokenizer, encoding, target,
                                                                        mask_index, token)
    with evaluating(model):
        if method == "gradient":
            f_input, effects = _gradient_effects(model, encoding, resolved)
        else:
            with torch.inference_mode():
                f_input, effects = _ablation_effects(model, encoding, resolved, memory_budget, report)
    return HeadRanking(list(encoding.labels), resolved, method, f_input, effects.astype(np.float32))
