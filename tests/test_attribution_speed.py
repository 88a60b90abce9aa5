"""What makes the Beyond attention tab's Explain affordable at 256 tokens, checked to change nothing it should not: a
last layer computed only where the prediction reads it (every family), blank-out of a long input in runs of whole
words (each run one pass, batched, equal to the passes made one at a time), and the tab saying so, before and while
it runs.

The tolerances are float32's, derived (`test_batching.float32_bound`): a float32 pass lies within that share of an
array's scale from the float64 pass of the same model, whatever the CPU's summation order."""

import copy

import numpy as np
import pytest
import torch

import bertviz_app
import family_models
from bertviz_app.attribution import blank_out, blank_out_spans, _fixed_positions
from test_batching import float32_bound

SENTENCE = "The keys to the unbelievably ornate cabinet [MASK] on the table , said the housekeeper ."


@pytest.fixture(scope="module")
def default():
    return bertviz_app.load(device="cpu")


def assert_within_float32(value: torch.Tensor, exact: torch.Tensor, config) -> None:
    scale = max(1.0, float(exact.abs().max()))
    error = float((value.double() - exact).abs().max())
    assert error <= float32_bound(config) * scale, (error, float32_bound(config) * scale)


def check_rows(explorer, text: str, pair: str | None = None) -> None:
    """The last layer at a [MASK] (or a middle token) and at [CLS] alone, against the whole float64 pass."""
    model = explorer.model.bert
    enc = explorer.encode(text, pair)
    ids, types = torch.tensor([enc.ids]), torch.tensor([enc.segment_ids])
    exact64 = copy.deepcopy(model).double()
    with torch.inference_mode():
        whole = exact64(ids, types)
        middle = len(enc) // 2
        for rows in ([middle], [0], [0, middle]):
            out = model(ids, types, rows=rows)
            assert out.last_hidden_state.shape == (1, len(rows), model.config.hidden_size)
            assert_within_float32(out.last_hidden_state, whole.last_hidden_state[:, rows], model.config)
            if rows[0] == 0 and model.pooler is not None:
                assert_within_float32(out.pooler_output, whole.pooler_output, model.config)
            elif rows[0] != 0:
                assert out.pooler_output is None  # it would read [CLS], which this pass did not compute


def test_the_last_layer_at_the_rows_a_prediction_reads_is_the_whole_pass_there(default):
    check_rows(default, SENTENCE)


@pytest.mark.parametrize("family", ["deberta-v2", "albert", "distilbert"])
def test_the_last_layer_at_some_rows_in_every_family(family, tmp_path):
    family_models.build(family, tmp_path)
    check_rows(bertviz_app.load(str(tmp_path), device="cpu"), "the cat sat on the mat because it was warm .")


def test_long_blank_out_runs_are_whole_words_that_cover_each_piece_once(default):
    enc = default.encode(SENTENCE, "The housekeeper kept the unbelievably small keys in a drawer .")
    fixed = _fixed_positions(default.tokenizer, enc)
    varied = [int(i) for i in np.flatnonzero(~fixed)]
    assert [s for s in blank_out_spans(enc, fixed) if len(s) != 1] == []  # no bound: one piece at a time
    assert blank_out_spans(enc, fixed, len(varied)) == [[i] for i in varied]
    # [MASK] and the [SEP] between the sentences cut the pieces into 3 stretches, a run never reaching across them
    mask, sep = enc.labels.index("[MASK]"), enc.labels.index("[SEP]")
    stretches = [list(range(1, mask)), list(range(mask + 1, sep)), list(range(sep + 1, len(enc) - 1))]
    assert blank_out_spans(enc, fixed, 1) == blank_out_spans(enc, fixed, 2) == stretches
    for bound in (1, 3, 7, len(varied) - 1):
        spans = blank_out_spans(enc, fixed, bound)
        assert len(spans) <= max(bound, 3)
        assert sorted(i for s in spans for i in s) == varied  # each piece once
        for s in spans:
            assert s == list(range(s[0], s[-1] + 1))  # consecutive: never across [MASK] or [SEP]
            # whole words: the piece before a run and the piece after it belong to other words
            assert s[0] == 0 or enc.word_ids[s[0] - 1] != enc.word_ids[s[0]]
            assert s[-1] == len(enc) - 1 or enc.word_ids[s[-1] + 1] != enc.word_ids[s[-1]]
    with pytest.raises(ValueError, match="max_passes must be a positive integer"):
        blank_out_spans(enc, fixed, 0)


