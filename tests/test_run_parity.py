"""What the library hands a user equals transformers: a Run's attention, its CSV and the analyses built on them, on the
same weights (the shipped default model, and a random perturbed BertForPreTraining unlike it), in float32, at 1e-5.
The reference numbers are computed here from transformers' outputs and modules, not with our analysis functions."""

import numpy as np
import pandas as pd
import pytest
import torch
import transformers

from bertviz_app import Explorer, catalog, load
from oracle_models import oracle_pair

TOL = dict(atol=1e-5, rtol=1e-5)


@pytest.fixture(scope="module", params=["default", "random"])
def case(request, tmp_path_factory):
    """(our Run, transformers' BertModel on the same weights, its outputs for the Run's input)."""
    if request.param == "default":
        explorer = load(device="cpu")
        hf = transformers.BertForPreTraining.from_pretrained(catalog.default_model_path(),
                                                             attn_implementation="eager",
                                                             dtype=torch.float32).eval()  # stored as float16
        run = explorer.run("The keys to the cabinet are on the table.", "They were lost.")
    else:
        model, hf, tokenizer = oracle_pair(tmp_path_factory.mktemp("run-parity"), seed=3)
        explorer = Explorer(model, tokenizer, torch.device("cpu"), "random")
        run = explorer.run("the cat sat on the mat .", "a bird sang in the tree .")
    with torch.no_grad():
        out = hf.bert(torch.tensor([run.encoding.ids]), token_type_ids=torch.tensor([run.encoding.segment_ids]),
                      output_attentions=True, output_hidden_states=True)
    return run, hf.bert, out


def reference_attention(out) -> np.ndarray:
    return torch.stack([a[0] for a in out.attentions]).numpy().astype(np.float64)  # (L, h, T, T)


def test_attention_is_transformers_and_rows_sum_to_one(case):
    run, _, out = case
    assert run.attentions.dtype == np.float32
    np.testing.assert_allclose(run.attentions, reference_attention(out), **TOL)
    np.testing.assert_allclose(run.attentions.astype(np.float64).sum(-1), 1.0, atol=1e-6, rtol=0)
    for layer, head in ((0, 0), (run.num_layers - 1, run.num_heads - 1)):
        np.testing.assert_allclose(run.attention(layer, head), reference_attention(out)[layer, head], **TOL)
    np.testing.assert_allclose(run.attention(1), reference_attention(out)[1].mean(0), **TOL)
    from_w, to_w = run.token_attention(2, 3)
    np.testing.assert_allclose(from_w, reference_attention(out)[2, :, 3, :], **TOL)
    np.testing.assert_allclose(to_w, reference_attention(out)[2, :, :, 3], **TOL)


def test_the_csv_is_transformers(case, tmp_path):
    run, _, out = case
    back = pd.read_csv(run.attention_csv(tmp_path / "attention.csv", layers=[1], heads=[0, 2]), keep_default_na=False)
    assert set(back.precision) == {"float32"}
    t = len(run)
    np.testing.assert_allclose(back.weight.to_numpy().reshape(2, t, t), reference_attention(out)[1, [0, 2]], **TOL)
    assert list(back.from_token[:t]) == [run.tokens[0]] * t and list(back.to_token[:t]) == run.tokens


def test_hidden_states_and_their_analyses_are_transformers(case):
    run, _, out = case
    hidden = torch.stack([h[0] for h in out.hidden_states]).numpy().astype(np.float64)  # (L + 1, T, H)
    np.testing.assert_allclose(run.hidden_states, hidden, **TOL)
    np.testing.assert_allclose(run.hidden_norms(), np.linalg.norm(hidden, axis=-1), **TOL)
    unit = hidden / np.linalg.norm(hidden, axis=-1, keepdims=True)
    np.testing.assert_allclose(run.layer_similarity(), (unit[1:] * unit[:-1]).sum(-1), **TOL)
    np.testing.assert_allclose(run.token_similarity(3), unit[3] @ unit[3].T, **TOL)


def test_rollout_and_head_statistics_are_transformers(case):
    run, _, out = case
    att = reference_attention(out)
    t = len(run)
    current = np.eye(t)
    for layer in range(run.num_layers):  # Abnar & Zuidema: 0.5 A + 0.5 I per layer, rows renormalized, chained
        mixed = 0.5 * att[layer].mean(0) + 0.5 * np.eye(t)
        current = (mixed / mixed.sum(-1, keepdims=True)) @ current
        np.testing.assert_allclose(run.rollout(layer), current, **TOL)
    stats = run.head_statistics()
    entropy = -(att * np.log(np.clip(att, 1e-30, None))).sum(-1).mean(-1)  # (L, h), mean over query rows
    np.testing.assert_allclose(stats.entropy, entropy, **TOL)
    np.testing.assert_allclose(stats.cls, att[..., :, 0].mean(-1), **TOL)
    np.testing.assert_allclose(stats.self, np.diagonal(att, axis1=-2, axis2=-1).mean(-1), **TOL)


def test_query_key_row_is_transformers(case):
    run, _, out = case
    qk = run.query_key(2, 1, 4)
    np.testing.assert_allclose(qk.weights, reference_attention(out)[2, 1, 4], **TOL)


def test_value_weighted_attention_is_transformers(case):
    """||alpha_ij f_h(x_j)|| from transformers' own modules: x_j the layer's input, f_h = that head's slice of the
    output projection applied to that head's value."""
    run, bert, out = case
    att = reference_attention(out)
    h, d = run.num_heads, run.config.hidden_size // run.num_heads
    for layer in range(run.num_layers):
        attention = bert.encoder.layer[layer].attention
        with torch.no_grad():
            value = attention.self.value(out.hidden_states[layer][0]).reshape(len(run), h, d)  # (T, h, d)
            w_out = attention.output.dense.weight.reshape(-1, h, d)  # (H, h, d)
            f = torch.einsum("ohd,thd->tho", w_out, value).double().numpy()  # (T, h, H): f_h(x_j)
        per_head = att[layer][:, :, :, None] * f.transpose(1, 0, 2)[:, None]  # (h, T, T, H)
        for head in (0, h - 1):
            np.testing.assert_allclose(run.value_weighted_attention(layer, head),
                                       np.linalg.norm(per_head[head], axis=-1), **TOL)
        np.testing.assert_allclose(run.value_weighted_attention(layer), np.linalg.norm(per_head.sum(0), axis=-1),
                                   **TOL)
