"""A lesson in Chromium: five steps recorded in the app and saved as a file, played in presenter mode with the arrow
keys in the app, then exported with the static page (`export_static(lesson=...)`) and played there; a link to step
3 opens step 3 in both. A step recorded with a question (the panel's "Ask first") asks it when played. Screenshots of a step in presenter mode go to BERTVIZ_SCREENSHOTS when it is set."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import numpy as np
import pytest

from pages import AppPage, shoot
from static_pages import Opened, static_host

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]

A1, B1 = "The keys to the cabinet are on the table.", "Somebody left them there."
A2 = "The animal didn't cross the street because it was too tired."
CAPTION = "<b>Heads</b> & tokens: <img src=x onerror=alert(1)> the first step"
# (a, b, layer, head, token, view, caption): a new input at steps 3 and 5, the same one between
STEPS = [
    (A1, B1, 1, 2, 3, "lines", CAPTION),
    (A1, B1, 3, 7, 4, "matrix", "The same input, another head."),
    (A2, "", 2, 5, 2, "qk", "What does 'it' ask for?"),
    (A2, "", 4, 1, 1, "lines", "Deeper."),
    (A1, B1, 5, 11, 5, "matrix", "Back to the keys, at the last layer."),
]


@pytest.fixture(scope="module")
def explorer(default_explorer):
    return default_explorer


@pytest.fixture(scope="module")
def app_server(serve_app):
    return serve_app("minilm-l6-mlm-nsp-en").url


def shows(page, step: int) -> None:
    """The views show step `step` (from 1) of STEPS: the bar's step, the boxes, the view, layer, head and token."""
    a, b, layer, head, token, view, caption = STEPS[step - 1]
    page.wait_for_function("n => { const bar = document.querySelector('#lesson-bar');"
                           " return bar && bar.dataset.step === n && bar.dataset.busy === 'false'; }", arg=str(step))
    page.wait_for_function("want => document.querySelector(`#view-tab-${want}`)?.getAttribute('aria-selected')"
                           " === 'true'", arg=view)
    assert (page.input_value("#view-layer"), page.input_value("#view-head"), page.input_value("#view-token")) == (
        str(layer), str(head), str(token))
    assert page.text_content("#lesson-caption") == caption  # as text: no markup made from it
    assert page.locator("#lesson-caption *").count() == 0
    assert page.text_content("#lesson-problem") == ""
    assert page.text_content("#lesson-where").endswith(f"step {step} of 5")


def keys_listed(page, button: str) -> None:
    """The visible Keys button lists the lesson's and the views' shortcuts; Esc closes the list."""
    page.click(button)
    text = page.locator("#keys-help").text_content()
    assert "next step of a lesson" in text and "move between heads" in text
    page.keyboard.press("Escape")
    assert page.locator("#keys-help").count() == 0


def record(visitor: AppPage) -> None:
    page = visitor.page
    page.click("#lesson")
    page.wait_for_selector("#lesson-panel:not([hidden])")
    shown, on_screen = None, "lines"
    for a, b, layer, head, token, view, caption in STEPS:
        if (a, b) != shown:
            visitor.analyze(a, b)
            visitor.views_drawn(on_screen)
            shown = (a, b)
        on_screen = view
        page.click(f"#view-tab-{view}")
        visitor.set_input("#view-layer", layer)
        visitor.set_input("#view-head", head)
        page.select_option("#view-token", str(token))
        page.fill("#lesson-caption-in", caption)
        page.click("#lesson-add")
    assert page.text_content("#lesson-count") == "5 steps"


@pytest.fixture(scope="module")
def lesson_file(browser, app_server, tmp_path_factory):
    """The lesson as the app saves it, recorded through the app's own controls."""
    visitor = AppPage(browser, app_server)
    try:
        visitor.views_drawn("lines")
        record(visitor)
        with visitor.page.expect_download() as download:
            visitor.page.click("#lesson-save")
        path = tmp_path_factory.mktemp("lesson") / "heads-tour.json"
        download.value.save_as(path)
        assert visitor.errors == []
    finally:
        visitor.page.close()
    return path


def test_the_saved_lesson_holds_the_five_steps(lesson_file):
    steps = json.loads(lesson_file.read_text())["steps"]
    assert [(s["a"], s.get("b", ""), s["layer"], s["head"], s["token"], s["tab"], s["caption"]) for s in steps] == [
        (a, b, layer, head, token, "query_key" if view == "qk" else view, caption)
        for a, b, layer, head, token, view, caption in STEPS]


