"""The Task tab's held-out table and the Corpus tab's sentence map select together, in Chromium at 1280 x 720 and
390 x 844: a corpus built from a fine-tuned folder's held-out set (`heldout:FOLDER`) served beside that model; a click
on a row marks its sentence on the map (and in the link), a click on a point marks its row in the table."""

from __future__ import annotations

import pytest

from bertviz_app import app, build_corpus
from pages import AppPage, serving
from test_corpus_browser import in_sight, query

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def heldout_server(tmp_path_factory, finetuned_classifier):
    from bertviz_app.app.tabs.corpus import open_corpora

    folder = build_corpus(f"heldout:{finetuned_classifier}", tmp_path_factory.mktemp("corpus") / "held",
                          say=lambda text: None, qk_sample=1.0, device="cpu")
    explorers = app.load_models([finetuned_classifier], device="cpu")
    corpora, problems = open_corpora([str(folder)], explorers, lambda source: None)
    assert problems == []
    with serving(explorers, corpora=corpora, corpus_problems=problems) as served:
        yield served.url, corpora["held"].corpus


def marked(page):
    """The point marked on the sentence map, as [point, x, y], or None."""
    return page.eval_on_selector("#corpus-pane-sentences .bv-point-map", "e => JSON.parse(e.dataset.geometry).marked")


def show(visitor, tab: str, selector: str) -> None:
    """Open a tab and wait until `selector` in it is shown: on a phone a tab in the "More tabs" menu, picked while
    gradio still moves tabs between the bar and the menu, may stay closed, so it is asked for again."""
    for _ in range(3):
        visitor.open_tab(tab)
        try:
            visitor.page.wait_for_selector(selector, state="visible", timeout=10_000)
            return
        except Exception:  # playwright's TimeoutError: try the menu again
            continue
    visitor.page.wait_for_selector(selector, state="visible")


def linked_rows(page, text: str) -> None:
    """Wait until the held-out table marks one row, the one of `text` (the table draws its rows anew when shown)."""
    page.wait_for_function("t => [...document.querySelectorAll('#task-heldout [role=row][data-linked]')].map((r) => "
                           "r.querySelector(\"[data-col='0']\").textContent.trim()).join('|') === t", arg=text)


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["1280x720", "390x844"])
def test_a_heldout_row_marks_its_sentence_on_the_map_and_a_point_marks_its_row(browser, heldout_server, size):
    url, corpus = heldout_server
    texts = list(corpus.sentences["text"])
    visitor = AppPage(browser, url + "?a=the+movie+was+great&corpus=held&cview=sentences", size)
    page = visitor.page
    page.wait_for_selector("#corpus-pane-sentences .bv-point-map[data-drawn^='corpus_sentences']")
    colours = page.eval_on_selector_all("#corpus-sentence-color option", "os => os.map((o) => o.value)")
    assert colours == ["label", "prediction", "error"]  # the fine-tuned model's predictions were kept
    assert marked(page) is None

    # a row of the held-out table: analyzed, and marked on the sentence map with the data on the page
    visitor.settle(500)
    show(visitor, "Task", "#task-heldout [role=grid]")
    row = 1
    cell = page.locator("#task-heldout [role=gridcell][data-col='0']").nth(row)
    text = cell.text_content().strip()
    sentence = texts.index(text)
    cell.click()
    page.wait_for_function("t => new URLSearchParams(location.search).get('a') === t", arg=text)
    page.wait_for_function("s => new URLSearchParams(location.search).get('csentence') === s", arg=str(sentence))
    show(visitor, "Corpus", "#corpus-pane-sentences canvas")
    page.wait_for_function("p => JSON.parse(document.querySelector('#corpus-pane-sentences .bv-point-map')"
                           ".dataset.geometry).marked?.[0] === p", arg=sentence)
    show(visitor, "Task", "#task-heldout [role=grid]")
    linked_rows(page, text)
    show(visitor, "Corpus", "#corpus-pane-sentences canvas")

    # a point of the map: analyzed, marked, and its row marked in the held-out table
    box = in_sight(page, "#corpus-pane-sentences canvas")  # first: the map is laid out anew once its tab shows
    points = page.eval_on_selector("#corpus-pane-sentences .bv-point-map", "e => JSON.parse(e.dataset.geometry).points")
    other = next(p for p, _, _ in points if p != sentence)
    _, x, y = next(p for p in points if p[0] == other)
    page.mouse.click(box["x"] + x, box["y"] + y)
    page.wait_for_function("t => new URLSearchParams(location.search).get('a') === t", arg=texts[other])
    assert query(page)["csentence"] == str(other)
    page.wait_for_function("p => JSON.parse(document.querySelector('#corpus-pane-sentences .bv-point-map')"
                           ".dataset.geometry).marked?.[0] === p", arg=other)
    show(visitor, "Task", "#task-heldout [role=grid]")
    linked_rows(page, texts[other])
    assert visitor.errors == []
    page.close()
