"""Faithfulness curves (curves.py, analysis/faithfulness.py): on a constructed metric whose answer is known (a sum of
per-token weights) a perfect ranking has the largest AOPC of every order and the reversed one the smallest; on the
default model every point of a curve is transformers' own value of the same ids, the ends meet, blank-out's first step
is the largest single drop, and the figure draws both curves of every method."""

from __future__ import annotations

import itertools

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from bertviz_app import figures
from bertviz_app.analysis import aopc, curve_inputs, removal_order
from bertviz_app.curves import METHODS

TEXT = "The keys to the cabinet [MASK] on the table."
BLANK = -1


# ------------------------------------------------------------------------------------------------------------------
# A metric with a known answer
# ------------------------------------------------------------------------------------------------------------------
def _additive(weights, order):
    """The curves of f(ids) = sum of the weights of the tokens still present, removed in `order`."""
    weights = np.asarray(weights, dtype=np.float64)
    ids = np.arange(len(weights))
    deletion, insertion = curve_inputs(ids, order, BLANK)

    def f(rows):
        return np.where(rows != BLANK, weights[np.clip(rows, 0, None)], 0.0).sum(-1)

    return f(deletion), f(insertion)


def test_the_curves_by_hand():
    deletion, insertion = _additive([3.0, 1.0, 2.0], [0, 2, 1])
    np.testing.assert_array_equal(deletion, [6, 3, 1, 0])
    np.testing.assert_array_equal(insertion, [0, 3, 5, 6])
    assert aopc(deletion, insertion) == (3.5, 3.5)  # (0 + 3 + 5 + 6) / 4 each


def test_a_perfect_ranking_beats_every_other_order_and_the_reversed_one_loses_to_all():
    weights = np.array([0.5, 4.0, -1.0, 2.5, 1.0, -0.25])
    perfect = removal_order(weights, np.ones(len(weights), dtype=bool))
    np.testing.assert_array_equal(perfect, [1, 3, 4, 0, 5, 2])
    areas = {order: aopc(*_additive(weights, list(order))) for order in itertools.permutations(range(len(weights)))}
    best, worst = areas[tuple(perfect)], areas[tuple(perfect[::-1])]
    for deletion, insertion in areas.values():
        assert best[0] >= deletion - 1e-12 and best[1] >= insertion - 1e-12
        assert worst[0] <= deletion + 1e-12 and worst[1] <= insertion + 1e-12
    randoms = np.array([areas[tuple(np.random.default_rng(seed).permutation(len(weights)))] for seed in range(20)])
    assert (randoms.mean(axis=0) < np.array(best) - 1).all()  # a random order is far from perfect here


def test_the_order_skips_kept_tokens_and_breaks_ties_by_position():
    scores = np.array([9.0, 1.0, 2.0, 2.0, 9.0])
    keep = np.array([False, True, True, True, False])
    np.testing.assert_array_equal(removal_order(scores, keep), [2, 3, 1])
    with pytest.raises(ValueError, match="NaN"):
        removal_order([np.nan, 1.0], [True, True])


# ------------------------------------------------------------------------------------------------------------------
# On the default model
# ------------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def explorer(default_explorer):
    return default_explorer


@pytest.fixture(scope="module")
def removals(explorer):
    return {removal: explorer.run(TEXT).faithfulness(("are", "is"), removal=removal, steps=20)
            for removal in ("mask", "pad")}


@pytest.mark.parametrize("removal", ["mask", "pad"])
def test_every_point_is_transformers_value_of_the_same_ids(explorer, hf, removals, removal):
    curves = removals[removal]
    encoding = explorer._encoding(TEXT)
    target = curves.target
    blank = explorer.tokenizer.mask_token_id if curves.removal == "mask" else explorer.tokenizer.pad_token_id
    assert set(curves.deletion) == set(METHODS) and not curves.skipped
    for name, order in curves.orders.items():
        ids = list(encoding.ids)
        for k in range(len(order) + 1):  # deletion, one token more at a time, by an independent loop
            if k:
                ids[order[k - 1]] = blank
            with torch.no_grad():
                logits = hf(torch.tensor([ids])).prediction_logits[0, target.position]
            expected = float(logits[target.token_id] - logits[target.other_id])
            assert curves.deletion[name][k] == pytest.approx(expected, abs=1e-4), (name, k)
        # the two curves meet at both ends: nothing removed, everything removed
        assert curves.insertion[name][-1] == pytest.approx(curves.deletion[name][0], abs=1e-9)
        assert curves.insertion[name][0] == pytest.approx(curves.deletion[name][-1], abs=1e-9)
        assert sorted(order) == [1, 2, 3, 4, 5, 7, 8, 9, 10]  # every word once; never [CLS], [MASK] or [SEP]


def test_blank_out_removes_the_largest_single_drop_first(explorer, removals):
    """With [PAD] as the removal, blank-out's scores are exactly the one-token drops of this metric: its first deletion
    step is the biggest one any method can take."""
    curves = removals["pad"]
    first = {name: values[1] for name, values in curves.deletion.items()}
    assert first["blank-out"] == pytest.approx(min(first.values()), abs=1e-9)
    contrast = explorer.contrast(TEXT, "are", "is", steps=20)
    assert first["blank-out"] == pytest.approx(contrast.value - contrast.blank_out.scores.max(), abs=1e-4)


def test_the_table_and_the_figure(removals):
    curves = removals["mask"]
    table = curves.aopc
    assert list(table.columns) == ["deletion", "insertion"] and list(table.index) == list(METHODS)
    frame = curves.to_frame()
    assert len(frame) == len(METHODS) * 2 * 10 and set(frame["curve"]) == {"deletion", "insertion"}
    figure = figures.faithfulness_curves_figure(curves.deletion, curves.insertion, table, metric="logit difference")
    go.Figure(figure.to_dict())  # valid plotly
    lines = [trace for trace in figure.data if trace.type == "scatter"]
    assert len(lines) == 2 * len(METHODS)
    assert sum(trace.showlegend for trace in lines) == len(METHODS)
    legend = [trace.name for trace in lines if trace.showlegend]
    assert legend[4].startswith("integrated gradients (") and f"{table.loc['integrated gradients', 'deletion']:+.2f}" in legend[4]


def test_what_it_cannot_do_is_one_sentence(explorer):
    run = explorer.run(TEXT)
    with pytest.raises(ValueError, match="removal must be 'mask'"):
        run.faithfulness(("are", "is"), removal="zero")
    with pytest.raises(ValueError, match="metric must be two answers"):
        run.faithfulness(("are", "is", "was"))
    with pytest.raises(ValueError, match="no word to remove"):
        explorer.faithfulness_curves("[MASK]", ("are", "is"))


def test_the_run_plot_figures_are_valid_plotly(explorer):
    """run.plot.patch, .contrast and .faithfulness: fully validated plotly, titled, tokens as text."""
    import json

    clean = explorer.run(TEXT)
    corrupted = explorer.run("The key to the cabinet [MASK] on the table.")
    built = {"patch": clean.plot.patch(corrupted, ("are", "is")), "contrast": clean.plot.contrast("are", "is", steps=8),
             "faithfulness": clean.plot.faithfulness(("are", "is"), steps=8)}
    for name, figure in built.items():
        go.Figure(json.loads(figure.to_json()))  # raises on any unknown or out-of-range property
        assert figure.layout.title.text, name
    assert built["contrast"].layout.title.text.startswith("Why 'are' and not 'is'?<br>")  # then the colours' key
    assert built["patch"].data[0].z.shape == (explorer.config.num_hidden_layers, explorer.config.num_attention_heads)
