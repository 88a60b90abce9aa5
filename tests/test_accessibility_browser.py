"""axe-core (tests/axe.py) over everything a visitor can open, at 1280 x 720 and 390 x 844: every attention view,
every tab of the app (the Timeline tab on a model with a training timeline, the Pretrain tab with training on, the
Corpus tab's four views), presenter mode, the lesson panel and a lesson playing, the static page and a page saved
offline. No violation of impact "serious" or "critical" may remain, gradio's markup included; the rules waived are
in axe.WAIVED and docs/accessibility.md. One server for the module and one page per size: axe takes a second or two a
look on two shared cores, and the page's own state (a tab opened, presenter mode) is what changes between looks.

The variants are looked at in the same page, switched without a reload (`as_variant`): gradio's dark theme at every
stop at 1280 x 720 and at the attention views on a phone, and the colour-blind palette where it colours something
(the attention views, the corpus views, the Timeline tab's key). A look costs one axe run; a reload per
variant cost the page, each tab and its outputs again (20 minutes for four variants)."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

import bertviz_app
from axe import serious
from bertviz_app.app.lane.training import TrainingSettings
from bertviz_app.catalog import ASSETS
from bertviz_app.views import standalone_html
from pages import TIMEOUT_MS, AppPage, serving
from static_pages import Opened, static_host

pytestmark = [pytest.mark.browser]

SIZES = [(1280, 720), (390, 844)]
VIEWS = ("lines", "matrix", "overview", "qk")
CORPUS_VIEWS = ("heads", "qk", "search", "sentences")
LESSON = ASSETS / "lessons" / "03-one-head-two-ways.json"


@pytest.fixture(scope="module")
def server(tmp_path_factory, tiny_mlm_folder, finetuned_classifier, small_corpus):
    from bertviz_app.app.tabs.corpus import open_corpora

    text = tmp_path_factory.mktemp("pretrain-text") / "animals.txt"
    text.write_text("the cat sat on the mat .\nthe dog sat on the rug .\n", encoding="utf-8")
    explorers = {"tiny": bertviz_app.load(tiny_mlm_folder, device="cpu", name="tiny"),
                 "trained": bertviz_app.load(finetuned_classifier, device="cpu", name="trained")}
    corpora, problems = open_corpora([str(small_corpus)], explorers, lambda source: None)
    with serving(explorers, corpora=corpora, corpus_problems=problems,
                 training=TrainingSettings(True, "", (), pretrain_files=(str(text),))) as served:
        yield served.url


@pytest.fixture(scope="module")
def explorer(default_explorer):
    return default_explorer


@pytest.fixture(scope="module")
def static_site(tiny_mlm_folder, tmp_path_factory):
    """A tiny model's static page, served, and a page of its views saved offline (the default model's export and
    its first analysis in the browser take minutes on two shared cores; the page's markup is the same)."""
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


# A variant: the colour scheme the browser prefers, and the colour-blind palette on or off. The palette colours the
# views' canvases and their legends' swatches, which axe does not read, and its own button, whose colours are set for
# both schemes: so it is looked at in the light scheme only.
DEFAULT, DARK, COLOURBLIND = ("light", False), ("dark", False), ("light", True)
VARIANT_NAMES = {DEFAULT: "", DARK: " (dark)", COLOURBLIND: " (colour-blind)"}
# no colour of the page in transition (gradio's buttons and boxes fade theirs; axe would read one halfway)
NO_TRANSITION = "() => !document.getAnimations().some(a => a instanceof CSSTransition && a.playState === 'running')"


