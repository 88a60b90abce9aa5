"""The app in a real browser: Debian's headless Chromium driven by playwright (no `playwright install`).

The server offers all-MiniLM-L6-v2 (no pretraining heads, so the app must say so), the shipped default model and a
tiny random BERT with both heads, picked in the model list like any other. The attention views themselves are
driven in depth on standalone pages (test_views_browser.py); here they are checked inside the app: one payload per
analysis, nothing asked of the server while browsing, permalinks, exports through the server, the page's layout at
a projector's and a phone's size, and every other tab. Screenshots go to the test's tmp_path and, when
BERTVIZ_SCREENSHOTS=DIR is set, to DIR as well, named app_*.png."""

from __future__ import annotations

import io
import json
import re
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest

from bertviz_app import app
from pages import TIMEOUT_MS, AppPage, shoot, wait_for_rows

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]

LONG = ("The river bank was quiet when the old man sat down to read his paper and watch the boats go past. " * 60)


@pytest.fixture(scope="module")
def tiny_folder(tiny_mlm_folder):
    return tiny_mlm_folder


@pytest.fixture(scope="module")
def server(serve_app, tiny_folder):
    return serve_app("all-MiniLM-L6-v2", tiny_folder, "minilm-l6-mlm-nsp-en", max_tokens=512).url


@pytest.fixture(scope="module")
def visitor(browser, server):
    """One tab kept across the tests below, as a visitor's would be."""
    v = AppPage(browser, server)
    yield v
    v.page.close()


def test_first_screen_shows_input_and_picture_together(visitor, tmp_path):
    visitor.views_drawn("lines")
    tokens = visitor.tokens()
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and "cat" in tokens
    page = visitor.page
    # at 1280 x 720, the input, the layer/head controls and the top of the picture are on the first screen
    for selector in ("#sentence-a", "#analyze", "#view-layer", "#view-head", "#view-pane-lines .bv-surface"):
        box = page.locator(selector).first.bounding_box()
        assert box and box["y"] + 20 < 720, selector
    assert visitor.no_sideways_scroll() and visitor.errors == []
    shoot(page, tmp_path, "01-first-screen")


def test_browsing_layers_heads_and_tokens_asks_the_server_nothing(visitor):
    visitor.views_drawn("lines")
    visitor.settle()
    visitor.requests.clear()
    visitor.set_input("#view-layer", 3)
    visitor.views_drawn("lines", "layer=3")
    visitor.set_input("#view-head", 7)
    visitor.views_drawn("lines", "layer=3 head=7")
    visitor.page.select_option("#view-token", "2")
    visitor.views_drawn("lines", "token=2")
    for view in ("matrix", "overview", "lines"):
        visitor.page.click(f"#view-tab-{view}")
        visitor.views_drawn(view)
    assert visitor.requests == [], visitor.requests


def test_a_pair_with_markup_stays_text(visitor, tmp_path):
    visitor.analyze("Penguins cannot fly.", "They swim <b>very</b> well.")
    assert visitor.tokens() == ["[CLS]", "penguins", "cannot", "fly", ".", "[SEP]", "they", "swim", "<", "b", ">",
                                "very", "<", "/", "b", ">", "well", ".", "[SEP]"]
    assert visitor.page.locator("#attention-view b").count() == 0  # '<b>' was shown as text, not made bold
    table = visitor.page.locator("#token-table")  # the token table too, drawn by the page from plain values
    visitor.page.wait_for_function("() => document.querySelector('#token-table')?.innerText.includes('swim')")
    assert table.locator("b").count() == 0 and table.locator("td", has_text="<").count() >= 2
    # the new input kept the layer and head the visitor was on
    assert visitor.page.input_value("#view-layer") == "3" and visitor.page.input_value("#view-head") == "7"
    shoot(visitor.page, tmp_path, "02-pair")


def test_an_overview_tile_opens_its_head_and_the_address_follows(visitor, tmp_path):
    page = visitor.page
    page.click("#view-tab-overview")
    visitor.views_drawn("overview")
    visitor.click_tile(1, 5)
    visitor.views_drawn("lines", "layer=1 head=5")
    query = parse_qs(urlsplit(page.url).query)
    assert query["layer"] == ["1"] and query["head"] == ["5"] and query["tab"] == ["lines"]
    assert query["a"] == ["Penguins cannot fly."] and query["b"] == ["They swim <b>very</b> well."]
    shoot(page, tmp_path, "03-overview-opened-a-head")


def test_a_permalink_opens_the_same_input_and_view(browser, visitor, tmp_path):
    page = visitor.page
    page.select_option("#view-token", "6")
    page.click("#view-tab-matrix")
    visitor.views_drawn("matrix", "layer=1 head=5 token=6")
    link = page.url
    other = AppPage(browser, link)
    try:
        other.views_drawn("matrix", "layer=1 head=5 token=6")
        assert other.page.input_value("#sentence-a textarea") == "Penguins cannot fly."
        assert other.page.input_value("#sentence-b textarea") == "They swim <b>very</b> well."
        assert other.page.get_attribute("#view-tab-matrix", "aria-selected") == "true"
        shoot(other.page, tmp_path, "04-permalink")
    finally:
        other.page.close()


def test_a_link_with_values_out_of_range_opens_what_it_can_and_says_what_was_out(browser, server):
    """layer=99 opened layer 5, head=-1 head 0, token=500 the last token and tab=nonsense was ignored, silently."""
    v = AppPage(browser, server + "?a=The+cat+sat.&layer=99&head=-1&token=500&tab=nonsense")
    try:
        v.views_drawn("lines", "layer=0 head=0 token=null")
        note = v.page.text_content("#view-link-note")
        assert note == (
            "This link asks for layer 99, and the model has 6 layers (0 to 5); showing layer 0 instead. "
            "This link asks for head -1, and the model has 12 heads (0 to 11); showing head 0 instead. "
            "This link asks for token 500, and the input has 6 tokens (0 to 5); no token is selected. "
            "This link asks for the view nonsense, which these views do not have (lines, matrix, overview, "
            "query_key); showing lines instead."), note
        assert v.page.locator("#view-link-note").is_visible() and v.errors == []
        # a link in range says nothing
        v.page.goto(server + "?a=The+cat+sat.&layer=2&head=3&tab=matrix")
        v.views_drawn("matrix", "layer=2 head=3")
        assert v.page.locator("#view-link-note").count() == 0
    finally:
        v.page.close()


