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
    assert bars is None and "bertviz-app finetune" in message and "Pick **sentiment**" in message


def test_the_page_has_a_task_tab(folders):
    from bertviz_app.app import build_demo

    demo = build_demo({"classifier": bertviz_app.load(folders["cls"], device="cpu")})
    assert "task" in {fn.api_name for fn in demo.fns.values()}
