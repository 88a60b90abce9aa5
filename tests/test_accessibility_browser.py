"""axe-core (tests/axe.py) over everything a visitor can open, at 1280 x 720 and 390 x 844: every attention view,
every tab of the app (the Timeline tab on a model with a training timeline, the Pretrain tab with training on, the
Corpus tab's four views), presenter mode, the lesson panel and a lesson playing, the static page and a page saved
offline. No violation of impact "serious" or "critical" may remain, gradio's markup included; the rules waived are
in axe.WAIVED and docs/accessibility.md. One server for the module and one page per size: axe takes a second or two a
look on two shared cores, and the page's own state (a tab opened, presenter mode) is what changes between looks."""

from __future__ import annotations

import pytest

import bertviz_app
from axe import serious
from bertviz_app import app
from bertviz_app.app.lane.training import TrainingSettings
from bertviz_app.catalog import ASSETS
from corpus_fixture import build_small_corpus
from pages import AppPage
from static_pages import Opened, static_host

pytestmark = [pytest.mark.browser]

SIZES = [(1280, 720), (390, 844)]
VIEWS = ("lines", "matrix", "overview", "qk")
CORPUS_VIEWS = ("heads", "qk", "search", "sentences")
LESSON = ASSETS / "lessons" / "03-one-head-two-ways.json"


@pytest.fixture(scope="module")
def server(tmp_path_factory, tiny_mlm_folder, finetuned_classifier):
    from bertviz_app.app.tabs.corpus import open_corpora

    folder = build_small_corpus(tmp_path_factory.mktemp("corpus") / "small", tiny_mlm_folder)
    text = tmp_path_factory.mktemp("pretrain-text") / "animals.txt"
    text.write_text("the cat sat on the mat .\nthe dog sat on the rug .\n", encoding="utf-8")
    explorers = {"tiny": bertviz_app.load(tiny_mlm_folder, device="cpu", name="tiny"),
                 "trained": bertviz_app.load(finetuned_classifier, device="cpu", name="trained")}
    corpora, problems = open_corpora([str(folder)], explorers, lambda source: None)
    demo = app.build_demo(explorers, corpora=corpora, corpus_problems=problems,
                          training=TrainingSettings(True, "", (), pretrain_files=(str(text),)))
    url = app.serve(demo, port=app.free_port(), block=False)
    yield url
    demo.close()


@pytest.fixture(scope="module")
def static_site(tiny_mlm_folder, tmp_path_factory):
    explorer = bertviz_app.load(tiny_mlm_folder, device="cpu")
    folder = tmp_path_factory.mktemp("static")
    saved = explorer.run("The cat sat on the mat.", "It slept.").save_html(folder / "saved.html")
    site = explorer.export_static(folder / "site")
    with static_host(site) as url:
        yield url, saved


# no gradio output pending or showing its progress (gradio draws both faded)
STILL = ("() => !document.querySelector('.pending, .generating') && ![...document.querySelectorAll("
         "'[data-testid=status-tracker] .progress-text, [data-testid=status-tracker] .eta-bar')]"
         ".some(e => e.checkVisibility())")
TABS_JS = "'#tabs [role=tab], #tabs .overflow-dropdown button'"


def tab_names(page) -> list[str]:
    """The lower tab bar's tabs, those in its "More tabs" menu on a narrow screen too."""
    return list(dict.fromkeys(page.eval_on_selector_all(f"{TABS_JS[1:-1]}", "ts => ts.map(t => t.textContent.trim())")))


def open_tab(page, name: str) -> None:
    """A tab opened by its button, in the bar or in the "More tabs" menu (which gradio fills and empties as the
    page's width changes: a click through the menu raced it)."""
    page.evaluate(f"n => [...document.querySelectorAll({TABS_JS})].find(t => t.textContent.trim() === n).click()", name)


def look(found: dict, where: str, v: AppPage) -> None:
    """axe's findings once the page is still: no request for a while, and no gradio output pending (a pending
    output is drawn at 20% opacity, which axe rightly reads as low contrast, but only for that moment)."""
    v.settle(1500)  # an opened tab asks for its outputs a moment after the click
    v.page.wait_for_function(STILL)
    if problems := serious(v.page):
        found[where] = problems


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_axe_finds_nothing_serious_in_the_app(browser, server, size):
    found: dict[str, list] = {}
    v = AppPage(browser, server + "?corpus=small&cview=heads", size)
    page = v.page
    try:
        v.views_drawn("lines")
        for view in VIEWS:
            page.click(f"#view-tab-{view}")
            v.views_drawn(view)
            look(found, f"view {view}", v)
        for name in tab_names(page):
            open_tab(page, name)
            look(found, f"tab {name}", v)
            if name == "Corpus":
                for view in CORPUS_VIEWS[1:]:
                    page.click(f"#corpus-tab-{view}")
                    look(found, f"corpus {view}", v)
        page.click("#presenter")
        page.wait_for_function("() => document.body.classList.contains('bv-presenter')")
        look(found, "presenter mode", v)
        page.click("#presenter")
        page.click("#lesson")
        look(found, "lesson panel", v)
        page.set_input_files("#lesson-file", str(LESSON))
        page.wait_for_selector("#lesson-bar[data-busy=false]")
        look(found, "lesson player", v)
    finally:
        page.close()
    assert found == {}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_axe_finds_nothing_serious_in_the_static_and_the_saved_page(browser, static_site, size):
    url, saved = static_site
    found = {}
    for where, address, allowed in (("static page", url, url), ("saved page", saved.as_uri(), "file:")):
        opened = Opened(browser, address, allowed)
        opened.page.set_viewport_size({"width": size[0], "height": size[1]})
        try:
            opened.page.wait_for_function("() => document.querySelector('.bv-view')?.dataset.drawn")
            if problems := serious(opened.page):
                found[where] = problems
        finally:
            opened.page.close()
    assert found == {}
