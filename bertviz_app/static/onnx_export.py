"""The model as one ONNX graph for the page: every layer's attention, the masked-LM logits at chosen positions and
the next-sentence logits, and the model's own score terms, from token ids and segment ids of one input.

Weights (`WEIGHTS`, the export's `weights`): "float16" (the default) stores every large matrix as float16, cast to
float32 inside the graph, so the file is half the size and every product runs in float32 (the shipped weights are
float16 already: nothing is lost). "float32" stores them as the model holds them (for a checkpoint trained in
float32; twice the bytes). "int8" stores each large matrix as int8 codes with one float32 scale per output channel
(symmetric, |w| <= 127 steps), multiplied back into float32 at the start of the graph: activations and arithmetic
stay float32, the file is a quarter of float32. It is not faithful: on the default model it moves
attention by up to 0.13 (at 512 tokens; 0.05 at 32) and changes fill-mask's top 5 on 41 of assets/probes.json's 90
probes (their order; the five themselves on 18; README, "The static page over the wire"), so it is a choice for a
host that must send less, never the default. (The dynamic
int8 of activations, tried before, moved attention by 0.5: another method.)

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
WEIGHTS = ("float16", "float32", "int8")  # the first is the default
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
        out = self.model.bert(input_ids, token_type_ids, capture=("layer.*.attention.probs", "layer.*.attention.queries",
                                                                  "layer.*.attention.keys", "layer.*.attention.score.*"))
        attentions = torch.stack([a[0] for a in out.layers("attention.probs")])  # (L, h, T, T)
        queries = torch.stack([q[0] for q in out.layers("attention.queries")])  # (L, h, T, d)
        keys = torch.stack([k[0] for k in out.layers("attention.keys")])  # (L, h, T, d)
        hidden = out.last_hidden_state[0].index_select(0, mlm_positions)  # (M, H)
        mlm = self.model.cls.predictions(hidden)  # (M, vocab)
        nsp = self.model.cls.seq_relationship(out.pooler_output)[0]  # (2,)
        # (L, h, n, T, T): per layer, its terms (1, h, T, T) each, stacked beside the heads
        terms = torch.stack([torch.stack(list(out.score_terms(i).values()), dim=2)[0]
                             for i in range(self.model.config.num_hidden_layers)])
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
        out = model.bert(torch.zeros((1, 2), dtype=torch.long, device=model.device),
                         capture=("layer.0.attention.score.*",))
    return list(out.score_terms(0))


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


def export_onnx(model, path: str | Path, weights: str = WEIGHTS[0]) -> Path:
    """Write `model` (a BertForPreTraining with both heads) as the page's ONNX graph to `path`, its large matrices
    stored as `weights` (one of WEIGHTS: the module's docstring says what each costs)."""
    import onnx  # an export extra: only this command needs it

    if weights not in WEIGHTS:
        raise ExportError(f"weights {weights!r} is not one of {', '.join(WEIGHTS)}")
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
    if weights == "float16":
        _store_half(proto)
    elif weights == "int8":
        _store_int8(proto)
    _gate(proto, "score_terms", GATE)
    onnx.checker.check_model(proto)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(proto, str(path))
    return path


def _store_half(proto, exact: frozenset = frozenset()) -> None:
    """Every large float32 initializer (but those named in `exact`) becomes a float16 one plus a Cast back to float32
    under its old name, at the start of the graph, so the arithmetic stays float32."""
    from onnx import TensorProto, helper, numpy_helper

    graph = proto.graph
    casts, kept = [], []
    for init in graph.initializer:
        if (init.data_type != TensorProto.FLOAT or np.prod(init.dims, dtype=np.int64) < _HALF_MIN_ELEMENTS
                or init.name in exact):
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


def _output_axes(graph) -> dict[str, set]:
    """For each value the graph (or a subgraph) reads as a weight, the axes of its output channels there: a MatMul's
    B is (in, out), a Gemm's B with transB (out, in), a Gather's table has one row per thing looked up; None where
    it is read any other way."""
    axes: dict[str, set] = {}

    def walk(g):
        for node in g.node:
            attrs = {a.name: a for a in node.attribute}
            for k, name in enumerate(node.input):
                if node.op_type == "MatMul" and k == 1:
                    axis = 1
                elif node.op_type == "Gemm" and k == 1:
                    axis = 0 if attrs.get("transB") is not None and attrs["transB"].i else 1
                elif node.op_type == "Gather" and k == 0 and (attrs["axis"].i if "axis" in attrs else 0) == 0:
                    axis = 0
                else:
                    axis = None
                axes.setdefault(name, set()).add(axis)
            for a in node.attribute:
                if a.g.node:
                    walk(a.g)

    walk(graph)
    return axes


def _store_int8(proto) -> None:
    """Every large float32 matrix read only as a weight with one output-channel axis becomes int8 codes and a
    float32 scale per output channel (max |w| / 127, so 0 stays 0), multiplied back into float32 under its old name
    at the start of the graph; the rest (the MLM bias, a vector) is stored as float16, as `_store_half` does.

    Cast and Mul, not DequantizeLinear: onnxruntime fuses a DequantizeLinear of a weight and its MatMul into
    MatMulNBits, whose arithmetic is not float32 (it moved a tiny model's queries by 2e-3 against the same weights
    in float32); Cast and Mul of constants fold into a float32 weight when the session starts. The scales stay
    float32: the word embeddings' 30522 would count as large, and float16 scales moved rows by 5e-4 of themselves."""
    from onnx import TensorProto, helper, numpy_helper

    graph = proto.graph
    axes = _output_axes(graph)
    nodes, kept, scales = [], [], set()
    for init in graph.initializer:
        used = axes.get(init.name, set())
        if (init.data_type != TensorProto.FLOAT or np.prod(init.dims, dtype=np.int64) < _HALF_MIN_ELEMENTS
                or len(init.dims) != 2 or len(used) != 1 or None in used):
            kept.append(init)
            continue
        (axis,) = used
        values = numpy_helper.to_array(init)
        peak = np.abs(values).max(axis=1 - axis, keepdims=True)  # (1, out) or (out, 1): one per output channel
        scale = np.where(peak > 0, peak / 127, 1).astype(np.float32)
        codes = np.clip(np.rint(values / scale), -127, 127).astype(np.int8)
        kept += [numpy_helper.from_array(codes, name=f"{init.name}__i8"),
                 numpy_helper.from_array(scale, name=f"{init.name}__scale")]
        scales.add(f"{init.name}__scale")
        nodes += [helper.make_node("Cast", [f"{init.name}__i8"], [f"{init.name}__codes"], to=TensorProto.FLOAT,
                                   name=f"{init.name}__codes"),
                  helper.make_node("Mul", [f"{init.name}__codes", f"{init.name}__scale"], [init.name],
                                   name=f"{init.name}__to_f32")]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    body = list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes + body)
    _store_half(proto, exact=frozenset(scales))  # what stayed float32 and large


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
