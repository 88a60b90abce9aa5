"""Value zeroing (causal/value_zeroing.py) against a direct implementation on transformers' BertModel, and attention
flow (analysis/flow.py) against networkx's maximum_flow on the graph Abnar & Zuidema define, built here from a Run's
attention without our code; each refusal in one sentence."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from bertviz_app.analysis import FLOW_MAX_TOKENS
from bertviz_app.causal import aggregate
from bertviz_app.explorer import Explorer
from oracle_models import oracle_pair

TEXT, PAIR = "the cat sat on the mat .", "a bird sang in the tree ."


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    model, hf, tokenizer = oracle_pair(tmp_path_factory.mktemp("causal"), seed=4)
    return Explorer(model, tokenizer, torch.device("cpu"), "random"), hf


def direct_value_zeroing(hf, encoding) -> np.ndarray:
    """Mohebbi et al.'s definition on transformers: layer l run alone from its input, token j's value zeroed by a hook
    on the value projection, cosine distance of every token's output to the plain one, rows normalized."""
    ids, types = torch.tensor([encoding.ids]), torch.tensor([encoding.segment_ids])
    with torch.no_grad():
        states = hf.bert(input_ids=ids, token_type_ids=types, output_hidden_states=True).hidden_states
    T = len(encoding)
    out = []
    for l, layer in enumerate(hf.bert.encoder.layer):
        matrix = np.zeros((T, T))
        for j in range(T):
            def zero(module, args, output, j=j):
                output = output.clone()
                output[:, j] = 0  # (1, T, H): every head's value of token j
                return output
            hook = layer.attention.self.value.register_forward_hook(zero)
            try:
                with torch.no_grad():
                    changed = layer(states[l])
            finally:
                hook.remove()
            changed = changed[0] if isinstance(changed, tuple) else changed
            cos = torch.nn.functional.cosine_similarity(changed[0].double(), states[l + 1][0].double(), dim=-1)
            matrix[:, j] = (1 - cos).numpy()
        matrix = np.clip(matrix, 0, None)
        out.append(matrix / matrix.sum(-1, keepdims=True))
    return np.stack(out)


def test_value_zeroing_is_the_direct_computation_on_transformers(oracle):
    explorer, hf = oracle
    run = explorer.run(TEXT, PAIR)
    ours = run.value_zeroing()
    want = direct_value_zeroing(hf, run.encoding)
    assert ours.shape == (run.num_layers, len(run), len(run))
    np.testing.assert_allclose(ours, want, atol=1e-5, rtol=0)
    np.testing.assert_allclose(ours.sum(-1), 1.0, atol=1e-12)
    assert (ours >= 0).all()
    # it is not attention: value zeroing sees the residual and the feed-forward
    assert np.abs(ours - run.attentions.mean(1)).max() > 0.05
    agg = aggregate(ours)
    np.testing.assert_allclose(agg.sum(-1), 1.0, atol=1e-9)
    np.testing.assert_allclose(agg[1], ours[1] @ ours[0], atol=1e-12)


def networkx_flow(attentions: np.ndarray) -> np.ndarray:
    """Abnar & Zuidema's graph, written out: heads averaged, 0.5 A + 0.5 I, rows renormalized, node (l, i)."""
    L, _, T, _ = attentions.shape
    graph = nx.DiGraph()
    for l in range(L):
        a = 0.5 * attentions[l].astype(np.float64).mean(0) + 0.5 * np.eye(T)
        a = a / a.sum(-1, keepdims=True)
        for i in range(T):
            for j in range(T):
                graph.add_edge((l + 1, i), (l, j), capacity=float(a[i, j]))
    return np.array([[nx.maximum_flow_value(graph, (L, i), (0, j)) for j in range(T)] for i in range(T)])


def test_attention_flow_is_networkx_maximum_flow(oracle):
    explorer, _ = oracle
    run = explorer.run(TEXT)
    flows = run.attention_flow()
    np.testing.assert_allclose(flows, networkx_flow(run.attentions), atol=1e-6, rtol=0)
    assert flows.shape == (len(run), len(run)) and (flows > 0).all()
    assert not np.allclose(flows, run.rollout()[-1], atol=1e-3)  # a flow, not rollout's product


def test_attention_flow_refuses_long_inputs_in_one_sentence(oracle):
    explorer, _ = oracle
    run = explorer.run(" ".join([TEXT] * 8))
    assert len(run) > FLOW_MAX_TOKENS
    with pytest.raises(ValueError, match=rf"exactly up to {FLOW_MAX_TOKENS} tokens .* this input has {len(run)}: "
                                         "shorten it, or use rollout"):
        run.attention_flow()