def test_a_lesson_plays_in_the_apps_presenter_mode_with_the_arrow_keys(browser, app_server, lesson_file):
    visitor = AppPage(browser, app_server)
    page = visitor.page
    try:
        visitor.views_drawn("lines")
        keys_listed(page, "#keys")
        page.click("#lesson")
        page.set_input_files("#lesson-file", str(lesson_file))
        shows(page, 1)
        page.click("#presenter")
        keys_listed(page, "#lesson-keys")  # in presenter mode, from the lesson's bar
        page.locator("body").click(position={"x": 5, "y": 700})  # the keys go to the page, not a box
        for step in (2, 3, 4, 5):
            page.keyboard.press("ArrowRight")
            shows(page, step)
        assert "step=5" in page.url and "lesson=heads-tour" in page.url
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        shows(page, 3)
        link = page.url
        shots = Path("/tmp/shots-lesson")
        shots.mkdir(exist_ok=True)
        page.screenshot(path=str(shots / "app-step3-presenter-1280x720.png"))
        with visitor.on_a_phone():
            page.wait_for_timeout(500)
            page.screenshot(path=str(shots / "app-step3-presenter-390x844.png"))
            # the input folds to two short lines (it stood three rows and Analyze tall, the views began at y 370
            # under the lesson's bar, and a Lines picture at 745 of 844)
            row = page.locator("#input-row").bounding_box()
            views = page.locator("#attention-view").bounding_box()
            assert row["height"] <= 120 and views["y"] < 0.35 * 844, (row, views)
            assert visitor.no_sideways_scroll()
        assert visitor.errors == []
    finally:
        page.close()
    # the link to step 3, opened in this browser (which keeps the lessons it opened), opens step 3
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["step"] == ["3"]
    again = AppPage(browser, link)
    try:
        shows(again.page, 3)
        assert again.page.input_value("#sentence-a textarea") == A2
        again.page.click("#lesson-next")
        shows(again.page, 4)
        assert again.errors == []
    finally:
        again.page.close()


def test_a_link_to_step_3_then_its_file_opens_step_3_and_the_panel_holds_the_file(browser, app_server, lesson_file):
    """In a browser that never opened the lesson, the link says to open its file; the file then opened at step 1, and
    the panel said "0 steps" with Play and Save off, as if nothing were open."""
    visitor = AppPage(browser, app_server)
    page = visitor.page
    try:
        page.evaluate("() => localStorage.clear()")  # the module's browser keeps what the tests above opened
        page.goto(f"{app_server}?lesson=heads-tour&step=3")
        visitor.views_drawn("lines")
        page.locator("#lesson-error").wait_for()
        assert "this browser has not opened" in page.text_content("#lesson-error")
        page.set_input_files("#lesson-file", str(lesson_file))
        shows(page, 3)
        assert page.text_content("#lesson-count") == "5 steps (heads-tour.json)"
        assert page.is_enabled("#lesson-play") and page.is_enabled("#lesson-save")
        # the panel's steps are the file's: saved again, they are the same lesson
        with page.expect_download() as download:
            page.click("#lesson-save")
        assert json.loads(Path(download.value.path()).read_text())["steps"] == json.loads(
            lesson_file.read_text())["steps"]
        assert page.text_content("#lesson-error") == "" and visitor.errors == []
    finally:
        page.close()


def test_a_bad_lesson_file_or_link_is_one_sentence_in_the_app(browser, app_server, tmp_path):
    visitor = AppPage(browser, f"{app_server}?lesson=never-opened&step=2")
    page = visitor.page
    try:
        visitor.views_drawn("lines")
        error = page.locator("#lesson-error")
        error.wait_for()
        assert error.text_content().startswith('This link opens step 2 of the lesson "never-opened", which this '
                                               "browser has not opened")
        bad = tmp_path / "bad.json"
        for content, words in [("{ not json", "This lesson file is not JSON"),
                               (json.dumps({"steps": [{"a": "x", "tab": "heatmap"}]}),
                                'Step 1 names the view "heatmap"')]:
            bad.write_text(content)
            page.set_input_files("#lesson-file", str(bad))
            page.wait_for_function("w => document.querySelector('#lesson-error').textContent.startsWith(w)",
                                   arg=words)
        assert page.locator("#lesson-bar").count() == 0
        # a head past the model's: played, and named under the caption
        bad.write_text(json.dumps({"steps": [{"a": A1, "b": B1, "layer": 1, "head": 40, "tab": "lines"}]}))
        page.set_input_files("#lesson-file", str(bad))
        page.wait_for_function("() => document.querySelector('#lesson-problem')?.textContent === 'Step 1 asks for "
                               "head 40; this model has heads 0 to 11.'")
        assert visitor.errors == []
    finally:
        page.close()