def test_exports_through_the_server_give_files_that_open(browser, visitor, tmp_path):
    page = visitor.page
    with page.expect_download() as info:
        page.click("#view-export-csv")
    frame = pd.read_csv(io.StringIO(Path(info.value.path()).read_text(encoding="utf-8")), keep_default_na=False)
    assert info.value.suggested_filename == "bertviz-attention-layer-1-head-5.csv"
    assert len(frame) == 19 ** 2 and set(frame["head"]) == {5} and frame["weight"].between(0, 1).all()
    assert abs(frame.groupby("from")["weight"].sum() - 1).max() < 1e-6 and set(frame["precision"]) == {"float32"}
    with page.expect_download() as info:
        page.click("#view-export-html")
    saved = tmp_path / "saved.html"
    info.value.save_as(saved)
    offline = browser.new_page()
    fetched = []
    offline.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "blob:"))
                  else (fetched.append(r.request.url), r.abort()))
    try:
        offline.goto(saved.as_uri())
        # it opens on the view that was on screen, not on the first view
        offline.wait_for_function("() => document.querySelector('#view-pane-matrix .bv-view')?.dataset.drawn"
                                  "?.includes('layer=1 head=5 token=6')", timeout=TIMEOUT_MS)
        offline.click("#view-tab-qk")  # the query/key vectors travel inside the saved page
        offline.wait_for_function("() => document.querySelector('#view-pane-qk .bv-view')?.dataset.drawn"
                                  "?.includes('layer=1 head=5 query=6')", timeout=TIMEOUT_MS)
        assert fetched == []
    finally:
        offline.close()


def test_presenter_mode_keeps_the_input_and_the_picture(visitor, tmp_path):
    page = visitor.page
    label_px = "v => JSON.parse(document.querySelector(`#view-pane-${v} .bv-scroller`).dataset.geometry).labelPx"
    assert page.evaluate(label_px, "matrix") == 15  # the view the tests above left on screen
    page.select_option("#view-token", "")  # no token: no list of its heads above the picture, which gets the room
    visitor.views_drawn("matrix", "token=null")
    page.click("#presenter")
    page.wait_for_function("() => document.body.classList.contains('bv-presenter')")
    try:
        assert not page.locator("#tabs").is_visible() and page.locator("#attention-view").is_visible()
        assert "Leave" in page.locator("#presenter").inner_text()
        # the picture on screen follows: its labels grow with the room that the hidden caption leaves to the rows
        page.wait_for_function(f"() => ({label_px})('matrix') > 15")
        shoot(page, tmp_path, "05-presenter-matrix")
        page.click("#view-tab-lines")
        page.wait_for_function(f"() => ({label_px})('lines') > 15")
        shoot(page, tmp_path, "05-presenter")
        page.click("#view-tab-matrix")
    finally:
        page.click("#presenter")
    page.wait_for_function("() => !document.body.classList.contains('bv-presenter')")
    assert page.locator("#tabs").is_visible()
    page.wait_for_function(f"() => ({label_px})('matrix') === 15")
    page.select_option("#view-token", "6")


PAIR = ("The animal didn't cross the street because it was tired.", "It slept all day.")  # 21 tokens


def picture(page) -> dict:
    """The lines view's picture on screen: its top and height, and how many token rows are in sight (inside the
    picture's box and the window, not scrolled away)."""
    return page.evaluate("""() => {
      const surface = document.querySelector('#view-pane-lines .bv-surface');
      const box = surface.getBoundingClientRect();
      const scroller = surface.querySelector('.bv-scroller');
      const g = JSON.parse(scroller.dataset.geometry);
      const bottom = Math.min(box.bottom, window.innerHeight);
      const first = box.top + g.top - scroller.scrollTop;
      const rows = Math.max(0, Math.floor((bottom - first) / g.pitch));
      return { top: box.top, bottom: box.bottom, height: box.height, rows, pitch: g.pitch, labelPx: g.labelPx,
               tokens: document.querySelectorAll('#view-token option').length - 1 };
    }""")


def covered(page) -> list[str]:
    """What presenter mode's two buttons lie over: a view's box, its buttons or statistics, the controls, the inputs."""
    return page.evaluate("""() => {
      const buttons = [...document.querySelectorAll('#title-row button')].map(b => b.getBoundingClientRect());
      const out = [];
      const parts = '.bv-pane:not([hidden]) .bv-surface, .bv-pane:not([hidden]) .bv-tools button, '
        + '.bv-pane:not([hidden]) .bv-stats, .bv-controls .bv-field, .bv-bar button, #input-row textarea, '
        + '#input-row input, #analyze';
      for (const e of document.querySelectorAll(parts)) {
        const r = e.getBoundingClientRect();
        if (!r.width || !r.height) continue;
        for (const b of buttons) {
          if (b.left < r.right && r.left < b.right && b.top < r.bottom && r.top < b.bottom) {
            out.push(`${e.tagName}.${e.className}#${e.id}`);
          }
        }
      }
      return out;
    }""")


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_presenter_buttons_cover_nothing(browser, server, tmp_path, size):
    """Floating in the bottom corner, "Copy link" and "Leave presenter mode" lay over the All-heads tiles (1280 x 720)
    and the phone's Lines view; they now sit at the end of the input row."""
    v = AppPage(browser, server, size=size)
    try:
        v.views_drawn("lines")
        v.page.click("#presenter")
        v.page.wait_for_function("() => document.body.classList.contains('bv-presenter')")
        v.analyze(*PAIR)
        for view in ("lines", "matrix", "overview"):
            v.page.click(f"#view-tab-{view}")
            v.views_drawn(view)
            v.page.wait_for_timeout(300)
            assert covered(v.page) == [], view
            shoot(v.page, tmp_path, f"23-presenter-{size[0]}x{size[1]}-{view}")
        assert v.no_sideways_scroll() and v.errors == []
    finally:
        v.page.close()