def as_variant(page, variant: tuple[str, bool]) -> None:
    """The open page in `variant` (its scheme, the colour-blind palette on or off), without a reload. Dark as a
    browser that prefers a dark scheme gets it: gradio follows the preference and sets body.dark, as ?__theme=dark
    does at load; the palette by its button."""
    scheme, palette = variant
    page.emulate_media(color_scheme=scheme)
    if page.evaluate("() => document.body.classList.contains('bv-colorblind')") != palette:
        page.click("#colorblind-theme")
    # the static and the saved page have no dark style: only gradio's page takes the class
    page.wait_for_function("([dark, palette]) => (!window.gradio_config || document.body.classList.contains('dark')"
                           " === dark) && document.body.classList.contains('bv-colorblind') === palette",
                           arg=[scheme == "dark", palette])
    page.wait_for_function(NO_TRANSITION)


def look(found: dict, where: str, v: AppPage, variants=(DEFAULT,)) -> None:
    """axe's findings once the page is still (no request for a while, no gradio output pending: a pending output is
    drawn at 20% opacity, which axe rightly reads as low contrast, but only for that moment), in each of `variants`;
    the page is left in the default."""
    v.settle(1500)  # an opened tab asks for its outputs a moment after the click
    v.page.wait_for_function(STILL)
    for variant in variants:
        as_variant(v.page, variant)
        if problems := serious(v.page):
            found[where + VARIANT_NAMES[variant]] = problems
    if variants[-1] != DEFAULT:
        as_variant(v.page, DEFAULT)


@pytest.mark.slow  # 110-165 s each: axe over every stop, in three looks
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_axe_finds_nothing_serious_in_the_app(browser, server, size):
    """Every stop in the default look at both sizes. At 1280 x 720 each stop in gradio's dark theme too (it
    recolours every panel), and with the colour-blind palette at the stops where it colours something;
    on the phone, dark at the attention views (the first screen: the title row, the input, the views, the tab bar's
    selected tab)."""
    found: dict[str, list] = {}
    v = AppPage(browser, server + "?corpus=small&cview=heads", size)
    page = v.page
    wide = size == SIZES[0]
    themes = (DEFAULT, DARK) if wide else (DEFAULT,)
    coloured = (*themes, COLOURBLIND) if wide else themes  # the stops the palette colours
    first_screen = (DEFAULT, DARK, COLOURBLIND) if wide else (DEFAULT, DARK)  # the attention views
    try:
        v.views_drawn("lines")
        for view in VIEWS:
            page.click(f"#view-tab-{view}")
            v.views_drawn(view)
            look(found, f"view {view}", v, first_screen)
        names = set()
        for name in tab_names(page):
            open_tab(page, name)
            look(found, f"tab {name}", v, coloured if name in ("Corpus", "Timeline") else themes)
            names |= set(page.eval_on_selector_all("svg.main-svg[role=img]", "ss => ss.map(s => s.ariaLabel)"))
            if name == "Corpus":
                for view in CORPUS_VIEWS[1:]:
                    page.click(f"#corpus-tab-{view}")
                    look(found, f"corpus {view}", v, coloured)
        page.click("#presenter")
        page.wait_for_function("() => document.body.classList.contains('bv-presenter')")
        look(found, "presenter mode", v, themes)  # the palette's button is hidden in presenter mode
        page.click("#presenter")
        page.click("#lesson")
        look(found, "lesson panel", v, themes)
        page.set_input_files("#lesson-file", str(LESSON))
        page.wait_for_selector("#lesson-bar[data-busy=false]")
        look(found, "lesson player", v, themes)
    finally:
        page.close()
    assert found == {}, json.dumps(found, indent=1)  # the whole finding: enough to fix it
    # the plotly figures are named by their titles and axes (the Embeddings tab's position similarity, say)
    assert any("x axis: " in n and "y axis: " in n for n in names), names


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_axe_finds_nothing_serious_in_the_static_and_the_saved_page(browser, static_site, size):
    """Both pages as a browser that prefers a dark scheme shows them too (they keep their light look), and the static
    page with its colour-blind palette at 1280 x 720 (a saved page has no switch)."""
    url, saved = static_site
    found = {}
    static = Opened(browser, url, url)  # it waits for the page's first analysis, in the browser
    pages = {"static page": static.page, "saved page": browser.new_page()}
    try:
        pages["saved page"].goto(saved.as_uri())
        for where, page in pages.items():
            page.set_viewport_size({"width": size[0], "height": size[1]})
            page.wait_for_function("() => document.querySelector('#view-pane-lines .bv-view')?.dataset.drawn",
                                   timeout=TIMEOUT_MS)
            palette = (COLOURBLIND,) if size == SIZES[0] and where == "static page" else ()
            for variant in (DEFAULT, DARK, *palette):
                as_variant(page, variant)
                if problems := serious(page):
                    found[where + VARIANT_NAMES[variant]] = problems
    finally:
        for page in pages.values():
            page.close()
    assert found == {}, json.dumps(found, indent=1)  # the whole finding: enough to fix it


