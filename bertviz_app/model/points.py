"""The model's named points (TransformerLens' habit): every activation a method may read or change has one name, and a
forward pass takes `capture={names}` (returned in `output.captured`, a dict by name) and `intervene={name: edit}` (an
`Edit`, or any function of the tensor returning one of the same shape), applied where the activation is made, in the
same pass. `POINTS` is the one table of them; docs/ARCHITECTURE.md shows it.

Shapes: B batch, T tokens, H hidden size, E embedding width (H but for ALBERT and ELECTRA), h heads, d head size,
I feed-forward size, V vocabulary. `{i}` is a layer, 0 .. L-1 (ALBERT's shared weights still give one point per layer);
`*` in a capture name stands for any one part ("layer.*.attention.probs": every layer), and at the end for the rest
("layer.*.attention.score.*": every term)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Point:
    name: str
    shape: str
    meaning: str
    head_axis: int | None = None  # where `Edit.heads` selects
    position_axis: int | None = None  # where `Edit.positions` selects
    derived: bool = False  # computed only when captured; cannot be changed (nothing downstream reads it)


POINTS = (
    Point("embeddings.token", "(B, T, E)", "word-piece embeddings (or `inputs_embeds`)", None, 1),
    Point("embeddings.segment", "(B, T, E)", "segment embeddings; zeros for a family without segments", None, 1),
    Point("embeddings.position", "(B, T, E)", "absolute position embeddings; zeros for a family without them",
          None, 1),
    Point("embeddings", "(B, T, H)", "the three summed, LayerNorm-ed (and projected up where the family does): the "
          "input of layer 0", None, 1),
    Point("attention.bias", "(B, 1, 1, T)", "what padding adds to every score row (0 for tokens, the most negative "
          "float for padding keys); zeros when nothing is padded", derived=True),
    Point("layer.{i}.attention.queries", "(B, h, T, d)", "queries, before the score's scale", 1, 2),
    Point("layer.{i}.attention.keys", "(B, h, T, d)", "keys", 1, 2),
    Point("layer.{i}.attention.values", "(B, h, T, d)", "values", 1, 2),
    Point("layer.{i}.attention.score.{term}", "(B, h, T, T)", "one named additive term of the scores, scaled "
          "(\"q.k\"; DeBERTa's \"c2p\", \"p2c\")", 1, 2, derived=True),
    Point("layer.{i}.attention.scores", "(B, h, T, T)", "what the softmax sees: the terms' sum plus the padding bias",
          1, 2),
    Point("layer.{i}.attention.probs", "(B, h, T, T)", "attention probabilities; row = query", 1, 2),
    Point("layer.{i}.attention.context", "(B, h, T, d)", "each head's output (probs @ values), before the output "
          "projection", 1, 2),
    Point("layer.{i}.attention.value_grams", "(B, T, h, h)", "Gram matrices of what each token sends through each "
          "head (value-weighted attention)", 2, 1, derived=True),
    Point("layer.{i}.attention.output", "(B, T, H)", "the output projection of the heads' contexts, before the "
          "residual", None, 1),
    Point("layer.{i}.mid", "(B, T, H)", "the residual stream between attention and feed-forward (after add & "
          "LayerNorm)", None, 1),
    Point("layer.{i}.ffn.hidden", "(B, T, I)", "the feed-forward's inner activation", None, 1),
    Point("layer.{i}.ffn.output", "(B, T, H)", "the feed-forward's output, before the residual", None, 1),
    Point("layer.{i}.output", "(B, T, H)", "the layer's output (after add & LayerNorm): the next layer's input",
          None, 1),
    Point("pooler", "(B, H)", "tanh(dense([CLS])); absent without a pooler"),
    Point("mlm.logits", "(B, T, V)", "masked-LM logits (BertForPreTraining with an MLM head)", None, 1),
    Point("nsp.logits", "(B, 2)", "next-sentence (ALBERT: sentence-order) logits, index 0 = IsNext"),
    Point("replaced.logits", "(B, T)", "ELECTRA's replaced-token logits", None, 1),
)
_TEMPLATES = {p.name: p for p in POINTS}


def point(name: str) -> Point:
    """The table's row of a concrete name ("layer.3.attention.probs" -> "layer.{i}.attention.probs")."""
    parts = name.split(".")
    if len(parts) > 1 and parts[0] == "layer" and parts[1].isdigit():
        parts[1] = "{i}"
        if parts[2:4] == ["attention", "score"] and len(parts) > 4:
            parts[4:] = ["{term}"]
    found = _TEMPLATES.get(".".join(parts))
    if found is None:
        raise ValueError(f"{name!r} is not a point of the model; its points are: "
                         + ", ".join(p.name for p in POINTS))
    return found