@pytest.mark.parametrize("mode, size", [("projector", (1280, 720)), ("presenter", (1280, 720)), ("phone", (390, 844))])
def test_the_picture_has_the_screen_it_needs(browser, server, tmp_path, mode, size):
    v = AppPage(browser, server, size=size)
    try:
        v.views_drawn("lines")
        if mode == "presenter":
            v.page.click("#presenter")
            v.page.wait_for_function("() => document.body.classList.contains('bv-presenter')")
        v.analyze(*PAIR)
        v.views_drawn("lines")
        v.page.wait_for_timeout(300)  # the phone's scroll to the picture
        shoot(v.page, tmp_path, f"20-picture-{mode}")
        seen = picture(v.page)
        assert seen["tokens"] == 21 and v.no_sideways_scroll() and v.errors == []
        if mode == "phone":
            assert seen["labelPx"] == 15, seen  # the type grows only when presenter mode asks
        if mode == "projector":  # under the input and the controls, whole on the first screen
            assert seen["top"] < 330 and seen["height"] >= 290 and seen["bottom"] <= 720, seen
            # the type never grows; it shrinks to 13 px (rows 16 px apart) where that brings every row into the box
            assert 13 <= seen["labelPx"] <= 15 and seen["pitch"] >= seen["labelPx"] + 3, seen
            assert seen["rows"] >= 21, seen  # the whole pair in sight (15 rows of 18 px before)
        elif mode == "presenter":  # most of the screen, every token of the pair in sight
            assert seen["top"] < 220 and seen["height"] >= 0.55 * 720 and seen["bottom"] <= 720, seen
            assert seen["rows"] >= 21, seen
            # readable from the back of the room: the labels grow with the rows (15 px, 18 apart, before)
            assert seen["labelPx"] >= 18 and seen["pitch"] >= 21, seen
            box = v.page.locator("#sentence-a textarea").bounding_box()
            assert box["height"] <= 50 and box["y"] < 40, box  # the input row, one line at the top
            font = v.page.eval_on_selector("#sentence-a textarea", "e => parseFloat(getComputedStyle(e).fontSize)")
            assert font >= 20
            assert covered(v.page) == [] and v.page.locator("#presenter").bounding_box()["y"] < 40
            assert not v.page.locator("#tabs").is_visible()
            # the pair's matrix fits the height and takes the width beside it (it used a third of the width)
            v.page.click("#view-tab-matrix")
            v.views_drawn("matrix")
            g = v.page.eval_on_selector("#view-pane-matrix .bv-scroller", "e => JSON.parse(e.dataset.geometry)")
            box = v.page.locator("#view-pane-matrix .bv-scroller").bounding_box()
            assert g["left"] + 21 * g.get("cellW", g["cell"]) >= 0.9 * box["width"], (g, box)
            assert g["top"] + 21 * g["cell"] <= box["height"] + 1, (g, box)
            shoot(v.page, tmp_path, "20-picture-presenter-matrix")
            v.page.click("#view-tab-lines")
            v.views_drawn("lines")
            # a taller window (the projector's full screen) gives the rows, and their type, what it adds
            v.page.set_viewport_size({"width": 1280, "height": 900})
            v.page.wait_for_function("px => JSON.parse(document.querySelector('#view-pane-lines .bv-scroller')"
                                     ".dataset.geometry).labelPx > px", arg=seen["labelPx"])
        else:  # a phone: after Analyze the picture is on the screen, a good part of it
            assert 0 <= seen["top"] < 844 * 0.6 and min(seen["bottom"], 844) - seen["top"] >= 250, seen
    finally:
        v.page.close()


SIXTEEN = "The quick brown fox jumps over the lazy dog because it was very tired today."  # 16 tokens and 2 marks


def test_a_sixteen_token_sentence_fits_the_first_screen(browser, server, tmp_path):
    """At 1280 x 720 the Lines view showed 14 of its 18 rows and the Matrix 12 ("every label"), with ~800 px empty
    on the right: the box now takes the caption's height (the caption goes beside) and rows a little short of 18 px
    carry 13-14 px labels, so every row and its label is on the first screen without scrolling."""
    v = AppPage(browser, server)
    try:
        v.views_drawn("lines")
        v.analyze(SIXTEEN)
        for view in ("lines", "matrix"):
            v.page.click(f"#view-tab-{view}")
            v.views_drawn(view)
            v.page.wait_for_timeout(300)  # a resize after the new input settles the box
            seen = v.page.evaluate("""v => {
              const s = document.querySelector(`#view-pane-${v} .bv-scroller`);
              const g = JSON.parse(s.dataset.geometry), box = s.getBoundingClientRect();
              return { g, client: [s.clientWidth, s.clientHeight], scroll: [s.scrollWidth, s.scrollHeight],
                       bottom: box.bottom, tokens: document.querySelectorAll('#view-token option').length - 1 };
            }""", view)
            g = seen["g"]
            pitch = g.get("pitch") or g["cell"]
            assert seen["tokens"] == 18, seen
            assert seen["scroll"][1] <= seen["client"][1] and seen["scroll"][0] <= seen["client"][0], seen
            assert g["top"] + 18 * pitch <= seen["client"][1] and seen["bottom"] <= 720, seen
            assert g["labelPx"] >= 13 and pitch >= g["labelPx"] + 3, seen  # readable, one label per row
            v.page.wait_for_function("v => document.querySelector(`#view-pane-${v} .bv-view`).dataset.labels"
                                     " === '36'", arg=view)  # every row's label, on both sides (both axes)
            shoot(v.page, tmp_path, f"22-sixteen-tokens-{view}")
        assert v.no_sideways_scroll() and v.errors == []
    finally:
        v.page.close()


