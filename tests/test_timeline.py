"""The training timeline: the schedule, what a pretraining and a fine-tuning leave in timeline/, the fidelity of a
snapshot to a fresh analysis of the checkpoint saved at its step, a crashed run's snapshots read and resumed without
a gap or a duplicate, the notebook API's tables and figures, and a bad --timeline-inputs file in one sentence."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
import torch

import bertviz_app
from bertviz_app import views
from bertviz_app.catalog import default_model_path
from bertviz_app.checkpoint import load_model
from bertviz_app.pretraining import add_pretrain_arguments, run_pretrain
from bertviz_app.timeline import (PRETRAINING_PROBES, TimelineError, choose_inputs, open_timeline, read_inputs,
                                  snapshot_steps)
from bertviz_app.timeline.probe_set import PROBE_BYTES, PROBE_SENTENCES, STATES

from conftest import SENTIMENT

STEPS, SNAPSHOTS = 12, 6
STORY = ["the cat sat on the mat .", "a bird sang in the tree .", "the sun was warm all day .",
         "we went home and slept .", "she poured a cup of tea .", "he read a book in the sun ."]


def _args(corpus: Path, out: Path, *extra: str):
    return add_pretrain_arguments(argparse.ArgumentParser()).parse_args([
        "--corpus", str(corpus), "--out", str(out), "--preset", "tiny", "--batch-size", "4", "--max-tokens", "32",
        "--device", "cpu", "--save-minutes", "0", "--eval-examples", "8", "--steps", str(STEPS), "--save-every", "6",
        "--log-every", "6", "--keep", "0", "--lr", "1e-2", "--timeline", str(SNAPSHOTS),
        "--tokenizer", str(default_model_path()), *extra])


def probed_run(root: Path) -> Path:
    """A tiny pretraining under `root` whose snapshots keep a probe set (a small tagged grammar, no download); its
    output folder (checkpoint at step-{STEPS:07d})."""
    from test_corpus_probes import _conll

    (root / "train.txt").write_text("\n\n".join("\n".join(STORY[(d + k) % len(STORY)] for k in range(4))
                                                for d in range(8)) + "\n")
    (root / "grammar.conll").write_text(_conll(60), encoding="utf-8")
    run_pretrain(_args(root / "train.txt", root / "run", "--timeline-probe", str(root / "grammar.conll")))
    return root / "run"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("story")
    text = "\n\n".join("\n".join(STORY[(d + k) % len(STORY)] for k in range(4)) for d in range(8))
    (folder / "train.txt").write_text(text + "\n")
    return folder / "train.txt"


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, corpus) -> Path:
    """A tiny pretraining from scratch (the default model's vocabulary, so the built-in probes' words exist), 12 steps,
    checkpoints at 6 and 12, 6 snapshots."""
    out = tmp_path_factory.mktemp("pretrained") / "run"
    run_pretrain(_args(corpus, out))
    return out


def test_the_schedule_is_log_spaced_early_and_ends_at_the_last_step():
    steps = snapshot_steps(50, 10_000)
    assert len(steps) == 50 == len(set(steps)) and steps == sorted(steps) and steps[0] == 0 and steps[-1] == 10_000
    assert steps[:5] == [0, 1, 2, 3, 4]  # heads change fastest at the start: the first steps are all seen
    assert sum(s <= 100 for s in steps) >= 10 and steps[-2] >= 9_000  # and the rest at an even pace to the end
    assert snapshot_steps(50, 20) == list(range(21)) and snapshot_steps(0, 100) == [] and snapshot_steps(1, 7) == [7]
    assert snapshot_steps(SNAPSHOTS, STEPS) == [0, 1, 3, 6, 9, 12]


def test_a_pretraining_leaves_a_timeline_the_views_can_draw(pretrained):
    timeline = bertviz_app.open_timeline(pretrained)
    assert timeline.steps == snapshot_steps(SNAPSHOTS, STEPS) and timeline.kind == "pretraining"
    assert [i.text for i in timeline.inputs] == [i.text for i in PRETRAINING_PROBES]
    snapshot = timeline.snapshot(STEPS)
    assert snapshot["loss"] > 0 and snapshot["lr"] >= 0 and len(snapshot["roles"]) == 2  # tiny: 2 layers x 4 heads
    for i, item in enumerate(timeline.inputs):
        decoded = views.decode_payload(timeline.payload(STEPS, i))  # the bytes the JavaScript views mount
        attention = decoded.values("attention")
        t = len(snapshot["inputs"][i]["tokens"])
        assert attention.shape == (2, 4, t, t) and np.allclose(attention.sum(-1), 1, atol=1e-5)
        assert decoded.header["tokens"] == snapshot["inputs"][i]["tokens"]
        assert ("is_next" in snapshot["inputs"][i]) == (item.text_pair is not None)
    masks = snapshot["inputs"][0]["masks"]
    assert len(masks) == 1 and len(masks[0]["top"]) == 5 and 0 < masks[0]["answer"] < 1  # P(paris) is kept
    # the views of a snapshot, as run.show() gives a Run's
    run = timeline.run(STEPS, 2)
    assert run.is_next == snapshot["inputs"][2]["is_next"] and run.tokens[0] == "[CLS]"
    assert run.save_html(pretrained.parent / "step12.html").stat().st_size > 1000 and run.show()._repr_html_()
    with pytest.raises(ValueError, match="no snapshot at step 5; the nearest are at steps 3, 6"):
        timeline.run(5, 0)
    with pytest.raises(ValueError, match="0 to 4"):
        timeline.run(STEPS, 5)


def test_the_snapshot_at_a_checkpoint_equals_a_fresh_analysis_of_it(pretrained):
    """Fidelity: at both checkpoints' steps, every head's attention within the payload's 8-bit code, the same
    masked-token top five and P(IsNext), from a fresh explorer on the saved folder."""
    timeline = open_timeline(pretrained / "timeline")
    for step in (6, 12):
        explorer = bertviz_app.load(pretrained / f"step-{step:07d}", device="cpu")
        snapshot = timeline.snapshot(step)
        for i, item in enumerate(timeline.inputs):
            fresh = views.decode_payload(explorer.run(item.text, item.text_pair).views_payload())
            kept = views.decode_payload(timeline.payload(step, i))
            assert fresh.header["tokens"] == kept.header["tokens"]
            for name in ("attention", "rollout"):
                codes = kept.arrays[name].astype(int) - fresh.arrays[name].astype(int)
                assert np.abs(codes).max() <= 1, (step, i, name)
            got = snapshot["inputs"][i]
            if "[MASK]" in item.text:
                top = explorer.fill_mask(item.text, item.text_pair, top_k=5)[0]
                assert [t for t, _ in got["masks"][0]["top"]] == [t for t, _ in top]
                np.testing.assert_allclose([p for _, p in got["masks"][0]["top"]], [p for _, p in top], atol=1e-5)
            if item.text_pair is not None:
                assert got["is_next"] == pytest.approx(explorer.next_sentence(item.text, item.text_pair), abs=1e-5)


def test_the_timeline_does_not_change_the_training(tmp_path, corpus, pretrained):
    """Snapshots run in eval mode under inference_mode: the weights reached are those of a run without a timeline."""
    run_pretrain(_args(corpus, tmp_path / "plain", "--timeline", "0"))
    assert not (tmp_path / "plain" / "timeline").exists()
    with_timeline, _ = load_model(pretrained / f"step-{STEPS:07d}")
    without, _ = load_model(tmp_path / "plain" / f"step-{STEPS:07d}")
    for (name, a), b in zip(with_timeline.state_dict().items(), without.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)


def test_a_crashed_run_keeps_its_snapshots_and_a_resumed_run_continues_without_gap_or_duplicate(
        tmp_path, corpus, pretrained):
    out = tmp_path / "run"

    class Crash(Exception):
        pass

    def crash_at_9(record):  # the process dies after writing snapshot 9; its last checkpoint is step 6
        if record["step"] == 9:
            raise Crash

    with pytest.raises(Crash):
        run_pretrain(_args(corpus, out), on_snapshot=crash_at_9)
    (out / "timeline" / ".partial-step-0000010").mkdir()  # and a snapshot it was writing when killed
    (out / "timeline" / ".partial-step-0000010" / "input-00.bviz").write_bytes(b"BVIZ")
    crashed = open_timeline(out)
    assert crashed.steps == [0, 1, 3, 6, 9] and sorted(p.name for p in out.glob("step-*")) == ["step-0000006"]
    assert all(views.decode_payload(crashed.payload(s, i)) for s in crashed.steps for i in range(5))

    written = []
    run_pretrain(_args(corpus, out), on_snapshot=lambda r: written.append(r["step"]))
    resumed = open_timeline(out)
    # step 9 was past the checkpoint resumed from: made again (once), not kept from the crashed run
    assert written == [9, 12] and resumed.steps == snapshot_steps(SNAPSHOTS, STEPS)
    assert not list((out / "timeline").glob(".partial-*"))
    uninterrupted = open_timeline(pretrained)
    for step in resumed.steps:
        loss = uninterrupted.snapshot(step)["loss"]
        assert resumed.snapshot(step)["loss"] == (None if loss is None else pytest.approx(loss, rel=1e-5))
        a, b = (views.decode_payload(t.payload(step, 0)).arrays["attention"].astype(int)
                for t in (resumed, uninterrupted))
        assert np.abs(a - b).max() <= 1, step


def test_the_notebook_api_gives_tables_and_figures(pretrained):
    timeline = open_timeline(pretrained)
    frame = timeline.frame()
    assert list(frame["step"]) == timeline.steps and np.isnan(frame["loss"][0]) and (frame["loss"][1:] > 0).all()
    heads = timeline.heads()
    assert len(heads) == len(timeline.steps) * 2 * 4
    assert {"step", "loss", "lr", "layer", "head", "entropy", "previous", "sep", "role"} <= set(heads.columns)
    assert set(heads["role"]) <= {"previous token", "next token", "self", "[CLS]", "[SEP]", "broad", "mixed"}
    onsets = timeline.onsets()
    assert len(onsets) == 8 and set(onsets["since"]) <= set(timeline.steps)
    predictions = timeline.predictions()
    paris = predictions[(predictions.input == 0) & predictions.watched]
    assert list(paris["step"]) == timeline.steps and list(paris["token"].unique()) == ["paris"]
    assert timeline.series(0) == {"P(paris) at [MASK]": list(paris["probability"])}
    assert list(timeline.series(2)) == ["is_next"]
    for figure in (timeline.plot.roles(), timeline.plot.prediction(0), timeline.plot.prediction(3),
                   timeline.plot.loss()):
        assert isinstance(figure, go.Figure) and figure.layout.title.text
        go.Figure(json.loads(figure.to_json()))  # full validation
    roles = timeline.plot.roles()
    assert roles.data[0].z.shape == (8, len(timeline.steps))  # a row per head, a column per snapshot


def test_each_snapshot_stores_the_probe_sets_states_as_the_model_at_that_step_computes_them(pretrained):
    """The probe set is Brown's tagged sentences (the default --timeline-probe), within its byte budget; at both
    checkpoints' steps its stored states equal a fresh explorer's hidden states of each sentence, within float16's
    rounding (one unit in the last place, 2**-10 relative, since the batched pass may differ from the single one
    in float32's last bits and so round the other way) and 1e-5 absolute near zero."""
    timeline = open_timeline(pretrained)
    probe_set = timeline.probe_set
    assert probe_set.source == "brown" and len(probe_set) == PROBE_SENTENCES and len(probe_set.tags) > 50
    assert len(probe_set.labels) == 15  # Brown's genres, sampled across the corpus
    path = pretrained / "timeline" / f"step-{STEPS:07d}" / STATES
    assert PROBE_BYTES // 4 < path.stat().st_size <= PROBE_BYTES + 1024  # a few MB a snapshot at most
    starts = probe_set.sentence_starts
    for step in (6, 12):
        states = np.load(pretrained / "timeline" / f"step-{step:07d}" / STATES)
        assert states.shape == probe_set.state_shape == (3, starts[-1], 32) and states.dtype == np.float16
        explorer = bertviz_app.load(pretrained / f"step-{step:07d}", device="cpu", max_tokens=32)
        for i in range(0, len(probe_set), 8):  # every eighth sentence: 32 forward passes a step
            run = explorer.run(probe_set.sentences["text"][i])
            kept = states[:, starts[i]:starts[i + 1]].astype(np.float32)
            assert run.labels == list(probe_set.pieces[probe_set.token_columns[starts[i]:starts[i + 1], 2]])
            np.testing.assert_allclose(kept, run.hidden_states, rtol=2**-10, atol=1e-5, err_msg=f"{step}, {i}")


class _AsCorpus:
    """The probe set and one snapshot's states as the corpus probe reads a corpus: its tables, and one shard."""

    def __init__(self, probe_set, states):
        from types import SimpleNamespace

        self.probe_set = probe_set
        self.shards = [SimpleNamespace(tokens=len(probe_set.token_columns), array=lambda name: states)]

    def __getattr__(self, name):  # num_layers, hidden_size, token_columns, tags, labels, sentences, pieces, ...
        return getattr(self.probe_set, name)

    def __len__(self):
        return len(self.probe_set)

    def check_hidden_layer(self, layer):
        return layer


def test_the_timeline_probe_is_the_corpus_probe_on_the_same_states(pretrained):
    from bertviz_app.corpus.probes import probe

    timeline = open_timeline(pretrained)
    states = np.load(pretrained / "timeline" / f"step-{STEPS:07d}" / STATES, mmap_mode="r")
    corpus = _AsCorpus(timeline.probe_set, states)
    for target, layer, control in (("recurs", None, True), ("tag", 2, False)):
        got = timeline.probe(target, layer=layer, control=control, steps=[STEPS])
        assert list(got["step"]) == [STEPS] * len(got) and list(got.columns)[:3] == ["step", "target", "layer"]
        expected = probe(corpus, target, layer=layer, control=control)
        pd.testing.assert_frame_equal(got.drop(columns="step"), expected, check_exact=True)
    assert 0.1 < got["accuracy"][0] <= 1 and got["majority"][0] < got["accuracy"][0]  # a real POS probe
    # every snapshot, the same items and split at each step: one majority baseline
    every = timeline.probe("recurs", control=False)
    assert list(every["step"].unique()) == timeline.steps and every["majority"].nunique() == 1
    figure = timeline.plot.probe("recurs")
    title = re.sub(r"<br>|</?sup>", " ", figure.layout.title.text)  # wrapped into lines to fit a phone
    assert " ".join(title.split()) == (f"What each layer knew of whether a word recurs {PROBE_SENTENCES} held-out "
                                       "sentences of the Brown corpus")
    assert [t.name for t in figure.data] == ["embeddings (layer 0)", "layer 1", "layer 2",
                                             "always the commonest class"]
    np.testing.assert_allclose(figure.data[2].y, every[every["layer"] == 2]["accuracy"], atol=5e-5)  # 4 places
    go.Figure(json.loads(figure.to_json()))


def test_a_bad_probe_is_one_sentence(pretrained, tmp_path):
    import shutil

    from bertviz_app.pretraining.training import _probe_set

    timeline = open_timeline(pretrained)
    for call, words in ((lambda: timeline.probe("syntax"), "a probe's target is one of tag, label, position, recurs"),
                        (lambda: timeline.probe("tag", layer=3), "layer 3 is not one of this timeline's hidden "
                                                                 "layers (0 to 2)")):
        with pytest.raises(TimelineError) as caught:
            call()
        assert words in str(caught.value) and "\n" not in str(caught.value)
    old = tmp_path / "old"  # a timeline from before probe sets, and one whose snapshot lost its states' shape
    shutil.copytree(pretrained / "timeline", old)
    (old / "probe-set.json").unlink()
    with pytest.raises(TimelineError, match="^this timeline has no probe set: a pretraining stores one"):
        open_timeline(old).probe("tag")
    shutil.copytree(pretrained / "timeline", tmp_path / "cut")
    np.save(tmp_path / "cut" / "step-0000003" / STATES, np.zeros((3, 5, 32), np.float16))
    with pytest.raises(TimelineError, match=r"^step-0000003/probe.npy holds float16 \(3, 5, 32\), not the probe set"):
        open_timeline(tmp_path / "cut").probe("recurs", steps=[3])
    with pytest.raises(ValueError, match="^--timeline-probe /nowhere.conll: ") as caught:
        _probe_set(argparse.Namespace(timeline_probe="/nowhere.conll"), None, None, print)
    assert "\n" not in str(caught.value)


def test_a_finetuning_leaves_its_timeline_in_the_output(tmp_path, finetuned_classifier_base):
    root, base = finetuned_classifier_base
    written = []
    result = bertviz_app.finetune("text-classification", root / "train.csv", tmp_path / "model", model=base,
                                  epochs=1, batch_size=8, learning_rate=5e-3, max_length=32, device="cpu",
                                  progress=False, say=lambda *a: None, timeline=4, on_snapshot=written.append)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # the hidden folder moved in
    timeline = open_timeline(result.output)
    total = result.metrics["history"][-1]["step"]
    assert timeline.steps == snapshot_steps(4, total) == [r["step"] for r in written]
    assert timeline.manifest["task"] == "text-classification" and timeline.manifest["labels"] == sorted(SENTIMENT)
    # the default inputs are held-out examples, with their gold label
    assert all(i.gold in SENTIMENT for i in timeline.inputs) and 1 <= len(timeline.inputs) <= 5
    # fidelity: one epoch, so the saved model is the last step's
    explorer = bertviz_app.load(result.output, device="cpu")
    for i, item in enumerate(timeline.inputs):
        kept = timeline.run(total, i)
        fresh = views.decode_payload(explorer.run(item.text, item.text_pair).views_payload())
        assert np.abs(kept.decoded.arrays["attention"].astype(int) - fresh.arrays["attention"].astype(int)).max() <= 1
        answer = explorer.predict(item.text, item.text_pair)
        assert kept.prediction["label"] == answer.label
        assert kept.prediction["probabilities"] == pytest.approx(answer.probabilities, abs=1e-5)
    labels = timeline.predictions().query("kind == 'label'")
    assert labels.groupby(["step", "input"])["probability"].sum().round(5).eq(1).all()


@pytest.fixture(scope="module")
def finetuned_classifier_base(tmp_path_factory):
    """The tiny base model and training file of conftest's finetuned_classifier."""
    from bertviz_app import BertConfig, BertForPreTraining, Tokenizer, save_pretrained

    root = tmp_path_factory.mktemp("classifier")
    words = sorted({w for texts in SENTIMENT.values() for text in texts for w in text.split()})
    (root / "base").mkdir()
    (root / "base" / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = Tokenizer.from_vocab(root / "base" / "vocab.txt")
    torch.manual_seed(0)
    save_pretrained(BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size)), root / "base",
                    tokenizer=tokenizer)
    rows = [f"{text},{label}" for label, texts in SENTIMENT.items() for text in texts] * 2
    (root / "train.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    return root, root / "base"


BAD_FILES = {
    "empty": (b"# only a comment\n\n", "holds no inputs; write one sentence per line"),
    "not_utf8": (b"The caf\xe9 is open.\n", "is not UTF-8 text (byte 8 cannot be read); save it as UTF-8"),
    "too_long": (("word " * 100).encode() + b"\n", "line 1 has 499 characters; a timeline input may have at most 400"),
    "too_many": (b"A sentence.\n" * 17, "holds 17 inputs; a timeline follows at most 16"),
    "answers": (b"The [MASK] sat on the [MASK]. => cat\n", "line 1: 1 word(s) after '=>' for 2 [MASK]"),
    "empty_a": (b"[SEP] Only a second sentence.\n", "line 1: Sentence A is empty"),
    "control": (b"Bell \x07 here.\n", "line 1: Sentence A contains a control character"),
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_a_bad_inputs_file_is_one_sentence(tmp_path, name):
    content, words = BAD_FILES[name]
    path = tmp_path / "probes.txt"
    path.write_bytes(content)
    with pytest.raises(TimelineError) as caught:
        read_inputs(path)
    message = str(caught.value)
    assert words in message and "\n" not in message and message.startswith("--timeline-inputs probes.txt")


def test_an_inputs_file_is_read_and_its_words_checked(tmp_path):
    from bertviz_app import Tokenizer

    path = tmp_path / "mine.txt"
    path.write_text("# my class\nThe capital of Italy is [mask]. => rome\n\nI like tea. [SEP] It is warm.\n",
                    encoding="utf-8")
    inputs = read_inputs(path)
    assert [(i.text, i.text_pair, i.answers) for i in inputs] == [
        ("The capital of Italy is [mask].", None, ("rome",)), ("I like tea.", "It is warm.", ())]
    vocab = Tokenizer.from_folder(default_model_path()).vocab
    assert choose_inputs(path, PRETRAINING_PROBES, vocab) == inputs
    assert choose_inputs(None, PRETRAINING_PROBES, vocab) == list(PRETRAINING_PROBES)
    path.write_text("The capital of Italy is [MASK]. => xyzzyq\n", encoding="utf-8")
    with pytest.raises(TimelineError, match="'xyzzyq' is not one word piece of the model's vocabulary"):
        choose_inputs(path, PRETRAINING_PROBES, vocab)


def test_bad_inputs_stop_pretraining_and_finetuning_before_they_start(tmp_path, corpus, capsys):
    from bertviz_app import cli

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe")
    out = tmp_path / "out"
    assert cli.main(["pretrain", "--corpus", str(corpus), "--out", str(out), "--preset", "tiny", "--steps", "2",
                     "--device", "cpu", "--timeline-inputs", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "--timeline-inputs bad.txt is not UTF-8 text" in err and not list(out.glob("step-*"))
    assert not (out / "timeline").exists()
    assert cli.main(["finetune", "text-classification", "--train", str(tmp_path / "none.csv"), "--output",
                     str(tmp_path / "ft"), "--timeline-inputs", str(bad)]) == 2
    assert "--timeline-inputs bad.txt is not UTF-8 text" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--timeline must be 0 \\(off\\) to 1000"):
        bertviz_app.finetune("text-classification", "t.csv", "o", timeline=-1)


def test_open_timeline_says_when_a_folder_has_none(tmp_path):
    with pytest.raises(TimelineError, match="holds no training timeline"):
        open_timeline(tmp_path)


def test_a_stop_ends_a_pretraining_at_the_step_under_way_or_before_it_starts(tmp_path, corpus):
    """The Pretrain tab's Cancel: `stop` set at step 3 ends the run there with a checkpoint and the last snapshot;
    set while the corpus is read, nothing is trained or saved. on_step sees every step's loss."""
    import threading

    stop, seen = threading.Event(), []

    def on_step(record):
        seen.append(record)
        if record["step"] == 3:
            stop.set()

    out = tmp_path / "stopped"
    assert run_pretrain(_args(corpus, out), stop=stop, on_step=on_step) is not None
    assert [r["step"] for r in seen] == [1, 2, 3] and all(r["total"] == STEPS and r["loss"] > 0 for r in seen)
    assert (out / "step-0000003").is_dir() and open_timeline(out).steps[-1] == 3
    early = threading.Event()
    early.set()
    assert run_pretrain(_args(corpus, tmp_path / "early"), stop=early) is None
    assert not list((tmp_path / "early").glob("step-*")) and not (tmp_path / "early" / "timeline").exists()
