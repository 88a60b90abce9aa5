"""Silencing heads: nothing silenced changes nothing (exactly), everything silenced changes the output, and the
results equal transformers' model with the silenced heads' output-projection columns zeroed, on a tiny random model
and on the default model; the head ranking measured (against one full forward pass per head) and by gradient
(against a finite difference); the errors a user can cause."""

import copy

import numpy as np
import pytest
import torch
import transformers

import bertviz_app
from bertviz_app.ablation import ablate, check_heads, head_mask_for, rank_heads
from bertviz_app.config import BertConfig
from bertviz_app.catalog import ENGLISH_MLM_PATH
from bertviz_app.model import BertForPreTraining
from bertviz_app.targets import example_bytes
from oracle_models import oracle_pair, zero_output_columns

TOL = dict(rtol=1e-5, atol=1e-6)  # float32 probabilities, the same arithmetic ordered a little differently
TEXT, PAIR = "the [MASK] sat on the mat .", "she poured a [MASK] of tea ."
SILENCED = [(0, 1), (1, 4), (2, 0), (2, 5)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return oracle_pair(tmp_path_factory.mktemp("ablation"), seed=2)


def oracle_probabilities(hf, tokenizer, text, pair, heads):
    """(probabilities at each [MASK] (masks, vocab), P(IsNext)) from a copy of transformers' model with `heads`
    silenced by zeroed output-projection columns."""
    silenced = copy.deepcopy(hf)
    zero_output_columns(silenced, heads)
    enc = tokenizer.encode(text, pair)
    masks = [i for i, t in enumerate(enc.ids) if t == tokenizer.mask_token_id]
    with torch.no_grad():
        out = silenced(input_ids=torch.tensor([enc.ids]), token_type_ids=torch.tensor([enc.segment_ids]))
    return (out.prediction_logits[0, masks].softmax(-1),
            float(out.seq_relationship_logits[0].softmax(-1)[0]))


def assert_matches_oracle(result, probs, is_next, tokenizer):
    assert len(result.masks) == len(probs)
    for mask, p in zip(result.masks, probs):
        ids = [tokenizer.token_to_id(t) for t, _ in mask.after]
        assert ids == p.topk(len(ids)).indices.tolist()
        torch.testing.assert_close(torch.tensor([q for _, q in mask.after]), p[ids], **TOL)
        assert mask.probability_after == pytest.approx(float(p[tokenizer.token_to_id(mask.token)]), rel=1e-5,
                                                       abs=1e-6)
    assert result.is_next_after == pytest.approx(is_next, rel=1e-5, abs=1e-6)


# ------------------------------------------------------------------------------------------------------------------
# ablate
# ------------------------------------------------------------------------------------------------------------------
def test_silencing_nothing_changes_nothing_exactly(tiny):
    model, _, tokenizer = tiny
    result = ablate(model, tokenizer, tokenizer.encode(TEXT, PAIR), [], top_k=8)
    assert len(result.masks) == 2 and result.heads == []
    for mask in result.masks:
        assert mask.before == mask.after and mask.probability_before == mask.probability_after
        assert mask.change == 0.0 and mask.rank_after == 1
    assert result.is_next_before == result.is_next_after is not None


def test_before_is_the_unsilenced_model(tiny):
    model, hf, tokenizer = tiny
    result = ablate(model, tokenizer, tokenizer.encode(TEXT, PAIR), SILENCED)
    probs, is_next = oracle_probabilities(hf, tokenizer, TEXT, PAIR, [])
    for mask, p in zip(result.masks, probs):
        assert mask.probability_before == pytest.approx(float(p.max()), rel=1e-5)
        assert mask.token == tokenizer.id_to_token(int(p.argmax()))
    assert result.is_next_before == pytest.approx(is_next, rel=1e-5)


@pytest.mark.parametrize("heads", [SILENCED, [(1, 3)], [(layer, head) for layer in range(3) for head in range(6)]],
                         ids=["four", "one", "all"])
def test_equals_transformers_with_zeroed_output_columns(tiny, heads):
    model, hf, tokenizer = tiny
    result = ablate(model, tokenizer, tokenizer.encode(TEXT, PAIR), heads, top_k=6)
    assert_matches_oracle(result, *oracle_probabilities(hf, tokenizer, TEXT, PAIR, heads), tokenizer)
    assert result.heads == heads


def test_silencing_every_head_changes_the_output(tiny):
    model, _, tokenizer = tiny
    every = [(layer, head) for layer in range(3) for head in range(6)]
    result = ablate(model, tokenizer, tokenizer.encode(TEXT, PAIR), every)
    assert all(abs(m.change) > 1e-3 for m in result.masks)
    assert abs(result.is_next_after - result.is_next_before) > 1e-3
    frame = result.to_frame()
    assert frame.shape == (2, 7) and (frame["change"] != 0).all()


def test_a_pair_without_mask_reports_is_next_only(tiny):
    model, _, tokenizer = tiny
    result = ablate(model, tokenizer, tokenizer.encode("the cat sat .", "she poured tea ."), [(0, 0)])
    assert result.masks == [] and result.is_next_before is not None and result.is_next_after is not None
    single = ablate(model, tokenizer, tokenizer.encode("the [MASK] sat ."), [(0, 0)])
    assert single.is_next_before is None and single.is_next_after is None  # no sentence B, no IsNext


# ------------------------------------------------------------------------------------------------------------------
# rank_heads
# ------------------------------------------------------------------------------------------------------------------
def full_pass_effects(model, tokenizer, text, pair, ranking):
    """f with each head silenced by one whole forward pass of the plain model with an (L, h) head mask."""
    target = ranking.target
    enc = tokenizer.encode(text, pair)
    L, h = ranking.effects.shape
    out = np.empty((L, h))
    for layer in range(L):
        for head in range(h):
            with torch.no_grad():
                o = model.bert(torch.tensor([enc.ids]), torch.tensor([enc.segment_ids]),
                               head_mask=head_mask_for([(layer, head)], L, h))
                out[layer, head] = float(target.value(model, o)[0])
    return out - ranking.f_input


@pytest.mark.parametrize("target, kwargs", [("mask", dict(mask_index=1)), ("mask", dict(token="cup")),
                                            ("is_next", {})])
def test_ranking_equals_one_full_pass_per_head(tiny, target, kwargs):
    model, _, tokenizer = tiny
    ranking = rank_heads(model, tokenizer, tokenizer.encode(TEXT, PAIR), target=target, **kwargs)
    assert ranking.effects.shape == (3, 6) and ranking.method == "ablation"
    np.testing.assert_allclose(ranking.effects, full_pass_effects(model, tokenizer, TEXT, PAIR, ranking),
                               rtol=1e-4, atol=2e-5)
    assert np.abs(ranking.effects).max() > 1e-2  # the heads matter, so the comparison means something


def test_ranking_equals_transformers_with_each_head_zeroed(tiny):
    model, hf, tokenizer = tiny
    ranking = rank_heads(model, tokenizer, tokenizer.encode(TEXT, PAIR), mask_index=0)
    token_id, mask_index = ranking.target.token_id, ranking.target.mask_index
    base = float(oracle_probabilities(hf, tokenizer, TEXT, PAIR, [])[0][mask_index, token_id].log())
    assert ranking.f_input == pytest.approx(base, abs=1e-5)
    for layer in range(3):
        for head in range(6):
            probs, _ = oracle_probabilities(hf, tokenizer, TEXT, PAIR, [(layer, head)])
            expected = float(probs[mask_index, token_id].log()) - base
            assert ranking.effects[layer, head] == pytest.approx(expected, abs=2e-5)


def test_ranking_table_and_batches(tiny):
    model, _, tokenizer = tiny
    ranking = rank_heads(model, tokenizer, tokenizer.encode(TEXT, PAIR))
    frame = ranking.ranking()
    assert len(frame) == 18 and frame["rank"].tolist() == list(range(1, 19))
    assert (frame["effect"].abs().diff().dropna() <= 0).all()
    assert ranking.top(3) == list(zip(frame["layer"][:3], frame["head"][:3]))
    first = frame.iloc[0]
    assert first["probability_after"] == pytest.approx(np.exp(ranking.f_input + first["effect"]), rel=1e-6)
    # batches of 1 give the same
    one_at_a_time = rank_heads(model, tokenizer, tokenizer.encode(TEXT, PAIR), memory_budget=1)
    np.testing.assert_allclose(one_at_a_time.effects, ranking.effects, rtol=1e-5, atol=1e-6)
    # Groups of 5 examples with 6 heads a layer: most groups start in one layer and take heads of the next.
    five = 5 * example_bytes(model.config, len(tokenizer.encode(TEXT, PAIR)), backward=False)
    np.testing.assert_allclose(rank_heads(model, tokenizer, tokenizer.encode(TEXT, PAIR), memory_budget=five).effects,
                               ranking.effects, rtol=1e-5, atol=1e-6)


def test_gradient_importance_is_the_derivative(tiny):
    """The gradient method's effect is -df/dm at m = 1; check it against a central finite difference of the head
    mask on a float64 copy of the model."""
    model, _, tokenizer = tiny
    ranking = rank_heads(model, tokenizer, tokenizer.encode(TEXT, PAIR), mask_index=1, method="gradient")
    assert ranking.method == "gradient" and ranking.effects.shape == (3, 6)
    double = copy.deepcopy(model).double()
    enc = tokenizer.encode(TEXT, PAIR)
    eps = 1e-4

    def f(mask):
        with torch.no_grad():
            out = double.bert(torch.tensor([enc.ids]), torch.tensor([enc.segment_ids]), head_mask=mask)
            hidden = out.last_hidden_state[:, ranking.target.position]
            return float(double.cls.predictions(hidden).log_softmax(-1)[0, ranking.target.token_id])

    for layer, head in [(0, 0), (1, 4), (2, 5)]:
        up, down = torch.ones(3, 6, dtype=torch.float64), torch.ones(3, 6, dtype=torch.float64)
        up[layer, head] += eps
        down[layer, head] -= eps
        derivative = (f(up) - f(down)) / (2 * eps)
        assert ranking.effects[layer, head] == pytest.approx(-derivative, rel=1e-3, abs=1e-5)
    measured = rank_heads(model, tokenizer, tokenizer.encode(TEXT, PAIR), mask_index=1)
    assert ranking.f_input == pytest.approx(measured.f_input, abs=1e-5)


# ------------------------------------------------------------------------------------------------------------------
# The default model
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.real_weights
def test_default_model_equals_transformers_with_zeroed_columns():
    explorer = bertviz_app.load(device="cpu")
    hf = transformers.BertForPreTraining.from_pretrained(ENGLISH_MLM_PATH, dtype=torch.float32,
                                                         attn_implementation="eager").eval()
    text, pair = "The keys to the cabinet [MASK] on the table.", "They were [MASK] yesterday."
    nothing = ablate(explorer.model, explorer.tokenizer, explorer.encode(text, pair), [])
    assert all(m.before == m.after for m in nothing.masks) and nothing.is_next_before == nothing.is_next_after
    heads = [(0, 3), (2, 10), (5, 0), (5, 11)]
    result = ablate(explorer.model, explorer.tokenizer, explorer.encode(text, pair), heads, top_k=10)
    assert_matches_oracle(result, *oracle_probabilities(hf, explorer.tokenizer, text, pair, heads), explorer.tokenizer)
    every = [(layer, head) for layer in range(6) for head in range(12)]
    everything = ablate(explorer.model, explorer.tokenizer, explorer.encode(text, pair), every)
    assert all(abs(m.change) > 0.01 for m in everything.masks)
    assert_matches_oracle(everything, *oracle_probabilities(hf, explorer.tokenizer, text, pair, every),
                          explorer.tokenizer)


# ------------------------------------------------------------------------------------------------------------------
# Errors a user can cause
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("heads, message", [
    ([(3, 0)], r"layer 3 in \(3, 0\) is out of range: the model has 3 layers, numbered 0 to 2"),
    ([(0, 6)], r"head 6 in \(0, 6\) is out of range: each layer has 6 heads, numbered 0 to 5"),
    ([(0, 1, 2)], r"each head is a \(layer, head\) pair of integers"),
    ([(0.5, 1)], r"each head is a \(layer, head\) pair of integers"),
    ("0,1", r"heads must be a list of \(layer, head\) pairs"),
])
def test_bad_heads_say_what_to_do(tiny, heads, message):
    model, _, tokenizer = tiny
    with pytest.raises(ValueError, match=message):
        ablate(model, tokenizer, tokenizer.encode(TEXT), heads)


def test_other_errors(tiny):
    model, _, tokenizer = tiny
    assert check_heads([[1, 2], (1, 2), (np.int64(0), 0)], 3, 6) == [(1, 2), (0, 0)]
    with pytest.raises(ValueError, match="there is no prediction to compare: write \\[MASK\\]"):
        ablate(model, tokenizer, tokenizer.encode("the cat sat ."), [(0, 0)])
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        ablate(model, tokenizer, tokenizer.encode(TEXT), [], top_k=0)
    with pytest.raises(ValueError, match="unknown method 'random'"):
        rank_heads(model, tokenizer, tokenizer.encode(TEXT), method="random")
    with pytest.raises(ValueError, match="mask_index 2 is out of range"):
        rank_heads(model, tokenizer, tokenizer.encode(TEXT, PAIR), mask_index=2)
    encoder_only = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size), mlm_head=False,
                                      nsp_head=False)
    with pytest.raises(ValueError, match="this model has no masked-LM head"):
        ablate(encoder_only, tokenizer, tokenizer.encode(TEXT), [(0, 0)])
    with pytest.raises(ValueError, match="there is no prediction to compare"):
        ablate(encoder_only, tokenizer, tokenizer.encode("the cat sat .", "she poured tea ."), [(0, 0)])