def test_a_refused_input_leaves_a_tidy_page(browser, server, tmp_path):
    visitor = AppPage(browser, server)  # its own tab: the visitor's input is what later tests read
    page = visitor.page
    visitor.views_drawn("lines")
    visitor.analyze("The cat sat on the mat.")
    page.locator("#sentence-a textarea").fill("")
    page.click("#analyze")
    page.wait_for_function("() => document.querySelector('#notice')?.innerText.includes('still the last one')")
    notice = page.locator("#notice").inner_text()
    assert "Sentence A is empty" in notice and "The cat sat on the mat." in notice and "tokens ·" not in notice
    # no red "Error" pills over the controls; the last good picture stays, dimmed
    assert page.locator("#notice .error, #attention-host .error, #token-table .error").evaluate_all(
        "es => es.filter(e => e.offsetParent !== null && getComputedStyle(e.closest('.wrap') || e).opacity !== '0')"
        ".length") == 0
    assert float(page.eval_on_selector("#attention-host", "e => getComputedStyle(e).opacity")) < 0.6
    shoot(page, tmp_path, "21-refused-input")
    visitor.analyze("The cat sat on the mat again.")
    assert float(page.eval_on_selector("#attention-host", "e => getComputedStyle(e).opacity")) == 1
    assert "tokens ·" in page.locator("#notice").inner_text()
    page.close()


@pytest.mark.parametrize("tab, figure", [("Tokens", None), ("Embeddings", "embedding-parts"),
                                         ("Hidden states", "hidden-norms"), ("Next sentence", None),
                                         ("Model", None)])
def test_every_tab_shows(visitor, tmp_path, tab, figure):
    page = visitor.page
    page.get_by_role("tab", name=tab).click()
    if figure:
        page.wait_for_function(f"() => [...document.querySelectorAll('#{figure} .main-svg')]"
                               ".some(svg => svg.textContent.includes('penguins'))", timeout=TIMEOUT_MS)
    elif tab == "Model":  # a tab computes when it is opened: its text comes a moment later
        shows_text(page, "#model-info", "22,713,216")
    elif tab == "Tokens":  # drawn by the page once it is idle (the attention views first)
        shows_text(page, "#token-table", "penguins")
    else:
        shows_text(page, "#next-sentence", "no next-sentence head")
    page.locator("#tabs").scroll_into_view_if_needed()
    shoot(page, tmp_path, "06-" + re.sub(r"\W+", "-", tab.lower()))


class EventLog:
    """The events a page asks the server to run (queued or not), by name: an endpoint's name without gradio's
    `_` of a private use and its `_1`, `_2` of a later one ("hidden_states" for `_hidden_states_2`)."""

    def __init__(self, page, url: str):
        with urllib.request.urlopen(url.rstrip("/") + "/config") as answer:
            deps = json.load(answer)["dependencies"]
        self.names = {d["id"]: re.sub(r"_\d+$", "", (d.get("api_name") or "").lstrip("_")) for d in deps}
        self.seen: list[str] = []
        page.on("request", self._record)

    def _record(self, request) -> None:
        if request.method == "POST" and re.search(r"/(queue/join|run/predict)", request.url):
            self.seen.append(self.names.get((request.post_data_json or {}).get("fn_index"), "?"))

    def take(self) -> list[str]:
        seen, self.seen = self.seen, []
        return seen


def shows_text(page, selector: str, text: str) -> None:
    """Wait until the element shows `text` (a tab opened computes its views then), or fail saying what it shows."""
    try:
        page.wait_for_function("([s, t]) => document.querySelector(s)?.innerText.includes(t)", arg=[selector, text],
                               timeout=TIMEOUT_MS)
    except Exception:
        pass  # the assertion below shows what is there instead
    assert text in page.locator(selector).inner_text()


def hidden_states_show(page, word: str) -> None:
    page.wait_for_function("w => ['hidden-norms', 'layer-similarity', 'token-similarity', 'hidden-projection']"
                           ".every(id => [...document.querySelectorAll(`#${id} .main-svg`)]"
                           ".some(svg => svg.textContent.includes(w)))", arg=word, timeout=TIMEOUT_MS)


def test_only_the_open_tab_computes_after_an_analysis(browser, server, tmp_path):
    """An analysis refreshes the tab that is open and no other; a closed tab computes when it is opened, once per
    analysis, and shows the current input."""
    v = AppPage(browser, server)
    try:
        events = EventLog(v.page, server)
        v.views_drawn("lines")
        v.settle()
        events.take()
        v.analyze("Elephants never forget a face.")  # the Tokens tab is open: its table is part of the analysis
        v.settle()
        assert sorted(set(events.take())) == ["analyze", "clear_ablation"]
        assert "elephants" in v.page.locator("#token-table").inner_text()

        v.open_tab("Hidden states")
        hidden_states_show(v.page, "elephants")
        v.settle()
        assert sorted(set(events.take())) == ["hidden_note", "hidden_states", "layer_range"]
        v.open_tab("Tokens")
        v.open_tab("Hidden states")  # opened again, nothing new analyzed: nothing to compute
        v.settle()
        assert events.take() == []

        v.analyze("Dolphins sleep with one eye open.")  # with Hidden states open: it is refreshed, alone
        hidden_states_show(v.page, "dolphins")
        v.settle()
        assert sorted(set(events.take())) == ["analyze", "clear_ablation", "hidden_note", "hidden_states",
                                              "layer_range"]
        v.open_tab("Next sentence")  # closed during that analysis: computed now, for the current input
        shows_text(v.page, "#next-sentence", "no next-sentence head")
        v.settle()
        assert events.take() == ["next_sentence"]
        assert v.page.locator(".toast-body").count() == 0 and v.errors == []
        assert v.page.locator(".tabitem .error").count() == 0  # no error pill from a tab's skipped steps
    finally:
        v.page.close()


