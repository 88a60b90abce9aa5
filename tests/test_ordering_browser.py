"""The last thing a visitor asks for wins, whatever finishes first: on a slow host (or a loaded classroom server)
the page's opening analysis may still run when the visitor types and presses Analyze. Here the opening example's
forward pass is slowed on purpose, so that it ends after the visitor's own input on any machine."""

from __future__ import annotations

import threading

import pytest

from bertviz_app import app
from bertviz_app.catalog import read_examples
from pages import TIMEOUT_MS, AppPage, serving

pytestmark = [pytest.mark.browser]

SLOW_S = 4.0


@pytest.fixture(scope="module")
def slowed(tiny_mlm_folder):
    """A served tiny model whose pass sleeps SLOW_S for the opening example, and an event set when it starts."""
    explorers = app.load_models([tiny_mlm_folder], device="cpu")
    explorer = next(iter(explorers.values()))
    opening = tuple(read_examples()[0][0])
    entered, run = threading.Event(), explorer.run

    def slow_run(text, text_pair=None):
        if (text, text_pair or "") == opening:
            entered.set()
            threading.Event().wait(SLOW_S)
        return run(text, text_pair)

    explorer.run = slow_run
    with serving(explorers) as served:
        yield served.url, entered, explorer


def test_the_visitors_input_wins_over_a_slower_opening_analysis(browser, slowed):
    url, entered, explorer = slowed
    visitor = AppPage(browser, url)
    try:
        assert entered.wait(TIMEOUT_MS / 1000), "the opening analysis never started"
        visitor.analyze("Dogs bark at night.")
        typed = explorer.encode("Dogs bark at night.").labels
        assert visitor.wait_for_tokens(typed) == typed
        # The opening analysis ends now, after the visitor's: it must not replace the picture, table or notice.
        visitor.page.wait_for_timeout(SLOW_S * 1000 + 1500)
        visitor.settle()
        assert visitor.tokens() == typed
        table = visitor.page.locator("#token-table").inner_text()
        assert "bark" in table and "tired" not in table
        assert visitor.page.locator("#sentence-a textarea").input_value() == "Dogs bark at night."
        assert not visitor.errors
    finally:
        visitor.page.close()


def test_a_paste_longer_than_the_server_reads_is_refused_in_words_not_cut(browser, slowed):
    """The box cut a 25,000-character paste at 20,000 without a word, and the notice then counted the cut text's
    tokens; now the server's check says how long it was."""
    url, entered, explorer = slowed
    visitor = AppPage(browser, url)
    try:
        box = visitor.page.locator("#sentence-a textarea")
        box.click()
        box.fill("")
        visitor.page.keyboard.insert_text("word " * 5000)  # as a paste arrives: 25,000 characters
        assert len(box.input_value()) == 25_000
        visitor.page.click("#analyze")
        visitor.page.wait_for_function("() => document.querySelector('#notice')?.innerText.includes('25,000')",
                                       timeout=TIMEOUT_MS)
        assert "at most 20,000" in visitor.page.locator("#notice").inner_text()
    finally:
        visitor.page.close()
