"""The shipped lessons (assets/lessons/) played in Chromium, every step of every lesson, in both hosts: the app's
Lesson panel lists them and plays the one picked; the static page carries them all by default and its Lesson button
lists them. At each step, at 1280 x 720 and at 390 x 844: the bar is on that step, the boxes hold the step's input,
its view is drawn at the step's layer, head and token, and its caption is on screen, whole and as text. A step that
asks first hides its view and caption until answered: each shipped question is answered right, wrong, or revealed
(in presenter mode, the teacher's button), and the choice marked is the token measured on screen.
Screenshots of lesson 3's step 2 at both sizes, and of one step of each lesson in the app at 1280 x 720 (LESSON_SHOTS,
under lessons/), go to docs/screenshots/ when BERTVIZ_SCREENSHOTS is set."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import bertviz_app
from bertviz_app.lessons import shipped_lessons
from bertviz_app.views.page import view_names
from pages import AppPage
from static_pages import Opened, static_host

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]

LESSONS = shipped_lessons()
VIEW = view_names()  # a step's tab (a link's name) -> the views' own name, which their ids carry
SHOT = ("03-one-head-two-ways", 2)  # the step whose screenshots docs/screenshots/ keeps
ANSWERS = {("03-one-head-two-ways", 2): "wrong", ("05-heads-that-follow-grammar", 1): "right",
           ("05-heads-that-follow-grammar", 4): "reveal"}
VERDICT = {"right": "Right: ", "wrong": "Not this time: ", "reveal": "Revealed: "}
# one step of each lesson photographed in the app at 1280 x 720 (docs/screenshots/lessons/lesson-N-step-S.png): the
# longest caption, each kind of view, a kept token
LESSON_SHOTS = {"01-words-become-pieces": 1, "02-three-embeddings": 3, "03-one-head-two-ways": 3,
                "04-heads-that-look-at-places": 1, "05-heads-that-follow-grammar": 2, "06-fill-in-the-blank": 4,
                "07-what-makes-the-answer": 3, "08-when-the-model-is-wrong": 3}


def drawn_parts(step: dict) -> list[str]:
    """What the view's drawn mark says of the step's selection (selection.mjs drawnKey, the overview's own)."""
    parts = [f"{key}={step[key]} " for key in ("layer", "head") if step.get(key) is not None]
    if VIEW[step.get("tab", "lines")] != "overview":
        parts.append(f"token={step.get('token', 'null')} ")
    return parts


def at_step(page, n: int) -> None:
    page.wait_for_function("n => { const bar = document.querySelector('#lesson-bar');"
                           " return bar && bar.dataset.step === n && bar.dataset.busy === 'false'; }", arg=str(n))


def answer(page, views: str, step: dict, how: str, shot: str = "") -> None:
    """Step's question, asked with the views (`views`) and the caption hidden, answered `how`: right, wrong, or
    revealed; then the measured answer is marked (and the wrong pick), said, and the views shown."""
    q = step["question"]
    right = q["choices"].index(q["answer"])
    assert "bv-veiled" in page.get_attribute(views, "class") and page.locator("#lesson-caption").is_hidden()
    assert page.text_content("#lesson-question .bv-question-ask") == q["ask"]
    assert [page.text_content(f"#lesson-choice-{i}") for i in range(len(q["choices"]))] == q["choices"]
    if shot:
        keep(page, shot)
    pick = {"right": right, "wrong": (right + 1) % len(q["choices"]), "reveal": None}[how]
    page.click("#lesson-reveal" if pick is None else f"#lesson-choice-{pick}")
    assert page.text_content("#lesson-verdict") == f"{VERDICT[how]}the model's numbers say “{q['answer']}”."
    assert page.get_attribute(f"#lesson-choice-{right}", "data-mark") == "right"
    if how == "wrong":
        assert page.get_attribute(f"#lesson-choice-{pick}", "data-mark") == "wrong"
    assert page.is_disabled("#lesson-choice-0") and page.is_disabled("#lesson-reveal")
    assert "bv-veiled" not in page.get_attribute(views, "class")


def shows(page, boxes: tuple[str, str], step: dict, n: int, width: int) -> None:
    """The page shows step `n` (from 1) of a lesson as the step says, its caption whole within `width`."""
    at_step(page, n)
    view = VIEW[step.get("tab", "lines")]
    page.wait_for_function("([v, parts]) => { const d = document.querySelector(`#view-pane-${v} .bv-view`)"
                           "?.dataset.drawn; return d !== undefined && parts.every((p) => d.includes(p)); }",
                           arg=[view, drawn_parts(step)])
    assert page.get_attribute(f"#view-tab-{view}", "aria-selected") == "true"
    assert (page.input_value(boxes[0]), page.input_value(boxes[1])) == (step["a"], step.get("b", ""))
    assert page.text_content("#lesson-problem") == ""
    caption = page.locator("#lesson-caption")
    assert caption.text_content() == step["caption"] and caption.locator("*").count() == 0
    box = caption.bounding_box()
    assert caption.is_visible() and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, box


def keep(page, name: str) -> None:
    target = os.environ.get("BERTVIZ_SCREENSHOTS")
    path = Path("/tmp/course-shots") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    if target:
        (Path(target) / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / name)


@pytest.mark.slow  # 30-40 s: every step of every shipped lesson, at both sizes
def test_the_apps_lesson_panel_lists_and_plays_every_shipped_lesson_at_both_sizes(browser, serve_app):
    served = serve_app("minilm-l6-mlm-nsp-en")
    visitor = AppPage(browser, served.url)
    page = visitor.page
    try:
        visitor.views_drawn("lines")
        page.click("#lesson")
        cards = page.locator("#lesson-shelf button")
        cards.first.wait_for()
        keep(page, "lesson_list_app_1280x720.png")
        assert cards.count() == len(LESSONS)
        assert [cards.nth(i).locator("strong").text_content() for i in range(len(LESSONS))] == [
            lesson["title"] for lesson in LESSONS.values()]
        assert cards.first.locator("span").text_content() == (
            f"{LESSONS['01-words-become-pieces']['level']} · {LESSONS['01-words-become-pieces']['minutes']} min"
            " · 5 steps")
        for name, lesson in LESSONS.items():
            if page.locator("#lesson-panel").is_hidden():
                page.click("#lesson")
            page.click(f"#lesson-shelf [data-lesson='{name}']")
            assert page.locator("#lesson-panel").is_hidden()  # the list folds away: the views get the screen
            for n, step in enumerate(lesson["steps"], 1):
                if n > 1:
                    page.click("#lesson-next")
                if step.get("question"):
                    at_step(page, n)
                    answer(page, "#attention-host", step, ANSWERS[name, n],
                           "lesson_question_app_1280x720.png" if (name, n) == SHOT else "")
                shows(page, ("#sentence-a textarea", "#sentence-b textarea"), step, n, 1280)
                if (name, n) == SHOT:
                    keep(page, "lesson_app_1280x720.png")
                if LESSON_SHOTS[name] == n:
                    keep(page, f"lessons/lesson-{int(name[:2])}-step-{n}.png")
                with visitor.on_a_phone():
                    shows(page, ("#sentence-a textarea", "#sentence-b textarea"), step, n, 390)
                    assert visitor.no_sideways_scroll()
                    if (name, n) == SHOT:
                        keep(page, "lesson_app_390x844.png")
            assert f"lesson={name}" in page.url and f"step={len(lesson['steps'])}" in page.url
        assert visitor.errors == []
    finally:
        page.close()
    # a shipped lesson's link opens its step in a browser that never opened it
    page = browser.new_page()
    try:
        page.set_viewport_size({"width": 1280, "height": 720})
        page.goto(f"{served.url}?lesson=05-heads-that-follow-grammar&step=4")
        step = LESSONS["05-heads-that-follow-grammar"]["steps"][3]
        page.set_default_timeout(120_000)
        at_step(page, 4)
        answer(page, "#attention-host", step, "reveal")  # the step asks first, also when a link opens it
        shows(page, ("#sentence-a textarea", "#sentence-b textarea"), step, 4, 1280)
    finally:
        page.close()


@pytest.fixture(scope="module")
def site(default_site):
    return default_site


def test_the_static_page_carries_every_shipped_lesson_and_plays_each_at_both_sizes(browser, site):
    assert sorted(p.stem for p in (site / "lessons").glob("*.js")) == sorted(LESSONS)
    with static_host(site) as server:
        opened = Opened(browser, server, server)
        page = opened.page
        try:
            page.set_viewport_size({"width": 1280, "height": 720})
            for name, lesson in LESSONS.items():
                page.click("#lesson-open")
                assert page.locator("#lesson-shelf button").count() == len(LESSONS)
                page.click(f"#lesson-shelf [data-lesson='{name}']")
                for n, step in enumerate(lesson["steps"], 1):
                    if n > 1:
                        page.click("#lesson-next")
                    if step.get("question"):
                        at_step(page, n)
                        presenting = ANSWERS[name, n] == "reveal"  # the teacher reveals, in presenter mode
                        if presenting:
                            page.click("#presenter")
                        answer(page, "#views", step, ANSWERS[name, n])
                        if presenting:
                            page.click("#presenter")
                    shows(page, ("#text-a", "#text-b"), step, n, 1280)
                    if (name, n) == SHOT:
                        keep(page, "lesson_static_1280x720.png")
                    page.set_viewport_size({"width": 390, "height": 844})
                    shows(page, ("#text-a", "#text-b"), step, n, 390)
                    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
                    if (name, n) == SHOT:
                        keep(page, "lesson_static_390x844.png")
                    page.set_viewport_size({"width": 1280, "height": 720})
                assert f"lesson={name}" in page.url
            assert opened.outside == [] and opened.errors == []
        finally:
            opened.close()


def test_an_export_without_the_shipped_lessons_carries_none(tiny_mlm_folder, tmp_path):
    # the tiny model's export: the lessons are the page's, whatever the model (the default's takes a minute)
    site = bertviz_app.load(tiny_mlm_folder, device="cpu").export_static(tmp_path / "site", shipped_lessons=False)
    assert not (site / "lessons").exists()
    assert '"lessons":[]' in (site / "data" / "manifest.js").read_text()
