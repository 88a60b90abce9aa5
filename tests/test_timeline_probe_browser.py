"""The Timeline tab's probe figure in Chromium: a pretraining's timeline with a probe set (a tiny 12-step run, its
probe set a small tagged grammar) shows what each layer knew by step, one line per layer, with its one-sentence
reading, at 1280x720 and on a phone (390x844) without sideways scrolling; a timeline without a probe set (conftest's
fine-tuned classifier) shows none. Screenshots go to tmp_path and, with BERTVIZ_SCREENSHOTS=DIR, to DIR
(app_timeline_probe_*.png)."""

from __future__ import annotations

import pytest

import bertviz_app
from pages import AppPage, serving, shoot
from test_timeline import STEPS, probed_run

pytestmark = [pytest.mark.browser]

LEGEND = "() => [...document.querySelectorAll('#timeline-probe .legendtext')].map(e => e.textContent)"


@pytest.fixture(scope="module")
def server(tmp_path_factory, finetuned_classifier):
    run = probed_run(tmp_path_factory.mktemp("probed"))
    explorers = {"pretrained": bertviz_app.load(run / f"step-{STEPS:07d}", device="cpu", name="pretrained"),
                 "trained": bertviz_app.load(finetuned_classifier, device="cpu", name="trained")}
    with serving(explorers) as served:
        yield served.url


def _probe_figure(v: AppPage) -> list[str]:
    page = v.page
    v.open_tab("Timeline")
    page.wait_for_function("() => document.querySelector('#timeline-status')?.innerText.includes('snapshots')")
    page.wait_for_function(f"() => ({LEGEND})().includes('always the commonest class')")
    # the first and last snapshots come first, then all 6: a point per layer per snapshot
    page.wait_for_function("() => document.querySelectorAll('#timeline-probe .scatterlayer .point').length === 18")
    page.locator("#timeline-probe").scroll_into_view_if_needed()
    return page.evaluate(LEGEND)


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["wide", "phone"])
def test_the_timeline_tab_shows_what_each_layer_knew_by_step(browser, server, tmp_path, size):
    v = AppPage(browser, server, size=size)
    v.views_drawn()
    legend = _probe_figure(v)
    assert legend == ["embeddings (layer 0)", "layer 1", "layer 2", "always the commonest class"]
    reading = v.page.locator("#timeline-probe-reading").inner_text()
    assert reading.startswith("Each line is one layer: how often a linear probe reads a held-out word's part of "
                              "speech")
    title = v.page.locator("#timeline-probe .gtitle").text_content()
    # wrapped into lines for a phone (the lines' breaks are not in the text), the probe set named by its file's name,
    # never by the server's folders
    assert title.startswith("What each layer knew of part") and "grammar.conll" in title and "/" not in title
    points = v.page.evaluate("() => document.querySelectorAll('#timeline-probe .scatterlayer .point').length")
    assert points == 3 * 6  # a point per layer per snapshot (6 snapshots)
    shoot(v.page, tmp_path, f"timeline_probe_{'wide' if size[0] > 400 else 'phone'}")
    assert v.no_sideways_scroll()

    # a timeline without a probe set (a fine-tuning's) shows no probe figure
    v.page.locator("#model input").click()
    v.page.get_by_role("option", name="trained", exact=True).click()
    v.page.wait_for_function("() => document.querySelector('#timeline-status')?.innerText.includes('trained')")
    v.page.wait_for_function("() => !document.querySelector('#timeline-probe-box')?.checkVisibility()")
    assert v.errors == []


def test_the_timeline_tab_speaks_the_pages_language(browser, server, tmp_path):
    """?lang=es: the status, the probe figure's legend, title and axis, and its reading in Spanish; the probe set's
    file name as it is."""
    v = AppPage(browser, server + "?lang=es")
    v.views_drawn()
    v.open_tab("Evolución")
    page = v.page
    page.wait_for_function("() => document.querySelector('#timeline-status')?.innerText.includes('instantáneas')")
    page.wait_for_function(f"() => ({LEGEND})().includes('siempre la clase más común')")
    page.wait_for_function("() => document.querySelectorAll('#timeline-probe .scatterlayer .point').length === 18")
    page.locator("#timeline-probe").scroll_into_view_if_needed()
    assert page.evaluate(LEGEND) == ["embeddings (capa 0)", "capa 1", "capa 2", "siempre la clase más común"]
    assert page.locator("#timeline-probe-reading").inner_text().startswith("Cada línea es una capa")
    title = page.locator("#timeline-probe .gtitle").text_content()
    assert title.startswith("Lo que sabía cada capa de la") and "grammar.conll" in title
    assert page.locator("#timeline-probe .ytitle").text_content() == "exactitud en validación"
    shoot(page, tmp_path, "timeline_probe_es")
    assert v.errors == []