def test_masked_lm_without_the_head_says_so(visitor, tmp_path):
    page = visitor.page
    page.get_by_role("tab", name="Masked LM").click()
    text = page.locator("#mlm-explainer").inner_text()
    assert "all-MiniLM-L6-v2 has no masked-LM head" in text and "bertviz-app --model" not in text
    assert not page.locator("#mask-predict").is_visible()  # no empty views of predictions that cannot exist
    # what pretraining sees needs only the tokenizer: it is there for this model too
    page.wait_for_function("() => [...document.querySelectorAll('#corruption .main-svg')]"
                           ".some(svg => svg.textContent.includes('penguins'))", timeout=TIMEOUT_MS)
    shoot(page, tmp_path, "07-masked-lm-without-head")


def test_masked_lm_and_next_sentence_with_the_heads(visitor, tmp_path, tiny_folder):
    page = visitor.page
    page.locator("#model input").click()
    page.get_by_role("option", name=Path(tiny_folder).name).click()
    page.wait_for_function("() => document.querySelector('#mlm-explainer')?.innerText.includes('has a masked-LM "
                           "head')", timeout=TIMEOUT_MS)
    page.get_by_role("tab", name="Masked LM").click()
    page.locator("#mask-text textarea").fill("The <b>[mask]</b> sat on the [MASK].")
    page.locator("#mask-predict").click()
    page.locator("#mask-bars .main-svg").first.wait_for()
    assert "each of the 2 masks" in page.locator("#mask-message").inner_text()
    wait_for_rows(page, "mask-table", 10)  # two masks x top 5
    assert page.locator("#mask-results b").count() == 0  # the typed <b> stayed text
    page.locator("#logit-lens .main-svg").first.wait_for()
    wait_for_rows(page, "lens-table", 3)  # embeddings + the tiny model's 2 layers
    assert page.locator("#lens-mask").is_visible()  # two masks: the lens offers a choice

    page.locator("#mask-token input").click()
    page.locator("[data-testid=dropdown-option]", has_text="1: penguins").click()
    page.locator("#masked-token .main-svg").first.wait_for()
    assert "**" not in page.locator("#masked-message").inner_text()
    assert "penguins" in page.locator("#masked-message").inner_text()
    # A new analysis (here the same text again) clears the result of the last one.
    page.locator("#analyze").click()
    page.wait_for_function("() => !document.querySelector('#masked-message')?.textContent.includes('penguins') "
                           "&& !document.querySelector('#masked-token .main-svg')", timeout=TIMEOUT_MS)
    page.wait_for_function("() => document.querySelector('#corruption-message')?.innerText.startsWith('Sample 0:')",
                           timeout=TIMEOUT_MS)
    page.locator("#corrupt-again").click()
    page.wait_for_function("() => document.querySelector('#corruption-message')?.innerText.startsWith('Sample 1:')",
                           timeout=TIMEOUT_MS)
    page.locator("#mask-results").scroll_into_view_if_needed()
    shoot(page, tmp_path, "08-masked-lm-with-head")

    page.get_by_role("tab", name="Next sentence").click()
    shows_text(page, "#next-sentence", "P(B follows A) =")
    assert "IsNext" in page.locator("#next-sentence-label").inner_text()


def test_the_default_model_answers_paris(visitor, tmp_path):
    """The headline, with the weights we ship: a fill-mask question answered in the browser."""
    page = visitor.page
    page.locator("#model input").click()
    page.get_by_role("option", name="minilm-l6-mlm-nsp-en").click()
    page.wait_for_function("() => document.querySelector('#mlm-explainer')?.innerText.includes('has a masked-LM "
                           "head')", timeout=TIMEOUT_MS)
    page.get_by_role("tab", name="Masked LM").click()
    page.locator("#mask-text textarea").fill("The capital of France is [MASK].")
    page.locator("#mask-predict").click()
    wait_for_rows(page, "mask-table", 5)
    page.wait_for_function("() => document.querySelector('#mask-table')?.innerText.includes('paris')",
                           timeout=TIMEOUT_MS)
    page.locator("#logit-lens .main-svg").first.wait_for()
    wait_for_rows(page, "lens-table", 7)  # embeddings + 6 layers
    assert not page.locator("#lens-mask").is_visible()  # one mask: nothing to choose
    page.locator("#mask-results").scroll_into_view_if_needed()
    shoot(page, tmp_path, "09-default-model-masked-lm")


