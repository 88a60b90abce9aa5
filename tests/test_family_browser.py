"""The app in Debian's headless Chromium with the BERT family: a server offering a RoBERTa, an ELECTRA and a DeBERTa
checkpoint built by transformers (tests/family_models.py), opened and driven as a visitor does: the attention views
draw the family's tokens as words are read (no 'Ġ'), the tabs say what each family lacks, ELECTRA's "replaced?" table
lists every token, and DeBERTa's query x key view splits each score into its content and position terms."""

from __future__ import annotations

import pytest

import family_models
from pages import TIMEOUT_MS, AppPage, shoot, wait_for_rows

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    out = {}
    for name in ("roberta", "electra", "deberta-v2"):
        out[name] = tmp_path_factory.mktemp(name)
        family_models.build(name, out[name])
    return out


@pytest.fixture(scope="module")
def served(serve_app, folders):
    return serve_app(*folders.values())


@pytest.fixture(scope="module")
def explorers(served):
    return served.explorers


@pytest.fixture(scope="module")
def visitor(browser, served):
    v = AppPage(browser, served.url)
    yield v
    v.page.close()


def test_roberta_views_draw_its_tokens_and_say_what_it_lacks(visitor, explorers, folders, tmp_path):
    roberta = explorers[folders["roberta"].name]
    visitor.analyze("The cat sat on the mat.", "Dogs bark, cats purr.")
    visitor.views_drawn("lines")
    encoding = roberta.encode("The cat sat on the mat.", "Dogs bark, cats purr.")
    expected = encoding.labels  # 'cat', '##s', not 'Ġcat', 's'
    assert visitor.wait_for_tokens(expected) == expected
    assert any(t.startswith("\u0120") for t in encoding.tokens) and not any("\u0120" in t for t in expected)
    page = visitor.page
    page.locator("#view-pane-lines").scroll_into_view_if_needed()
    shoot(page, tmp_path, "family-roberta-tokens")
    with visitor.on_a_phone():
        visitor.views_drawn("lines")
        page.locator("#view-pane-lines").scroll_into_view_if_needed()
        shoot(page, tmp_path, "family-roberta-tokens-phone")
    visitor.open_tab("Embeddings")
    page.wait_for_function("() => document.querySelector('#embeddings-family-note')?.innerText"
                           ".includes('RoBERTa has no segment B embedding')", timeout=TIMEOUT_MS)
    visitor.open_tab("Next sentence")
    page.wait_for_function("() => document.querySelector('#next-sentence')?.innerText"
                           ".includes('RoBERTa dropped next-sentence prediction')", timeout=TIMEOUT_MS)
    visitor.open_tab("Model")
    assert "What this family does differently from BERT" in page.locator("#model-info").inner_text()
    assert not visitor.errors
    shoot(page, tmp_path, "family-roberta")
    with visitor.on_a_phone():
        visitor.open_tab("Tokens")
        page.locator("#tabs").scroll_into_view_if_needed()
        shoot(page, tmp_path, "family-roberta-table-phone")


def test_electra_lights_up_replaced_tokens(visitor, explorers, folders, tmp_path):
    electra_name = folders["electra"].name
    page = visitor.page
    visitor.pick_model(electra_name)
    visitor.analyze("The cat drank the mat.")
    visitor.views_drawn("lines")
    tokens = explorers[electra_name].encode("The cat drank the mat.").tokens
    assert visitor.wait_for_tokens(tokens) == tokens
    visitor.open_tab("Masked LM")
    page.wait_for_function("() => document.querySelector('#replaced-message')?.innerText.startsWith('Replaced?')",
                           timeout=TIMEOUT_MS)
    wait_for_rows(page, "replaced-table", len(tokens))
    assert "ELECTRA's discriminator has no masked-LM head" in page.locator("#mlm-explainer").inner_text()
    assert not page.locator("#mask-predict").is_visible()
    assert not visitor.errors
    shoot(page, tmp_path, "family-electra")


def test_deberta_query_key_view_splits_each_score(visitor, explorers, folders, tmp_path):
    name = folders["deberta-v2"].name
    page = visitor.page
    visitor.pick_model(name)
    visitor.analyze("The cat sat on the mat.", "Dogs bark.")
    visitor.views_drawn("lines")
    tokens = explorers[name].encode("The cat sat on the mat.", "Dogs bark.").labels
    assert visitor.wait_for_tokens(tokens) == tokens
    page.click("#view-tab-qk")
    visitor.views_drawn("qk", "query=")
    detail = page.locator("#view-pane-qk .bv-stats")
    detail.filter(has_text="add up to the score").wait_for()
    text = detail.inner_text()  # the model's own terms, by the names it gives them, and their sum
    assert "the model's score terms q.k = " in text and ", c2p = " in text and ", p2c = " in text
    assert "a sum of 3 terms (q.k, c2p, p2c)" in page.locator("#view-pane-qk").inner_text()
    assert not visitor.errors
    page.select_option("#view-zoom", "labels")  # rows tall enough for each term's number
    page.select_option("#view-token", "2")
    visitor.views_drawn("qk", "query=2")
    shoot(page, tmp_path, "family-deberta-qk")
    with visitor.on_a_phone():
        visitor.views_drawn("qk", "query=")
        page.locator("#view-pane-qk .bv-stats").scroll_into_view_if_needed()
        shoot(page, tmp_path, "family-deberta-qk-phone")
