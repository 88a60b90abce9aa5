"""Which input tokens a prediction depends on, measured on the prediction itself rather than read off attention:
integrated gradients on the word embeddings (Sundararajan et al. 2017) and blank-out (leave one token out), for the
log-probability of a token at a [MASK] or the IsNext logit; and a faithfulness table that sets attention, rollout and
value-weighted attention beside them. Functions of (model, tokenizer, encoding) like masked_lm.py.

Integrated gradients of f along the straight path from a baseline x' to the input x gives token i the score
sum_k (x_ik - x'_ik) * integral_0^1 df/dx_ik(x' + a (x - x')) da, summed over the hidden dimensions k. The scores add up
to f(x) - f(x') ("completeness"); how far the numerical integral misses that, the convergence delta, is reported with
every result. The integral is a Gauss-Legendre rule by default, chosen by measuring that delta on the default model
against the trapezoid rule (docs/ARCHITECTURE.md, "Measured")."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from . import analysis
from .analysis.faithfulness import faithfulness_table, spearman
from .analysis.value_weighted import value_weighted_attention
from .masked_lm import evaluating, mask_positions
from .model import BertForPreTraining
from .spare_cores import in_chunks
from .targets import Target, batch_size_for, forward_ids, resolve_target
from .tokenizer import Encoding, Tokenizer

METHODS = ("gauss-legendre", "trapezoid")
BASELINES = ("pad", "mask", "zero")
# A path point costs a forward and a backward pass, the backward about twice the forward: three forward passes.
PASSES_PER_STEP = 3
Report = Callable[[float], None]  # told the work just done, in forward passes of the whole input


# ------------------------------------------------------------------------------------------------------------------
# Integrated gradients on tensors
# ------------------------------------------------------------------------------------------------------------------
def integration_points(steps: int, method: str = "gauss-legendre") -> tuple[np.ndarray, np.ndarray]:
    """(alphas (steps,), weights (steps,)) with sum_k weights[k] g(alphas[k]) ~ integral_0^1 g(a) da.

    gauss-legendre: the Legendre nodes mapped onto (0, 1), exact for polynomials of degree < 2 x steps;
    trapezoid: `steps` evenly spaced points from 0 to 1, both ends included, the ends weighted by half."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if method == "gauss-legendre":
        nodes, weights = np.polynomial.legendre.leggauss(steps)  # on (-1, 1)
        return (nodes + 1.0) / 2.0, weights / 2.0
    if method == "trapezoid":
        if steps < 2:
            raise ValueError("the trapezoid rule needs at least 2 steps (both ends of the path)")
        weights = np.full(steps, 1.0 / (steps - 1))
        weights[[0, -1]] /= 2.0
        return np.linspace(0.0, 1.0, steps), weights
    raise ValueError(f"unknown integration method {method!r}; choose one of {', '.join(METHODS)}")


@dataclass
class IntegratedGradients:
    """scores: (T,) per position (summed over the hidden dimensions); f_input, f_baseline: f(x), f(x');
    delta: sum(scores) - (f_input - f_baseline), the convergence error of the integral; batch_size: path points per
    forward/backward pass."""

    scores: np.ndarray
    f_input: float
    f_baseline: float
    delta: float
    steps: int
    method: str
    batch_size: int

    @property
    def relative_delta(self) -> float:
        """|delta| / |f(x) - f(x')|: 0.05 means the scores account for f(x) - f(x') within 5%."""
        gap = abs(self.f_input - self.f_baseline)
        return abs(self.delta) / gap if gap > 0 else (0.0 if self.delta == 0 else float("inf"))


