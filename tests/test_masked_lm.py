"""fill_mask, next_sentence, mask_token, logit_lens and corrupt_example on a tiny random model, with transformers as
the oracle for the probabilities; each takes one Encoding, which the Explorer makes (the text checked, [mask] spellings
normalized, cut to its limit)."""

from __future__ import annotations

import pytest
import torch

from bertviz_app.checkpoint import save_pretrained
from bertviz_app.config import BertConfig
from bertviz_app.explorer import Explorer
from bertviz_app.masked_lm import (corrupt_example, fill_mask, logit_lens, mask_token, next_sentence,
                                   normalize_mask)
from bertviz_app.model import BertForPreTraining
from bertviz_app.masking import IGNORE_INDEX
from bertviz_app.tokenizer import Tokenizer

WORDS = "the cat dog sat on mat a bird sang in tree sun was warm she poured cup of tea paris capital france is".split()


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> Tokenizer:
    folder = tmp_path_factory.mktemp("vocab")
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *WORDS]) + "\n")
    return Tokenizer.from_vocab(folder / "vocab.txt")


@pytest.fixture(scope="module")
def model(tokenizer) -> BertForPreTraining:
    torch.manual_seed(0)
    m = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
    with torch.no_grad():  # larger weights than the 0.02 initialization, so the predictions are not all uniform
        for p in m.parameters():
            p.mul_(20 if p.dim() > 1 else 1)
    return m.eval()


@pytest.fixture(scope="module")
def explorer(model, tokenizer) -> Explorer:
    return Explorer(model, tokenizer, torch.device("cpu"), "tiny")


@pytest.fixture(scope="module")
def enc(tokenizer):
    """tokenizer.encode, as the tests below write it"""
    return tokenizer.encode


def test_fill_mask_shapes_order_and_probabilities(model, tokenizer, enc):
    result = fill_mask(model, tokenizer, enc("the [MASK] sat on the [MASK] ."), top_k=5)
    assert len(result) == 2
    for predictions in result:
        assert len(predictions) == 5
        probs = [p for _, p in predictions]
        assert probs == sorted(probs, reverse=True)
        assert all(0 <= p <= 1 for p in probs) and sum(probs) <= 1 + 1e-6
        assert all(isinstance(t, str) for t, _ in predictions)
    everything = fill_mask(model, tokenizer, enc("the [MASK] sat ."), top_k=1000)[0]
    assert len(everything) == tokenizer.vocab_size
    assert sum(p for _, p in everything) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("spelling", ["[mask]", "[Mask]", "[MASK]", "[ mask ]"])
def test_any_spelling_of_mask_is_accepted(model, tokenizer, explorer, spelling):
    assert normalize_mask(f"a {spelling} b") == "a [MASK] b"
    assert explorer.fill_mask(f"the {spelling} sat .", top_k=3) == \
        fill_mask(model, tokenizer, tokenizer.encode("the [MASK] sat ."), top_k=3)


def test_fill_mask_in_the_second_sentence(explorer):
    result = explorer.fill_mask("the cat sat .", text_pair="she poured [mask] .", top_k=3)
    assert len(result) == 1 and len(result[0]) == 3


def test_fill_mask_errors(model, tokenizer, explorer, enc):
    with pytest.raises(ValueError, match=r"no \[MASK\]"):
        fill_mask(model, tokenizer, enc("the cat sat ."))
    with pytest.raises(ValueError, match="empty"):
        explorer.fill_mask("   ")
    with pytest.raises(ValueError, match="top_k"):
        fill_mask(model, tokenizer, enc("the [MASK] ."), top_k=0)
    headless = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size), mlm_head=False)
    with pytest.raises(ValueError, match="no masked-LM head"):
        fill_mask(headless, tokenizer, enc("the [MASK] ."))
    with pytest.raises(ValueError, match="no masked-LM head"):
        logit_lens(headless, tokenizer, enc("the [MASK] ."))
    no_nsp = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size), nsp_head=False)
    with pytest.raises(ValueError, match="no next-sentence head"):
        next_sentence(no_nsp, enc("a", "b"))


def test_fill_mask_matches_transformers(model, tokenizer, explorer, tmp_path):
    from transformers import BertForMaskedLM

    save_pretrained(model, tmp_path / "m", tokenizer=tokenizer)
    oracle = BertForMaskedLM.from_pretrained(tmp_path / "m").eval()
    text = "the [MASK] sat on the [mask] ."
    ours = explorer.fill_mask(text, top_k=tokenizer.vocab_size)
    encoding = tokenizer.encode(normalize_mask(text))
    with torch.no_grad():
        logits = oracle(torch.tensor([encoding.ids]), token_type_ids=torch.tensor([encoding.segment_ids])).logits[0]
    positions = [i for i, t in enumerate(encoding.tokens) if t == "[MASK]"]
    for predictions, pos in zip(ours, positions):
        expected = logits[pos].softmax(-1)
        got = torch.zeros_like(expected)
        for token, p in predictions:
            got[tokenizer.token_to_id(token)] = p
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


def test_next_sentence_is_a_probability_and_matches_the_head(model, tokenizer, explorer):
    p = next_sentence(model, tokenizer.encode("the cat sat .", "the dog sat ."))
    assert 0 < p < 1
    encoding = tokenizer.encode("the cat sat .", "the dog sat .")
    with torch.no_grad():
        logits = model(torch.tensor([encoding.ids]), torch.tensor([encoding.segment_ids])).seq_relationship_logits
    assert p == pytest.approx(float(logits.softmax(-1)[0, 0]), abs=1e-6)
    with pytest.raises(ValueError, match="sentence B is empty"):
        next_sentence(model, tokenizer.encode("the cat ."))
    with pytest.raises(ValueError, match="sentence B is empty"):
        explorer.next_sentence("the cat .", " ")


