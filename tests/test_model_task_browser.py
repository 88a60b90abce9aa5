"""The Model and Task tabs in Chromium, at 1280 x 720 and on a 390 x 844 phone: the Model tab's configuration table
(each field with what it means) fits, the Task tab with a model that has no fine-tuned head says what to do instead of
offering controls that each answer with an error, and bold text is set in one font (gradio's semibold files hold
only "A", "B" and some Cyrillic, so a bold "A" came out of another font than the rest of its word)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pages import AppPage

pytestmark = [pytest.mark.browser]

DEFAULT = "minilm-l6-mlm-nsp-en"  # no fine-tuned head
SIZES = {"1280x720": (1280, 720), "390x844": (390, 844)}


@pytest.fixture(scope="module")
def server(serve_app, finetuned_classifier):
    return serve_app(DEFAULT, finetuned_classifier).url


def keep_screenshot(page, tmp_path: Path, name: str) -> None:
    """A screenshot of the page into tmp_path, and into $BERTVIZ_SCREENSHOTS when set (docs/screenshots/ has them)."""
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path))
    if os.environ.get("BERTVIZ_SCREENSHOTS"):
        Path(os.environ["BERTVIZ_SCREENSHOTS"]).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(os.environ["BERTVIZ_SCREENSHOTS"]) / path.name)


# Each cell of the configuration table's last column, against what the reader can see of it: the window and every
# box above it that clips (a table that scrolls sideways in its own box hides the words past its right edge).
CLIPPED_WORDS = """() => {
  const table = [...document.querySelectorAll('#model-info table')].at(-1);
  const cells = [...table.querySelectorAll('tbody tr')].map((row) => row.cells[row.cells.length - 1]);
  const clipped = [];
  for (const cell of cells) {
    const right = cell.getBoundingClientRect().right;
    let edge = document.documentElement.clientWidth;
    for (let box = cell.parentElement; box; box = box.parentElement) {
      if (getComputedStyle(box).overflowX !== 'visible') edge = Math.min(edge, box.getBoundingClientRect().right);
    }
    if (right > edge + 1) clipped.push([cell.textContent, right, edge]);
  }
  const narrowest = Math.min(...cells.map((cell) => cell.getBoundingClientRect().width));
  return {cells: cells.length, clipped, narrowest, header: table.tHead.textContent};
}"""


@pytest.mark.parametrize("size", SIZES)
def test_the_model_tab_shows_each_field_with_its_meaning_and_fits(browser, server, size, tmp_path):
    visitor = AppPage(browser, server + "?a=the+cat+sat", SIZES[size])
    page = visitor.page
    visitor.views_drawn("lines")
    visitor.open_tab("Model")
    page.wait_for_function("() => document.querySelector('#model-info')?.textContent.includes('what it means')")
    table = page.evaluate(CLIPPED_WORDS)
    assert "what it means" in table["header"] and table["cells"] >= 15
    assert table["clipped"] == [], table["clipped"]
    assert table["narrowest"] >= 200  # a line of words, not a letter a line
    assert visitor.no_sideways_scroll()
    page.locator("#model-info table").last.scroll_into_view_if_needed()
    keep_screenshot(page, tmp_path, f"model_tab_{size}")
    assert visitor.errors == []
    page.close()


def visible(page, selector: str) -> bool:
    return page.locator(selector).is_visible()


@pytest.mark.parametrize("size", SIZES)
def test_the_task_tab_without_a_head_says_what_to_do_and_shows_its_controls_for_one(browser, server, size,
                                                                                     finetuned_classifier, tmp_path):
    visitor = AppPage(browser, server + "?a=a+good+film", SIZES[size])
    page = visitor.page
    visitor.views_drawn("lines")
    visitor.open_tab("Task")
    page.wait_for_function("() => document.querySelector('#task')?.innerText.includes('is not fine-tuned')")
    message = page.inner_text("#task")
    assert f"pick {Path(finetuned_classifier).name}" in message  # the app's fine-tuned model, by name
    # no chart, no Explain or Compare, no held-out table: none of them has anything to answer
    for part in ("#task-controls", "#task-label", "#task-explain", "#task-compare", "#task-heldout"):
        assert not visible(page, part), part
    assert not page.locator(".toast-body").count()  # and no error said anywhere
    page.locator("#task").scroll_into_view_if_needed()
    keep_screenshot(page, tmp_path, f"task_no_head_{size}")

    visitor.pick_model(Path(finetuned_classifier).name)  # the switch analyzes the page's input, "a good film"
    visitor.open_tab("Task")
    page.wait_for_function("() => document.querySelector('#task')?.innerText.includes('according to')")
    for part in ("#task-label", "#task-explain", "#task-compare"):
        page.wait_for_selector(part, state="visible")
    page.click("#task-explain")
    page.wait_for_selector("#task-heads button.bv-open-head")
    assert visitor.no_sideways_scroll()
    assert visitor.errors == []
    page.close()


def fonts_of(page, selector: str) -> list[str]:
    """The fonts Chromium drew the text of the first element matching `selector` with (DevTools' "Rendered
    Fonts"): one name per font, however many glyphs each drew."""
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        return [f["familyName"] for f in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]]
    finally:
        cdp.detach()


def mark(page, selector: str, text: str) -> str:
    """Tag the first shown element matching `selector` whose text is `text`, once there is one; a selector for it."""
    page.wait_for_function("([s, t]) => { const e = [...document.querySelectorAll(s)].find((e) => e.offsetParent "
                           "&& e.textContent.trim() === t); if (e) e.dataset.fontProbe = t; return Boolean(e); }",
                           arg=[selector, text])
    found = page.locator(f"[data-font-probe={text!r}]".replace("'", '"')).count()
    assert found, f"no {selector} reads {text!r}"
    return f"[data-font-probe={text!r}]".replace("'", '"')


def test_bold_words_and_the_sentence_marks_are_each_set_in_one_font(browser, server):
    """ "All heads", "Attention is not explanation" and "[MASK]" in bold, and the token table's segment marks A/B:
    no small capitals, and every letter from the same font as its neighbours."""
    visitor = AppPage(browser, server + "?a=the+cat+sat+on+the+%5BMASK%5D&b=it+slept")
    page = visitor.page
    visitor.views_drawn("lines")
    seen = {}

    def look(selector: str, text: str) -> None:
        # while its tab is open: a hidden element is drawn in no font at all
        probe = mark(page, selector, text)
        page.locator(probe).scroll_into_view_if_needed()
        seen[text] = (page.eval_on_selector(probe, "e => getComputedStyle(e).fontVariantCaps"), fonts_of(page, probe))

    look("#token-table td", "B")
    visitor.open_tab("Masked LM")
    look(".prose strong", "[MASK]")
    visitor.open_tab("Beyond attention")
    look(".prose strong", "Attention is not explanation")
    look(".prose strong", "All heads")
    for text, (caps, fonts) in seen.items():
        assert caps == "normal" and len(fonts) == 1, (text, caps, fonts)
    assert visitor.errors == []
    page.close()
