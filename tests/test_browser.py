"""The app in a real browser: Debian's headless Chromium driven by playwright (no `playwright install`).

The server offers all-MiniLM-L6-v2 (no pretraining heads, so the app must say so), the shipped default model and a
tiny random BERT with both heads, picked in the model list like any other. Screenshots go to the test's tmp_path and, when BERTVIZ_SCREENSHOTS=DIR is set, to DIR
as well, named app_*.png."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from bertviz_app import app

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 60_000  # two shared cores: the first page load imports plotly.js and draws a dozen figures


@pytest.fixture(scope="module")
def tiny_folder(tiny_mlm_folder):
    return tiny_mlm_folder


@pytest.fixture(scope="module")
def server(tiny_folder):
    demo = app.build_demo(app.load_models(["all-MiniLM-L6-v2", tiny_folder, "minilm-l6-mlm-nsp-en"], device="cpu",
                                          max_tokens=128))
    url = app.serve(demo, port=app.free_port(), block=False)
    yield url
    demo.close()


@pytest.fixture(scope="module")
def page(server, tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's browser with `apt-get install -y chromium` "
                    "(.ci/run does this on CI)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run"],
            viewport={"width": 1400, "height": 1000})
        try:
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(server)
            yield page
        finally:
            context.close()


def shoot(page, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"app_{name}.png"
    page.screenshot(path=str(path), full_page=True)
    target = os.environ.get("BERTVIZ_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


def axis_labels(page, elem_id: str) -> list[str]:
    """The token labels under a plotly figure (SVG text has no innerText: read textContent)."""
    page.wait_for_function(f"() => document.querySelectorAll('#{elem_id} .xtick text').length > 0",
                           timeout=TIMEOUT_MS)
    return page.locator(f"#{elem_id} .xtick text").evaluate_all("ts => ts.map(t => t.textContent)")


def wait_for_labels(page, elem_id: str, expected: list[str]) -> None:
    page.wait_for_function(
        """([id, want]) => {
            const got = [...document.querySelectorAll(`#${id} .xtick text`)].map(t => t.textContent);
            return JSON.stringify(got) === JSON.stringify(want);
        }""", arg=[elem_id, expected], timeout=TIMEOUT_MS)


def wait_for_rows(page, elem_id: str, n: int) -> None:
    """A gradio table's row count, header row included in aria-rowcount (its body is virtualized)."""
    page.wait_for_function(f"() => document.querySelector('#{elem_id} [role=grid]')"
                           f"?.getAttribute('aria-rowcount') === '{n + 1}'", timeout=TIMEOUT_MS)


def test_first_analysis_appears_without_a_click(page, tmp_path):
    page.locator("#attention-heatmap .main-svg").first.wait_for()
    labels = axis_labels(page, "attention-heatmap")
    assert labels[0] == "[CLS]" and labels[-1] == "[SEP]" and "cat" in labels
    page.locator("#head-map .main-svg").first.wait_for()  # the chained views of the tab arrived too
    shoot(page, tmp_path, "01-first-analysis")


def test_analyze_a_pair_and_move_the_layer_slider(page, tmp_path):
    page.locator("#sentence-a textarea").fill("Penguins cannot fly.")
    page.locator("#sentence-b textarea").fill("They swim <b>very</b> well.")
    page.locator("#analyze").click()
    expected = ["[CLS]", "penguins", "cannot", "fly", ".", "[SEP]", "they", "swim", "<", "b", ">", "very", "<",
                "/", "b", ">", "well", ".", "[SEP]"]
    wait_for_labels(page, "attention-heatmap", expected)
    assert page.locator("#attention-heatmap b").count() == 0  # '<b>' was shown as text, not made bold
    page.locator("#token-table").scroll_into_view_if_needed()
    shoot(page, tmp_path, "02-pair-layer-0")

    number = page.locator("#layer input[type=number]")
    number.fill("4")
    number.press("Enter")
    page.wait_for_function("() => document.querySelector('#attention-heatmap .gtitle')?.textContent"
                           ".includes('layer 4')", timeout=TIMEOUT_MS)
    wait_for_labels(page, "attention-heatmap", expected)
    shoot(page, tmp_path, "03-layer-4")


@pytest.mark.parametrize("tab, figure", [("Embeddings", "embedding-parts"), ("Hidden states", "hidden-norms"),
                                         ("Next sentence", None), ("Model", None)])
def test_every_tab_shows(page, tmp_path, tab, figure):
    page.get_by_role("tab", name=tab).click()
    if figure:
        page.wait_for_function(f"() => [...document.querySelectorAll('#{figure} .main-svg')]"
                               ".some(svg => svg.textContent.includes('penguins'))", timeout=TIMEOUT_MS)
    elif tab == "Model":
        assert "22,713,216" in page.locator("#model-info").inner_text()
    else:
        assert "no next-sentence head" in page.locator("#next-sentence").inner_text()
    shoot(page, tmp_path, "04-" + re.sub(r"\W+", "-", tab.lower()))


