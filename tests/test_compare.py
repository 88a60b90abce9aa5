"""Comparing two runs' attention: a minimal pair, or two models on one input; the difference, the per-head change
(total variation distance) and the ranking, with the errors a user can cause."""

import numpy as np
import pytest

import bertviz_app
from bertviz_app.analysis.compare import compare_attentions, paired_layer
from bertviz_app.figures import attention_change_figure
from arrays import random_attention


def tokens(n, prefix="t"):
    return [f"{prefix}{i}" for i in range(n)]


def test_identical_runs_change_nothing():
    a = random_attention(2, 3, 5, 5)
    diff = compare_attentions(a, a.copy(), tokens(5), tokens(5))
    assert diff.difference.shape == (2, 3, 5, 5) and not diff.difference.any()
    assert not diff.head_change.any() and not diff.layer_change.any() and diff.differing == []
    assert len(diff.ranking()) == 6


def test_the_changed_head_ranks_first_with_its_total_variation():
    t = 6
    a = np.full((2, 3, t, t), 1.0 / t, dtype=np.float32)  # every head uniform
    b = a.copy()
    b[1, 2] = np.eye(t)  # one head becomes one-hot: each row moves 1 - 1/t of its mass
    b[0, 1, 0] = np.eye(t)[3]  # another changes one row only
    diff = compare_attentions(a, b, tokens(t), tokens(t))
    np.testing.assert_allclose(diff.head_change[1, 2], 1 - 1 / t, rtol=1e-6)
    np.testing.assert_allclose(diff.head_change[0, 1], (1 - 1 / t) / t, rtol=1e-6)
    ranking = diff.ranking()
    assert ranking[["layer", "head"]].iloc[0].tolist() == [1, 2]
    assert ranking[["layer", "head"]].iloc[1].tolist() == [0, 1]
    assert ranking["rank"].tolist() == list(range(1, 7))
    assert (ranking["change"].diff().dropna() <= 0).all()
    np.testing.assert_allclose(diff.max_difference[1, 2], 1 - 1 / t, rtol=1e-6)
    np.testing.assert_allclose(diff.layer_change, diff.head_change.mean(1), rtol=1e-6)
    # Comparing the other rows only leaves the one-row change out.
    assert compare_attentions(a, b, tokens(t), tokens(t), rows=[1, 2, 3]).head_change[0, 1] == 0


def test_total_variation_lies_in_zero_one():
    a, b = random_attention(3, 4, 7, 7, seed=1), random_attention(3, 4, 7, 7, seed=2)
    change = compare_attentions(a, b, tokens(7), tokens(7)).head_change
    assert (change > 0).all() and (change <= 1).all()


def test_errors_say_what_to_do():
    a = random_attention(2, 3, 5, 5)
    with pytest.raises(ValueError, match=r"the two inputs have 5 and 6 tokens; .* single word piece"):
        compare_attentions(a, random_attention(2, 3, 6, 6), tokens(5), tokens(6))
    with pytest.raises(ValueError, match=r"2 layers x 3 heads against 2 x 4"):
        compare_attentions(a, random_attention(2, 4, 5, 5), tokens(5), tokens(5))
    with pytest.raises(ValueError, match="give one token per position"):
        compare_attentions(a, a, tokens(4), tokens(5))
    with pytest.raises(ValueError, match="rows must be non-empty token positions from 0 to 4"):
        compare_attentions(a, a, tokens(5), tokens(5), rows=[5])


@pytest.mark.real_weights
def test_minimal_pair_and_two_models_on_the_default_model():
    default = bertviz_app.load(device="cpu")
    singular = default.run("The keys to the cabinet is on the table.")
    plural = default.run("The keys to the cabinet are on the table.")
    diff = compare_attentions(singular.attentions, plural.attentions, singular.tokens, plural.tokens)
    assert diff.differing == [6] and diff.tokens_b[6] == "are"
    assert (diff.head_change > 0).all()

    minilm = bertviz_app.load(bertviz_app.catalog.MINILM_NAME, device="cpu")
    text = "The keys to the cabinet are on the table."
    two = compare_attentions(minilm.run(text).attentions, plural.attentions, plural.tokens, minilm.run(text).tokens)
    assert two.differing == [] and two.head_change.shape == (6, 12)
    # Continued pretraining (MLM + NSP) moved attention more than swapping one word did, on average.
    assert two.head_change.mean() > diff.head_change.mean()

    longer = default.run("The keys to the old cabinet are on the table.")
    with pytest.raises(ValueError, match="the two inputs have 12 and 13 tokens"):
        compare_attentions(plural.attentions, longer.attentions, plural.tokens, longer.tokens)


