"""The Task tab in Chromium with a real fine-tuned (tiny) classifier: Explain colors the tokens (as text), a click on
a ranked head opens it in the attention views, a click on a held-out row analyzes it, and one click leads into
Compare with the model before fine-tuning, change by layer included."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest


pytestmark = [pytest.mark.browser]

TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def server(serve_app, finetuned_classifier):
    return serve_app(finetuned_classifier).url


def test_explain_open_a_head_pick_a_heldout_row_and_compare_with_the_base(browser, server, finetuned_classifier):
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "?a=the+movie+was+%3Cb%3Egreat%3C%2Fb%3E")
    page.wait_for_selector("#view-pane-lines .bv-view[data-drawn]")
    page.get_by_role("tab", name="Task", exact=True).click()
    page.wait_for_function("() => document.querySelector('#task')?.textContent.includes('according to')")  # shown
    page.click("#task-explain")
    page.wait_for_selector("#task-heads button.bv-open-head")
    shown = page.eval_on_selector_all("#task-attribution .bv-task-tokens span", "s => s.map(e => e.textContent)")
    assert shown[0] == "[CLS]" and "<" in shown and shown[-1] == "[SEP]"  # tokens as text, the markup not obeyed
    assert not page.query_selector("#task-attribution b")
    button = page.locator("#task-heads button.bv-open-head").nth(1)
    layer, head = int(button.get_attribute("data-layer")), int(button.get_attribute("data-head"))
    button.click()
    page.wait_for_function("([l, h]) => location.search.includes(`layer=${l}&head=${h}`)", arg=[layer, head])
    query = parse_qs(urlsplit(page.url).query)
    assert (query["layer"], query["head"]) == ([str(layer)], [str(head)])

    rows = [json.loads(line) for line in (finetuned_classifier / "heldout_predictions.jsonl").read_text().splitlines()]
    worst = max(rows, key=lambda r: r["loss"])["text"]  # the table's first row
    page.get_by_role("tab", name="Task", exact=True).click()
    page.locator("#task-heldout").get_by_text(worst, exact=True).first.click()
    page.wait_for_function("t => document.querySelector('#sentence-a textarea').value === t", arg=worst)
    page.wait_for_function("t => new URLSearchParams(location.search).get('a') === t", arg=worst)  # analyzed

    page.get_by_role("tab", name="Task", exact=True).click()
    page.click("#task-compare")
    page.wait_for_selector("#compare-layers .js-plotly-plot")
    assert page.get_by_role("tab", name="Compare", exact=True).get_attribute("aria-selected") == "true"
    message = page.inner_text("#compare-message")
    assert "(left) against" in message and "Change per layer, first to last" in message and "weights" in message
    assert page.input_value("#compare-a textarea") == worst
    # that click opened Compare: a new input refreshes it as the open tab (its second input follows the analyzed one)
    page.locator("#sentence-a textarea").fill("a fine movie")
    page.click("#analyze")
    page.wait_for_function("() => document.querySelector('#compare-a textarea')?.value === 'a fine movie'")
    assert errors == []
    page.close()


def test_on_a_phone_the_task_tab_never_scrolls_the_page_sideways(browser, server):
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(server + "?a=the+movie+was+great+and+good")
    page.wait_for_selector("#view-pane-lines .bv-view[data-drawn]")
    page.click("#tabs [aria-label='More tabs']")
    page.locator("#tabs .overflow-dropdown button", has_text="Task").click()
    page.wait_for_function("() => document.querySelector('#task')?.textContent.includes('according to')")  # shown
    page.click("#task-explain")
    page.wait_for_selector("#task-heads button.bv-open-head")
    page.wait_for_function("() => [...document.querySelectorAll('#task-heldout td')].some((td) => td.offsetParent "
                           "&& td.textContent.trim())")
    # the held-out table is wider than a phone: it scrolls in its own box, never the page
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.close()
