"""Spearman's rank correlation without scipy (pandas' own implementation as the oracle), the faithfulness table, and
the faithfulness panel on a tiny model and on the default model."""

import numpy as np
import pandas as pd
import pytest
import torch

import bertviz_app
from bertviz_app import analysis
from bertviz_app.analysis.faithfulness import average_ranks, faithfulness_table, spearman
from bertviz_app.analysis.value_weighted import value_weighted_attention
from bertviz_app.attribution import attention_measures, faithfulness
from oracle_models import oracle_pair


def test_average_ranks_share_ties():
    np.testing.assert_array_equal(average_ranks([10, 20, 20, 30]), [1, 2.5, 2.5, 4])
    np.testing.assert_array_equal(average_ranks([3, 1, 3, 3]), [3, 1, 3, 3])
    with pytest.raises(ValueError, match="cannot rank NaN"):
        average_ranks([1.0, np.nan])


@pytest.mark.parametrize("seed", range(5))
def test_spearman_matches_pandas(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, size=30).astype(float)  # many ties
    b = a + rng.normal(size=30) * (seed + 1)
    expected = pd.DataFrame({"a": a, "b": b}).corr(method="spearman").loc["a", "b"]
    assert spearman(a, b) == pytest.approx(expected, abs=1e-12)


def test_spearman_edge_cases():
    x = np.arange(8.0)
    assert spearman(x, x ** 3) == pytest.approx(1.0)  # any increasing map ranks alike
    assert spearman(x, -np.exp(x)) == pytest.approx(-1.0)
    assert np.isnan(spearman(x, np.ones(8)))  # nothing to rank
    assert np.isnan(spearman([1.0], [2.0]))
    with pytest.raises(ValueError, match="two 1-d arrays of one length"):
        spearman([1, 2], [1, 2, 3])


def test_table_keeps_only_the_chosen_tokens():
    measure = np.array([100.0, 1, 2, 3, 4, -100])
    reference = np.array([-5.0, 1, 2, 3, 4, 50])
    table = faithfulness_table({"m": measure}, {"r": reference}, keep=[0, 1, 1, 1, 1, 0])
    assert table.loc["m", "r"] == pytest.approx(1.0) and table.attrs["tokens"] == 4
    assert faithfulness_table({"m": measure}, {"r": reference}).loc["m", "r"] < 1
    with pytest.raises(ValueError, match="one entry per token"):
        faithfulness_table({"m": measure}, {"r": reference[:3]})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    model, _, tokenizer = oracle_pair(tmp_path_factory.mktemp("faith"), seed=4)
    return model, tokenizer


def test_panel_on_a_tiny_model(tiny):
    model, tokenizer = tiny
    panel = faithfulness(model, tokenizer, tokenizer.encode("the cat sat on the [MASK] in the tree ."), steps=20)
    assert list(panel.table.index) == list(panel.measures) and list(panel.table.columns) == ["integrated gradients",
                                                                                            "blank-out"]
    assert panel.table.attrs["tokens"] == 9 and panel.keep.sum() == 9  # the words and '.', not [CLS], [SEP], [MASK]
    assert ((panel.table.abs() <= 1) | panel.table.isna()).all().all()
    position = panel.target.position
    assert panel.tokens[position] == "[MASK]"
    # The measures are read from the [MASK]'s row.
    with torch.no_grad():
        out = model.bert(torch.tensor([tokenizer.encode("the cat sat on the [MASK] in the tree .").ids]),
                         capture={"layer.*.attention.probs", "layer.*.attention.value_grams"})
    att = torch.stack([a[0] for a in out.layers("attention.probs")]).numpy()
    grams = torch.stack([g[0] for g in out.layers("attention.value_grams")]).numpy()
    np.testing.assert_allclose(panel.measures["attention, last layer"], att[-1].mean(0)[position], rtol=1e-6)
    np.testing.assert_allclose(panel.measures["rollout"], analysis.attention_rollout(att)[-1][position], rtol=1e-6)
    np.testing.assert_allclose(panel.measures["value-weighted, last layer"],
                               value_weighted_attention(att, grams, att.shape[0] - 1)[position], rtol=1e-6)
    assert attention_measures(att, grams, position).keys() == panel.measures.keys()
    np.testing.assert_array_equal(panel.references["integrated gradients"], np.abs(panel.attribution.scores))
    assert panel.attribution.target == panel.blank_out.target  # one target for both references


@pytest.mark.real_weights
def test_panel_on_the_default_model():
    explorer = bertviz_app.load(device="cpu")
    text = "The capital of France is [MASK]."
    panel = faithfulness(explorer.model, explorer.tokenizer, explorer.encode(text))
    assert panel.target.token == explorer.fill_mask(text, top_k=1)[0][0][0] == "paris"  # the top prediction
    assert panel.table.shape == (4, 2) and panel.table.notna().all().all()
    assert ((panel.table.abs() <= 1).all().all()) and -1 <= panel.agreement <= 1
    # Both references, measured on the prediction itself, find the words that name the answer.
    for scores in panel.references.values():
        top_two = {panel.tokens[i] for i in np.argsort(-scores)[:2]}
        assert top_two == {"capital", "france"}
    pair = faithfulness(explorer.model, explorer.tokenizer,
                        explorer.encode("The cat sat on the mat.", "It was warm there."), target="is_next")
    assert pair.target.kind == "is_next" and pair.target.position == 0 and pair.table.shape == (4, 2)
