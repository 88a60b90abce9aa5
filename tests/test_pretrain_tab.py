"""The app's Pretrain tab, driven through its own functions: a tiny BERT from scratch on a short text (the `tiny`
preset, a few steps) whose snapshots reach the page and whose model joins the model lists when stopped, one training
at a time in the lane the Fine-tune tab shares, the built-in text, and each bad input answered with one sentence
while nothing else changes."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import gradio as gr
import pytest

import bertviz_app
from bertviz_app import cli
from bertviz_app.app import build_demo
from bertviz_app.app.common import Models
from bertviz_app.app.lane import pretraining as lane_pretraining
from bertviz_app.app.lane.pretraining import (BUILTIN_MISSING, PretrainJob, builtin_corpus, class_sentence,
                                              pretrain_choices, pretrain_settings, text_problem)
from bertviz_app.app.lane.training import Progress, TrainingSettings
from bertviz_app.app.tabs import TabPage
from bertviz_app.app.tabs.finetune import FineTuneTab
from bertviz_app.app.tabs.pretrain import PretrainTab, top5_text
from bertviz_app.app.tabs.timeline import timeline_folder
from bertviz_app.app.views_host import ViewsHost
from bertviz_app.corpus.python_help import help_topics
from bertviz_app.timeline import open_timeline

WORDS = "cat dog bird fish horse cow sheep goat mouse frog".split()


@pytest.fixture(scope="module")
def texts(tmp_path_factory) -> dict[str, Path]:
    """A short text of 30 documents (three sentences each), an empty one and a binary one."""
    folder = tmp_path_factory.mktemp("texts")
    documents = ["\n".join(f"the {WORDS[(d + k) % 10]} sat on the {WORDS[(d + 2 * k) % 10]} ." for k in range(3))
                 for d in range(30)]
    (folder / "animals.txt").write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    (folder / "empty.txt").write_text("\n \n", encoding="utf-8")
    (folder / "weights.bin").write_bytes(bytes(range(256)) * 4)
    return {p.stem: p for p in folder.iterdir()}


@pytest.fixture(scope="module")
def tiny(tiny_mlm_folder):
    return bertviz_app.load(tiny_mlm_folder, device="cpu", name="tiny")


@pytest.fixture
def page(tiny, texts, tmp_path, monkeypatch):
    """The Fine-tune and Pretrain tabs in a page of their own (one lane), the tiny model the only model; the cache
    in tmp_path."""
    monkeypatch.setenv("BERTVIZ_APP_CACHE", str(tmp_path / "cache"))
    models = Models({"tiny": tiny})
    with gr.Blocks():
        picker = gr.Dropdown(models.names, value="tiny")
        page = TabPage(models, gr.State(None), picker, host=ViewsHost(models),
                       training=TrainingSettings(True, "", (), pretrain_files=tuple(map(str, texts.values()))))
        for kind in (FineTuneTab, PretrainTab):
            with gr.Tab(kind.title) as page.items[kind.id]:
                page.tabs[kind.id] = kind(page)
        for tab in page.tabs.values():
            tab.wire()
    yield page
    page.training_lane.cancel(None)
    page.training_lane.wait(60)


def _until(condition, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.05)


def _refused(fn, *args) -> str:
    with pytest.raises(gr.Error) as refused:
        fn(*args)
    return refused.value.message


def test_a_tiny_pretraining_shows_each_snapshot_and_joins_the_model_lists_when_stopped(page):
    tab: PretrainTab = page.tabs["pretrain-tab"]
    lane = tab.lane
    assert lane is page.tabs["finetune-tab"].lane  # one lane for both tabs
    tab.start("animals.txt", "tiny", 2, "The [MASK] sat on the mat.")
    _until(lambda: (lane.snapshot().timeline or {}).get("count", 0) >= 3, "three snapshots")
    status, figure, top5, key, start, stop, timer, seen, *lists = tab.poll((1, None, None))
    assert "Pretraining" in status and "step" in status and list(figure.data[0].x)
    assert top5.startswith("**Top 5 for [MASK] at step") and top5.count("%") == 5
    name, count = key.split("\u0000")
    assert name == lane.snapshot().job.name and int(count) >= 3 and seen[2] == key
    # the views: every snapshot so far, keyed by the run and the input (the slider grows in place)
    views = tab.views_value(key)
    assert views["key"] == f"{name}\u00000" and len(views["timeline"]["steps"]) >= int(count)
    assert views["timeline"]["input"]["text"] == "The [MASK] sat on the mat."  # the class's sentence: input 0
    assert not start.interactive and timer.active  # Stop's state: this direct call is nobody's page
    # a second start, from either tab, while one runs: one sentence, the running one untouched
    running = lane.snapshot().job
    assert "already running" in _refused(tab.start, "animals.txt", "tiny", 2, "A [MASK].")
    assert "already running" in _refused(page.tabs["finetune-tab"].start, "movie-reviews", "tiny", 1, "5e-5")
    assert lane.snapshot().job == running and lane.snapshot().running
    # the Fine-tune tab says what the lane is doing
    assert "busy pretraining" in page.tabs["finetune-tab"].poll(None)[0]
    # a page that shows the latest snapshots is not sent them again
    latest = (seen[0], seen[1], tab._views_key(lane.snapshot()))
    assert isinstance(tab.poll(latest)[3], type(gr.skip())) or lane.snapshot().timeline["count"] > int(count)
    assert "Cancelling" in tab.cancel(None)
    assert lane.wait(120)
    p = lane.snapshot()
    assert p.state == "cancelled" and p.stopped_by == "cancel" and p.model == running.name, p.message
    assert page.models.names == ["tiny", p.model]
    status, *_ = tab.poll(None)
    assert "joined the model list" in status and f"at step {p.steps[-1]}" in status
    # a model like any other: it analyzes, fills in masks, and the Timeline tab finds its training
    explorer = page.models.get(p.model)
    assert explorer.run("The cat sat on the mat.").attentions.shape[:2] == (2, 4)
    folder = timeline_folder(explorer.folder)
    assert folder is not None and open_timeline(folder).steps[-1] == p.steps[-1]


def test_pretrainings_and_fine_tunings_share_one_budget(page, monkeypatch):
    """One page: 4 pretraining starts, the fifth refused, then a fine-tuning start was accepted (two budgets for one
    lane: 8 starts an hour per page). Now one budget: the fine-tuning is refused in one sentence."""
    lane = page.training_lane
    started = []

    def run(job, on_trained):
        started.append(type(job).__name__)
        lane._update(state="done")

    monkeypatch.setattr(lane, "_run", run)
    request = gr.Request(session_hash="one-page", client={"host": "192.0.2.7"})
    for _ in range(4):
        page.tabs["pretrain-tab"].start("animals.txt", "tiny", 2, "The [MASK] sat on the mat.", request)
        assert lane.wait(60)
    refusal = _refused(page.tabs["finetune-tab"].start, "movie-reviews", "tiny", 1, "5e-5", False, request)
    assert refusal.startswith("This page has started 4 trainings in the last 60 minutes, the most allowed")
    assert refusal.count(". ") == 0 and refusal.endswith(".") and "\n" not in refusal
    spanish = gr.Request(session_hash="one-page", client={"host": "192.0.2.7"}, headers={"accept-language": "es"})
    assert _refused(page.tabs["pretrain-tab"].start, "animals.txt", "tiny", 2, "A [MASK].", spanish).startswith(
        "Esta página ha iniciado 4 entrenamientos en los últimos 60 minutos, el máximo permitido")
    assert started == ["PretrainJob"] * 4


def test_a_pretraining_that_reaches_its_steps_is_done_not_stopped(page, texts, tmp_path):
    tab: PretrainTab = page.tabs["pretrain-tab"]
    text = pretrain_choices([texts["animals"]])["animals.txt"]
    job = PretrainJob(text, class_sentence("The [MASK] sat."), "tiny test",
                      pretrain_settings("tiny", 2, text, tmp_path / "out", steps=3))
    tab.lane.start(job, tab._join)
    assert tab.lane.wait(120)
    p = tab.lane.snapshot()
    assert p.state == "done" and p.steps == [1, 2, 3] and p.model == "tiny test", p.message
    assert open_timeline(job.output).steps == [0, 1, 2, 3]


def test_a_stop_while_the_text_is_read_keeps_nothing(page, monkeypatch):
    tab: PretrainTab = page.tabs["pretrain-tab"]
    import bertviz_app.pretraining.training as pretraining

    read = pretraining.read_pairs

    def stopped_while_reading(*args, **kwargs):
        tab.cancel(None)
        return read(*args, **kwargs)

    monkeypatch.setattr(pretraining, "read_pairs", stopped_while_reading)
    tab.start("animals.txt", "tiny", 2, "The [MASK] sat.")
    assert tab.lane.wait(120)
    p = tab.lane.snapshot()
    assert p.state == "cancelled" and p.model is None and not p.steps
    assert "while the text was read: nothing was trained, so nothing was kept" in tab.poll(None)[0]
    spanish = tab.poll(None, request=gr.Request(session_hash="es", headers={"accept-language": "es"}))[0]
    assert "Cancelado mientras se leía el texto: no se entrenó nada, así que no se guardó nada." in spanish
    assert page.models.names == ["tiny"] and not p.job.output.exists()


@pytest.mark.parametrize("data, preset, minutes, sentence, words", [
    ("/etc/passwd", "tiny", 2, "A [MASK].", "Choose the text in the list"),
    ("animals.txt", "huge", 2, "A [MASK].", "Choose the model in the list"),
    ("animals.txt", "tiny", 7, "A [MASK].", "Choose the minutes in the list"),
    ("animals.txt", "tiny", "2", "A [MASK].", "Choose the minutes in the list"),
    ("animals.txt", "tiny", 2, "   ", "Type a sentence with [MASK]"),
    ("animals.txt", "tiny", 2, "No mask here.", "Put [MASK] where the model should guess"),
    ("animals.txt", "tiny", 2, "A [MASK]. =>", "names no word"),
    ("empty.txt", "tiny", 2, "A [MASK].", "empty.txt is empty: a text to pretrain on is UTF-8"),
    ("weights.bin", "tiny", 2, "A [MASK].", "weights.bin is not a text file"),
])
def test_bad_input_is_one_sentence_and_changes_nothing(page, data, preset, minutes, sentence, words):
    tab: PretrainTab = page.tabs["pretrain-tab"]
    before = tab.lane.snapshot()
    message = _refused(tab.start, data, preset, minutes, sentence)
    assert words in message and message.count(". ") <= 2 and "/" not in message.replace("[MASK]", "")
    after = tab.lane.snapshot()
    assert after.state == "idle" and after.version == before.version and page.models.names == ["tiny"]


def test_a_refusal_written_by_the_lane_speaks_the_pages_language(page, monkeypatch):
    tab: PretrainTab = page.tabs["pretrain-tab"]
    spanish = gr.Request(session_hash="es", headers={"accept-language": "es"})
    assert _refused(tab.start, "empty.txt", "tiny", 2, "A [MASK].", spanish) == (
        "empty.txt está vacío: un texto para preentrenar está en UTF-8, con una frase por línea y una línea en blanco "
        "entre documentos. Elige otro texto; quien gestiona el servidor puede sustituirlo.")
    assert _refused(tab.start, "animals.txt", "tiny", 2, "No mask here.", spanish).startswith("Pon [MASK] donde")
    monkeypatch.setitem(lane_pretraining.BUILTIN_TEXTS, "python-help", dataclasses.replace(
        lane_pretraining.BUILTIN_TEXTS["python-help"], present=lambda: False))
    assert _refused(tab.start, "python-help", "tiny", 2, "A [MASK].", spanish).startswith(
        "El Python de este servidor no trae temas de ayuda")


def test_the_built_in_texts_are_split_as_the_corpus_script_splits_them(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTVIZ_APP_CACHE", str(tmp_path / "cache"))
    for key, documents in (("fortunes", 5000), ("python-help", 800)):
        folder = builtin_corpus(key)
        train = (folder / "train.txt").read_text(encoding="utf-8").split("\n\n")
        heldout = (folder / "heldout.txt").read_text(encoding="utf-8").split("\n\n")
        assert len(train) > documents and 0.01 < len(heldout) / len(train) < 0.04, (key, len(train), len(heldout))
        assert not set(train[:-1]) & set(heldout[:-1])
        assert builtin_corpus(key) == folder  # written once
    monkeypatch.setenv("BERTVIZ_APP_CACHE", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(lane_pretraining, "FORTUNES", tmp_path / "no-fortunes")
    with pytest.raises(ValueError, match="not installed on this server"):
        builtin_corpus("fortunes")
    assert "apt-get install fortunes" in BUILTIN_MISSING
    # where the fortunes are missing (a new user's `make app`), the list leaves them out and starts on the help topics
    assert [k for k, c in pretrain_choices().items() if c.builtin] == ["python-help"]


def test_the_top_5_quotes_each_token_so_that_punctuation_reads_as_a_guess():
    text = pretrain_choices()["python-help"]
    job = PretrainJob(text, class_sentence("A [MASK]."), "n", pretrain_settings("tiny", 2, text, Path("out")))
    top = [("the", 0.053), (",", 0.052), (".", 0.032), ("_", 0.01), ('"', 0.005)]
    text = top5_text(Progress(job=job, timeline={"step": 7, "count": 2, "masks": [{"top": top}]}))
    assert text.splitlines()[-1] == '“the” 5.3% · “,” 5.2% · “.” 3.2% · “\\_” 1.0% · “"” 0.5%'


def test_the_loss_axis_spans_the_planned_run_while_it_trains_and_the_steps_made_once_stopped():
    """A tiny pretraining stopped at step 124 of 15,000 drew its curve as a spike at the left edge of an empty axis."""
    from bertviz_app.app.tabs.pretrain import curve

    text = pretrain_choices()["python-help"]
    job = PretrainJob(text, class_sentence("A [MASK]."), "n", pretrain_settings("tiny", 2, text, Path("out")))
    steps = list(range(1, 125))
    running = curve(Progress("running", job, steps=steps, losses=[6.0] * 124, total=15_000))
    stopped = curve(Progress("cancelled", job, steps=steps, losses=[6.0] * 124, total=15_000))
    assert list(running.layout.xaxis.range) == [0, 15_000] and list(stopped.layout.xaxis.range) == [0, 124]


def test_the_default_text_is_prose_from_pythons_help_topics():
    """Paragraphs of the language reference, without code, grammar, titles or reStructuredText's *emphasis*."""
    documents = help_topics()
    sentences = [s for d in documents for s in d]
    assert len(documents) > 800 and len(sentences) > 1500
    assert "It continues with the next cycle of the nearest enclosing loop." in sentences
    assert not [s for s in sentences if s.endswith(":") or "::=" in s or s.startswith(("*", " "))]
    assert "If i or j is greater than \"len(s)\", use \"len(s)\"." in sentences  # was *i*, *j*


def test_the_tab_is_shown_only_where_the_app_may_train_and_the_cli_checks_its_texts(tiny, texts):
    def visible(settings) -> bool:
        demo = build_demo({"tiny": tiny}, training=settings)
        tab = next(b for b in demo.blocks.values() if getattr(b, "id", None) == PretrainTab.id
                   and isinstance(b, gr.Tab))
        return tab.visible is not False

    assert visible(TrainingSettings(True, "")) and not visible(TrainingSettings(False))
    assert text_problem(texts["animals"]) is None
    serve = cli.build_parser()[1]["serve"]
    for name, words in (("empty", "is empty"), ("weights", "is not a text file")):
        args = serve.parse_args(["--pretrain-data", str(texts[name])])
        with pytest.raises(cli.UsageError, match=words):
            cli.training_settings(args)
    settings = cli.training_settings(serve.parse_args(["--pretrain-data", str(texts["animals"])]))
    assert settings.pretrain_files == (str(texts["animals"].resolve()),)