def names(num_layers: int, terms: Sequence[str] = ("q.k",)) -> list[str]:
    """Every concrete point name of a model of `num_layers` layers whose scores have `terms`, in the pass's order."""
    out = []
    for p in POINTS:
        if "{i}" not in p.name:
            out.append(p.name)
            continue
        for i in range(num_layers):
            concrete = p.name.replace("{i}", str(i))
            out.extend(concrete.replace("{term}", t) for t in terms) if "{term}" in p.name else out.append(concrete)
    return out


def expand(patterns: Iterable[str], available: Sequence[str]) -> set[str]:
    """Capture names with `*` patterns expanded against `available`; a name that matches nothing is refused."""
    wanted = set()
    for pattern in patterns:
        found = [n for n in available if _matcher(pattern).fullmatch(n)] if "*" in pattern else \
            [pattern] if pattern in available else []
        if not found:
            point(pattern.replace("*", "0"))  # says what the points are when the name itself is wrong
            raise ValueError(f"{pattern!r} names no point of this model (a layer past its last, or a score term "
                             "it does not have)")
        wanted.update(found)
    return wanted


def _matcher(pattern: str) -> re.Pattern:
    """`*` is one dotted part ("layer.*.output" is not "layer.0.ffn.output"); a final `*` is the rest of the name
    ("layer.*.attention.score.*" takes "q.k")."""
    body = pattern[:-1] if pattern.endswith("*") else pattern
    return re.compile("[^.]+".join(map(re.escape, body.split("*"))) + (".*" if pattern.endswith("*") else ""))


@dataclass(frozen=True)
class Edit:
    """An intervention at a point: `value` replaces the activation (broadcast to its shape: a clean run's activation
    of batch 1 serves a whole batch), or `factor` multiplies it (0 silences); only at `heads` and `positions` when
    given (the point's head and position axes, see `POINTS`), everywhere else when not."""

    value: Tensor | None = None
    factor: float | Tensor | None = None
    heads: Sequence[int] | None = None
    positions: Sequence[int] | None = None

    def __post_init__(self):
        if (self.value is None) == (self.factor is None):
            raise ValueError("an Edit replaces (value) or scales (factor): give one of the two")

    def apply(self, x: Tensor, where: Point) -> Tensor:
        new = x * self.factor if self.value is None else self.value.to(x.dtype).expand_as(x)
        selected = None
        for chosen, axis, what in ((self.heads, where.head_axis, "heads"),
                                   (self.positions, where.position_axis, "positions")):
            if chosen is None:
                continue
            if axis is None:
                raise ValueError(f"{where.name} has no {what} to select")
            mask = torch.zeros(x.shape[axis], dtype=torch.bool, device=x.device)
            mask[list(chosen)] = True
            mask = mask.view([-1 if k == axis else 1 for k in range(x.dim())])
            selected = mask if selected is None else selected & mask
        return new if selected is None else torch.where(selected, new, x)

    @property
    def scales_heads_only(self) -> bool:
        """A factor on whole heads: on the attention probabilities it equals the same factor on the heads' contexts
        ((p * m) @ v == m * (p @ v)), so the fused kernel may still run."""
        return self.value is None and self.positions is None


Intervention = Edit | Callable[[Tensor], Tensor]


class Points:
    """One pass's captures and interventions. `at(name, x)` is called where activation `name` is made: it applies
    the intervention (if any), records the result (if captured) and returns it."""

    def __init__(self, capture: Iterable[str] = (), intervene: Mapping[str, Intervention] | None = None):
        self.capture = set(capture)
        self.intervene = dict(intervene or {})
        self.captured: dict[str, Tensor] = {}

    def wants(self, name: str) -> bool:
        return name in self.capture or name in self.intervene

    def at(self, name: str, x: Tensor) -> Tensor:
        edit = self.intervene.get(name)
        if edit is not None:
            x = edit.apply(x, point(name)) if isinstance(edit, Edit) else edit(x)
        if name in self.capture:
            self.captured[name] = x
        return x


def silence(head_mask: Tensor) -> dict[str, Edit]:
    """Head silencing as interventions: head_mask (L, h) or (L, B, h), 1 keeps a head and 0 silences it (any value
    scales it; differentiable), a factor on each layer's attention probabilities (transformers' head_mask)."""
    return {f"layer.{i}.attention.probs": Edit(factor=row.view(-1, row.shape[-1], 1, 1))  # (B|1, h, 1, 1)
            for i, row in enumerate(head_mask)}
