"""The one check of an input's text (bertviz_app.inputs): what it refuses and in which words, and that every
Explorer method refuses a bad text in those same words before any work (tests/test_app.py checks that the page says
the same)."""

from __future__ import annotations

import pytest
import torch

from bertviz_app.config import BertConfig
from bertviz_app.explorer import Explorer
from bertviz_app.inputs import MAX_CHARS, check_text, text_problem
from bertviz_app.model import BertForPreTraining
from bertviz_app.tokenizer import Tokenizer

EMPTY = "Sentence A is empty: type a sentence (sentence B is optional)."
BAD = {
    "empty": ("", EMPTY),
    "only spaces": (" \t\n  ", EMPTY),
    "None": (None, EMPTY),
    "a book": ("x" * (MAX_CHARS + 1), f"Sentence A has {MAX_CHARS + 1:,} characters; paste at most {MAX_CHARS:,}"),
    "NUL": ("the\x00 cat", "Sentence A contains a control character (U+0000, character 4) that is not text"),
    "ESC": ("a \x1b[31m red cat", "Sentence A contains a control character (U+001B, character 3)"),
    "DEL": ("cat\x7f", "Sentence A contains a control character (U+007F, character 4)"),
    "C1": ("cat\x9b", "Sentence A contains a control character (U+009B, character 4)"),
    "surrogate": ("a\udc80b", "Sentence A contains a character that is not text (an unpaired UTF-16 surrogate"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_check_text_refuses_in_words(name):
    text, sentence = BAD[name]
    with pytest.raises(ValueError) as refused:
        check_text(text, "a fine second sentence")
    assert str(refused.value).startswith(sentence)
    with pytest.raises(ValueError) as refused_b:
        check_text("A fine sentence.", text if text is not None and text.strip() else "b\x07")
    assert str(refused_b.value).startswith("Sentence B ")


@pytest.mark.parametrize("text", ["The cat sat.", "tabs\tand\nlines\r\nand a form feed\x0c stay", "x" * MAX_CHARS,
                                  "emoji 👩\u200d👩\u200d👧 and a zero-width space\u200b and a BOM\ufeff", "naïve café",
                                  "the \x85 next-line character is white space"])
def test_check_text_keeps_text_and_white_space(text):
    assert check_text(text) == (text, None)
    assert text_problem(text) is None


def test_an_empty_or_blank_sentence_b_is_a_single_sentence():
    assert check_text("A.", "") == ("A.", None)
    assert check_text("A.", " \n ") == ("A.", None)
    assert check_text("A.", None) == ("A.", None)
    assert check_text("A.", "B.") == ("A.", "B.")


def test_something_that_is_not_text_is_a_type_error():
    with pytest.raises(TypeError, match="Sentence A must be text, not int"):
        check_text(3)
    with pytest.raises(TypeError, match="Sentence B must be text, not list"):
        check_text("A.", ["B."])


@pytest.fixture(scope="module")
def explorer(tmp_path_factory) -> Explorer:
    folder = tmp_path_factory.mktemp("vocab")
    words = "the cat sat on a mat she poured tea".split()
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *words]) + "\n")
    tokenizer = Tokenizer.from_vocab(folder / "vocab.txt")
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
    return Explorer(model, tokenizer, torch.device("cpu"), "tiny")


METHODS = {
    "run": lambda ex, text: ex.run(text),
    "encode": lambda ex, text: ex.encode(text),
    "fill_mask": lambda ex, text: ex.fill_mask(text),
    "mask_token": lambda ex, text: ex.mask_token(text, 1),
    "logit_lens": lambda ex, text: ex.logit_lens(text),
    "corrupt_example": lambda ex, text: ex.corrupt_example(text),
    "next_sentence": lambda ex, text: ex.next_sentence(text, "She poured tea."),
    "ablate": lambda ex, text: ex.ablate(text, [(0, 0)]),
    "rank_heads": lambda ex, text: ex.rank_heads(text),
    "attribute": lambda ex, text: ex.attribute(text, steps=2),
    "blank_out": lambda ex, text: ex.blank_out(text),
    "faithfulness": lambda ex, text: ex.faithfulness(text, steps=2),
    "score_terms": lambda ex, text: ex.score_terms(text),
}


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("name", ["only spaces", "a book", "ESC"])
def test_every_explorer_method_refuses_in_the_same_words(explorer, method, name):
    text, sentence = BAD[name]
    with pytest.raises(ValueError) as refused:
        METHODS[method](explorer, text)
    assert str(refused.value).startswith(sentence)


def test_a_bad_sentence_b_is_refused_too(explorer):
    with pytest.raises(ValueError, match=r"^Sentence B contains a control character \(U\+0007"):
        explorer.fill_mask("the [MASK] sat .", "she\x07 poured tea .")
    with pytest.raises(ValueError, match="^Sentence B has"):
        explorer.run("the cat sat .", "x" * (MAX_CHARS + 1))