def integrated_gradients(function: Callable[[Tensor], Tensor], inputs: Tensor, baseline: Tensor, steps: int = 50,
                         method: str = "gauss-legendre", batch_size: int = 16,
                         report: Report | None = None) -> IntegratedGradients:
    """Integrated gradients of `function` ((n, T, H) -> (n,), one value per example) from `baseline` to `inputs`,
    both (T, H), with `steps` path points evaluated `batch_size` at a time (so memory stays bounded whatever the
    number of steps). Gradients are taken with respect to the path points only, never the model's weights.
    report: called with the passes done after each batch (`PASSES_PER_STEP` per path point)."""
    if inputs.shape != baseline.shape or inputs.dim() != 2:
        raise ValueError(f"inputs and baseline must both be (tokens, hidden); got {tuple(inputs.shape)} and "
                         f"{tuple(baseline.shape)}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    alphas, weights = integration_points(steps, method)
    # Gradients are needed even when the caller runs under no_grad or inference_mode (an app handler may).
    with torch.inference_mode(False), torch.enable_grad():
        inputs, baseline = inputs.detach().clone(), baseline.detach().clone()  # not inference tensors
        step = inputs - baseline  # (T, H)
        starts = range(0, steps, batch_size)

        def weighted_gradients(k: int, told: Report) -> Tensor:  # (T, H): one batch's points, gradients weighted
            a = torch.tensor(alphas[starts[k]:starts[k] + batch_size], dtype=inputs.dtype, device=inputs.device)
            w = torch.tensor(weights[starts[k]:starts[k] + batch_size], dtype=torch.float64, device=inputs.device)
            points = (baseline + a[:, None, None] * step).requires_grad_(True)  # (n, T, H)
            values = function(points)  # (n,)
            (grads,) = torch.autograd.grad(values.sum(), points)  # (n, T, H); examples are independent
            told(PASSES_PER_STEP * len(a))
            return torch.einsum("n,nth->th", w, grads.double())

        total = torch.zeros_like(inputs, dtype=torch.float64)  # (T, H) weighted sum of gradients
        for part in in_chunks(weighted_gradients, len(starts), report):  # summed in the batches' order
            total += part
        with torch.no_grad():
            ends = function(torch.stack([inputs, baseline])).double()  # (2,)
        scores = (step.double() * total).sum(-1)  # (T,)
    f_input, f_baseline = float(ends[0]), float(ends[1])
    return IntegratedGradients(scores.cpu().numpy(), f_input, f_baseline,
                               float(scores.sum()) - (f_input - f_baseline), steps, method, batch_size)


# ------------------------------------------------------------------------------------------------------------------
# On text
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class Attribution:
    """Integrated gradients of a target on one input. T tokens.

    tokens: (T,); scores: (T,) signed, positive where the token raises the target; fixed: (T,) bool, the positions
    kept as they are in the baseline ([CLS], [SEP] and every [MASK]), whose score is 0; target: what f is
    (`describe()` says it in words); f_input, f_baseline: f(x) and f(x'); delta: sum(scores) - (f_input - f_baseline),
    relative_delta: |delta| / |f_input - f_baseline|; baseline: 'pad', 'mask' or 'zero'."""

    tokens: list[str]
    scores: np.ndarray
    fixed: np.ndarray
    target: Target
    f_input: float
    f_baseline: float
    delta: float
    relative_delta: float
    steps: int
    method: str
    baseline: str
    batch_size: int

    def to_frame(self) -> pd.DataFrame:
        """position, token, score, share (score / sum of |scores|), fixed."""
        total = float(np.abs(self.scores).sum()) or 1.0
        return pd.DataFrame({"position": np.arange(len(self.tokens)), "token": self.tokens, "score": self.scores,
                             "share": self.scores / total, "fixed": self.fixed})


@dataclass
class BlankOut:
    """Leave-one-token-out importance of a target: scores[i] = f(x) - f(x with token i blanked), the blank being
    the baseline's word embedding ([PAD] by default), positions unchanged. Positive where removing the token lowers
    the target. T tokens.

    tokens: (T,); scores: (T,); values: (T,) f with each token blanked (f_input at fixed positions); fixed: (T,)
    positions never blanked ([CLS], [SEP], [MASK]), score 0.
    spans: None when each token was blanked alone; for a long input blanked in runs of whole words (`max_passes`),
    the positions of each run, every one of them given the run's score and value."""

    tokens: list[str]
    scores: np.ndarray
    values: np.ndarray
    fixed: np.ndarray
    target: Target
    f_input: float
    baseline: str
    spans: list[list[int]] | None = None

    @property
    def pieces_per_span(self) -> float:
        """Word pieces blanked at once, on average (1 when each was blanked alone)."""
        return 1.0 if not self.spans else sum(map(len, self.spans)) / len(self.spans)

    def to_frame(self) -> pd.DataFrame:
        """position, token, score, value_blanked, fixed, and span (the run each position was blanked with, -1 for
        a fixed position) when the input was blanked in runs."""
        frame = pd.DataFrame({"position": np.arange(len(self.tokens)), "token": self.tokens, "score": self.scores,
                              "value_blanked": self.values, "fixed": self.fixed})
        if self.spans is not None:
            span = np.full(len(self.tokens), -1)
            for k, positions in enumerate(self.spans):
                span[positions] = k
            frame["span"] = span
        return frame


def _fixed_positions(tokenizer: Tokenizer, encoding: Encoding) -> np.ndarray:
    fixed = np.asarray(encoding.special_tokens_mask, dtype=bool).copy()
    fixed[mask_positions(tokenizer, encoding)] = True
    return fixed


def _embeddings_and_baseline(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding,
                             baseline: str, fixed: np.ndarray) -> tuple[Tensor, Tensor]:
    """(T, H) word embeddings of the input, and of the baseline: `baseline`'s embedding wherever not `fixed`."""
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline {baseline!r}; choose 'pad' (the [PAD] embedding), 'mask' (the [MASK] "
                         "embedding) or 'zero' (a zero vector)")
    table = model.bert.embeddings.word_embeddings.weight
    with torch.no_grad():
        inputs = table[torch.tensor(encoding.ids, device=table.device)].clone()  # (T, H)
        if baseline == "zero":
            blank = torch.zeros_like(inputs[0])
        else:
            blank_id = tokenizer.pad_token_id if baseline == "pad" else tokenizer.mask_token_id
            if blank_id is None:
                raise ValueError(f"the tokenizer has no [{baseline.upper()}] token; use baseline='zero'")
            blank = table[blank_id]
        reference = inputs.clone()
        reference[torch.as_tensor(~fixed, device=table.device)] = blank
    return inputs, reference


def _target_function(model: BertForPreTraining, encoding: Encoding, target: Target) -> Callable[[Tensor], Tensor]:
    types = torch.tensor([encoding.segment_ids], device=model.device)  # (1, T)
    rows, local = target.reads()  # the last layer only where the target reads it

    def function(embeds: Tensor) -> Tensor:  # (n, T, H) -> (n,)
        out = model.bert(inputs_embeds=embeds, token_type_ids=types.expand(len(embeds), -1), rows=rows)
        return local.value(model, out)

    return function


def _prepare(model, tokenizer, encoding, target, mask_index, token):
    # A Target already pinned down (a fine-tuned head's, see a finetuning task's explain) is taken as it is.
    resolved = target if isinstance(target, Target) else resolve_target(model, tokenizer, encoding, target,
                                                                        mask_index, token)
    return resolved, _fixed_positions(tokenizer, encoding)


def attribute(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, mask_index: int = 0,
              token: str | int | None = None, steps: int = 50, baseline: str = "pad", target: str | Target = "mask",
              method: str = "gauss-legendre", memory_budget: int | None = None,
              report: Report | None = None) -> Attribution:
    """Integrated gradients on the word embeddings for log P(`token` at the `mask_index`-th [MASK]) (token: a word
    piece or id; default the model's top prediction there), or with target='is_next' for the IsNext logit of a
    sentence pair, or a `Target` of a fine-tuned head (then `model` is the head model). One score per input token;
    [CLS], [SEP] and the [MASK]s are kept in the baseline (score 0).

    steps: path points (50 keeps the convergence delta within a few percent of |f(x) - f(x')| on the default model);
    baseline: 'pad', 'mask' or 'zero' word embeddings in place of every other token; method: 'gauss-legendre' or
    'trapezoid'; memory_budget: bytes of activations per batch of path points (default 512 MiB: three points at a
    time for a 512-token input on the default model, one for BERT-base; see targets.example_bytes)."""
    resolved, fixed = _prepare(model, tokenizer, encoding, target, mask_index, token)
    integration_points(steps, method)  # validate before any work
    batch = batch_size_for(model.config, len(encoding), True, memory_budget, steps)
    # Out of a caller's inference mode: tensors made in it cannot take part in the backward pass.
    with evaluating(model), torch.inference_mode(False):
        inputs, reference = _embeddings_and_baseline(model, tokenizer, encoding, baseline, fixed)
        result = integrated_gradients(_target_function(model, encoding, resolved), inputs, reference, steps,
                                      method, batch, report)
    scores = np.where(fixed, 0.0, result.scores)  # exactly 0 where input and baseline agree
    return Attribution(list(encoding.labels), scores, fixed, resolved, result.f_input, result.f_baseline,
                       result.delta, result.relative_delta, steps, method, baseline, batch)


def blank_out_spans(encoding: Encoding, fixed: np.ndarray, max_passes: int | None = None) -> list[list[int]]:
    """The positions blank-out blanks together, one pass each: every position not `fixed` alone while there are at
    most `max_passes` of them (None: no bound); beyond, runs of whole consecutive words of the fewest pieces that keep
    the runs to `max_passes`, a run never reaching across a fixed position ([SEP], a [MASK]; so never fewer runs than
    the stretches between those) and a word longer than the others a run of its own."""
    varied = [int(i) for i in np.flatnonzero(~fixed)]
    if max_passes is not None and (isinstance(max_passes, bool) or not isinstance(max_passes, int) or max_passes < 1):
        raise ValueError(f"max_passes must be a positive integer or None, got {max_passes!r}")
    if max_passes is None or len(varied) <= max_passes:
        return [[i] for i in varied]
    words: list[list[int]] = []  # the varied positions word by word; a fixed position ends a word
    for i in varied:
        if words and words[-1][-1] == i - 1 and encoding.word_ids[i] == encoding.word_ids[i - 1]:
            words[-1].append(i)
        else:
            words.append([i])
    size = -(-len(varied) // max_passes)
    while True:
        spans: list[list[int]] = []
        for word in words:
            if spans and spans[-1][-1] == word[0] - 1 and len(spans[-1]) + len(word) <= size:
                spans[-1].extend(word)
            else:
                spans.append(list(word))
        if len(spans) <= max_passes or size >= len(varied):
            return spans
        size += 1


def blank_out(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, mask_index: int = 0,
              token: str | int | None = None, baseline: str = "pad", target: str = "mask",
              memory_budget: int | None = None, report: Report | None = None,
              max_passes: int | None = None) -> BlankOut:
    """Blank-out importance for the same targets as `attribute`: each token but [CLS], [SEP] and the [MASK]s in
    turn replaced by the baseline embedding, one forward pass per token, batched. max_passes: a bound on those
    passes for a long input, which is then blanked in runs of whole words (`blank_out_spans`; `BlankOut.spans`)."""
    resolved, fixed = _prepare(model, tokenizer, encoding, target, mask_index, token)
    inputs, reference = _embeddings_and_baseline(model, tokenizer, encoding, baseline, fixed)
    spans = blank_out_spans(encoding, fixed, max_passes)
    function = _target_function(model, encoding, resolved)
    batch = batch_size_for(model.config, len(encoding), False, memory_budget, max(1, len(spans)))
    chunks = [spans[start:start + batch] for start in range(0, len(spans), batch)]

    def blanked_values(k: int, told: Report) -> np.ndarray:
        where = torch.zeros(len(chunks[k]), len(encoding), 1, dtype=torch.bool, device=inputs.device)  # (n, T, 1)
        for row, positions in enumerate(chunks[k]):
            where[row, positions] = True
        values = function(torch.where(where, reference, inputs)).double().cpu().numpy()  # (n,)
        told(len(chunks[k]))
        return values

    with evaluating(model), torch.inference_mode():
        f_input = float(function(inputs[None])[0])
        values = in_chunks(blanked_values, len(chunks), report)
    value = np.full(len(encoding), f_input)
    for positions, v in zip(spans, np.concatenate(values) if values else []):
        value[positions] = v
    one_each = all(len(positions) == 1 for positions in spans)
    return BlankOut(list(encoding.labels), f_input - value, value, fixed, resolved, f_input, baseline,
                    None if one_each else spans)


# ------------------------------------------------------------------------------------------------------------------
# Faithfulness: attention against what the prediction depends on
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class Faithfulness:
    """How well attention-based scores rank the tokens a prediction depends on. T tokens.

    measures: name -> (T,) attention-based score of each token, read from the row of the target's position (the
        [MASK], or [CLS] for IsNext): raw attention of the last layer (mean over its heads), raw attention averaged
        over every layer and head, rollout through all layers, value-weighted attention of the last layer (summed
        over heads)
    references: name -> (T,) |integrated gradients| and |blank-out| scores (importance regardless of sign)
    table: Spearman correlation of each measure (rows) with each reference (columns), over the `keep` tokens (the
        words: not [CLS], [SEP] or a [MASK]); agreement: Spearman of the two references with each other, a point
        of comparison (two methods that measure the prediction itself need not agree either)
    """

    tokens: list[str]
    target: Target
    measures: dict[str, np.ndarray]
    references: dict[str, np.ndarray]
    keep: np.ndarray
    table: pd.DataFrame
    agreement: float
    attribution: Attribution
    blank_out: BlankOut


def faithfulness_passes(tokenizer: Tokenizer, encoding: Encoding, steps: int,
                        max_passes: int | None = None) -> float:
    """The work of `faithfulness` in forward passes of the whole input, as its `report` counts them: the path points
    of integrated gradients and one pass per blank-out (`blank_out_spans`; the few passes of the ends and targets
    left out)."""
    return PASSES_PER_STEP * steps + blank_out_passes(tokenizer, encoding, max_passes)


def blank_out_passes(tokenizer: Tokenizer, encoding: Encoding, max_passes: int | None = None) -> int:
    """The passes of `blank_out`: one per token blanked, or per run of words when `max_passes` bounds them."""
    return len(blank_out_spans(encoding, _fixed_positions(tokenizer, encoding), max_passes))


def seconds_per_pass(model: BertForPreTraining, encoding: Encoding, batch: int = 4) -> float:
    """What one forward pass of `encoding` takes on this machine now, the unit of `faithfulness_passes` and
    ablation.ablation_passes: measured on a batch, as the work runs (a pass alone costs several times more per
    example on a busy machine, and a Run's own time may include a first pass's one-off tracing)."""
    ids = torch.tensor([encoding.ids] * batch, device=model.device)  # (batch, T)
    with evaluating(model), torch.inference_mode():
        start = time.perf_counter()
        model.bert(ids, torch.tensor([encoding.segment_ids] * batch, device=model.device))
        return (time.perf_counter() - start) / batch


def attention_measures(attentions: np.ndarray, value_grams: np.ndarray, position: int) -> dict[str, np.ndarray]:
    """The attention-based token scores of the faithfulness table, from row `position`. attentions: (L, h, T, T);
    value_grams: (L, T, h, h)."""
    last = attentions.shape[0] - 1
    return {
        "attention, last layer": attentions[last].mean(axis=0)[position],
        "attention, mean of all layers": attentions.mean(axis=(0, 1))[position],
        "rollout": analysis.attention_rollout(attentions)[last][position],
        "value-weighted, last layer": value_weighted_attention(attentions, value_grams, last)[position],
    }


def faithfulness(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, mask_index: int = 0,
                 token: str | int | None = None, steps: int = 50, baseline: str = "pad", target: str = "mask",
                 memory_budget: int | None = None, report: Report | None = None,
                 max_passes: int | None = None) -> Faithfulness:
    """The faithfulness panel for one input and target: attention, rollout and value-weighted attention against
    integrated gradients and blank-out (arguments as in `attribute`; max_passes bounds blank-out's, as in
    `blank_out`; its passes: `faithfulness_passes`)."""
    ig = attribute(model, tokenizer, encoding, mask_index, token, steps, baseline, target,
                   memory_budget=memory_budget, report=report)
    # The same token as the attribution explains, even when the caller left it to the top prediction.
    token_id = ig.target.token_id if ig.target.kind == "mask" else None
    blank = blank_out(model, tokenizer, encoding, mask_index, token_id, baseline, target, memory_budget, report,
                      max_passes)
    with evaluating(model), torch.inference_mode():
        out = forward_ids(model, encoding, capture=("layer.*.attention.probs", "layer.*.attention.value_grams"))
        attentions = torch.stack([a[0] for a in out.layers("attention.probs")]).float().cpu().numpy()  # (L, h, T, T)
        grams = torch.stack([g[0] for g in out.layers("attention.value_grams")]).float().cpu().numpy()  # (L, T, h, h)
    measures = attention_measures(attentions, grams, ig.target.position)
    references = {"integrated gradients": np.abs(ig.scores), "blank-out": np.abs(blank.scores)}
    keep = ~ig.fixed
    table = faithfulness_table(measures, references, keep)
    return Faithfulness(list(encoding.labels), ig.target, measures, references, keep, table,
                        spearman(references["integrated gradients"][keep], references["blank-out"][keep]), ig, blank)
