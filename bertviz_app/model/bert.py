"""BERT in PyTorch, top to bottom in the order data flows through it.

embeddings (token + segment + position) -> N x [self-attention -> add & LayerNorm -> feed-forward -> add & LayerNorm]
-> pooler (tanh over [CLS]) -> heads (masked LM, next sentence, fine-tuning).

Attribute names follow the Hugging Face checkpoint keys (`embeddings.word_embeddings`, `encoder.layer.0.attention.self
.query`, `cls.predictions.transform.LayerNorm`, ...) so that checkpoints load with almost no renaming.

The BERT family is the same encoder with a few named differences, each read from the config (config.py):
- embeddings: no segment table (DistilBERT, DeBERTa: type_vocab_size 0), no absolute positions (DeBERTa v3),
  positions counted from an offset (RoBERTa), narrower tables projected up to the hidden size (ALBERT, ELECTRA);
- attention scores: DeBERTa adds content-to-position and position-to-content terms (`RelativePositions`); every
  layer names the additive terms of its scores (`BertSelfAttention.score_terms`: "q.k", "c2p", "p2c"), and what
  reads them above the model reads names, never a family;
- layer sharing: ALBERT applies a few layers' weights over and over (`BertEncoder.layer_module`);
- heads: ALBERT's sentence-order head sits where BERT's next-sentence head does, ELECTRA's discriminator
  (`ReplacedTokenHead`) says which tokens were replaced.
Checkpoint keys of each family are renamed into BERT's layout when loading (family.py), so the attribute names here
stay BERT's.

Beyond the usual outputs, every activation a method may read or change has a name (model/points.py: `POINTS`, the one
table): `capture={names}` returns them in `output.captured`, `intervene={name: edit}` changes them in the same pass
(head silencing, `head_mask`, is one such change). Word embeddings may be given directly (`inputs_embeds`), so that
integrated gradients can move along a path between two inputs. Unless attention scores or probabilities are asked for
or changed, attention runs through the fused `scaled_dot_product_attention` kernel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import BertConfig
from . import points as points_table
from .outputs import BertModelOutput, BertPreTrainingOutput
from .points import Edit, Intervention, Points, point

HEAD_POINTS = ("mlm.logits", "nsp.logits", "replaced.logits")  # what BertForPreTraining's heads add

ACTIVATIONS = {
    "gelu": F.gelu,  # exact (erf) GELU, as in the original BERT
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_fast": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": torch.tanh,
}



# ------------------------------------------------------------------------------------------------------------------
# Embeddings
# ------------------------------------------------------------------------------------------------------------------
class BertEmbeddings(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        width = config.embedding_width  # ALBERT, ELECTRA: narrower than hidden_size, projected up by BertModel
        self.word_embeddings = nn.Embedding(config.vocab_size, width, padding_idx=config.pad_token_id)
        self.position_embeddings = (nn.Embedding(config.max_position_embeddings, width)
                                    if config.position_biased_input else None)  # DeBERTa v3: relative only
        self.token_type_embeddings = (nn.Embedding(config.type_vocab_size, width)
                                      if config.type_vocab_size else None)  # DistilBERT, DeBERTa: no segments
        # Named LayerNorm, not layer_norm, because that is the checkpoint key.
        self.LayerNorm = nn.LayerNorm(width, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: Tensor | None, token_type_ids: Tensor, position_ids: Tensor, points: Points,
                inputs_embeds: Tensor | None = None) -> Tensor:
        """inputs_embeds (B, T, E) replaces the word-embedding look-up of input_ids (give one of the two); the segment
        and position embeddings are added to it as usual. Points: embeddings.token, .segment, .position."""
        token = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds  # (B, T, E)
        token = points.at("embeddings.token", token)
        total = token
        segment = position = None
        if self.position_embeddings is not None:
            position = self.position_embeddings(position_ids)  # (B or 1, T, E)
        if self.token_type_embeddings is not None:
            segment = self.token_type_embeddings(token_type_ids)  # (B, T, E)
        # BERT's order of addition (token + segment + position), so that its numbers stay bit for bit the same.
        for name, part in (("embeddings.segment", segment), ("embeddings.position", position)):
            if points.wants(name):  # a part the family does not have is zeros there, and adds nothing
                part = points.at(name, torch.zeros_like(token) if part is None else part.expand_as(token))
            if part is not None:
                total = total + part
        return self.dropout(self.LayerNorm(total))


# ------------------------------------------------------------------------------------------------------------------
# Self-attention
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class RelativePositions:
    """DeBERTa's relative positions for one input, shared by every layer.

    embeddings: (2 * span, H) relative position embeddings (LayerNorm-ed when the config says so)
    index: (T, T) long, row of `embeddings` for query i and key j: the (log-bucketed) distance i - j moved to
        0 .. 2 * span - 1"""

    embeddings: Tensor
    index: Tensor


def relative_position_index(T: int, config: BertConfig, device: torch.device) -> Tensor:
    """(T, T) rows of the relative embedding table for query i and key j (DeBERTa's build_relative_position)."""
    positions = torch.arange(T, device=device)
    relative = positions[:, None] - positions[None, :]  # (T, T) i - j
    buckets, limit = config.position_buckets, config.max_relative_positions
    if buckets > 0:
        limit = limit if limit > 0 else config.max_position_embeddings
        # Exact distances below half the buckets, then logarithmic steps up to `limit`, as DeBERTa does.
        mid = buckets // 2
        sign = torch.sign(relative)
        near = (relative < mid) & (relative > -mid)
        distance = torch.where(near, torch.tensor(mid - 1, device=device), relative.abs())
        log_pos = torch.ceil(torch.log(distance / mid) / torch.log(torch.tensor((limit - 1) / mid)) * (mid - 1)) + mid
        relative = torch.where(distance <= mid, relative.to(log_pos.dtype), log_pos * sign).long()
    span = config.relative_span
    return (relative + span).clamp(0, 2 * span - 1)  # (T, T)


class BertSelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.head_dim
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)
        # DeBERTa: each position term is one more dot product of the same size, so the scale grows with their number.
        self.position_terms = config.pos_att_type if config.relative_attention else ()
        self.scale = (self.head_dim * (1 + len(self.position_terms))) ** -0.5

    def _split_heads(self, x: Tensor) -> Tensor:
        *lead, T, _ = x.shape
        return x.view(*lead, T, self.num_heads, self.head_dim).transpose(-3, -2)  # (B, h, T, d), or (h, T, d)

    def position_projections(self, embeddings: Tensor) -> tuple[Tensor | None, Tensor | None]:
        """DeBERTa's relative position embeddings (2 span, H) through this layer's query and key projections, each
        (h, 2 span, d): what a content query meets (pos_k) and what a content key meets (pos_q); None for a term the
        config leaves out. They depend on the model only, not on the input."""
        pos_q = self._split_heads(self.query(embeddings)) if "p2c" in self.position_terms else None
        pos_k = self._split_heads(self.key(embeddings)) if "c2p" in self.position_terms else None
        return pos_q, pos_k

    def position_scores(self, q: Tensor, k: Tensor, rel: RelativePositions | None) -> dict[str, Tensor]:
        """DeBERTa's content-to-position "c2p" (query i with the embedding of distance i - j through the key
        projection) and position-to-content "p2c" (key j with that embedding through the query projection) terms,
        each (B, h, T, T) and scaled; only the terms the config has ({} for the rest of the family).
        q, k: (B, h, T, d)."""
        if rel is None or not self.position_terms:
            return {}
        B, h, T, _ = q.shape
        index = rel.index.expand(B, h, T, T)  # (B, h, T, T)
        terms = {}
        pos_q, pos_k = self.position_projections(rel.embeddings)  # (h, 2 span, d) each
        if pos_k is not None:
            terms["c2p"] = torch.gather(q @ pos_k.transpose(-1, -2), -1, index) * self.scale  # (B, h, T, T)
        if pos_q is not None:
            # by_key[b, h, j, r] = k_j . pos_q[r]; entry (i, j) wants r = index[i, j], gathered on the key's row.
            by_key = k @ pos_q.transpose(-1, -2)  # (B, h, T, 2 span)
            terms["p2c"] = torch.gather(by_key, -1, index.transpose(-1, -2)).transpose(-1, -2) * self.scale
        return terms

    def score_terms(self, q: Tensor, k: Tensor, rel: RelativePositions | None = None) -> dict[str, Tensor]:
        """This layer's pre-softmax scores as named additive terms, each (B, h, T, T) and already scaled: "q.k"
        (q_i·k_j times the scale) and whatever the family adds (`position_scores`). Their sum plus the padding bias
        is what the softmax sees; everything above the model (the Run, the views) reads these names and arrays,
        never a family's, so a member with another score adds its term here and nowhere else. q, k: (B, h, T, d),
        as the forward pass returns them."""
        return {"q.k": (q @ k.transpose(-1, -2)) * self.scale, **self.position_scores(q, k, rel)}

    def forward(self, hidden: Tensor, attention_bias: Tensor | None, points: Points, prefix: str,
                rel: RelativePositions | None = None, rows: list[int] | None = None) -> tuple[Tensor, Tensor]:
        """attention_bias: (B, 1, 1, T) additive, 0 for real tokens and a large negative number for padding.
        points: this pass's captures and interventions; prefix "layer.{i}.attention.".
        rel: DeBERTa's relative positions (None for the rest of the family).
        rows: the query positions to compute (None: all T); keys and values are always every position's.
        Returns each head's context (B, h, R, d), R = len(rows) or T, and the values (B, h, T, d)."""
        queries = hidden if rows is None else hidden[:, rows]
        q = points.at(prefix + "queries", self._split_heads(self.query(queries)))  # (B, h, R, d)
        k = points.at(prefix + "keys", self._split_heads(self.key(hidden)))  # (B, h, T, d)
        v = points.at(prefix + "values", self._split_heads(self.value(hidden)))  # (B, h, T, d)
        if any(name.startswith(prefix + "score.") for name in points.capture):
            for term, value in self.score_terms(q, k, rel).items():
                points.at(prefix + "score." + term, value)
        extra = self.position_scores(q, k, rel)  # the terms of score_terms beyond "q.k", which the kernel computes
        if extra:
            # The position terms do not depend on the softmax: they join the padding bias as one additive term, and
            # the fused kernel still runs.
            position = sum(extra.values())  # (B, h, T, T)
            attention_bias = position if attention_bias is None else position + attention_bias

        probs_edit = points.intervene.get(prefix + "probs")
        # A factor on whole heads' probabilities is the same factor on their contexts: the fused kernel still runs.
        head_factor = (isinstance(probs_edit, Edit) and probs_edit.scales_heads_only
                       and prefix + "probs" not in points.capture and not points.wants(prefix + "scores"))
        if points.wants(prefix + "scores") or points.wants(prefix + "probs") and not head_factor:
            # Scaled and masked in place on the fresh product: each extra (B, h, T, T) tensor costs a pass and an
            # allocation (the matmul's backward does not need its output, so training is unaffected).
            scores = (q @ k.transpose(-1, -2)).mul_(self.scale)  # (B, h, T, T)
            if attention_bias is not None:
                scores.add_(attention_bias)
            scores = points.at(prefix + "scores", scores)
            probs = points.at(prefix + "probs", scores.softmax(dim=-1))
            context = self.dropout(probs) @ v  # (B, h, T, d)
        else:
            context = F.scaled_dot_product_attention(
                q, k, v, attn_mask=attention_bias, dropout_p=self.dropout.p if self.training else 0.0,
                scale=self.scale)
            if head_factor:
                context = probs_edit.apply(context, point(prefix + "context"))
        return points.at(prefix + "context", context), v


