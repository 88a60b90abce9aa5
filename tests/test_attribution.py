"""Integrated gradients and blank-out: the quadrature, completeness on functions with a known answer, zero for
tokens that cannot matter, batching that changes nothing, the memory budget, the model's inputs_embeds path, the
convergence delta on the default model, and the errors a user can cause."""

import math

import numpy as np
import pytest
import torch

import bertviz_app
from bertviz_app.attribution import attribute, blank_out, integrated_gradients, integration_points
from bertviz_app.config import BertConfig
from bertviz_app.masked_lm import fill_mask, next_sentence
from bertviz_app.model import BertForPreTraining
from bertviz_app.targets import DEFAULT_MEMORY_BUDGET, batch_size_for, example_bytes
from oracle_models import oracle_pair


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    model, _, tokenizer = oracle_pair(tmp_path_factory.mktemp("ig"), seed=1)
    return model, tokenizer


# ------------------------------------------------------------------------------------------------------------------
# The integral
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("steps", [1, 3, 10, 50])
def test_gauss_legendre_is_exact_for_polynomials_below_twice_the_steps(steps):
    alphas, weights = integration_points(steps)
    assert ((alphas > 0) & (alphas < 1)).all() and weights.sum() == pytest.approx(1.0, abs=1e-13)
    for degree in range(2 * steps):
        assert (weights * alphas ** degree).sum() == pytest.approx(1 / (degree + 1), abs=1e-12)


