"""The Compare tab's "Patch B into A" in Chromium (app/tabs/compare_patch.py): from a minimal pair the heads map
appears, a click on a cell opens that head in both views, inputs of different lengths are refused in one sentence in
place; at 1280 x 720 and 390 x 844."""

from __future__ import annotations

import pytest

from pages import AppPage, shoot, wait_for_rows

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]
A = "The key to the cabinet [MASK] on the table."
B = "The keys to the cabinet [MASK] on the table."


@pytest.fixture(scope="module")
def server(serve_app):
    return serve_app("minilm-l6-mlm-nsp-en").url


def analyzed(browser, server, size) -> AppPage:
    """A visitor's page opened on sentence A, its views drawn and its chained requests done."""
    v = AppPage(browser, server + "?a=" + A.replace(" ", "+").replace("[MASK]", "%5BMASK%5D"), size=size)
    v.views_drawn("lines")
    v.settle()
    return v


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["desktop", "phone"])
def test_patch_b_into_a_opens_the_clicked_head_for_both_inputs(browser, server, tmp_path, size):
    v = analyzed(browser, server, size)
    page = v.page
    try:
        v.open_tab("Compare")
        page.wait_for_function("() => document.querySelector('#compare-a textarea')?.value.includes('cabinet')")
        page.locator("#compare-a textarea").fill(B)
        page.click("#compare-patch")
        page.wait_for_selector("#compare-patch-map table")
        message = page.locator("#compare-patch-message").inner_text()
        assert "logit(are) - logit(is)" in message and "72 patched passes" in message, message
        wait_for_rows(page, "compare-patch-map", 12)  # a head a row, a layer a column
        # the whole table in sight, on a phone too: nothing in it scrolls sideways
        assert page.evaluate("() => [...document.querySelectorAll('#compare-patch-map *')].every((e) => "
                             "e.scrollWidth <= e.clientWidth + 1 || getComputedStyle(e).overflowX === 'visible')")
        for side in ("cmp-a-", "cmp-b-"):
            page.wait_for_selector(f"#{side}attention-view")
        # a click on layer 4, head 7 opens it on both sides
        page.locator("#compare-patch-map [role=gridcell][data-col='5']").nth(7).click()
        page.wait_for_function("() => ['cmp-a-', 'cmp-b-'].every(s => document.querySelector(`#${s}view-layer`)"
                               "?.value === '4' && document.querySelector(`#${s}view-head`)?.value === '7')")
        page.locator("#compare-patch-map").scroll_into_view_if_needed()
        shoot(page, tmp_path, f"patch-b-into-a-{size[0]}x{size[1]}")
        # different lengths: one sentence, both tokenizations, no map
        page.locator("#compare-a textarea").fill("The keys to the big cabinet [MASK] on the table.")
        page.click("#compare-patch")
        page.wait_for_function("() => document.querySelector('#compare-patch-message')?.innerText"
                               ".includes('Not patched')")
        refused = page.locator("#compare-patch-message").inner_text()
        assert "clean one has 13 ([CLS] the keys to the big" in refused and "corrupted one 12" in refused, refused
        assert not page.locator("#compare-patch-map").is_visible()
        assert page.locator(".toast-body, [data-testid=toast-body]").count() == 0
        assert v.errors == []
    finally:
        page.close()


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["desktop", "phone"])
def test_value_zeroing_and_flow_show_and_a_long_input_is_refused_in_one_sentence(browser, server, tmp_path, size):
    v = analyzed(browser, server, size)
    page = v.page
    try:
        v.open_tab("Beyond attention")
        page.click("#mixing")
        page.wait_for_selector("#value-zeroing .main-svg")
        page.wait_for_selector("#attention-flow .main-svg")
        assert "144 maximum flows" in page.locator("#mixing-message").inner_text()
        page.locator("#value-zeroing").scroll_into_view_if_needed()
        shoot(page, tmp_path, f"value-zeroing-flow-{size[0]}x{size[1]}")
        if size[0] < 1000:
            return
        v.analyze(" ".join(["The keys to the cabinet are on the table."] * 5))
        v.settle()
        v.open_tab("Beyond attention")
        page.click("#mixing")
        page.wait_for_function("() => document.querySelector('#mixing-message')?.innerText.includes('not computed')")
        said = page.locator("#mixing-message").inner_text()
        assert "exact up to 48 tokens" in said and "this input has 52" in said, said
        assert page.locator(".toast-body, [data-testid=toast-body]").count() == 0
        assert v.errors == []
    finally:
        page.close()


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["desktop", "phone"])
def test_why_a_and_not_b_shows_the_tokens_and_the_faithfulness_curves(browser, server, tmp_path, size):
    v = analyzed(browser, server, size)
    page = v.page
    try:
        v.open_tab("Beyond attention")
        page.locator("#contrast-answer textarea").fill("is")
        page.locator("#contrast-other textarea").fill("are")
        page.click("#contrast")
        page.wait_for_selector("#contrast-chart .main-svg")
        page.wait_for_selector("#faithfulness-curves .main-svg")
        said = page.locator("#contrast-message").inner_text()
        assert "logit('is') - logit('are')" in said and "Most faithful here by deletion" in said, said
        # six methods, each a deletion and an insertion line, one legend entry each
        assert page.locator("#faithfulness-curves .legend .traces").count() == 6
        assert page.locator("#faithfulness-curves .scatterlayer .trace").count() == 12
        page.locator("#contrast-chart").scroll_into_view_if_needed()
        shoot(page, tmp_path, f"contrast-{size[0]}x{size[1]}")
        page.locator("#faithfulness-curves").scroll_into_view_if_needed()
        shoot(page, tmp_path, f"faithfulness-curves-{size[0]}x{size[1]}")
        assert v.no_sideways_scroll()
        # an answer the vocabulary lacks: one sentence in place, the figures cleared, no toast
        page.locator("#contrast-other textarea").fill("xyzzyplugh")
        page.click("#contrast")
        page.wait_for_function("() => document.querySelector('#contrast-message')?.innerText.includes('Not explained')")
        refused = page.locator("#contrast-message").inner_text()
        assert "'xyzzyplugh' is not in the vocabulary as one word piece" in refused, refused
        page.wait_for_function("() => !document.querySelector('#faithfulness-curves .main-svg')")
        assert page.locator(".toast-body, [data-testid=toast-body]").count() == 0
        assert v.errors == []
    finally:
        page.close()
