"""The app's Task tab: a fine-tuned model's answer for the analyzed input, tokens and labels shown as text."""

from __future__ import annotations

import pytest
import torch

import bertviz_app
from bertviz_app.app.tabs.task import task_view
from bertviz_app.tokenizer import Tokenizer

WORDS = "the cat sat on mat a dog where did sit".split()


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict:
    """A random head of each kind, saved by transformers, with labels that look like markup."""
    import transformers

    root = tmp_path_factory.mktemp("heads")
    (root / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "?", *WORDS]) + "\n")
    tokenizer = Tokenizer.from_vocab(root / "vocab.txt")
    labels = {0: "<b>bold</b>", 1: "*star*"}
    out = {}
    for name, cls, id2label in (("cls", transformers.BertForSequenceClassification, labels),
                                ("tag", transformers.BertForTokenClassification, labels),
                                ("qa", transformers.BertForQuestionAnswering, {0: "LABEL_0", 1: "LABEL_1"})):
        torch.manual_seed(0)
        config = transformers.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                                         id2label=id2label, label2id={v: k for k, v in id2label.items()})
        cls(config).save_pretrained(root / name)
        tokenizer.save(root / name)
        out[name] = root / name
    return out


def test_classification_shows_every_label_as_text(folders):
    explorer = bertviz_app.load(folders["cls"], device="cpu")
    message, bars = task_view(explorer, explorer.run("the cat sat"))
    assert set(bars) == {"<b>bold</b>", "*star*"} and sum(bars.values()) == pytest.approx(1.0)
    assert "<b>" not in message and ("&lt;b&gt;" in message or "\\*star\\*" in message)


def test_tags_are_listed_per_word(folders):
    explorer = bertviz_app.load(folders["tag"], device="cpu")
    message, bars = task_view(explorer, explorer.run("the cat sat"))
    assert bars is None and message.count("\n| ") == 4  # the header and one row per word
    assert "| cat |" in message and "<b>" not in message


def test_question_answering_marks_the_answer_or_asks_for_a_passage(folders):
    explorer = bertviz_app.load(folders["qa"], device="cpu")
    message, _ = task_view(explorer, explorer.run("where did the cat sit ?"))
    assert "A question and a passage are needed" in message
    message, _ = task_view(explorer, explorer.run("where did the cat sit ?", "the cat sat on the mat ."))
    assert message.startswith("**Answer: ") and "> " in message


def test_a_model_without_a_task_says_how_to_make_one(folders):
    explorer = bertviz_app.load(device="cpu")
    message, bars = task_view(explorer, explorer.run("the cat sat"), alternatives=("sentiment",))
    assert bars is None and "bertviz-app finetune" in message and "pick **sentiment**" in message
    # where the page may train, the Fine-tune tab is the way, not a command line
    message, _ = task_view(explorer, explorer.run("the cat sat"), can_train=True)
    assert "the **Fine-tune** tab" in message and "bertviz-app" not in message


def test_the_page_has_a_task_tab(folders):
    from bertviz_app.app import build_demo

    demo = build_demo({"classifier": bertviz_app.load(folders["cls"], device="cpu")})
    assert "task" in {fn.api_name for fn in demo.fns.values()}


def test_the_task_tab_shows_a_difference_beside_the_spread_of_seeds(tmp_path):
    import json
    from types import SimpleNamespace

    from bertviz_app.app.tabs.task import score_note
    from bertviz_app.finetuning import seed_summary

    def model(name, score, data="movie-reviews", seeds=None):
        folder = tmp_path / name
        folder.mkdir()
        metrics = {"metric": "accuracy", "eval": {"accuracy": score}, "eval_before_training": {"accuracy": 0.5},
                   "data": {"train": data}}
        if seeds:
            metrics["seeds"] = seed_summary([{"seed": i, "score": s} for i, s in enumerate(seeds)], "accuracy")
        (folder / "metrics.json").write_text(json.dumps(metrics))
        return SimpleNamespace(name=name, task=SimpleNamespace(task="text-classification"), folder=folder)

    three = model("three seeds", 0.82, seeds=[0.80, 0.82, 0.81])  # a range of 0.02
    others = {"three seeds": three, "close": model("close", 0.81), "far": model("far", 0.75),
              "other data": model("other data", 0.60, data="my.csv"), "base": SimpleNamespace(name="base", task=None,
                                                                                                folder=None)}
    note = score_note(three, others)
    assert note.startswith("**Held-out accuracy 0.820** (the best of 3 seeds: mean 0.810 ± 0.010, mean ± standard "
                           "deviation; range 0.800 to 0.820)")
    assert "0.500 before fine-tuning: +0.320, beyond the spread of seeds (their scores ranged over 0.020)" in note
    assert "close, on the same held-out data: 0.810, this one +0.010, **within the spread of seeds** (their scores " \
           "ranged over 0.020)" in note
    assert "far, on the same held-out data: 0.750, this one +0.070, beyond the spread of seeds" in note
    assert "other data" not in note  # another held-out set: not comparable
    alone = score_note(others["close"], {"far": others["far"]})
    assert "this one +0.060, one seed each, so no spread is known: train with --seeds" in alone
    assert score_note(others["base"], others) == ""