def test_trapezoid_points():
    alphas, weights = integration_points(5, "trapezoid")
    np.testing.assert_allclose(alphas, [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_allclose(weights, [0.125, 0.25, 0.25, 0.25, 0.125])
    with pytest.raises(ValueError, match="at least 2 steps"):
        integration_points(1, "trapezoid")
    with pytest.raises(ValueError, match="unknown integration method 'simpson'"):
        integration_points(5, "simpson")
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        integration_points(0)


def test_integrated_gradients_of_a_cubic_is_exact():
    """f(x) = sum c * x^3: along a straight path IG gives c * (x^3 - x'^3) per entry, with any 2+ Gauss-Legendre
    points (the integrand is quadratic in alpha); the trapezoid rule is not exact, and its delta says so."""
    gen = torch.Generator().manual_seed(0)
    x, base, c = (torch.randn(4, 3, generator=gen, dtype=torch.float64) for _ in range(3))

    def f(points):  # (n, 4, 3) -> (n,)
        return (c * points ** 3).sum(dim=(1, 2))

    exact = (c * (x ** 3 - base ** 3)).sum(-1).numpy()  # (T,) summed over the hidden dimension
    result = integrated_gradients(f, x, base, steps=2, batch_size=1)
    np.testing.assert_allclose(result.scores, exact, rtol=1e-12, atol=1e-12)
    assert abs(result.delta) < 1e-12 and result.relative_delta < 1e-12
    rough = integrated_gradients(f, x, base, steps=3, method="trapezoid")
    assert abs(rough.delta) > 1e-3  # the check can fail
    assert result.f_input == pytest.approx(float(f(x[None])[0])) and result.f_baseline == pytest.approx(
        float(f(base[None])[0]))


def test_batching_changes_nothing(tiny):
    model, tokenizer = tiny
    text = "the cat sat on the [MASK] ."  # 9 tokens
    three = 3 * example_bytes(model.config, 9, backward=True)
    results = [attribute(model, tokenizer, tokenizer.encode(text), steps=12, memory_budget=budget)
               for budget in (1, three, 10**9)]
    assert [r.batch_size for r in results] == [1, 3, 12]  # 1 byte still runs, one path point at a time
    for other in results[1:]:
        np.testing.assert_allclose(other.scores, results[0].scores, rtol=1e-5, atol=1e-6)


def test_a_padded_position_gets_exactly_zero(tiny):
    """Padding is masked out of every attention row, so the target cannot depend on it: its score is 0, while the
    real tokens, varied the same way, get scores."""
    model, tokenizer = tiny
    enc = tokenizer.encode("the cat sat on the [MASK] .")
    ids = torch.tensor(enc.ids + [tokenizer.pad_token_id] * 3)  # 3 padded positions
    attention_mask = (torch.arange(len(ids)) < len(enc)).long()[None]  # (1, T)
    position = enc.ids.index(tokenizer.mask_token_id)
    table = model.bert.embeddings.word_embeddings.weight.detach()
    inputs = table[ids].clone()
    inputs[len(enc):] = torch.randn(3, inputs.shape[1])  # padded positions that differ from the baseline
    baseline = torch.zeros_like(inputs)

    def f(points):
        out = model.bert(inputs_embeds=points, attention_mask=attention_mask.expand(len(points), -1))
        return model.cls.predictions(out.last_hidden_state[:, position]).log_softmax(-1)[:, 9]

    result = integrated_gradients(f, inputs, baseline, steps=8, batch_size=3)
    assert (result.scores[len(enc):] == 0).all()
    assert (np.abs(result.scores[1:len(enc) - 1]) > 1e-6).all()


def test_scores_add_up_and_fixed_tokens_get_zero(tiny):
    model, tokenizer = tiny
    pair = tokenizer.encode("the [MASK] sat on the mat .", "she poured [MASK] .")
    a = attribute(model, tokenizer, pair, mask_index=1, steps=30)
    assert a.tokens[a.target.position] == "[MASK]" and a.target.position == 11 and a.target.mask_index == 1
    fixed = [t in ("[CLS]", "[SEP]", "[MASK]") for t in a.tokens]
    assert a.fixed.tolist() == fixed and (a.scores[a.fixed] == 0).all()
    assert a.scores.sum() == pytest.approx(a.f_input - a.f_baseline + a.delta, abs=1e-9)
    assert a.relative_delta < 0.05
    # f is log P(the top prediction), the same probability fill-mask reports
    top_token, top_p = fill_mask(model, tokenizer, pair)[1][0]
    assert a.target.token == top_token and math.exp(a.f_input) == pytest.approx(top_p, rel=1e-5)
    frame = a.to_frame()
    assert list(frame.columns) == ["position", "token", "score", "share", "fixed"] and len(frame) == len(a.tokens)


@pytest.mark.parametrize("baseline", ["pad", "mask", "zero"])
def test_baselines_and_a_chosen_token(tiny, baseline):
    model, tokenizer = tiny
    text = tokenizer.encode("the cat sat on the [MASK] .")
    a = attribute(model, tokenizer, text, token="tree", baseline=baseline, steps=30)
    assert a.target.token == "tree" and a.baseline == baseline
    assert a.relative_delta < 0.05
    assert attribute(model, tokenizer, text, token=tokenizer.token_to_id("tree"),
                     baseline=baseline, steps=30).target.token == "tree"


def test_is_next_target(tiny):
    model, tokenizer = tiny
    pair = tokenizer.encode("the cat sat on the mat .", "she poured a cup of tea .")
    a = attribute(model, tokenizer, pair, target="is_next", steps=30)
    assert a.target.kind == "is_next" and a.target.position == 0
    p = next_sentence(model, pair)
    assert a.f_input == pytest.approx(math.log(p / (1 - p)), rel=1e-4)
    assert a.relative_delta < 0.05 and np.abs(a.scores).sum() > 0


def test_blank_out_equals_replacing_the_token_by_pad(tiny):
    model, tokenizer = tiny
    text = "the cat sat on the [MASK] ."
    b = blank_out(model, tokenizer, tokenizer.encode(text), token="tree")
    enc = tokenizer.encode(text)
    position, tree = enc.ids.index(tokenizer.mask_token_id), tokenizer.token_to_id("tree")

    def log_p(ids):
        with torch.no_grad():
            return float(model(torch.tensor([ids])).prediction_logits[0, position].log_softmax(-1)[tree])

    assert b.f_input == pytest.approx(log_p(enc.ids), abs=1e-5)
    for i in range(len(enc)):
        if b.fixed[i]:
            assert b.scores[i] == 0
        else:
            ids = list(enc.ids)
            ids[i] = tokenizer.pad_token_id
            assert b.scores[i] == pytest.approx(b.f_input - log_p(ids), abs=1e-5)
    assert b.to_frame().shape == (len(enc), 5)


def test_inputs_embeds_path_equals_ids(tiny):
    model, tokenizer = tiny
    enc = tokenizer.encode("the cat sat .", "she poured tea .")
    ids, types = torch.tensor([enc.ids]), torch.tensor([enc.segment_ids])
    with torch.no_grad():
        by_ids = model(ids, types, capture={"layer.*.attention.probs"})
        by_embeds = model(inputs_embeds=model.bert.embeddings.word_embeddings(ids), token_type_ids=types,
                          capture={"layer.*.attention.probs"})
    torch.testing.assert_close(by_embeds.prediction_logits, by_ids.prediction_logits, rtol=0, atol=0)
    torch.testing.assert_close(by_embeds.seq_relationship_logits, by_ids.seq_relationship_logits, rtol=0, atol=0)
    with pytest.raises(ValueError, match="give either input_ids or inputs_embeds, not both"):
        model(ids, inputs_embeds=torch.zeros(1, len(enc), 48))
    with pytest.raises(ValueError, match=r"inputs_embeds must have shape \(batch, tokens, 48\), got \(1, 5, 7\)"):
        model(inputs_embeds=torch.zeros(1, 5, 7))
    with pytest.raises(ValueError, match=r"token_type_ids must have the shape of inputs_embeds' \(batch, tokens\) "
                                         r"\(1, 5\)"):
        model(inputs_embeds=torch.zeros(1, 5, 48), token_type_ids=torch.zeros(1, 4, dtype=torch.long))


# ------------------------------------------------------------------------------------------------------------------
# Memory
# ------------------------------------------------------------------------------------------------------------------
def test_memory_budget_sizes_the_batches():
    config = BertConfig.preset("tiny")
    default = BertConfig()  # BERT-base
    assert example_bytes(default, 512, True) > example_bytes(default, 128, True) > example_bytes(config, 128, True)
    assert example_bytes(default, 128, False) < example_bytes(default, 128, True)
    assert batch_size_for(default, 512, True, None, 50) == 1  # one point at a time, never out of memory
    assert batch_size_for(config, 16, True, None, 50) == 50  # capped by the number of steps
    assert batch_size_for(default, 128, True, 1, 50) == 1
    assert DEFAULT_MEMORY_BUDGET // example_bytes(default, 128, True) == batch_size_for(default, 128, True, None, 99)
    with pytest.raises(ValueError, match="memory_budget must be a positive number of bytes"):
        batch_size_for(config, 16, True, 0, 50)


@pytest.mark.real_weights
def test_a_512_token_input_runs_within_the_budget():
    explorer = bertviz_app.load(device="cpu")
    text = " ".join(["the cat sat on the mat and"] * 80) + " [MASK] ."  # truncated to 512 tokens, [MASK] kept
    long = explorer.encode(" ".join(["word"] * 505) + " [MASK] .")
    a = attribute(explorer.model, explorer.tokenizer, long, steps=2)
    assert len(a.tokens) == 509 and a.batch_size == batch_size_for(explorer.model.config, 509, True, None, 2) == 2
    assert batch_size_for(explorer.model.config, 512, True, None, 50) == 3  # 165 MB each (94 MB measured)
    with pytest.raises(ValueError, match="every \\[MASK\\] was cut off"):
        attribute(explorer.model, explorer.tokenizer, explorer.encode(text), steps=2)


# ------------------------------------------------------------------------------------------------------------------
# The proof on the default model
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.real_weights
@pytest.mark.parametrize("text, pair, target", [
    ("The capital of France is [MASK].", None, "mask"),
    ("She poured a cup of [MASK] and sat down by the window to read.", None, "mask"),
    ("The keys to the cabinet [MASK] on the table.", "They were lost yesterday.", "mask"),
    ("The cat sat on the mat.", "It was warm there.", "is_next"),
])
def test_convergence_delta_within_five_percent_on_the_default_model(text, pair, target):
    explorer = bertviz_app.load(device="cpu")
    # default: 50 steps
    a = attribute(explorer.model, explorer.tokenizer, explorer.encode(text, pair), target=target)
    assert a.steps == 50
    assert abs(a.delta) <= 0.05 * abs(a.f_input - a.f_baseline)
    assert abs(a.f_input - a.f_baseline) > 0.5  # the bound is not met trivially


# ------------------------------------------------------------------------------------------------------------------
# Errors a user can cause
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    (dict(text="the cat sat ."), "the text has no \\[MASK\\]; write \\[MASK\\] where"),
    (dict(text="the [MASK] sat .", mask_index=1), "mask_index 1 is out of range: the text has 1 \\[MASK\\] token,"),
    (dict(text="the [MASK] sat .", token="zebra"), "'zebra' is not in the vocabulary as one word piece"),
    (dict(text="the [MASK] sat .", token=10**6), "token id 1000000 is outside the vocabulary"),
    (dict(text="the [MASK] sat .", baseline="noise"), "unknown baseline 'noise'"),
    (dict(text="the [MASK] sat .", target="nsp"), "unknown target 'nsp'"),
    (dict(text="the cat sat .", target="is_next"), "the IsNext target needs a sentence pair; give text_pair"),
    (dict(text="the cat .", text_pair="a dog .", target="is_next", token="cat"), "token applies to the 'mask' target"),
    (dict(text="the [MASK] sat .", steps=0), "steps must be a positive integer"),
])
def test_errors_say_what_to_do(tiny, kwargs, message):
    model, tokenizer = tiny
    encoding = tokenizer.encode(kwargs.pop("text"), kwargs.pop("text_pair", None))
    with pytest.raises(ValueError, match=message):
        attribute(model, tokenizer, encoding, **kwargs)