class BertSelfOutput(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, context: Tensor, residual: Tensor, points: Points, name: str) -> Tensor:
        """context (B, T, H), the heads side by side; `name` the point of the projection, before the residual."""
        projected = points.at(name, self.dense(context))
        return self.LayerNorm(self.dropout(projected) + residual)  # post-LayerNorm, as in BERT


class BertAttention(nn.Module):
    # Two levels (attention.self, attention.output) mirror the checkpoint keys.
    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden: Tensor, attention_bias: Tensor | None, points: Points, prefix: str,
                rel: RelativePositions | None = None, rows: list[int] | None = None) -> Tensor:
        context, v = self.self(hidden, attention_bias, points, prefix, rel, rows)  # (B, h, R, d), (B, h, T, d)
        if prefix + "value_grams" in points.capture:
            points.at(prefix + "value_grams", self.value_grams(v))
        B, h, R, d = context.shape
        merged = context.transpose(1, 2).reshape(B, R, h * d)  # (B, R, H)
        return self.output(merged, hidden if rows is None else hidden[:, rows], points, prefix + "output")

    def value_grams(self, v: Tensor) -> Tensor:
        """(B, T, h, h) Gram matrix of each token's per-head transformed values, for value-weighted attention
        (Kobayashi et al. 2020). Head h's share of the attention output at position i is sum_j alpha^h_ij f_h(x_j),
        with f_h(x) = W_O[:, h] (W_V,h x + b_V,h): the value in head h carried through head h's d columns of the output
        projection. The norm of what token j sends to i is then alpha^h_ij ||f_h(x_j)|| in one head, and
        sqrt(alpha_ij^T G_j alpha_ij) summed over the heads, with G_j[h, g] = f_h(x_j) · f_g(x_j): the (h, h) Grams are
        all a view needs, not the (h, T, H) vectors. v: the values (B, h, T, d) the layer's forward pass computed."""
        h, d = v.shape[1], v.shape[3]
        w = self.output.dense.weight.view(-1, h, d)  # (H_out, h, d): the d input columns that belong to each head
        f = (v @ w.permute(1, 2, 0)).transpose(1, 2)  # (B, T, h, H_out) f_h(x_t)
        return f @ f.transpose(-1, -2)  # (B, T, h, h)


