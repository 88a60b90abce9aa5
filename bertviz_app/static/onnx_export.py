"""The model as one ONNX graph for the page: every layer's attention, the masked-LM logits at chosen positions and
the next-sentence logits, and the model's own score terms, from token ids and segment ids of one input.

Weights are stored as float16 and cast to float32 inside the graph, so the file is half the size and every product
runs in float32 (the shipped weights are float16 already: nothing is lost). int8 quantization is not offered: it
moved attention weights by up to 0.5, which no picture of attention may do.

    inputs   input_ids, token_type_ids: int64 (1, T); mlm_positions: int64 (M,), M >= 1 (pass [0] when no
             [MASK] is asked about: the graph always computes M rows of logits); with_score_terms: bool () (below)
    outputs  attentions: float32 (L, h, T, T); mlm_logits: float32 (M, vocab); nsp_logits: float32 (2,);
             queries, keys: float32 (L, h, T, d), before the 1/sqrt(d) scaling (the query/key view);
             rollout: float32 (L, T, T), analysis.attention_rollout in float32 (slow in JavaScript: see
             docs/ARCHITECTURE.md, "Measured"; here they are a few MatMuls);
             score_terms: float32 (L, h, n, T, T), each layer's named additive score terms as the model computes them
             (`BertSelfAttention.score_terms`, already scaled; their names in the order of `score_term_names`), laid
             out as the query/key blob's section (views/payload.py) so that a query row's n terms lie together;
             only where with_score_terms is true, else an empty (L, h, n, 0, 0). The page asks for them when the
             query/key view opens: onnxruntime runs every node of a graph whichever outputs are fetched (onnxruntime-
             web has no option to prune), so the nodes only they need sit in an If on that input (`_gate`), and an
             analysis that does not ask pays nothing for them (docs/ARCHITECTURE.md, "Measured").
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

INPUTS = ("input_ids", "token_type_ids", "mlm_positions")  # traced; the graph adds GATE
GATE = "with_score_terms"
OUTPUTS = ("attentions", "mlm_logits", "nsp_logits", "queries", "keys", "rollout", "score_terms")
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
        out = self.model.bert(input_ids, token_type_ids, output_attentions=True, output_qk=True,
                              output_score_terms=True)
        attentions = torch.stack([a[0] for a in out.attentions])  # (L, h, T, T)
        queries = torch.stack([q[0] for q in out.queries])  # (L, h, T, d)
        keys = torch.stack([k[0] for k in out.keys])  # (L, h, T, d)
        hidden = out.last_hidden_state[0].index_select(0, mlm_positions)  # (M, H)
        mlm = self.model.cls.predictions(hidden)  # (M, vocab)
        nsp = self.model.cls.seq_relationship(out.pooler_output)[0]  # (2,)
        # (L, h, n, T, T): per layer, its terms (1, h, T, T) each, stacked beside the heads
        terms = torch.stack([torch.stack(list(layer.values()), dim=2)[0] for layer in out.score_terms])
        return attentions, mlm, nsp, queries, keys, _rollout(attentions), terms


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


def score_term_names(model) -> list[str]:
    """The names of the model's score terms, in the order of the graph's score_terms axis ("q.k" for BERT): the
    model says them, as it does to the server's Run."""
    with torch.no_grad():
        out = model.bert(torch.zeros((1, 2), dtype=torch.long, device=model.device), output_score_terms=True)
    return list(out.score_terms[0])


def score_scale(model) -> float:
    """The model's factor of q.k (1/sqrt(d) for BERT), shown beside the view's arithmetic."""
    return float(model.bert.encoder.layer_module(0).attention.self.scale)


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
    _gate(proto, "score_terms", GATE)
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


def _gate(proto, output: str, flag: str) -> None:
    """The nodes that only `output` needs move into the then-branch of an If on a new boolean input `flag`, whose
    else-branch gives an empty tensor (the output's fixed dimensions, 0 for each dynamic one), so a run with `flag`
    false computes nothing for `output`."""
    from onnx import TensorProto, helper, numpy_helper

    graph = proto.graph
    producer = {name: node for node in graph.node for name in node.output}

    def needed(names) -> set[int]:  # ids of the nodes that the values `names` depend on
        found, stack = set(), list(names)
        while stack:
            node = producer.get(stack.pop())
            if node is not None and id(node) not in found:
                found.add(id(node))
                stack.extend(node.input)
        return found

    only = needed([output]) - needed([o.name for o in graph.output if o.name != output])
    moved = [n for n in graph.node if id(n) in only]
    if not any(output in n.output for n in moved):
        raise ExportError(f"the graph's other outputs need {output!r} itself, so it cannot be computed only on demand")
    kept = [n for n in graph.node if id(n) not in only]
    declared = next(o for o in graph.output if o.name == output)
    inner = f"{output}__computed"  # a subgraph may not reuse the name its If gives
    for node in moved:
        node.output[:] = [inner if name == output else name for name in node.output]
    made = {name for node in moved for name in node.output}
    then_info = [v for v in graph.value_info if v.name in made]
    kept_info = [v for v in graph.value_info if v.name not in made]
    computed = helper.make_tensor_value_info(inner, TensorProto.FLOAT, None)
    computed.type.CopyFrom(declared.type)
    empty_shape = [d.dim_value if d.HasField("dim_value") else 0 for d in declared.type.tensor_type.shape.dim]
    empty = helper.make_node("Constant", [], [f"{output}__empty"],
                             value=numpy_helper.from_array(np.zeros(empty_shape, np.float32)))
    empty_info = helper.make_tensor_value_info(f"{output}__empty", TensorProto.FLOAT, empty_shape)
    gate = helper.make_node(
        "If", [flag], [output], name=f"{output}__if_{flag}",
        then_branch=helper.make_graph(moved, f"{output}_then", [], [computed], value_info=then_info),
        else_branch=helper.make_graph([empty], f"{output}_else", [], [empty_info]))
    del graph.node[:]
    graph.node.extend(kept + [gate])
    del graph.value_info[:]
    graph.value_info.extend(kept_info)
    graph.input.append(helper.make_tensor_value_info(flag, TensorProto.BOOL, []))