SENTENCE = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def described(explorer, tmp_path_factory):
    """The default model's Run of SENTENCE and its standalone page."""
    run = explorer.run(SENTENCE)
    path = tmp_path_factory.mktemp("described") / "page.html"
    path.write_text(standalone_html(run.views_payload(), title="described"), encoding="utf-8")
    return run, path


def test_a_screen_reader_hears_the_head_and_its_strongest_link_and_gets_the_table(browser, described):
    """The accessibility tree (playwright's aria snapshot) of the views holds a sentence naming the layer, the head
    and the selected token's strongest link with its weight, the Run's numbers within the payload's 8-bit step; the
    "Show as table" switch adds the same link as the first row of a table, and the head's matrix as another."""
    run, path = described
    tokens = run.tokens
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(path.as_uri())
        page.wait_for_function("() => document.querySelector('#view-pane-lines .bv-view')?.dataset.drawn")
        for layer, head, token in ((3, 2, tokens.index("cat")), (5, 7, tokens.index("it"))):
            page.eval_on_selector("#view-layer", "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', "
                                                 "{bubbles: true})); }", str(layer))
            page.eval_on_selector("#view-head", "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', "
                                                "{bubbles: true})); }", str(head))
            page.select_option("#view-token", str(token))
            page.wait_for_function("want => document.querySelector('#view-description').textContent.startsWith(want)",
                                   arg=f"Layer {layer}, head {head}:")
            tree = page.locator("#attention-view").aria_snapshot()
            said = re.search(r"Layer (\d+), head (\d+): (.*?); ‘(.+?)’ \(token (\d+)\) attends most to ‘(.+?)’ "
                             r"\(token (\d+), (\d\.\d\d)\)\.", tree)
            assert said, tree
            assert (int(said[1]), int(said[2]), said[4], int(said[5])) == (layer, head, tokens[token], token)
            row = run.attention(layer, head)[token]
            to, weight = int(said[7]), float(said[8])
            assert said[6] == tokens[to]
            # the payload's 8-bit codes are within one step (max / 255 <= 1/255) of the Run's numbers; the sentence
            # rounds to two decimals
            assert row[to] >= row.max() - 1 / 255, (row[to], row.max())
            assert abs(weight - row[to]) <= 1 / 255 + 0.005, (weight, row[to])
            page.click("#view-table-toggle")
            page.wait_for_selector("#view-table table")
            table = page.locator("#view-table").aria_snapshot()
            assert re.search(rf"row \"1 {to}: {re.escape(tokens[to])} {said[8]}\"", table), table
            assert f"Layer {layer}, head {head}: each row a query token" in table
            assert page.get_attribute("#view-table-toggle", "aria-pressed") == "true"
            page.click("#view-table-toggle")
            page.wait_for_selector("#view-table", state="hidden")
    finally:
        page.close()