def test_masked_lm_without_the_head_says_so(page, tmp_path):
    page.get_by_role("tab", name="Masked LM").click()
    assert "all-MiniLM-L6-v2 has no masked-LM head" in page.locator("#mlm-explainer").inner_text()
    assert not page.locator("#mask-predict").is_visible()  # no empty views of predictions that cannot exist
    # what pretraining sees needs only the tokenizer: it is there for this model too
    page.wait_for_function("() => [...document.querySelectorAll('#corruption .main-svg')]"
                           ".some(svg => svg.textContent.includes('penguins'))", timeout=TIMEOUT_MS)
    page.locator("#mlm-explainer").scroll_into_view_if_needed()
    shoot(page, tmp_path, "05-masked-lm")
    page.get_by_role("tab", name="Attention").click()
    assert "penguins" in axis_labels(page, "attention-heatmap")  # the server still answers the page


def test_masked_lm_and_next_sentence_with_the_heads(page, tmp_path, tiny_folder):
    page.locator("#model input").click()
    page.get_by_role("option", name=tiny_folder).click()
    page.wait_for_function("() => document.querySelector('#mlm-explainer')?.innerText.includes('has a masked-LM "
                           "head')", timeout=TIMEOUT_MS)
    page.get_by_role("tab", name="Masked LM").click()
    page.locator("#mask-text textarea").fill("The <b>[mask]</b> sat on the [MASK].")
    page.locator("#mask-predict").click()
    page.locator("#mask-bars .main-svg").first.wait_for()
    assert "2 mask(s)" in page.locator("#mask-message").inner_text()
    wait_for_rows(page, "mask-table", 10)  # two masks x top 5
    titles = page.locator("#mask-bars").text_content()  # subplot titles live in the second svg layer
    assert "[MASK] 1" in titles and "[MASK] 2" in titles
    assert page.locator("#mask-results b").count() == 0  # the typed <b> stayed text
    page.locator("#logit-lens .main-svg").first.wait_for()
    wait_for_rows(page, "lens-table", 3)  # embeddings + the tiny model's 2 layers

    page.locator("#mask-token input").click()
    page.get_by_role("option", name="1: penguins").click()
    page.locator("#masked-token .main-svg").first.wait_for()
    assert "**" not in page.locator("#masked-message").inner_text()
    assert "penguins" in page.locator("#masked-message").inner_text()
    # A new analysis (here the same text again; a new model goes the same way) clears the result of the last one.
    page.locator("#analyze").click()
    page.wait_for_function("() => !document.querySelector('#masked-message')?.textContent.includes('penguins') "
                           "&& !document.querySelector('#masked-token .main-svg')", timeout=TIMEOUT_MS)

    page.locator("#corruption .main-svg").first.wait_for()
    # the new analysis above redraws this view too: wait until it has (a pending view shows its timer first)
    page.wait_for_function("() => document.querySelector('#corruption-message')?.innerText.startsWith('Sample 0:')",
                           timeout=TIMEOUT_MS)
    page.locator("#corrupt-again").click()
    page.wait_for_function("() => document.querySelector('#corruption-message')?.innerText.startsWith('Sample 1:')",
                           timeout=TIMEOUT_MS)
    page.locator("#mask-results").scroll_into_view_if_needed()
    shoot(page, tmp_path, "06-masked-lm-with-head")

    page.get_by_role("tab", name="Next sentence").click()
    text = page.locator("#next-sentence").inner_text()
    assert "P(B follows A) =" in text
    assert "IsNext" in page.locator("#next-sentence-label").inner_text()
    shoot(page, tmp_path, "07-next-sentence-with-head")


def test_the_default_model_answers_paris(page, tmp_path):
    """The headline, with the weights we ship: a fill-mask question answered in the browser."""
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
    page.locator("#mask-results").scroll_into_view_if_needed()
    shoot(page, tmp_path, "08-default-model-masked-lm")


def test_behind_a_login_the_page_logs_in_and_works(page, tiny_folder, tmp_path):
    """With --auth the server lets through only what the login form needs and strips the API description from the
    page; the form must still draw, log in, and open an app that answers. (A second page of the module's browser:
    playwright's sync API runs one event loop at a time.)"""
    demo = app.build_demo(app.load_models([tiny_folder], device="cpu", max_tokens=64))
    url = app.serve(demo, port=app.free_port(), block=False, auth=[("student", "pass word")])
    login = page.context.new_page()
    try:
        login.set_default_timeout(TIMEOUT_MS)
        refused = []
        login.on("response", lambda r: refused.append(r.url) if r.status == 401 else None)
        login.goto(url)
        login.locator("input[type=password]").wait_for()
        assert login.evaluate("() => window.gradio_api_info") == {"named_endpoints": {}, "unnamed_endpoints": {}}
        shoot(login, tmp_path, "09-login")
        login.locator("input[type=text]").fill("student")
        login.locator("input[type=password]").fill("pass word")
        login.keyboard.press("Enter")
        login.locator("#attention-heatmap .main-svg").first.wait_for()  # logged in: the first analysis drew
        login.locator("#sentence-a textarea").fill("Logged in at last.")
        login.locator("#sentence-b textarea").fill("")
        login.locator("#analyze").click()
        wait_for_labels(login, "attention-heatmap", ["[CLS]", "logged", "in", "at", "last", ".", "[SEP]"])
        assert refused == [], refused  # the login page asked for nothing it could not have
    finally:
        login.close()
        demo.close()
