"""Word pieces merged into words (Clark et al. 2019): the grouping, the sum-over-attended / mean-over-attending rule,
rows that still sum to 1, and the token matrix back when no word is split."""

import numpy as np
import pytest

from bertviz_app.analysis.words import group_words, word_attention
from bertviz_app.catalog import minilm_path
from bertviz_app.tokenizer import Tokenizer
from arrays import random_attention


@pytest.mark.parametrize("tokens, words, groups", [
    (["[CLS]", "the", "play", "##ing", "field", "[SEP]"], ["[CLS]", "the", "playing", "field", "[SEP]"],
     [[0], [1], [2, 3], [4], [5]]),
    (["[CLS]", "un", "##aff", "##able", ".", "[SEP]", "it", "##s", "[SEP]"],
     ["[CLS]", "unaffable", ".", "[SEP]", "its", "[SEP]"], [[0], [1, 2, 3], [4], [5], [6, 7], [8]]),
    # a '##' piece after a special token cannot join it; the bare '##' is a token of its own, not a prefix
    (["[CLS]", "##x", "[MASK]", "##s", "##", "a"], ["[CLS]", "##x", "[MASK]", "##s", "##", "a"],
     [[0], [1], [2], [3], [4], [5]]),
    (["##a", "##b"], ["##ab"], [[0, 1]]),  # a piece list that starts mid-word
])
def test_group_words(tokens, words, groups):
    grouped = group_words(tokens)
    assert grouped.words == words and grouped.groups == groups
    assert [grouped.index[i] for g in groups for i in g] == [w for w, g in enumerate(groups) for _ in g]
    assert grouped.has_split_words == any(len(g) > 1 for g in groups)


def test_special_mask_overrides_the_spelling():
    # '<s>' is special only because the mask says so; then '##x' after it starts a word
    grouped = group_words(["<s>", "##x", "##y"], special_mask=[1, 0, 0])
    assert grouped.words == ["<s>", "##xy"]
    with pytest.raises(ValueError, match="special_mask has 2 entries for 3 tokens"):
        group_words(["a", "b", "c"], special_mask=[0, 0])


def test_the_tokenizers_word_ids_group_bpe_and_unigram_pieces():
    # RoBERTa's labels of " dogs" as '␣', 'd', '##ogs' and a character split over two byte pieces ('é', '##'): the
    # ids decide, a lone leading space and a bare '##' add no characters to the word's text
    grouped = group_words(["<s>", "\u2423", "d", "##ogs", "caf", "##\u00e9", "##", "</s>"], [1, 0, 0, 0, 0, 0, 0, 1],
                          word_ids=[0, 1, 1, 1, 2, 2, 2, 3])
    assert grouped.words == ["<s>", "dogs", "caf\u00e9", "</s>"]
    assert grouped.groups == [[0], [1, 2, 3], [4, 5, 6], [7]]
    with pytest.raises(ValueError, match="word_ids has 2 entries for 3 tokens"):
        group_words(["a", "b", "c"], word_ids=[0, 1])


def test_the_merge_rule_by_hand():
    tokens = ["[CLS]", "play", "##ing", "[SEP]"]
    a = random_attention(4, 4)
    w = word_attention(a, group_words(tokens))
    expected = np.array([
        [a[0, 0], a[0, 1] + a[0, 2], a[0, 3]],
        [(a[1, 0] + a[2, 0]) / 2, (a[1, 1] + a[1, 2] + a[2, 1] + a[2, 2]) / 2, (a[1, 3] + a[2, 3]) / 2],
        [a[3, 0], a[3, 1] + a[3, 2], a[3, 3]],
    ])
    np.testing.assert_allclose(w, expected, rtol=1e-6, atol=1e-7)


def test_rows_sum_to_one_for_every_layer_and_head():
    tokens = ["[CLS]", "the", "un", "##aff", "##able", "dog", "bark", "##ed", ".", "[SEP]"]
    a = random_attention(3, 4, len(tokens), len(tokens), seed=1)  # (L, h, T, T)
    w = word_attention(a, group_words(tokens))
    assert w.shape == (3, 4, 7, 7) and w.dtype == np.float32
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)
    assert (w >= 0).all()


def test_no_split_words_gives_the_token_matrix_back():
    tokens = ["[CLS]", "the", "dog", "barked", ".", "[SEP]"]
    a = random_attention(2, len(tokens), len(tokens), seed=2)
    words = group_words(tokens)
    assert not words.has_split_words
    np.testing.assert_array_equal(word_attention(a, words), a)  # exactly, not approximately


def test_real_tokenizer_split_words():
    tokenizer = Tokenizer.from_folder(minilm_path())
    encoding = tokenizer.encode("The unaffable tokenizer disentangles wordpieces.", "It works.")
    words = group_words(encoding.tokens, encoding.special_tokens_mask)
    assert words.has_split_words
    assert words.words[0] == "[CLS]" and words.words[-1] == "[SEP]" and "unaffable" in words.words
    assert sum(len(g) for g in words.groups) == len(encoding)
    a = random_attention(len(encoding), len(encoding), seed=3)
    np.testing.assert_allclose(word_attention(a, words).sum(-1), 1.0, atol=1e-6)


def test_shape_mismatch_says_so():
    with pytest.raises(ValueError, match=r"attention must end in \(tokens, tokens\) = \(3, 3\)"):
        word_attention(np.ones((4, 4)), group_words(["a", "b", "c"]))
