"""Comparing two runs' attention: a minimal pair, or two models on one input; the difference, the per-head change
(total variation distance) and the ranking, with the errors a user can cause."""

import numpy as np
import pytest

import bertviz_app
from bertviz_app.analysis.compare import compare_attentions
from test_words import random_attention


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