# --- two models of different depths ---------------------------------------------------------------------------------
def test_layers_pair_by_relative_depth():
    assert [paired_layer(layer, 3, 6) for layer in range(3)] == [1, 3, 5]
    assert [paired_layer(layer, 6, 3) for layer in range(6)] == [0, 0, 1, 1, 2, 2]  # gradio-host.mjs gives the same
    assert [paired_layer(layer, 4, 4) for layer in range(4)] == [0, 1, 2, 3]
    assert [paired_layer(layer, 2, 12) for layer in range(2)] == [5, 11]


def test_different_depths_are_compared_at_the_same_relative_depth():
    deep, shallow = random_attention(6, 3, 5, 5, seed=3), random_attention(3, 3, 5, 5, seed=4)
    diff = compare_attentions(deep, shallow, tokens(5), tokens(5))
    assert diff.paired_by_depth and diff.layers_a == [1, 3, 5] and diff.layers_b == [0, 1, 2]
    np.testing.assert_array_equal(diff.difference, shallow - deep[[1, 3, 5]])
    ranking = diff.ranking()
    assert list(ranking.columns) == ["layer", "layer_b", "head", "change", "max_difference", "rank"]
    layer, layer_b, head = (int(ranking.iloc[0][name]) for name in ("layer", "layer_b", "head"))
    assert diff.head_change[layer_b, head] == ranking.iloc[0]["change"] == diff.head_change.max()
    assert layer == diff.layers_a[layer_b]
    figure = attention_change_figure(diff.head_change, layers_a=diff.layers_a, layers_b=diff.layers_b)
    assert list(figure.layout.yaxis.ticktext) == ["layer 1 \u2194 0", "layer 3 \u2194 1", "layer 5 \u2194 2"]
    same = compare_attentions(deep, deep, tokens(5), tokens(5))
    assert not same.paired_by_depth and "layer_b" not in same.ranking().columns


@pytest.fixture(scope="module")
def deep_and_shallow(tmp_path_factory):
    """The app with a 6-layer and a 3-layer ELECTRA discriminator on the same WordPiece tokenizer (four heads each)."""
    from gradio_client import Client

    import family_models
    from bertviz_app import app

    folders = {}
    for layers in (6, 3):
        folders[layers] = tmp_path_factory.mktemp(f"electra-{layers}")
        family_models.build("electra", folders[layers], num_hidden_layers=layers)
    loaded = app.load_models([str(folders[6]), str(folders[3])], device="cpu")
    demo = app.build_demo(loaded)
    url = app.serve(demo, port=app.free_port(), block=False)
    yield Client(url, verbose=False), folders[6].name, folders[3].name  # shown by the folders' names
    demo.close()


def test_the_compare_tab_pairs_layers_by_relative_depth_and_says_so(deep_and_shallow):
    client, deep, shallow = deep_and_shallow
    text = "The cat sat on the mat."
    client.predict(deep, text, "", api_name="/analyze")
    message, left, right, change, table, layers = client.predict(text, "", shallow, api_name="/compare")
    assert left["payload"] and right["payload"] and change is not None and layers is not None
    assert ("The right model has 3 layers and the other 6: layers are paired by relative depth" in message
            and "(0 \u2194 1, 1 \u2194 3, 2 \u2194 5)" in message)
    assert "(left) \u2194" in message  # the head that changed most names both sides' layers
    assert table["headers"][:3] == ["layer", "layer_b", "head"]
    assert {row[0] for row in table["data"]} <= {1, 3, 5} and {row[1] for row in table["data"]} <= {0, 1, 2}
