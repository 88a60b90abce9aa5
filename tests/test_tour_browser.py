"""The first visit's tour in Chromium (views/js/lesson-tour.mjs), at 1280 x 720 and 390 x 844, in a browser without
conftest's dismissal (conftest.chromium(first_visit=True)): a first visit to the app is offered "Start the 2-minute
tour" in a card over the page's corner that moves nothing on the page, is first in the keyboard's order and has
nothing serious for axe; Start plays lesson 1 from its first step; Esc dismisses it, and a reload does not offer it
again (nor after Start: a new visit to the bare address, since the views write a permalink into the address, and a
reload would be a link's); a page opened from a link (a lesson's, or a permalink with its text) is not interrupted.
The static page offers it too. Screenshots of the offer go to docs/screenshots/ when BERTVIZ_SCREENSHOTS is set."""

from __future__ import annotations

import contextlib

import pytest

from axe import serious
from bertviz_app.lessons import shipped_lessons
from conftest import chromium
from pages import AppPage, shoot
from static_pages import Opened, static_host

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]

TOUR = "01-words-become-pieces"
FIRST_CAPTION = shipped_lessons()[TOUR]["steps"][0]["caption"]
SIZES = [(1280, 720), (390, 844)]
# what the offer must not move: the input, the buttons above the picture and the picture itself
STILL = ["#sentence-a", "#analyze", "#lesson", "#attention-host"]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("first-visit-profile"), first_visit=True) as context:
        yield context


@pytest.fixture(scope="module")
def app_server(serve_app):
    return serve_app("minilm-l6-mlm-nsp-en").url


@contextlib.contextmanager
def first_visit(browser, url: str, size):
    """The app at `url` in a browser that keeps nothing of this origin (the module's profile is shared): the page is
    opened, its storage emptied, and opened again, its lessons started; no error on it by the end, then closed."""
    visitor = AppPage(browser, url, size)
    try:
        visitor.page.evaluate("() => localStorage.clear()")
        visitor.page.goto(url)
        visitor.page.wait_for_function("() => window.bvLessons")  # the offer is made, or not, as the lessons start
        yield visitor
        assert visitor.errors == []
    finally:
        visitor.page.close()


def not_offered(page) -> None:
    page.wait_for_function("() => window.bvLessons")
    assert page.locator("#tour-offer").count() == 0


def boxes(page) -> list[dict]:
    return [page.locator(selector).bounding_box() for selector in STILL]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_first_visit_is_offered_the_tour_and_start_plays_lesson_1(browser, app_server, size, tmp_path):
    with first_visit(browser, app_server, size) as visitor:
        page = visitor.page
        visitor.views_drawn("lines")
        offer = page.locator("#tour-offer")
        assert offer.is_visible() and page.is_visible("#tour-start") and page.is_visible("#tour-skip")
        assert page.text_content("#tour-start") == "Start the 2-minute tour"
        assert (offer.get_attribute("role"), offer.get_attribute("aria-label")) == ("dialog", "First visit")
        card = offer.bounding_box()
        assert card["x"] >= 0 and card["y"] >= 0 and card["x"] + card["width"] <= size[0] + 1 and (
            card["y"] + card["height"] <= size[1] + 1), card
        assert visitor.no_sideways_scroll()
        assert serious(page, "#tour-offer") == []
        shoot(page, tmp_path, f"tour_offer_{size[0]}x{size[1]}")
        # first in the keyboard's order, though shown in a corner
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.id") == "tour-start"
        page.keyboard.press("Enter")
        page.wait_for_function("() => { const bar = document.querySelector('#lesson-bar');"
                               " return bar && bar.dataset.step === '1' && bar.dataset.busy === 'false'; }")
        assert page.text_content("#lesson-caption") == FIRST_CAPTION
        assert page.text_content("#lesson-where").startswith(shipped_lessons()[TOUR]["title"])
        assert offer.count() == 0
        assert f"lesson={TOUR}" in page.url and "step=1" in page.url
        assert page.evaluate("() => localStorage.getItem('bertviz-tour')") == "started"
        page.goto(app_server)
        not_offered(page)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_dismissed_tour_is_not_offered_again(browser, app_server, size):
    with first_visit(browser, app_server, size) as visitor:
        page = visitor.page
        visitor.views_drawn("lines")
        page.locator("#tour-offer").wait_for()
        with_offer = boxes(page)
        page.keyboard.press("Escape")  # nothing has the focus: Esc is the offer's
        assert page.locator("#tour-offer").count() == 0
        assert boxes(page) == with_offer  # the card floated: nothing on the page moves when it goes
        assert page.evaluate("() => localStorage.getItem('bertviz-tour')") == "dismissed"
        assert page.locator("#lesson-bar").count() == 0
        # the bare address again (a reload would open the permalink the views wrote into the address: a link)
        page.goto(app_server)
        not_offered(page)
        # its button dismisses it too, from a fresh start
        page.evaluate("() => localStorage.clear()")
        page.goto(app_server)
        page.click("#tour-skip")
        assert page.locator("#tour-offer").count() == 0
        page.goto(app_server)
        not_offered(page)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_page_opened_from_a_link_is_not_interrupted(browser, app_server, size):
    with first_visit(browser, app_server, size) as visitor:
        page = visitor.page
        page.locator("#tour-offer").wait_for()  # this browser would be offered it on a bare address
        page.goto(f"{app_server}?lesson=03-one-head-two-ways&step=1")
        page.wait_for_function("() => document.querySelector('#lesson-bar')?.dataset.busy === 'false'")
        assert page.locator("#tour-offer").count() == 0
        page.goto(f"{app_server}?a=The+cat+sat+on+the+mat.&layer=2&head=3&tab=matrix")
        not_offered(page)
        visitor.views_drawn("matrix")
        assert page.locator("#tour-offer").count() == 0
        assert page.evaluate("() => localStorage.getItem('bertviz-tour')") is None


def test_the_static_page_offers_the_tour_on_a_first_visit(browser, default_site):
    with static_host(default_site) as server:
        opened = Opened(browser, server, server)
        page = opened.page
        try:
            page.evaluate("() => localStorage.clear()")
            page.goto(server)
            page.wait_for_function("window.bertvizPage && window.bertvizPage.last")
            assert page.is_visible("#tour-offer") and serious(page, "#tour-offer") == []
            page.click("#tour-start")
            page.wait_for_function("() => { const bar = document.querySelector('#lesson-bar');"
                                   " return bar && bar.dataset.step === '1' && bar.dataset.busy === 'false'; }")
            assert page.text_content("#lesson-caption") == FIRST_CAPTION
            page.goto(server)
            page.wait_for_function("window.bertvizPage && window.bertvizPage.last")
            assert page.locator("#tour-offer").count() == 0
            # a link, in a browser that never answered the offer
            page.evaluate("() => localStorage.clear()")
            page.goto(f"{server}?a=The+cat+sat.&layer=1&head=2")
            page.wait_for_function("window.bertvizPage && window.bertvizPage.last")
            assert page.locator("#tour-offer").count() == 0
            assert opened.outside == [] and opened.errors == []
        finally:
            opened.close()