def tab_to(page, selector: str, most: int = 250) -> None:
    """Press Tab until the focus is on `selector` (the keyboard's way there: no click, no focus() call)."""
    for _ in range(most):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement?.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def open_chooser_by_keyboard(page, tries: int = 3):
    """Space on the focused file box, the chooser it opens. Headless Chromium now and then drops the chooser event of
    a real key press (microsoft/playwright#28023, seen once in CI under load): a user would press again, so do we."""
    for _ in range(tries):
        try:
            with page.expect_file_chooser(timeout=15000) as chooser:
                page.keyboard.press("Space")
            return chooser.value
        except PlaywrightTimeout:
            assert page.evaluate("() => document.activeElement.id") == "lesson-file", "the focus left the file box"
    raise AssertionError(f"Space on the focused file box opened no chooser in {tries} presses")


def ring(page) -> str:
    """The focused element's outline: the ring a keyboard user sees."""
    return page.evaluate("() => { const s = getComputedStyle(document.activeElement);"
                         " return s.outlineStyle === 'none' ? '' : `${s.outlineWidth} ${s.outlineStyle}`; }")


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_an_analysis_a_view_change_and_a_lesson_with_the_keyboard_alone(browser, server, size):
    v = AppPage(browser, server, size)
    page = v.page
    try:
        v.views_drawn("lines")
        # an analysis: the sentence box typed into, then the Analyze button
        before = page.get_attribute("#attention-view", "data-key")
        tab_to(page, "#sentence-a textarea")
        assert ring(page), "the sentence box shows no focus ring"
        page.keyboard.press("ControlOrMeta+a")
        page.keyboard.type("The cat sat on the mat.")
        tab_to(page, "#sentence-b textarea")
        page.keyboard.press("ControlOrMeta+a")
        page.keyboard.press("Delete")
        tab_to(page, "#analyze")
        page.keyboard.press("Enter")
        page.wait_for_function("old => document.querySelector('#attention-view')?.dataset.key !== old", arg=before)
        assert v.wait_for_tokens(["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"])[2] == "cat"
        # the picture: a token kept with the arrows and Enter, the head and the layer changed, the token cleared
        tab_to(page, "#view-pane-lines .bv-scroller")
        assert ring(page), "the picture shows no focus ring"
        start = page.evaluate("() => [Number(document.querySelector('#view-layer').value),"
                              " Number(document.querySelector('#view-head').value)]")
        for key in ("ArrowDown", "ArrowDown", "ArrowDown", "Enter"):
            page.keyboard.press(key)
        page.wait_for_function("() => document.querySelector('#view-token').value === '2'")
        assert "‘cat’ (token 2) attends most to" in page.text_content("#view-description")
        page.keyboard.press("ArrowRight" if start[1] == 0 else "ArrowLeft")
        page.keyboard.press("Shift+ArrowDown" if start[0] == 0 else "Shift+ArrowUp")
        layer, head = start[0] + (1 if start[0] == 0 else -1), start[1] + (1 if start[1] == 0 else -1)
        v.views_drawn("lines", f"layer={layer} head={head} token=2")
        assert page.text_content("#view-description").startswith(f"Layer {layer}, head {head}:")
        page.keyboard.press("Escape")
        page.wait_for_function("() => document.querySelector('#view-token').value === ''")
        # a view change: the Matrix tab, by Tab and Enter
        tab_to(page, "#view-tab-matrix")
        assert ring(page), "the view tab shows no focus ring"
        page.keyboard.press("Enter")
        v.views_drawn("matrix")
        # a lesson: the Lesson button, its file chosen with the keyboard, a step on with the player's Next
        tab_to(page, "#lesson")
        page.keyboard.press("Enter")
        tab_to(page, "#lesson-file")
        assert ring(page), "the lesson file box shows no focus ring"
        open_chooser_by_keyboard(page).set_files(str(LESSON))
        page.wait_for_selector("#lesson-bar[data-busy=false][data-step='1']")
        tab_to(page, "#lesson-next")
        page.keyboard.press("Enter")
        page.wait_for_selector("#lesson-bar[data-busy=false][data-step='2']")
        assert page.evaluate("() => document.activeElement.id") == "lesson-next"
        assert v.errors == []
    finally:
        page.close()
