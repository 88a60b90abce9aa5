"""The model as one ONNX graph for the page: every layer's attention, the masked-LM logits at chosen positions and
the next-sentence logits, from token ids and segment ids of one input.

Weights are stored as float16 and cast to float32 inside the graph, so the file is half the size and every product
runs in float32 (the shipped weights are float16 already: nothing is lost). int8 quantization is not offered: it
moved attention weights by up to 0.5, which no picture of attention may do.

    inputs   input_ids, token_type_ids: int64 (1, T); mlm_positions: int64 (M,), M >= 1 (pass [0] when no
             [MASK] is asked about: the graph always computes M rows of logits)
    outputs  attentions: float32 (L, h, T, T); mlm_logits: float32 (M, vocab); nsp_logits: float32 (2,);
             queries, keys: float32 (L, h, T, d), before the 1/sqrt(d) scaling (the query/key view);
             rollout: float32 (L, T, T), analysis.attention_rollout in float32 (slow in JavaScript: see
             docs/ARCHITECTURE.md, "Measured"; here they are a few MatMuls)
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

INPUTS = ("input_ids", "token_type_ids", "mlm_positions")
OUTPUTS = ("attentions", "mlm_logits", "nsp_logits", "queries", "keys", "rollout")
OPSET = 18
# Tensors smaller than this stay float32 (biases, LayerNorm): they weigh nothing, and a cast each costs a node.
_HALF_MIN_ELEMENTS = 4096


class ExportError(ValueError):
    """A model the page cannot run (no masked-LM or next-sentence head), or a graph that failed to export."""


class _PageModel(nn.Module):
    """The outputs the page needs, from a BertForPreTraining, for a batch of one."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, token_type_ids, mlm_positions):
        out = self.model.bert(input_ids, token_type_ids, output_attentions=True, output_qk=True)
        attentions = torch.stack([a[0] for a in out.attentions])  # (L, h, T, T)
        queries = torch.stack([q[0] for q in out.queries])  # (L, h, T, d)
        keys = torch.stack([k[0] for k in out.keys])  # (L, h, T, d)
        hidden = out.last_hidden_state[0].index_select(0, mlm_positions)  # (M, H)
        mlm = self.model.cls.predictions(hidden)  # (M, vocab)
        nsp = self.model.cls.seq_relationship(out.pooler_output)[0]  # (2,)
        return attentions, mlm, nsp, queries, keys, _rollout(attentions)


def _rollout(attentions):
    """(L, T, T) attention rollout as analysis.attention_rollout (residual 0.5), from (L, h, T, T)."""
    index = torch.arange(attentions.shape[-1], device=attentions.device)
    eye = (index[:, None] == index[None, :]).to(attentions.dtype)  # (T, T); torch.eye would fix T in the graph
    mixed = 0.5 * attentions.mean(dim=1) + 0.5 * eye  # (L, T, T)
    mixed = mixed / mixed.sum(dim=-1, keepdim=True)
    current, layers = eye, []
    for layer in range(mixed.shape[0]):
        current = mixed[layer] @ current
        layers.append(current)
    return torch.stack(layers)  # (L, T, T)


def require_heads(model) -> None:
    """ExportError unless `model` has both pretraining heads (the page shows their predictions)."""
    if not (model.has_mlm_head and model.has_nsp_head):
        raise ExportError("the page shows fill-mask and next-sentence predictions, so the model needs both "
                          "pretraining heads; this one lacks "
                          + " and ".join(n for n, has in (("the masked-LM head", model.has_mlm_head),
                                                          ("the next-sentence head", model.has_nsp_head)) if not has))


def export_onnx(model, path: str | Path) -> Path:
    """Write `model` (a BertForPreTraining with both heads) as the page's ONNX graph to `path`."""
    import onnx  # an export extra: only this command needs it

    require_heads(model)
    path = Path(path)
    wrapper = _PageModel(model).float().eval().cpu()
    ids = torch.tensor([[101, 7592, 2088, 102, 2009, 102]], dtype=torch.long)  # any ids: shapes only
    segments = torch.tensor([[0, 0, 0, 0, 1, 1]], dtype=torch.long)
    positions = torch.tensor([1], dtype=torch.long)
    tokens = torch.export.Dim("tokens", min=2, max=model.config.max_position_embeddings)
    masks = torch.export.Dim("masks", min=1, max=model.config.max_position_embeddings)
    # The exporter logs a warning per torchvision operator it cannot register; we use none of them.
    logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            wrapper, (ids, segments, positions), input_names=list(INPUTS), output_names=list(OUTPUTS),
            dynamic_shapes=({1: tokens}, {1: tokens}, {0: masks}), opset_version=OPSET, dynamo=True,
            external_data=False, verbose=False)
    proto = program.model_proto
    _store_half(proto)
    onnx.checker.check_model(proto)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(proto, str(path))
    return path


def _store_half(proto) -> None:
    """Every large float32 initializer becomes a float16 one plus a Cast back to float32 under its old name, at the
    start of the graph, so the arithmetic stays float32."""
    from onnx import TensorProto, helper, numpy_helper

    graph = proto.graph
    casts, kept = [], []
    for init in graph.initializer:
        if init.data_type != TensorProto.FLOAT or np.prod(init.dims, dtype=np.int64) < _HALF_MIN_ELEMENTS:
            kept.append(init)
            continue
        values = numpy_helper.to_array(init)
        half = numpy_helper.from_array(values.astype(np.float16), name=f"{init.name}__f16")
        kept.append(half)
        casts.append(helper.make_node("Cast", [half.name], [init.name], to=TensorProto.FLOAT,
                                      name=f"{init.name}__to_f32"))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(casts + nodes)