# ------------------------------------------------------------------------------------------------------------------
# Feed-forward, layer, encoder, pooler
# ------------------------------------------------------------------------------------------------------------------
class BertIntermediate(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACTIVATIONS[config.hidden_act]

    def forward(self, hidden: Tensor) -> Tensor:
        return self.act(self.dense(hidden))  # (B, T, intermediate)


class BertOutput(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, intermediate: Tensor, residual: Tensor, points: Points, name: str) -> Tensor:
        projected = points.at(name, self.dense(intermediate))
        return self.LayerNorm(self.dropout(projected) + residual)


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden: Tensor, attention_bias: Tensor | None, points: Points, index: int,
                rel: RelativePositions | None = None, rows: list[int] | None = None) -> Tensor:
        """Layer `index` (its points are named "layer.{index}...": ALBERT's shared weights serve several), at every
        position, or only at `rows` (then (B, len(rows), H)): a position's output needs every position's keys and
        values but only its own query and feed-forward."""
        prefix = f"layer.{index}."
        attended = points.at(prefix + "mid", self.attention(hidden, attention_bias, points, prefix + "attention.", rel,
                                                            rows))
        inner = points.at(prefix + "ffn.hidden", self.intermediate(attended))
        return points.at(prefix + "output", self.output(inner, attended, points, prefix + "ffn.output"))


