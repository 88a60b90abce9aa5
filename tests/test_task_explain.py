"""The Task tab's "why" for a fine-tuned model: integrated gradients toward a label (checked against the same IG on
transformers' AutoModelForSequenceClassification with the same weights, baseline and points, and for completeness),
the heads ranked by what silencing each does to that label, the model before fine-tuning compared layer by layer,
and the held-out table."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import bertviz_app
from bertviz_app.ablation import HeadRanking
from bertviz_app.app.tabs import task
from bertviz_app.targets import Target

TEXT = "the movie was great and good"


@pytest.fixture(scope="module")
def classifier(finetuned_classifier):
    return bertviz_app.load(finetuned_classifier, device="cpu")


def hf_integrated_gradients(folder, encoding, label: int, steps: int) -> tuple[np.ndarray, float, float]:
    """IG of log P(label) on transformers' own model: the word embeddings from [PAD] (at every position but [CLS]
    and [SEP]) to the input, the same Gauss-Legendre points, gradients by autograd. (scores, f(x), f(x'))."""
    import transformers

    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    ids = torch.tensor([encoding.ids])
    types = torch.tensor([encoding.segment_ids])
    table = model.bert.embeddings.word_embeddings.weight.detach()
    x = table[ids[0]]  # (T, H)
    special = torch.tensor(encoding.special_tokens_mask, dtype=torch.bool)
    baseline = torch.where(special[:, None], x, table[0].expand_as(x))  # [PAD] is id 0 in this vocabulary

    def f(embeds):  # (n, T, H) -> (n,)
        logits = model(inputs_embeds=embeds, token_type_ids=types.expand(len(embeds), -1)).logits
        return logits.log_softmax(-1)[:, label]

    alphas, weights = np.polynomial.legendre.leggauss(steps)
    alphas, weights = (alphas + 1) / 2, weights / 2
    total = torch.zeros_like(x, dtype=torch.float64)
    for a, w in zip(alphas, weights):
        point = (baseline + float(a) * (x - baseline)).unsqueeze(0).requires_grad_(True)
        (grad,) = torch.autograd.grad(f(point).sum(), point)
        total += w * grad[0].double()
    with torch.no_grad():
        ends = f(torch.stack([x, baseline]))
    return ((x - baseline).double() * total).sum(-1).numpy(), float(ends[0]), float(ends[1])


@pytest.mark.parametrize("label", [None, "negative"])
def test_integrated_gradients_match_transformers_and_add_up(classifier, finetuned_classifier, label):
    encoding = classifier.encode(TEXT)
    target = classifier.task_target(TEXT, label=label)
    predicted = classifier.predict(TEXT)
    assert target.kind == "label" and target.token == (label or predicted.label)
    ig = classifier.attribute(TEXT, target=target, steps=32)
    ours_p = target.probability(ig.f_input)
    assert ours_p == pytest.approx(predicted.probabilities[target.token], abs=1e-6)
    theirs, f_x, f_base = hf_integrated_gradients(finetuned_classifier, encoding, target.token_id, 32)
    assert ig.f_input == pytest.approx(f_x, abs=1e-5) and ig.f_baseline == pytest.approx(f_base, abs=1e-5)
    np.testing.assert_allclose(ig.scores, theirs, atol=1e-5, rtol=1e-4)
    # completeness: the shares add up to f(x) - f(x') (here within 1e-4 of the gap)
    assert abs(ig.scores.sum() - (ig.f_input - ig.f_baseline)) <= 1e-4 * abs(ig.f_input - ig.f_baseline) + 1e-7
    assert ig.scores[0] == ig.scores[-1] == 0.0  # [CLS] and [SEP] stay in the baseline
    assert np.abs(ig.scores[1:-1]).max() > 1e-3


def test_a_label_the_model_does_not_have_is_one_sentence(classifier, tiny_mlm_folder):
    with pytest.raises(ValueError, match="is not one of the model's labels"):
        classifier.task_target(TEXT, label="neutral")
    pretrained = bertviz_app.load(tiny_mlm_folder, device="cpu")
    with pytest.raises(ValueError, match="has no fine-tuned head"):
        pretrained.task_target(pretrained.encode(TEXT))
    with pytest.raises(ValueError, match="has no fine-tuned head"):
        pretrained.attribute(TEXT, target=Target("label", 0, 1, "positive"))


def test_the_heads_ranked_by_silencing_match_a_forward_pass_without_each(classifier):
    target = classifier.task_target(TEXT)
    ranking = classifier.rank_heads(TEXT, target=target)
    enc = classifier.encode(TEXT)
    model = classifier.task_model
    layer, head = ranking.top(1)[0]
    mask = torch.ones(model.config.num_hidden_layers, model.config.num_attention_heads)
    mask[layer, head] = 0
    with torch.no_grad():
        logits = model(torch.tensor([enc.ids]), torch.tensor([enc.segment_ids]), head_mask=mask).logits
    after = float(logits.log_softmax(-1)[0, target.token_id])
    assert ranking.effects[layer, head] == pytest.approx(after - ranking.f_input, abs=1e-5)


def test_the_words_about_each_head_follow_the_sign():
    effects = np.zeros((2, 2), dtype=np.float32)
    effects[1, 0], effects[0, 1] = np.log(0.9 / 0.5), np.log(0.2 / 0.5)  # silencing raises / lowers P
    value = task.heads_value(HeadRanking(["[CLS]"], Target("label", 0, 1, "positive"), "ablation", np.log(0.5),
                                         effects), "P(positive)")
    first, second = value["heads"][:2]
    assert (first["layer"], first["head"]) == (1, 0)  # the largest |effect| first
    assert first["words"] == "silencing it raises P(positive) from 50% to 90% (+40.00 points)"
    assert second["words"] == "silencing it lowers P(positive) from 50% to 20% (-30.00 points)"
    assert value["heads"][2]["words"].startswith("silencing it leaves P(positive) at 50%")


def test_the_explanation_view_colors_tokens_by_sign_as_text(classifier):
    run = classifier.run("<b>great</b> film")
    message, tokens, heads = task.explain_view(classifier, run, steps=16)
    assert "Integrated gradients toward" in message and "completeness" in message
    shown = [t["token"] for t in tokens["tokens"]]
    assert shown == run.tokens and "<" in shown  # the tokens themselves: the template escapes them
    colors = {t["color"][:15] for t, s in zip(tokens["tokens"], run.tokens) if s not in ("[CLS]", "[SEP]")}
    assert colors <= {"rgba(26,152,80,", "rgba(215,48,39,"}
    assert len(heads["heads"]) == 8 and all(h["words"].startswith("silencing it ") for h in heads["heads"])
    assert "{{this.token}}" in task.TOKENS_TEMPLATE and "{{{" not in task.TOKENS_TEMPLATE  # escaped, never raw


def test_tagger_and_reader_targets_add_up(tmp_path):
    """A tagger's word and a reader's answer span are explained the same way (random heads saved by
    transformers)."""
    import transformers

    from bertviz_app.catalog import minilm_path
    from bertviz_app.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_folder(minilm_path())
    for name, cls, id2label in (("tag", transformers.BertForTokenClassification, {0: "O", 1: "B-PER", 2: "I-PER"}),
                                ("qa", transformers.BertForQuestionAnswering, {0: "LABEL_0", 1: "LABEL_1"})):
        torch.manual_seed(0)
        config = transformers.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                                         id2label=id2label)
        cls(config).save_pretrained(tmp_path / name)
        tokenizer.save(tmp_path / name)
    tagger = bertviz_app.load(tmp_path / "tag", device="cpu")
    target = tagger.task_target("mary sat there", position=2, label="B-PER")
    assert (target.kind, target.position, target.token) == ("tag", 2, "B-PER")
    ig = tagger.attribute("mary sat there", target=target, steps=32)
    assert ig.relative_delta < 1e-3
    with pytest.raises(ValueError, match="not a word of the input"):
        tagger.task_target("mary sat there", position=0)
    run = tagger.run("mary sat there")
    assert task.word_choices(tagger, run) == [("mary (token 1)", 1), ("sat (token 2)", 2), ("there (token 3)", 3)]
    message, tokens, heads = task.explain_view(tagger, run, None, 2, steps=16)  # the tab: a word, its predicted tag
    assert " at token 2)**" in message and len(tokens["tokens"]) == 5 and heads["heads"]
    reader = bertviz_app.load(tmp_path / "qa", device="cpu")
    question, context = "where did mary sit ?", "mary sat on the mat ."
    span = reader.task_target(question, context)
    answer = reader.predict(question, context)
    enc = reader.encode(question, context)
    assert enc.offsets[span.position][0] == answer.start and enc.offsets[span.end][1] == answer.end
    ig = reader.attribute(question, context, target=span, steps=32)
    assert ig.relative_delta < 1e-3
    message = task.explain_view(reader, reader.run(question, context), steps=16)[0]
    assert f"P(answer = tokens {span.position} to {span.end})" in message
    assert reader.rank_heads(question, context, target=span).effects.shape == (2, 4)


def test_the_model_before_fine_tuning_is_named_loaded_and_compared_layer_by_layer(finetuned_classifier):
    from bertviz_app.app import build_demo, load_models

    explorers = load_models([finetuned_classifier], device="cpu")
    fine = explorers[finetuned_classifier.name]
    base_folder = str(finetuned_classifier.parent / "base")
    assert fine.base_model == base_folder and len(explorers) == 2  # the base came with it, named by its folder
    base = explorers["base"]
    change = fine.layer_change(base)
    assert change.shape == (2,) and (change > 0).all()  # every layer moved, and by how much is reported
    assert fine.layer_change(fine).max() == 0.0
    name, why = task.base_name(fine, explorers)
    assert name == "base" and why == ""
    assert "not loaded in this app" in task.base_name(fine, {fine.name: fine})[1]
    demo = build_demo(explorers)
    (before,) = [f.fn for f in demo.fns.values() if f.api_name == "task_compare"]
    session = {"model": fine.name, "text": TEXT, "pair": ""}
    fine.run(TEXT)
    out = before(session)
    a, b, model, picked, prefilled, message, *_, layers, results, tabs = out
    assert (a, b, model, picked) == (TEXT, "", base.name, True) and results["visible"] is True
    assert tabs.selected == "compare-tab"
    assert "Change per layer, first to last: attention" in message and "weights" in message
    panels = [trace.y for trace in layers.data]
    assert len(panels) == 2 and np.allclose(panels[1], change)  # the figure of change by layer


def test_the_heldout_table_sorts_by_loss_and_a_row_gives_its_input(classifier, finetuned_classifier):
    rows = [json.loads(line) for line in (finetuned_classifier / "heldout_predictions.jsonl").read_text().splitlines()]
    metrics = json.loads((finetuned_classifier / "metrics.json").read_text())
    frame = task.heldout_frame(classifier)
    assert len(frame) == len(rows) == metrics["examples"]["validation"]
    assert list(frame.columns) == ["text", "gold", "prediction", "confidence", "loss"]
    assert frame["loss"].is_monotonic_decreasing and frame["loss"].iloc[0] == pytest.approx(
        max(r["loss"] for r in rows), abs=1e-3)  # shown to 3 decimals
    assert task.picked_example(frame.iloc[2].tolist(), list(frame.columns)) == (frame["text"].iloc[2], "")
    with pytest.raises(Exception, match="Click a row"):
        task.picked_example(["only one cell"], list(frame.columns))


def test_a_cut_heldout_table_keeps_the_most_wrong_of_all_rows(classifier, finetuned_classifier, monkeypatch):
    rows = [json.loads(line) for line in (finetuned_classifier / "heldout_predictions.jsonl").read_text().splitlines()]
    monkeypatch.setattr(task, "HELDOUT_ROWS", 3)
    frame = task.heldout_frame(classifier)
    worst = sorted((r["loss"] for r in rows), reverse=True)[:3]
    assert frame["loss"].tolist() == pytest.approx(worst, abs=1e-3)


def test_a_damaged_heldout_file_is_named_without_the_server_folder(tmp_path):
    from bertviz_app.finetuned import read_heldout

    (tmp_path / "heldout_predictions.jsonl").write_text('{"text": "fine"}\n[1, 2]\n')
    with pytest.raises(ValueError) as caught:
        read_heldout(tmp_path)
    assert str(caught.value).startswith("heldout_predictions.jsonl line 2:") and str(tmp_path) not in str(caught.value)


def test_a_heldout_file_linked_out_of_the_model_s_folder_is_refused(tmp_path):
    """The Task tab shows a folder's held-out rows to visitors: a link to another file that reads as held-out rows
    (another training's texts) is refused, by the file's name only."""
    from bertviz_app.finetuned import read_heldout

    (tmp_path / "model").mkdir()
    (tmp_path / "private.jsonl").write_text('{"text": "a pupil\'s private sentence"}\n')
    (tmp_path / "model" / "heldout_predictions.jsonl").symlink_to(tmp_path / "private.jsonl")
    with pytest.raises(ValueError) as caught:
        read_heldout(tmp_path / "model")
    assert str(caught.value) == "heldout_predictions.jsonl is a link out of the model's folder: refused"