def test_masked_lm_starts_from_the_analyzed_mask_and_refuses_in_place(browser, server, tmp_path):
    """An analyzed input with a [MASK] is where the tab starts (fill box, predictions, logit lens); a refused text
    is said in one sentence where the message is, over the last good result, dimmed and named: no toast, no red
    "Error" over the results."""
    v = AppPage(browser, server + "?a=The+keys+to+the+cabinet+%5BMASK%5D+on+the+table.&model=minilm-l6-mlm-nsp-en")
    page = v.page
    try:
        v.views_drawn("lines")
        v.settle()
        v.open_tab("Masked LM")
        page.wait_for_function("() => document.querySelector('#mask-text textarea')?.value === "
                               "'The keys to the cabinet [MASK] on the table.'")
        wait_for_rows(page, "mask-table", 5)
        assert "the [MASK]" in page.locator("#mask-message").inner_text()
        page.wait_for_function("() => document.querySelector('#lens-message')?.innerText.includes('token 6')")
        wait_for_rows(page, "lens-table", 7)
        page.locator("#mask-text").scroll_into_view_if_needed()
        shoot(page, tmp_path, "22-masked-lm-from-the-analysis")
        for text, why in [("", "The masked text is empty"), ("No mask in here.", "has no [MASK]"),
                          (" ".join(["[MASK]"] * 25), "25 masks is too many")]:
            page.locator("#mask-text textarea").fill(text)
            page.click("#mask-predict")
            page.wait_for_function("w => document.querySelector('#mask-message .bv-stale')?.innerText.includes(w)",
                                   arg=why)
            v.settle()
            message = page.locator("#mask-message").inner_text()
            assert "still those of the last text predicted" in message and "cabinet [MASK]" in message, message
        assert page.locator(".toast-body, [data-testid=toast-body]").count() == 0
        assert page.locator("#mlm-views .error").evaluate_all(
            "es => es.filter(e => e.offsetParent !== null && getComputedStyle(e.closest('.wrap') || e).opacity "
            "!== '0').length") == 0
        assert float(page.eval_on_selector("#mask-bars", "e => getComputedStyle(e).opacity")) < 0.6
        page.locator("#mask-message").scroll_into_view_if_needed()
        shoot(page, tmp_path, "23-masked-lm-refused")
        page.locator("#mask-text textarea").fill("Paris is the [MASK] of France.")
        page.click("#mask-predict")
        page.wait_for_function("() => document.querySelector('#mask-message')?.innerText.startsWith('Top 5')")
        assert float(page.eval_on_selector("#mask-bars", "e => getComputedStyle(e).opacity")) == 1
        assert v.errors == []
    finally:
        page.close()


def test_on_a_phone_the_embeddings_and_hidden_states_figures_fit_and_every_tab_is_named(browser, server, tmp_path):
    """At 390 x 844 the figures of these two tabs (700-1000 px wide) fit their box, instead of showing a third of
    themselves, or, where their token labels need more (meta.phone_width), keep that much and scroll in their box with
    plotly's pan off; back at 1280 x 720 they have their own width again. The tabs that do not fit the bar sit under a
    button that says so, not under three bare dots. (test_readable_figures_browser.py reads every text of them.)"""
    v = AppPage(browser, server + "?model=minilm-l6-mlm-nsp-en")
    page = v.page
    figures = {"Embeddings": ["embedding-parts", "segment-embeddings", "position-similarity", "position-path"],
               "Hidden states": ["hidden-norms", "layer-similarity", "token-similarity", "hidden-projection"]}
    fits = ("ids => ids.every(id => { const p = document.querySelector(`#${id} .js-plotly-plot`);"
            " const svg = p?.querySelector('.main-svg'); if (!svg || !p.clientWidth) return false;"
            " const w = svg.getBoundingClientRect().width;"
            " return w <= p.clientWidth + 1 || (w <= (p.layout.meta?.phone_width || 0) + 1"
            " && p._fullLayout.dragmode === false); })")
    try:
        v.views_drawn("lines")
        v.settle()
        with v.on_a_phone():
            more = page.locator("#tabs .overflow-menu > button")
            assert more.evaluate("b => getComputedStyle(b, '::after').content") == '"More tabs"'
            assert more.bounding_box()["x"] + more.bounding_box()["width"] <= 390
            page.locator("#tabs").scroll_into_view_if_needed()
            shoot(page, tmp_path, "24-phone-tab-bar")
            for tab, ids in figures.items():
                v.open_tab(tab)
                page.wait_for_function(fits, arg=ids)
                assert v.no_sideways_scroll()
                page.locator(f"#{ids[0]}").scroll_into_view_if_needed()
                shoot(page, tmp_path, f"25-phone-{ids[0]}")
        # wide again: the last tab's figures take back their own width (820 px and more), wider than they were
        assert page.wait_for_function(
            "id => { const s = document.querySelector(`#${id} .main-svg`); return s && "
            "s.getBoundingClientRect().width >= 800; }", arg=figures["Hidden states"][0])
        assert v.errors == []
    finally:
        page.close()


def test_on_a_phone_beyond_attention_fits_or_scrolls_in_its_own_box(browser, server, tmp_path):
    """At 390 x 844 after Explain: the faithfulness chart and the head map fit their box (every bar and head in
    sight, not cut at head 8), and the word chart, which keeps a cell a word, scrolls inside its own box (plotly's
    pan is off, so a swipe scrolls it) while the page never scrolls sideways."""
    v = AppPage(browser, server + "?a=The+keys+to+the+cabinet+%5BMASK%5D+on+the+table.&model=minilm-l6-mlm-nsp-en",
                (390, 844))
    try:
        v.views_drawn("lines")
        v.open_tab("Beyond attention")
        v.page.wait_for_function("() => document.querySelector('#explain-message')?.innerText"
                                 ".includes('press Explain')")
        v.page.click("#explain")
        v.page.wait_for_selector("#head-effects .main-svg")
        fits = ("ids => ids.every(id => { const p = document.querySelector(`#${id} .js-plotly-plot`);"
                " const svg = p?.querySelector('.main-svg'); return svg && p.clientWidth > 0"
                " && svg.getBoundingClientRect().width <= p.clientWidth + 1; })")
        v.page.wait_for_function(fits, arg=["faithfulness", "head-effects"])
        words = v.page.eval_on_selector("#attribution .js-plotly-plot", "p => ({scrolls: getComputedStyle(p)"
                                        ".overflowX, wider: p.scrollWidth > p.clientWidth, drag: p.layout.dragmode})")
        assert words == {"scrolls": "auto", "wider": True, "drag": False}, words
        assert v.no_sideways_scroll()
        shoot(v.page, tmp_path, "26-phone-beyond-attention", full_page=True)
        assert v.errors == []
    finally:
        v.page.close()