class BertEncoder(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        # ALBERT: fewer weight sets than layers (config.weights_of_layer says which set each layer applies).
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_weight_layers))
        if config.relative_attention:  # DeBERTa: one table of relative position embeddings for every layer
            self.rel_embeddings = nn.Embedding(2 * config.relative_span, config.hidden_size)
            self.LayerNorm = (nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
                              if config.norm_rel_ebd else None)

    def layer_module(self, index: int) -> BertLayer:
        """The module that computes layer `index` (for ALBERT, the same module for several layers)."""
        return self.layer[self.config.weights_of_layer(index)]

    def relative_positions(self, T: int, device: torch.device) -> RelativePositions | None:
        """DeBERTa's relative positions for T tokens: only the rows of the table that their distances read (255 of
        512 at 128 tokens: each layer projects these rows twice, which cost as much as a fifth of a layer when all
        were projected); None for the rest of the family."""
        if not self.config.relative_attention:
            return None
        index = relative_position_index(T, self.config, device)  # (T, T)
        # The row grows with i - j: the first query with the last key reads the lowest, the last with the first the
        # highest, and the rows between are all read.
        low, high = int(index[0, -1]), int(index[-1, 0])
        table = self.rel_embeddings.weight[low:high + 1]  # (R', H)
        if self.LayerNorm is not None:
            table = self.LayerNorm(table)  # row by row: the same rows as LayerNorm-ing the whole table
        return RelativePositions(table, index - low)

    def apply_layer(self, index: int, hidden: Tensor, attention_bias: Tensor | None = None,
                    points: Points | None = None, rows: list[int] | None = None) -> Tensor:
        """Layer `index` alone on `hidden` (B, T, H), e.g. from a stored hidden state, with what it needs; `points`
        names its activations "layer.{index}..." as in a whole pass; rows: as in `forward`."""
        return self._layer(index, hidden, attention_bias, points or Points(),
                           self.relative_positions(hidden.shape[1], hidden.device), rows)

    def forward(self, hidden: Tensor, attention_bias: Tensor | None, points: Points,
                rows: list[int] | None = None) -> Tensor:
        """rows: the last layer's output only at these positions, (B, len(rows), H) (None: all)."""
        rel = self.relative_positions(hidden.shape[1], hidden.device)
        last = self.config.num_hidden_layers - 1
        for i in range(last + 1):
            hidden = self._layer(i, hidden, attention_bias, points, rel, rows if i == last else None)
        return hidden

    def _layer(self, index, hidden, attention_bias, points, rel, rows):
        if rows is not None and rel is not None:
            # DeBERTa's position terms are indexed by (query, key): computed whole, then the rows kept (no saving).
            return self.layer_module(index)(hidden, attention_bias, points, index, rel)[:, rows]
        return self.layer_module(index)(hidden, attention_bias, points, index, rel, rows)


