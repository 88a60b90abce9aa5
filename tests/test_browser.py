"""The app in a real browser: Debian's headless Chromium driven by playwright (no `playwright install`).

Screenshots go to the test's tmp_path and, when BERTVIZ_SCREENSHOTS=DIR is set, to DIR as well."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from bertviz_app import app
from bertviz_app.explorer import load

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 60_000  # two shared cores: the first page load imports plotly.js and draws a dozen figures


@pytest.fixture(scope="module")
def server():
    explorer = load(device="cpu", max_tokens=128)
    demo = app.build_demo({explorer.name: explorer})
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
    path = tmp_path / f"{name}.png"
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


def test_fill_mask_explains_the_missing_head(page, tmp_path):
    page.get_by_role("tab", name="Masked LM").click()
    page.locator("#mask-text textarea").fill("Penguins cannot [mask].")
    page.locator("#mask-predict").click()
    results = page.locator("#mask-results")
    results.get_by_text("has no masked-LM head").wait_for()
    shoot(page, tmp_path, "05-masked-lm")
    page.get_by_role("tab", name="Attention").click()
    assert "penguins" in axis_labels(page, "attention-heatmap")  # the server still answers the page