def test_functions_leave_the_training_mode_alone(model, tokenizer, enc):
    model.train()
    try:
        first = fill_mask(model, tokenizer, enc("the [MASK] sat ."), top_k=3)
        assert model.training  # restored
        assert fill_mask(model, tokenizer, enc("the [MASK] sat ."), top_k=3) == first  # no dropout noise
    finally:
        model.eval()


def test_mask_token_reports_the_original(model, tokenizer, enc):
    result = mask_token(model, tokenizer, enc("the cat sat on the mat ."), index=2, top_k=4)
    assert result.original == "cat" and result.index == 2 and len(result.predictions) == 4
    full = dict(fill_mask(model, tokenizer, enc("the [MASK] sat on the mat ."), top_k=tokenizer.vocab_size)[0])
    assert result.original_probability == pytest.approx(full["cat"], abs=1e-6)
    assert result.original_rank == 1 + sum(p > full["cat"] for p in full.values())
    with pytest.raises(ValueError, match="special token"):
        mask_token(model, tokenizer, enc("the cat ."), index=0)
    with pytest.raises(ValueError, match="outside the input"):
        mask_token(model, tokenizer, enc("the cat ."), index=99)


def test_logit_lens_last_layer_equals_fill_mask(model, tokenizer, enc):
    lens = logit_lens(model, tokenizer, enc("the cat sat on the [MASK] ."), top_k=3)
    assert len(lens.layers) == model.config.num_hidden_layers + 1
    assert lens.tokens[lens.position] == "[MASK]"
    assert all(len(layer) == 3 for layer in lens.layers)
    final = fill_mask(model, tokenizer, enc("the cat sat on the [MASK] ."), top_k=3)[0]
    assert [t for t, _ in lens.layers[-1]] == [t for t, _ in final]
    assert [p for _, p in lens.layers[-1]] == pytest.approx([p for _, p in final], abs=1e-6)
    assert lens.final_token == final[0][0]
    assert lens.final_token_probability[-1] == pytest.approx(final[0][1], abs=1e-6)
    assert len(lens.final_token_probability) == len(lens.layers)
    # An explicit position, and the second mask.
    assert logit_lens(model, tokenizer, enc("the cat sat ."), position=2).position == 2
    second = logit_lens(model, tokenizer, enc("[MASK] cat [MASK] ."), mask_index=1)
    assert second.position == 3
    with pytest.raises(ValueError, match="no \\[MASK\\]"):
        logit_lens(model, tokenizer, enc("the cat sat ."))
    with pytest.raises(ValueError, match="mask_index"):
        logit_lens(model, tokenizer, enc("[MASK] cat ."), mask_index=1)


def test_corrupt_example_follows_the_rule(tokenizer):
    text = tokenizer.encode(" ".join(WORDS * 4))  # 96 words, one token each: round(0.15 x 96) = 14 chosen
    example = corrupt_example(tokenizer, text, seed=3)
    chosen = example.chosen
    assert len(chosen) == 14
    assert all(example.tokens[i] not in ("[CLS]", "[SEP]") for i in chosen)
    for i, (label, kind) in enumerate(zip(example.labels, example.kinds)):
        if i in chosen:
            assert tokenizer.id_to_token(label) == example.tokens[i]
            assert kind in ("mask", "random", "kept")
            if kind == "mask":
                assert example.input_tokens[i] == "[MASK]"
            if kind == "kept":
                assert example.input_tokens[i] == example.tokens[i]
        else:
            assert label == IGNORE_INDEX and kind == "" and example.input_tokens[i] == example.tokens[i]
    assert example == corrupt_example(tokenizer, text, seed=3)  # the seed fixes the example
    # Over many seeds the three kinds appear in about 80/10/10 proportion (1000 x 14 choices; 5 sigma).
    kinds = [k for s in range(1000) for k in corrupt_example(tokenizer, text, seed=s).kinds if k]
    for kind, p in (("mask", 0.8), ("random", 0.1), ("kept", 0.1)):
        n = len(kinds)
        assert abs(kinds.count(kind) - n * p) < 5 * (n * p * (1 - p)) ** 0.5


def test_corrupt_example_pair_and_errors(tokenizer, explorer):
    example = corrupt_example(tokenizer, tokenizer.encode("the cat sat .", "the dog sat ."), seed=0)
    assert example.segment_ids.count(1) == 5 and len(example.chosen) == 1
    assert explorer.corrupt_example("the cat sat .", "the dog sat .", seed=0) == example
    with pytest.raises(ValueError, match="empty"):
        explorer.corrupt_example("")


def test_explorer_predictions_use_the_same_truncation_as_its_runs(model, tokenizer):
    explorer = Explorer(model, tokenizer, torch.device("cpu"), "tiny", max_tokens=8)
    words = [w for w in WORDS if w.isalpha()][:6]
    a, b = " ".join(words), " ".join(reversed(words))  # 6 + 6 words: truncated longest-first to 8 tokens
    run = explorer.run(a, b)
    assert len(run) == 8 and run.encoding.truncation is not None
    index = run.encoding.segment_ids.index(1)  # the first token of sentence B, which moves when truncating
    assert explorer.mask_token(a, index, text_pair=b).original == run.tokens[index]
    lens = explorer.logit_lens(a, position=index, text_pair=b)
    assert lens.tokens == run.tokens