def test_a_model_without_heads_says_so(tiny):
    _, tokenizer = tiny
    encoder_only = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size), mlm_head=False,
                                      nsp_head=False)
    with pytest.raises(ValueError, match="this model has no masked-LM head"):
        attribute(encoder_only, tokenizer, tokenizer.encode("the [MASK] sat ."))
    with pytest.raises(ValueError, match="this model has no next-sentence head"):
        blank_out(encoder_only, tokenizer, tokenizer.encode("the cat .", "a dog ."), target="is_next")


@pytest.mark.parametrize("context", [torch.no_grad, torch.inference_mode])
def test_gradients_are_taken_under_a_callers_no_grad_or_inference_mode(tiny, context):
    """An app handler may run everything under inference_mode; integrated gradients and the gradient head ranking
    must still get their gradients, and the same numbers."""
    from bertviz_app.ablation import rank_heads
    model, tokenizer = tiny
    text = tokenizer.encode("the cat sat on the [MASK] .")
    plain = attribute(model, tokenizer, text, steps=6)
    plain_heads = rank_heads(model, tokenizer, text, method="gradient")
    with context():
        inside = attribute(model, tokenizer, text, steps=6)
        inside_heads = rank_heads(model, tokenizer, text, method="gradient")
    np.testing.assert_array_equal(inside.scores, plain.scores)
    np.testing.assert_array_equal(inside_heads.effects, plain_heads.effects)


