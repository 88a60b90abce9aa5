"""What the model returns: typed outputs with the shapes in their docstrings (model/bert.py computes them)."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

# ------------------------------------------------------------------------------------------------------------------
# Typed outputs
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class EmbeddingParts:
    """The three embeddings of each token before they are summed. All (B, T, E), E the embedding width (the hidden
    size but for ALBERT and ELECTRA). A family without segments or absolute positions has zeros there."""

    token: Tensor
    segment: Tensor
    position: Tensor

    @property
    def sum(self) -> Tensor:
        """The pre-LayerNorm embedding, exactly as the model computes it."""
        return self.token + self.segment + self.position


@dataclass
class BertModelOutput:
    """Shapes: B batch, T tokens, H hidden size, L layers, h heads, d = H / h.

    last_hidden_state: (B, T, H)
    pooler_output: (B, H); None for a model without a pooler
    hidden_states: L + 1 tensors (B, T, H), the embedding output first; with output_hidden_states
    attentions: L tensors (B, h, T, T), rows sum to 1 over unmasked keys; with output_attentions
    queries, keys: L tensors (B, h, T, d), before the 1/sqrt(d) scaling; with output_qk
    embedding_parts: token, segment and position embeddings; with output_embedding_parts
    value_grams: L tensors (B, T, h, h), entry [b, j, h, g] = f_h(x_j) · f_g(x_j), where f_h(x_j) is token j's value
        in head h carried through that head's columns of the attention output projection (its bias left out, as it
        belongs to no token); with output_value_grams. See `BertAttention.value_grams`.
    score_terms: L dicts, term name -> (B, h, T, T): each layer's pre-softmax scores as named additive terms, each
        already scaled ("q.k" for every member, DeBERTa's "c2p" and "p2c" beside it); with output_score_terms.
        softmax(sum of a layer's terms + score_bias) is its attention (before head_mask).
    score_bias: (B, 1, 1, T) what is added to every row's terms before the softmax: 0 for tokens, the most negative
        float for padding keys; None when nothing is padded (or score terms were not asked for).
    """

    last_hidden_state: Tensor
    pooler_output: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    attentions: tuple[Tensor, ...] | None = None
    queries: tuple[Tensor, ...] | None = None
    keys: tuple[Tensor, ...] | None = None
    embedding_parts: EmbeddingParts | None = None
    value_grams: tuple[Tensor, ...] | None = None
    score_terms: tuple[dict[str, Tensor], ...] | None = None
    score_bias: Tensor | None = None


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
