"""Value zeroing (Mohebbi et al. 2023), a context-mixing measure made for encoders: in layer l, token j's value vector
is zeroed in every head (`layer.{l}.attention.values` at position j) and the layer is run again from its own input; how
far each token i's output moves (cosine distance to its output in the plain pass) is how much i drew on j there. Rows
are normalized to sum to 1. One batch of T examples per layer, each zeroing its own token, from the captured input."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from ..masked_lm import evaluating
from ..model import BertForPreTraining, Points
from ..tokenizer import Encoding


@torch.inference_mode()
def value_zeroing(model: BertForPreTraining, encoding: Encoding) -> np.ndarray:
    """(L, T, T) float64: row i of layer l, how much token i's output of layer l changes when each token j's value is
    zeroed (cosine distance), normalized to sum to 1 over j."""
    device = model.device
    ids = torch.tensor([encoding.ids], device=device)
    segments = torch.tensor([encoding.segment_ids], device=device)
    L, T = model.config.num_hidden_layers, len(encoding)
    encoder = model.bert.encoder
    with evaluating(model):
        captured = model.bert(ids, segments, capture=("embeddings", "layer.*.output")).captured
        states = [captured["embeddings"], *(captured[f"layer.{i}.output"] for i in range(L))]  # (1, T, H) each
        rows = torch.arange(T, device=device)
        matrices = []
        for layer in range(L):
            zeroed = Points(intervene={f"layer.{layer}.attention.values": _zero_own_token(rows)})
            out = encoder.apply_layer(layer, states[layer].expand(T, -1, -1), None, zeroed)  # (T: zeroed j, T: i, H)
            distance = 1 - torch.nn.functional.cosine_similarity(out.double(), states[layer + 1].double(), dim=-1)
            matrices.append(distance.T)  # (i, j)
    change = torch.stack(matrices).clamp_min(0).cpu().numpy()  # (L, T, T)
    return change / change.sum(-1, keepdims=True)


def _zero_own_token(rows: Tensor):
    def edit(values: Tensor) -> Tensor:  # (T examples, h, T, d): example j zeroes token j's value
        values = values.clone()
        values[rows, :, rows] = 0
        return values

    return edit


def aggregate(matrices: np.ndarray) -> np.ndarray:
    """(L, T, T) the per-layer matrices multiplied down the layers (layer l's times the product below it), as rollout
    aggregates attention: value zeroing already counts the residual, so nothing is added to it."""
    current, out = np.eye(matrices.shape[-1]), []
    for matrix in matrices:
        current = matrix @ current
        out.append(current)
    return np.stack(out)
