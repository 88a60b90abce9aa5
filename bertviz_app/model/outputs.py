"""What the model returns: typed outputs with the shapes in their docstrings (model/bert.py computes them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

# ------------------------------------------------------------------------------------------------------------------
# Typed outputs
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class BertModelOutput:
    """Shapes: B batch, T tokens, H hidden size.

    last_hidden_state: (B, T, H)
    pooler_output: (B, H); None for a model without a pooler
    captured: point name -> tensor, what `capture` asked for (model/points.py lists the names and shapes)
    """

    last_hidden_state: Tensor
    pooler_output: Tensor | None = None
    captured: dict[str, Tensor] = field(default_factory=dict)

    def layers(self, point: str) -> tuple[Tensor, ...]:
        """The captured "layer.{i}.<point>" of every layer, in order: `out.layers("attention.probs")`."""
        found, i = [], 0
        while f"layer.{i}.{point}" in self.captured:
            found.append(self.captured[f"layer.{i}.{point}"])
            i += 1
        if not found:
            raise KeyError(f"layer.*.{point} was not captured; pass capture={{'layer.*.{point}'}}")
        return tuple(found)

    def score_terms(self, layer: int) -> dict[str, Tensor]:
        """Layer `layer`'s captured score terms, name -> (B, h, T, T), in the model's order ("q.k" first)."""
        prefix = f"layer.{layer}.attention.score."
        return {name[len(prefix):]: x for name, x in self.captured.items() if name.startswith(prefix)}


@dataclass
class BertPreTrainingOutput(BertModelOutput):
    """prediction_logits: (B, T, vocab), None without an MLM head; seq_relationship_logits: (B, 2), index 0 = IsNext
    (for ALBERT's sentence-order head: index 0 = in order), None without such a head; loss = mlm_loss + nsp_loss when labels are given."""

    prediction_logits: Tensor | None = None
    seq_relationship_logits: Tensor | None = None
    replaced_logits: Tensor | None = None  # (B, T) ELECTRA: logit that each token was replaced
    loss: Tensor | None = None
    mlm_loss: Tensor | None = None
    nsp_loss: Tensor | None = None


@dataclass
class ClassifierOutput(BertModelOutput):
    """logits: (B, num_labels) for sequences, (B, T, num_labels) for tokens."""

    logits: Tensor | None = None
    loss: Tensor | None = None


@dataclass
class QuestionAnsweringOutput(BertModelOutput):
    """start_logits, end_logits: (B, T)."""

    start_logits: Tensor | None = None
    end_logits: Tensor | None = None
    loss: Tensor | None = None