def test_silencing_heads_picked_in_the_overview_changes_the_predictions(browser, server, tmp_path):
    v = AppPage(browser, server + "?a=The+capital+of+France+is+%5BMASK%5D.&model=minilm-l6-mlm-nsp-en&tab=overview")
    try:
        v.views_drawn("overview")
        v.settle()
        assert "Pick heads in **All heads**".replace("**", "") in v.page.locator("#ablation-result").inner_text()
        v.page.click("#view-silence-pick")
        for layer, head in ((2, 10), (1, 3)):
            v.click_tile(layer, head)
        v.views_drawn("overview", "silenced=1.3,2.10")
        v.page.click("#view-silence-run")
        v.page.wait_for_function("() => document.querySelector('#ablation-result')?.innerText.includes('Silenced 2')")
        text = v.page.locator("#ablation-result").inner_text()
        assert "layer.head: 1.3, 2.10" in text and "paris" in text
        # the result is on the screen where the button was pressed, without scrolling, and leaves the button free
        result, button = (v.page.locator(s).bounding_box() for s in ("#ablation-result", "#view-silence-run"))
        assert result["y"] < 720 and result["y"] + result["height"] <= 721, result
        assert button["y"] + button["height"] <= result["y"] and 0 <= button["y"], (button, result)
        shoot(v.page, tmp_path, "14-silenced-heads")
        assert v.errors == []
    finally:
        v.page.close()


def test_explain_a_prediction_and_compare_two_inputs(browser, server, tmp_path):
    v = AppPage(browser, server + "?a=The+keys+to+the+cabinet+%5BMASK%5D+on+the+table.&model=minilm-l6-mlm-nsp-en")
    try:
        v.views_drawn("lines")
        assert v.page.input_value("#sentence-b textarea") == ""  # a link to one sentence leaves B empty
        v.open_tab("Beyond attention")
        # a state, not a quiet spell (settle): on a slow host the new input's chained steps can pause for longer than
        # any quiet spell, and an Explain pressed before this input's predictions are listed explains nothing
        v.page.wait_for_function("() => document.querySelector('#explain-message')?.innerText"
                                 ".includes('press Explain')")
        v.page.click("#explain")
        v.page.wait_for_selector("#head-effects .main-svg")
        assert "convergence check" in v.page.locator("#explain-message").inner_text()
        assert "keys" in v.page.locator("#attribution").text_content()
        # every column of the Spearman table in sight at 1280 (a third of the row hid blank-out behind a scroll)
        assert v.page.evaluate("() => [...document.querySelectorAll('#faithfulness-table *')].filter(e => "
                               "e.scrollWidth > e.clientWidth + 1 && ['auto', 'scroll']"
                               ".includes(getComputedStyle(e).overflowX)).length") == 0
        v.page.locator("#explain-message").scroll_into_view_if_needed()
        shoot(v.page, tmp_path, "12-beyond-attention")

        v.open_tab("Compare")
        v.page.wait_for_function("() => document.querySelector('#compare-a textarea')?.value.includes('cabinet')")
        v.page.locator("#compare-a textarea").fill("The keys to the cabinet is on the table.")
        v.page.locator("#compare-model input").click()
        v.page.locator("[data-testid=dropdown-option]", has_text="minilm-l6-mlm-nsp-en").click()
        v.page.click("#compare")
        v.page.wait_for_selector("#compare-change .main-svg")
        for side in ("cmp-a-", "cmp-b-"):
            v.page.wait_for_selector(f"#{side}attention-view")
        # both open on the head the message names as the most changed, from their first frame
        named = re.search(r"changed most is layer (\d+), head (\d+)", v.page.locator("#compare-message").inner_text())
        assert named, v.page.locator("#compare-message").inner_text()
        shown = [[v.page.input_value(f"#{side}view-{k}") for k in ("layer", "head")] for side in ("cmp-a-", "cmp-b-")]
        assert shown == [list(named.groups())] * 2, (shown, named.groups())
        # how much each head changed fits its box: every head and the color scale in sight
        assert v.page.eval_on_selector("#compare-change .js-plotly-plot", "e => e.scrollWidth <= e.clientWidth + 1")
        # the two views follow each other: a layer and a head chosen on the left show on the right
        main = v.page.input_value("#view-layer")
        layer = "2" if main == "3" else "3"
        v.set_input("#cmp-a-view-layer", layer)
        v.set_input("#cmp-a-view-head", 2)
        v.page.wait_for_function("l => document.querySelector('#cmp-b-view-layer')?.value === l && "
                                 "document.querySelector('#cmp-b-view-head')?.value === '2'", arg=layer)
        assert v.page.input_value("#view-layer") == main  # the main views are not part of the pair
        assert "differ at [MASK] → is" in v.page.locator("#compare-message").inner_text()
        v.page.locator("#compare-message").scroll_into_view_if_needed()
        shoot(v.page, tmp_path, "13-compare")
        assert v.errors == []
    finally:
        v.page.close()