def test_a_step_recorded_with_a_question_asks_it_then_reveals_the_measured_answer(browser, app_server, explorer,
                                                                                   tmp_path):
    """The panel's "Ask first" fields add a question to the step it records: refused in one sentence when the answer is
    not a choice (the step is not added), then saved in the lesson file's format and asked when the lesson plays:
    the views hidden until Reveal, then the token measured on screen marked."""
    layer, head, token = 3, 1, 10  # "it" looks most at "animal" in layer 3, head 1
    run = explorer.run(A2, None)
    tokens = list(run.token_table()["token"])
    row = np.asarray(run.attention(layer=layer, head=head))[token]
    answer, runner_up = (tokens[i] for i in np.argsort(row)[::-1][:2])
    assert (tokens[token], answer) == ("it", "animal") and np.sort(row)[-1] - np.sort(row)[-2] > 0.02, (
        "the model changed: pick another head whose strongest link from 'it' leads by more than 8-bit steps")
    ask = "In layer 3, head 1, which token does “it” look at most?"
    visitor = AppPage(browser, app_server)
    page = visitor.page
    try:
        visitor.views_drawn("lines")
        page.click("#lesson")
        visitor.analyze(A2)
        visitor.views_drawn("lines")
        visitor.set_input("#view-layer", layer)
        visitor.set_input("#view-head", head)
        page.select_option("#view-token", str(token))
        page.fill("#lesson-caption-in", "It is the animal that was tired.")
        page.click("#lesson-ask summary")
        page.fill("#lesson-ask-in", ask)
        page.fill("#lesson-choices-in", f"street {answer} {runner_up}")
        page.fill("#lesson-answer-in", "dog")
        page.click("#lesson-add")
        assert page.text_content("#lesson-error") == "Step 1's answer “dog” is not one of its choices."
        assert page.text_content("#lesson-count") == "0 steps"
        page.fill("#lesson-answer-in", answer)
        shoot(page, tmp_path, "lesson_ask_first_1280x720")
        page.click("#lesson-add")
        assert page.text_content("#lesson-count") == "1 step" and page.text_content("#lesson-error") == ""
        assert page.input_value("#lesson-ask-in") == "" and page.input_value("#lesson-choices-in") == ""
        with page.expect_download() as download:
            page.click("#lesson-save")
        step = json.loads(Path(download.value.path()).read_text())["steps"][0]
        assert (step["layer"], step["head"], step["token"]) == (layer, head, token)
        assert step["question"] == {"ask": ask, "choices": ["street", answer, runner_up], "answer": answer}
        page.click("#lesson-play")
        page.wait_for_function("() => document.querySelector('#lesson-bar')?.dataset.busy === 'false'")
        assert page.text_content("#lesson-question .bv-question-ask") == ask
        assert "bv-veiled" in page.get_attribute("#attention-host", "class")
        assert page.locator("#lesson-caption").is_hidden()
        shoot(page, tmp_path, "recorded_question_1280x720")
        page.click("#lesson-reveal")
        assert page.text_content("#lesson-verdict") == f"Revealed: the model's numbers say “{answer}”."
        assert page.get_attribute("#lesson-choice-1", "data-mark") == "right"
        assert "bv-veiled" not in page.get_attribute("#attention-host", "class")
        assert page.text_content("#lesson-caption") == "It is the animal that was tired."
        assert visitor.errors == []
    finally:
        page.close()


@pytest.fixture(scope="module")
def site(explorer, lesson_file, tmp_path_factory):
    return explorer.export_static(tmp_path_factory.mktemp("static") / "site", lesson=lesson_file)


@pytest.fixture(scope="module")
def server(site):
    with static_host(site) as url:
        yield url


def test_the_lesson_plays_in_the_static_page_and_a_link_opens_step_3(browser, server, site, tmp_path):
    assert (site / "lessons" / "heads-tour.js").exists()
    opened = Opened(browser, f"{server}?lesson=heads-tour&step=3", server)
    page = opened.page
    try:
        shows(page, 3)
        assert (page.input_value("#text-a"), page.input_value("#text-b")) == (A2, "")
        keys_listed(page, "#keys")
        page.click("#presenter")
        page.locator("body").click(position={"x": 5, "y": 700})
        page.keyboard.press("ArrowRight")
        shows(page, 4)
        page.keyboard.press("ArrowRight")
        shows(page, 5)
        assert (page.input_value("#text-a"), page.input_value("#text-b")) == (A1, B1)
        for step in (4, 3):
            page.keyboard.press("ArrowLeft")
            shows(page, step)
        assert "step=3" in page.url
        shots = Path("/tmp/shots-lesson")
        shots.mkdir(exist_ok=True)
        page.screenshot(path=str(shots / "static-step3-presenter-1280x720.png"))
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / "static-step3-presenter-390x844.png"))
        shoot(page, tmp_path, "static_lesson_step3_phone")
        page.set_viewport_size({"width": 1280, "height": 720})
        page.keyboard.press("Home")
        shows(page, 1)
        assert opened.outside == [] and opened.errors == []
    finally:
        opened.close()


def test_the_static_pages_lesson_button_and_bad_links(browser, server):
    opened = Opened(browser, server, server)
    page = opened.page
    try:
        page.click("#lesson-open")  # the folder's lessons: the shipped ones and this one
        page.click("#lesson-shelf [data-lesson='heads-tour']")
        shows(page, 1)
    finally:
        opened.close()
    for query, words in [("lesson=heads-tour&step=9", "This link asks for step 9; the lesson has 5 steps, so it "
                                                       "opens on step 1."),
                         ("lesson=..%2Fdata%2Fmanifest", "This page's folder holds no lesson named "
                                                         '"../data/manifest".')]:
        opened = Opened(browser, f"{server}?{query}", server)
        try:
            opened.page.wait_for_function("w => document.querySelector('#input-error').textContent === w", arg=words)
            if "step=9" in query:
                shows(opened.page, 1)
            assert opened.errors == []
        finally:
            opened.close()