class BertPooler(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden: Tensor) -> Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))  # (B, H), from the [CLS] token


# ------------------------------------------------------------------------------------------------------------------
# The encoder model
# ------------------------------------------------------------------------------------------------------------------
class BertPreTrainedModel(nn.Module):
    """Shared weight initialization (as in the original BERT: normal(0, 0.02), zero biases, unit LayerNorm)."""

    config: BertConfig

    def init_weights(self) -> None:
        if next(self.parameters()).is_meta:
            return  # a skeleton built on the meta device to check a checkpoint's shapes: no values to initialise
        std = self.config.initializer_range
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=std)
                if module.padding_idx is not None:
                    with torch.no_grad():
                        module.weight[module.padding_idx].zero_()
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, BertLMPredictionHead):
                nn.init.zeros_(module.bias)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def num_parameters(self) -> int:
        """Distinct parameters: the tied decoder is counted once."""
        return sum(p.numel() for p in self.parameters())


class BertModel(BertPreTrainedModel):
    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        # ALBERT, ELECTRA: narrow embeddings projected up to the hidden size (ELECTRA's key name; ALBERT's renamed).
        self.embeddings_project = nn.Linear(config.embedding_width, config.hidden_size) \
            if config.projects_embeddings else None
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self.init_weights()

    def point_names(self) -> list[str]:
        """Every named point of this model (model/points.py), in the order a pass makes them."""
        attention = self.encoder.layer_module(0).attention.self
        names = points_table.names(self.config.num_hidden_layers, ("q.k", *attention.position_terms))
        return [name for name in names if name not in HEAD_POINTS and (name != "pooler" or self.pooler is not None)]

    def points(self, capture: Iterable[str] = (), intervene: Mapping[str, Intervention] | None = None,
               head_mask: Tensor | None = None) -> Points:
        """One pass's points: `capture` names (with `*` for every layer) checked against this model, `intervene`
        names checked too, and `head_mask` (L, h) or (L, B, h) as the silencing interventions it stands for."""
        available = self.point_names() + list(HEAD_POINTS)
        wanted = points_table.expand(capture, available)
        edits = dict(intervene or {})
        for name in edits:
            if name not in available or points_table.point(name).derived:
                raise ValueError(f"{name!r} cannot be changed: it is not a point of this model, or one computed "
                                 "only to be read (score terms, value Grams, the padding bias)")
        if head_mask is not None:
            if head_mask.shape[0] != self.config.num_hidden_layers:
                raise ValueError(f"head_mask must have one row per layer ({self.config.num_hidden_layers}), "
                                 f"got shape {tuple(head_mask.shape)}")
            for name, edit in points_table.silence(head_mask).items():
                if name in edits:
                    raise ValueError(f"{name} has an intervention already; give head_mask or that, not both")
                edits[name] = edit
        return Points(wanted, edits)

    def forward(self, input_ids: Tensor | None = None, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None, position_ids: Tensor | None = None,
                head_mask: Tensor | None = None, inputs_embeds: Tensor | None = None,
                capture: Iterable[str] = (), intervene: Mapping[str, Intervention] | None = None,
                points: Points | None = None, rows: list[int] | None = None) -> BertModelOutput:
        """input_ids, token_type_ids, attention_mask: (B, T); attention_mask 1 for tokens, 0 for padding.
        head_mask: (L, h) or (L, B, h), 1 keeps a head and 0 silences it (any value scales it; differentiable): an
        intervention on each layer's attention probabilities.
        inputs_embeds: (B, T, E) word embeddings given directly instead of input_ids (segment and position embeddings
        are still added), e.g. points on an integrated-gradients path.
        capture: point names (model/points.py) returned in `output.captured`; intervene: {point name: Edit or
        function of the tensor}, applied in this pass; points: both at once, made by `self.points` (what the heads
        above the encoder share).
        rows: sorted positions, the only ones the last layer computes (what one prediction reads: a [MASK]'s, or
        [CLS] for the pooler), most of a layer's work saved; last_hidden_state is then (B, len(rows), H), and the
        pooler runs only when rows[0] is 0 ([CLS])."""
        if points is None:
            points = self.points(capture, intervene, head_mask)
        elif capture or intervene or head_mask is not None:
            raise ValueError("give points, or capture / intervene / head_mask, not both")
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("give either input_ids or inputs_embeds, not both and not neither")
        if inputs_embeds is not None:
            if inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != self.config.embedding_width:
                raise ValueError(f"inputs_embeds must have shape (batch, tokens, {self.config.embedding_width}), "
                                 f"got {tuple(inputs_embeds.shape)}")
            source, shape, device = "inputs_embeds' (batch, tokens)", inputs_embeds.shape[:2], inputs_embeds.device
        elif input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch, tokens), got {tuple(input_ids.shape)}")
        else:
            source, shape, device = "input_ids", input_ids.shape, input_ids.device
        B, T = shape
        for name, tensor in (("token_type_ids", token_type_ids), ("attention_mask", attention_mask)):
            if tensor is not None and tensor.shape != shape:
                raise ValueError(f"{name} must have the shape of {source} {tuple(shape)}, got {tuple(tensor.shape)}")
        if T > self.config.max_tokens:
            raise ValueError(f"the input has {T} tokens but this model accepts at most "
                             f"{self.config.max_tokens}; truncate it")
        if token_type_ids is None:
            token_type_ids = torch.zeros(shape, dtype=torch.long, device=device)
        if position_ids is None:
            position_ids = self._position_ids(input_ids, T, device)

        hidden = self.embeddings(input_ids, token_type_ids, position_ids, points, inputs_embeds=inputs_embeds)
        if self.embeddings_project is not None:
            hidden = self.embeddings_project(hidden)  # (B, T, H)
        hidden = points.at("embeddings", hidden)
        bias = None
        # A mask without padding changes nothing: skipping it saves a (B, h, T, T) addition per layer and lets the
        # fused kernel run unmasked. bool() costs one host sync per forward on CUDA.
        if attention_mask is not None and not bool(attention_mask.all()):
            # (B, 1, 1, T): broadcast over heads and query positions; padded keys get the most negative value.
            bias = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
        if "attention.bias" in points.capture:
            points.at("attention.bias", bias if bias is not None else hidden.new_zeros(B, 1, 1, T))
        hidden = self.encoder(hidden, bias, points, rows)
        pooled = (points.at("pooler", self.pooler(hidden))
                  if self.pooler is not None and (rows is None or rows[0] == 0) else None)
        return BertModelOutput(hidden, pooled, points.captured)

    def _position_ids(self, input_ids: Tensor | None, T: int, device: torch.device) -> Tensor:
        offset = self.config.position_offset
        if not offset or input_ids is None:
            return torch.arange(offset, offset + T, device=device).unsqueeze(0)  # (1, T)
        # RoBERTa: real tokens count up from pad_token_id + 1 and padding keeps pad_token_id, as transformers does.
        real = input_ids.ne(self.config.pad_token_id).long()  # (B, T)
        return torch.cumsum(real, dim=1) * real + self.config.pad_token_id  # (B, T)


