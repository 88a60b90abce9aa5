"""Why the model answers A and not B at a [MASK] (contrastive explanations, Yin & Neubig 2022): integrated gradients and
blank-out (attribution.py's own) of the logit difference logit(A) - logit(B) there, instead of log P(A). A token
scores high when it pushes A up *relative to* B: in "The keys to the cabinet [MASK]", "keys" for "are" over "is",
where log P("are") alone also credits everything that makes any verb likely."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .attribution import Attribution, BlankOut, Report, attribute, blank_out
from .model import BertForPreTraining
from .targets import Target, resolve_contrast
from .tokenizer import Encoding, Tokenizer


@dataclass
class Contrast:
    """Integrated gradients and blank-out of f = logit(answer) - logit(other) at one [MASK]. T tokens.

    integrated_gradients.scores sum to f(x) - f(baseline) within `relative_delta`; blank_out.scores[i] is f(x) minus
    f with token i blanked. Positive: the token favours `answer` over `other`."""

    tokens: list[str]
    target: Target
    integrated_gradients: Attribution
    blank_out: BlankOut

    @property
    def value(self) -> float:
        """f(x), the logit difference on the input."""
        return self.integrated_gradients.f_input

    @property
    def preference(self) -> float:
        """P(answer) / (P(answer) + P(other)): how much the model prefers the answer between the two."""
        return self.target.probability(self.value)

    def describe(self) -> str:
        ig = self.integrated_gradients
        return (f"{self.target.describe()} = {self.value:+.3f} (P({self.target.token!r} among the two) = "
                f"{self.preference:.1%}); integrated gradients add up to f(x) - f(baseline) = "
                f"{ig.f_input - ig.f_baseline:+.3f} within {ig.relative_delta:.1%}")

    def to_frame(self) -> pd.DataFrame:
        """position, token, integrated gradients, blank-out, fixed ([CLS], [SEP] and the [MASK]s, score 0)."""
        return pd.DataFrame({"position": np.arange(len(self.tokens)), "token": self.tokens,
                             "integrated gradients": self.integrated_gradients.scores,
                             "blank-out": self.blank_out.scores, "fixed": self.integrated_gradients.fixed})

    def scores(self) -> dict[str, np.ndarray]:
        return {"integrated gradients": self.integrated_gradients.scores, "blank-out": self.blank_out.scores}


def contrast(model: BertForPreTraining, tokenizer: Tokenizer, encoding: Encoding, answer: str | int, other: str | int,
             mask_index: int = 0, steps: int = 50, baseline: str = "pad", method: str = "gauss-legendre",
             memory_budget: int | None = None, report: Report | None = None) -> Contrast:
    """Why `answer` and not `other` at the `mask_index`-th [MASK] (each a word piece of the vocabulary or an id):
    integrated gradients (`steps` path points from the `baseline` embeddings) and blank-out of their logit difference,
    as attribution.attribute and attribution.blank_out compute them for log P."""
    target = resolve_contrast(model, tokenizer, encoding, answer, other, mask_index)
    ig = attribute(model, tokenizer, encoding, steps=steps, baseline=baseline, target=target, method=method,
                   memory_budget=memory_budget, report=report)
    blank = blank_out(model, tokenizer, encoding, baseline=baseline, target=target, memory_budget=memory_budget,
                      report=report)
    return Contrast(list(encoding.labels), target, ig, blank)