def test_blank_out_in_runs_equals_each_run_blanked_in_a_pass_of_its_own(default):
    """The batched passes (one row per run, the last layer at the [MASK] only) against one whole pass per run made
    the plain way: the same numbers within float32's rounding."""
    model, tokenizer = default.model, default.tokenizer
    enc = default.encode(SENTENCE)
    blank = blank_out(model, tokenizer, enc, max_passes=5)
    assert blank.spans is not None and len(blank.spans) <= 5 and blank.pieces_per_span > 1
    assert set(blank.to_frame()["span"]) == {-1, *range(len(blank.spans))}
    table = model.bert.embeddings.word_embeddings.weight
    inputs = table[torch.tensor(enc.ids)]
    types = torch.tensor([enc.segment_ids])
    position = enc.ids.index(tokenizer.mask_token_id)
    with torch.inference_mode():
        for run in blank.spans:
            x = inputs.clone()
            x[run] = table[tokenizer.pad_token_id]
            hidden = model.bert(inputs_embeds=x[None], token_type_ids=types).last_hidden_state[0, position]
            value = model.cls.predictions(hidden).float().log_softmax(-1)[blank.target.token_id]
            assert_within_float32(torch.tensor(blank.values[run]), value.double().expand(len(run)), model.config)
            assert (blank.scores[run] == blank.f_input - blank.values[run]).all()  # one score for the whole run
    assert (blank.scores[blank.fixed] == 0).all()
    # within the bound nothing changes: one word piece at a time, as without it
    alone = blank_out(model, tokenizer, enc)
    bounded = blank_out(model, tokenizer, enc, max_passes=int((~blank.fixed).sum()))
    assert alone.spans is None and bounded.spans is None
    np.testing.assert_array_equal(alone.scores, bounded.scores)


def test_a_long_explanation_says_what_it_computes_and_its_progress_advances(default, monkeypatch):
    """Explain on an input beyond blank-out's bound (lowered here so that a short input is "long"): the forecast
    before it starts names the runs of words, the bar is told fractions that only grow, through the three stages in
    order, up to the whole, and the message under the result says what blank-out blanked."""
    from bertviz_app.app.tabs import beyond

    run = default.run(SENTENCE)
    monkeypatch.setattr(beyond, "EXPLAIN_BLANK_OUT_PASSES", 4)
    monkeypatch.setattr(beyond, "RATES", {default.name: 0.05})  # a slow machine: every explanation is long
    forecast = beyond.explanation_forecast(default, run, 10)
    assert "takes long: about **" in forecast and "4 runs of words blanked in turn" in forecast
    assert "blank-out blanks runs of whole words" in forecast
    told = []
    message, *_ = beyond.explain_view(default, run, "mask:0", "", 10,
                                      tell=lambda fraction, desc: told.append((fraction, desc)))
    fractions = [f for f, _ in told]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0) and len(told) > 4
    # each report names the stage under way after it (a stage done in one batch is never named)
    stages = list(dict.fromkeys(desc.split(":")[0] for _, desc in told))
    order = ["Integrated gradients (10 steps)", "Blank-out (a run of words at a time)", "Silencing each head"]
    assert stages == [stage for stage in order if stage in stages] and stages[-2:] == order[1:]
    assert all("s left" in desc for _, desc in told)
    assert "The input is long, so blank-out blanks runs of whole words" in message
