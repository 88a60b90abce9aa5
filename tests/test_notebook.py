"""Notebook outputs where they are hardest to keep: a notebook JupyterLab does not trust, and an nbconvert HTML
export opened offline. The untrusted case applies the rules of JupyterLab's sanitizer that matter here
(packages/apputils/src/sanitizer.ts: iframe, style, script and svg elements go, with their content; img with a data:
source, tables and text stay); the export case runs a real kernel through nbclient and nbconvert, then Chromium with
every network request refused."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import bertviz_app

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
REMOVED_WITH_CONTENT = {"iframe", "style", "script", "svg", "noscript", "textarea", "option"}


class _Sanitizer(HTMLParser):
    """The part of JupyterLab's sanitizer our output meets: elements it does not allow are removed with their
    content; everything else passes as written."""

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.out: list[str] = []
        self.skipping: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in REMOVED_WITH_CONTENT:
            self.skipping.append(tag)
        elif not self.skipping:
            self.out.append(self.get_starttag_text())

    def handle_endtag(self, tag):
        if self.skipping:
            if tag == self.skipping[-1]:
                self.skipping.pop()
        else:
            self.out.append(f"</{tag}>")

    def handle_data(self, data):
        if not self.skipping:
            self.out.append(data)

    def handle_entityref(self, name):
        self.handle_data(f"&{name};")

    def handle_charref(self, name):
        self.handle_data(f"&#{name};")


def untrusted(html: str) -> str:
    parser = _Sanitizer()
    parser.feed(html)
    parser.close()
    return "".join(parser.out)


@pytest.fixture(scope="module")
def run(tiny_mlm_folder):
    return bertviz_app.load(tiny_mlm_folder, device="cpu").run("The cat sat on the mat.", "It slept.")


def test_an_untrusted_notebook_still_shows_a_picture_and_how_to_get_the_views(browser, run, tmp_path):
    output = run.show()._repr_html_()
    page = browser.new_page()
    try:
        # untrusted: no frame, no style; the static picture and the way to the interactive views are what is left
        page.set_content(untrusted(output))
        assert page.locator("iframe").count() == 0
        image = page.locator("img")
        image.wait_for()
        assert image.is_visible() and page.evaluate("() => document.querySelector('img').naturalWidth") > 100
        box = image.bounding_box()
        assert box["height"] > 100, box  # not a 29 px empty box
        text = page.locator("body").inner_text()
        assert "run this cell again" in text and "Trust Notebook" in text and "[CLS]" in text
        page.screenshot(path=str(tmp_path / "untrusted.png"))
        # trusted (or exported): the interactive views, the static picture hidden
        page.set_content(output)
        page.locator("iframe").wait_for()
        assert page.locator("iframe").is_visible() and not page.locator("img").is_visible()
    finally:
        page.close()


@pytest.mark.slow  # a kernel that imports torch, 20 s
def test_plot_figures_survive_an_html_export_offline_with_plotly_js_once(browser, tiny_mlm_folder, tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="the test extra installs nbformat")
    nbclient = pytest.importorskip("nbclient", reason="nbconvert (the test extra) brings nbclient")
    nbconvert = pytest.importorskip("nbconvert", reason="the test extra installs nbconvert")
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
                                  "import bertviz_app\n"
                                  f"run = bertviz_app.load({tiny_mlm_folder!r}, device='cpu').run('The cat sat.')"),
        nbformat.v4.new_code_cell("run.plot.attention(layer=0, head=1)"),
        nbformat.v4.new_code_cell("run.plot.rollout()"),
    ])
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    html, _ = nbconvert.HTMLExporter().from_notebook_node(notebook)
    assert len(re.findall(r'class="plotly-graph-div"', html)) == 2
    # plotly.js travels once, not with every figure (its bundle starts with this banner)
    assert len(re.findall(r"\* plotly\.js v\d", html)) == 1
    path = tmp_path / "export.html"
    path.write_text(html, encoding="utf-8")
    page = browser.new_page()
    try:
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else route.abort())
        page.goto(path.as_uri())
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2",
                               timeout=60_000)
        assert page.locator(".js-plotly-plot").count() == 2
        page.screenshot(path=str(tmp_path / "export.png"), full_page=True)
    finally:
        page.close()