def test_the_work_reported_as_it_goes_adds_up_to_the_work_forecast_and_changes_nothing(tiny):
    """An explanation's progress (the Beyond attention tab's bar and time left) is the passes its steps report, against
    the passes forecast before it starts: the reports must add up to the forecast and leave the numbers as they are."""
    from bertviz_app.ablation import ablation_passes, rank_heads
    from bertviz_app.attribution import faithfulness, faithfulness_passes

    model, tokenizer = tiny
    enc = tokenizer.encode("the cat sat on the [MASK] near the tree .")
    told = []
    budget = example_bytes(model.config, len(enc), True) * 2  # two path points a batch: several batches
    faith = faithfulness(model, tokenizer, enc, steps=7, memory_budget=budget, report=told.append)
    assert len(told) > 2 and all(t > 0 for t in told)  # several batches, each told
    assert sum(told) == pytest.approx(faithfulness_passes(tokenizer, enc, 7))
    plain = faithfulness(model, tokenizer, enc, steps=7, memory_budget=budget)
    np.testing.assert_array_equal(faith.attribution.scores, plain.attribution.scores)
    np.testing.assert_array_equal(faith.blank_out.scores, plain.blank_out.scores)
    told.clear()
    ranking = rank_heads(model, tokenizer, enc, report=told.append)
    assert sum(told) == pytest.approx(ablation_passes(model.config))
    np.testing.assert_array_equal(ranking.effects, rank_heads(model, tokenizer, enc).effects)
