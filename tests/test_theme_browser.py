"""The projector theme in Chromium (views/js/theme.mjs): the title row's "Projector theme" button puts it on the
page, the views lay themselves out again with it (larger labels in Lines, Matrix and All heads), it survives a reload
(the browser's storage), and the Keys list and presenter mode still work with it. Screenshots of Lines and Matrix at
1280 x 720 and 390 x 844 go to BERTVIZ_SCREENSHOTS when it is set."""

from __future__ import annotations

import pytest

from pages import AppPage, shoot

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]

PAIR = ("The animal didn't cross the street because it was tired.", "It slept all day.")  # 21 tokens
SHORT = "The cat sat on the mat."  # few rows: room for the labels to grow


@pytest.fixture(scope="module")
def app_server(serve_app):
    return serve_app("minilm-l6-mlm-nsp-en").url


def geometry(page, view: str) -> dict:
    return page.eval_on_selector(f"#view-pane-{view} .bv-scroller", "e => JSON.parse(e.dataset.geometry)")


def label_px_above(page, view: str, px: float) -> float:
    """The view's label size once its layout (redrawn after the theme's switch) makes it larger than `px`."""
    return page.wait_for_function("([v, px]) => { const e = document.querySelector(`#view-pane-${v} .bv-scroller`);"
                                  " const g = e && e.dataset.geometry && JSON.parse(e.dataset.geometry);"
                                  " return g && g.labelPx > px && g.labelPx; }", arg=[view, px]).json_value()


def theme_on(page) -> bool:
    return page.evaluate("() => document.body.classList.contains('bv-projector')")


def test_the_projector_theme_redraws_the_views_and_survives_a_reload(browser, app_server, tmp_path):
    v = AppPage(browser, app_server)
    page = v.page

    def on_screen(visitor, size: str):
        """Lines, then Matrix: each opened, drawn and in sight (yielded), then shot as theme-<view>-<size>."""
        for view in ("lines", "matrix"):
            page.click(f"#view-tab-{view}")
            visitor.views_drawn(view)
            page.locator(f"#view-pane-{view} .bv-surface").scroll_into_view_if_needed()
            page.wait_for_timeout(300)
            yield view
            shoot(page, tmp_path, f"theme-{view}-{size}")

    try:
        v.views_drawn("lines")
        v.analyze(SHORT)
        v.views_drawn("lines")
        plain = {}
        for view in ("lines", "matrix", "overview"):
            page.click(f"#view-tab-{view}")
            v.views_drawn(view)
            plain[view] = geometry(page, view)["labelPx"]
        assert plain["lines"] == 15 and plain["overview"] == 14, plain
        assert not theme_on(page) and page.get_attribute("#projector-theme", "aria-pressed") in (None, "false")

        page.click("#projector-theme")
        page.wait_for_function("() => document.body.classList.contains('bv-projector')")
        assert page.get_attribute("#projector-theme", "aria-pressed") == "true"
        assert page.evaluate("() => localStorage.getItem('bertviz-theme')") == "projector"
        # the view on screen (All heads) redraws at once; the others when they are shown
        assert label_px_above(page, "overview", plain["overview"]) >= 18
        big = {}
        for view in ("lines", "matrix"):
            page.click(f"#view-tab-{view}")
            big[view] = label_px_above(page, view, plain[view])
            page.wait_for_timeout(200)
            shoot(page, tmp_path, f"theme-{view}-1280x720-short")
        assert big["lines"] >= 20, big
        with v.on_a_phone():
            for view in on_screen(v, "390x844-short"):
                assert geometry(page, view)["labelPx"] >= 15
        assert v.no_sideways_scroll()

        page.reload()
        page.wait_for_selector(".bv-view[data-drawn]")  # the link reopens the view last shown
        page.wait_for_function("() => document.body.classList.contains('bv-projector')")
        color = page.eval_on_selector("#projector-theme", "e => getComputedStyle(e).backgroundColor")
        assert color == "rgb(8, 48, 107)", color  # the button shows the theme is on
        page.click("#view-tab-lines")
        assert label_px_above(page, "lines", plain["lines"]) == big["lines"]

        # a pair of 21 tokens, whose rows leave the labels less room, at both sizes
        v.analyze(*PAIR)
        for view in ("lines", "matrix"):
            page.click(f"#view-tab-{view}")
            v.views_drawn(view)
            page.wait_for_timeout(300)
            shoot(page, tmp_path, f"theme-{view}-1280x720")
        with v.on_a_phone():
            list(on_screen(v, "390x844"))

        # the Keys list and presenter mode, with the theme on
        page.click("#keys")
        assert "move between heads" in page.locator("#keys-help").text_content()
        page.keyboard.press("Escape")
        assert page.locator("#keys-help").count() == 0
        v.analyze(SHORT)
        page.click("#view-tab-lines")
        v.views_drawn("lines")
        page.click("#presenter")
        page.wait_for_function("() => document.body.classList.contains('bv-presenter')")
        assert "Leave" in page.locator("#presenter").inner_text() and theme_on(page)
        assert not page.locator("#projector-theme").is_visible()  # the corner keeps its two buttons
        assert label_px_above(page, "lines", 15) >= big["lines"]  # presenter mode's 28 px wish on top of the theme
        shoot(page, tmp_path, "theme-presenter-lines-1280x720")
        page.click("#presenter")
        page.wait_for_function("() => !document.body.classList.contains('bv-presenter')")

        page.click("#projector-theme")
        page.wait_for_function("() => !document.body.classList.contains('bv-projector')")
        assert page.evaluate("() => localStorage.getItem('bertviz-theme')") == "default"
        page.wait_for_function("px => JSON.parse(document.querySelector('#view-pane-lines .bv-scroller')"
                               ".dataset.geometry).labelPx === px", arg=plain["lines"])
        assert v.errors == []
    finally:
        page.close()