@pytest.mark.slow  # 80 s each on two shared cores: every tab's figures of a 512-token input
@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["projector", "phone"])
def test_nothing_is_cut_off_at_512_tokens(browser, server, tmp_path, size):
    """512 tokens: the views draw and stay usable, and every figure of every tab fits or scrolls in its own box
    while the page itself never scrolls sideways."""
    v = AppPage(browser, server, size)
    try:
        v.views_drawn("lines")
        v.analyze(LONG)
        assert len(v.tokens()) == 512
        v.views_drawn("lines")
        # the truncation is said once, in the notice the next input replaces: no toast piles up over the model picker
        assert "truncated" in v.page.locator("#notice").inner_text() and v.page.locator(".toast-body").count() == 0
        v.set_input("#view-layer", 4)
        v.views_drawn("lines", "layer=4")
        v.page.click("#view-tab-matrix")
        v.views_drawn("matrix", "layer=4")
        assert v.no_sideways_scroll()
        shoot(v.page, tmp_path, f"10-512-tokens-{size[0]}")
        for tab in ("Embeddings", "Hidden states"):
            v.open_tab(tab)
            v.page.wait_for_timeout(300)
            v.page.wait_for_function("() => document.querySelectorAll('.tabitem:not([style*=\"none\"]) "
                                     ".js-plotly-plot').length > 0", timeout=TIMEOUT_MS)
            clipped = v.page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
                .filter(p => p.offsetParent !== null)
                .filter(p => { const svg = p.querySelector('.main-svg');
                               const style = getComputedStyle(p);
                               return svg && svg.getBoundingClientRect().width > p.clientWidth + 1
                                      && style.overflowX !== 'auto' && style.overflowX !== 'scroll'; })
                .map(p => p.parentElement.closest('[id]')?.id)""")
            assert clipped == [], (tab, clipped)
            assert v.no_sideways_scroll(), tab
        shoot(v.page, tmp_path, f"11-512-tokens-hidden-{size[0]}", full_page=True)
        assert v.errors == []
    finally:
        v.page.close()


def test_behind_a_login_the_page_logs_in_and_works(browser, tiny_folder, tmp_path):
    """With --auth the server lets through only what the login form needs and strips the API description from the
    page; the form must still draw, log in, and open an app that answers. (A second page of the module's browser:
    playwright's sync API runs one event loop at a time.)"""
    demo = app.build_demo(app.load_models([tiny_folder], device="cpu", max_tokens=64))
    url = app.serve(demo, port=app.free_port(), block=False, auth=[("student", "pass word")])
    login = browser.new_page()
    try:
        login.set_default_timeout(TIMEOUT_MS)
        refused = []
        login.on("response", lambda r: refused.append(r.url) if r.status == 401 else None)
        login.goto(url)
        login.locator("input[type=password]").wait_for()
        assert login.evaluate("() => window.gradio_api_info") == {"named_endpoints": {}, "unnamed_endpoints": {}}
        shoot(login, tmp_path, "15-login")
        login.locator("input[type=text]").fill("student")
        login.locator("input[type=password]").fill("pass word")
        login.keyboard.press("Enter")
        login.wait_for_selector("#attention-view[data-key]")  # logged in: the first analysis drew
        before = login.evaluate("() => document.querySelector('#attention-view').dataset.key")
        login.locator("#sentence-a textarea").fill("Logged in at last.")
        login.locator("#sentence-b textarea").fill("")
        login.locator("#analyze").click()
        login.wait_for_function("old => document.querySelector('#attention-view')?.dataset.key !== old", arg=before)
        login.wait_for_function("() => [...document.querySelectorAll('#view-token option')].slice(1)"
                                ".map(o => o.textContent.split(': ').slice(1).join(': ')).join(' ') === "
                                "'[CLS] logged in at last . [SEP]'")
        assert refused == [], refused  # the login page asked for nothing it could not have
    finally:
        login.close()
        demo.close()


def test_compare_a_changed_word_keeps_the_model_and_stacks_on_a_phone(browser, server, tmp_path):
    """Changing only the second input compares it in the same model (a model change mixed in changed everything),
    the message says what differs, and at 390 px the two views and the change by head stack and fit."""
    v = AppPage(browser, server + "?a=The+keys+to+the+cabinet+are+on+the+table.&model=all-MiniLM-L6-v2", (390, 844))
    model = "#compare-model input"
    try:
        v.views_drawn("lines")
        v.settle()
        v.open_tab("Compare")
        v.page.wait_for_function("() => document.querySelector('#compare-a textarea')?.value.includes('cabinet')")
        assert v.page.input_value(model) != "all-MiniLM-L6-v2"  # the same input: another model, what training changed
        v.page.locator("#compare-a textarea").fill("The keys to the cabinet is on the table.")
        v.page.wait_for_function("s => document.querySelector(s).value === 'all-MiniLM-L6-v2'", arg=model)
        v.page.click("#compare")
        v.page.wait_for_selector("#compare-change .main-svg")
        for side in ("cmp-a-", "cmp-b-"):
            v.page.wait_for_selector(f"#{side}attention-view")
        message = v.page.locator("#compare-message").inner_text()
        assert "the inputs differ at are → is" in message and "one input" not in message, message
        # one under the other, each as wide as the page allows, nothing sideways
        left, right = (v.page.locator(f"#compare-{side}").bounding_box() for side in ("left", "right"))
        assert right["y"] >= left["y"] + left["height"] - 1 and left["width"] > 300, (left, right)
        change = v.page.locator("#compare-change .js-plotly-plot")
        change.evaluate("e => e.scrollIntoView({ block: 'center' })")
        shoot(v.page, tmp_path, "compare-390-change")
        assert change.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
        plot, bar = change.bounding_box(), v.page.locator("#compare-change .colorbar").bounding_box()
        assert bar and bar["x"] + bar["width"] <= plot["x"] + plot["width"] + 1, (plot, bar)
        assert v.page.locator("#compare-table").bounding_box()["y"] >= plot["y"] + plot["height"] - 1
        assert v.no_sideways_scroll()
        v.page.locator("#compare-right").evaluate("e => e.scrollIntoView({ block: 'center' })")
        shoot(v.page, tmp_path, "compare-390-views")

        # a model the visitor picks stays theirs; with another input as well, the message says both
        v.page.locator(model).click()
        v.page.locator("[data-testid=dropdown-option]", has_text="minilm-l6-mlm-nsp-en").click()
        v.page.locator("#compare-a textarea").fill("The keys to the cabinet were on the table.")
        v.settle(750)  # the box's event answered
        assert v.page.input_value(model) == "minilm-l6-mlm-nsp-en"
        v.page.click("#compare")
        v.page.wait_for_function("() => document.querySelector('#compare-message').innerText.includes('were')")
        message = v.page.locator("#compare-message").inner_text()
        assert "(right), and the inputs differ at are → were" in message and "one input" not in message, message
        assert v.errors == []
    finally:
        v.page.close()