# ------------------------------------------------------------------------------------------------------------------
# Pretraining heads
# ------------------------------------------------------------------------------------------------------------------
class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        # Down to the embedding width (ALBERT, ELECTRA), where the tied decoder reads from.
        self.dense = nn.Linear(config.hidden_size, config.embedding_width)
        self.act = ACTIVATIONS[config.head_act or config.hidden_act]
        self.LayerNorm = nn.LayerNorm(config.embedding_width, eps=config.layer_norm_eps)

    def forward(self, hidden: Tensor) -> Tensor:
        return self.LayerNorm(self.act(self.dense(hidden)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        # The decoder's weight is the word-embedding matrix (tied by the owner, unless config.tie_word_embeddings is
        # False); the bias is kept apart as `bias`, not `decoder.bias`, because that is the checkpoint key.
        self.decoder = nn.Linear(config.embedding_width, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: Tensor) -> Tensor:
        # One pass over the (..., vocab) logits: the bias goes in with the product.
        return F.linear(self.transform(hidden), self.decoder.weight, self.bias)  # (..., vocab)


class ReplacedTokenHead(nn.Module):
    """ELECTRA's discriminator: one logit per token that it was replaced by the generator."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]
        self.dense_prediction = nn.Linear(config.hidden_size, 1)

    def forward(self, hidden: Tensor) -> Tensor:
        return self.dense_prediction(self.act(self.dense(hidden))).squeeze(-1)  # (B, T)


class BertPreTrainingHeads(nn.Module):
    """Each head may be absent: a checkpoint without its weights gets None, never random noise. seq_relationship is
    BERT's next-sentence head or ALBERT's sentence-order head (the same shape, on the pooler); discriminator is
    ELECTRA's."""

    def __init__(self, config: BertConfig, mlm: bool = True, nsp: bool = True, replaced: bool = False):
        super().__init__()
        self.predictions = BertLMPredictionHead(config) if mlm else None
        self.seq_relationship = nn.Linear(config.hidden_size, 2) if nsp else None
        self.discriminator = ReplacedTokenHead(config) if replaced else None


class BertForPreTraining(BertPreTrainedModel):
    """BERT with its pretraining heads: masked LM over every position and next-sentence prediction from the pooler.

    `mlm_head`/`nsp_head`/`replaced_head` False builds the model without that head (as when a checkpoint lacks it);
    `has_mlm_head`, `has_nsp_head` and `has_replaced_head` tell the views which predictions are real."""

    def __init__(self, config: BertConfig, mlm_head: bool = True, nsp_head: bool = True, pooler: bool = True,
                 replaced_head: bool = False):
        super().__init__()
        if nsp_head and not pooler:
            raise ValueError("the next-sentence head reads the pooler output: it needs pooler=True")
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=pooler)
        self.cls = BertPreTrainingHeads(config, mlm=mlm_head, nsp=nsp_head, replaced=replaced_head)
        self.init_weights()
        self.tie_weights()

    def tie_weights(self) -> None:
        """Make the decoder weight the word-embedding tensor itself (unless config.tie_word_embeddings is False)."""
        if self.cls.predictions is not None and self.config.tie_word_embeddings:
            self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    @property
    def has_mlm_head(self) -> bool:
        return self.cls.predictions is not None

    @property
    def has_nsp_head(self) -> bool:
        return self.cls.seq_relationship is not None

    @property
    def has_replaced_head(self) -> bool:
        return self.cls.discriminator is not None

    def forward(self, input_ids: Tensor | None = None, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None, labels: Tensor | None = None,
                next_sentence_label: Tensor | None = None, **kwargs) -> BertPreTrainingOutput:
        """labels: (B, T) token ids to predict, -100 where there is nothing to predict.
        next_sentence_label: (B,), 0 when B follows A, 1 when B is random. Other keywords go to BertModel."""
        points = self.bert.points(kwargs.pop("capture", ()), kwargs.pop("intervene", None),
                                  kwargs.pop("head_mask", None))
        base = self.bert(input_ids, token_type_ids, attention_mask, points=points, **kwargs)
        out = BertPreTrainingOutput(**vars(base))
        if self.cls.predictions is not None:
            out.prediction_logits = points.at("mlm.logits", self.cls.predictions(base.last_hidden_state))
            if labels is not None:
                out.mlm_loss = F.cross_entropy(out.prediction_logits.flatten(0, 1).float(), labels.flatten(),
                                               ignore_index=-100)
        if self.cls.seq_relationship is not None:
            out.seq_relationship_logits = points.at("nsp.logits", self.cls.seq_relationship(base.pooler_output))
            if next_sentence_label is not None:
                out.nsp_loss = F.cross_entropy(out.seq_relationship_logits.float(), next_sentence_label.flatten())
        if self.cls.discriminator is not None:
            out.replaced_logits = points.at("replaced.logits", self.cls.discriminator(base.last_hidden_state))
        losses = [x for x in (out.mlm_loss, out.nsp_loss) if x is not None]
        out.loss = sum(losses) if losses else None
        return out
