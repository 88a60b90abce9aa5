"""The Pretrain tab in Chromium: a tiny BERT started from the tab on a short text shows its snapshots as they arrive
(the slider grows, the views' picture differs between the first snapshot and a later one, the class's sentence's top
5 is on the page), and Stop keeps the model, which joins the model list. Screenshots go to tmp_path and, with
BERTVIZ_SCREENSHOTS=DIR, to DIR (app_pretrain_*.png)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from bertviz_app import app
from bertviz_app.app.lane import pretraining as lane_pretraining
from bertviz_app.app.lane.training import TrainingSettings
from pages import TIMEOUT_MS, AppPage, serving, shoot

pytestmark = [pytest.mark.browser]

STEP = "() => document.querySelector('#pt-timeline-views')?.dataset.step"


@pytest.fixture(scope="module")
def server(tiny_mlm_folder, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pretrain-text")
    animals = "cat dog bird fish horse cow sheep goat mouse frog".split()
    text = "\n\n".join("\n".join(f"the {animals[(d + k) % 10]} sat on the {animals[(d + 2 * k) % 10]} ."
                                 for k in range(3)) for d in range(30))
    (folder / "animals.txt").write_text(text + "\n", encoding="utf-8")
    with serving(app.load_models([tiny_mlm_folder], device="cpu"),
                 training=TrainingSettings(True, "", (), pretrain_files=(str(folder / "animals.txt"),))) as served:
        yield served.url


def _picture(page) -> str:
    return page.eval_on_selector("#pt-view-pane-lines canvas", "c => c.toDataURL()")


def test_a_tiny_pretraining_shows_its_snapshots_as_they_arrive_and_stops(browser, server, tmp_path, monkeypatch):
    monkeypatch.setenv("BERTVIZ_APP_CACHE", str(tmp_path / "cache"))
    v = AppPage(browser, server)
    page = v.page
    v.views_drawn()
    v.open_tab("Pretrain")
    assert "animals.txt" in page.locator("#pretrain-data input").input_value()
    page.click("#pretrain-preset input")
    page.locator("[role=option]", has_text="tiny:").click()
    page.locator("#pretrain-sentence input, #pretrain-sentence textarea").first.fill("The [MASK] sat on the mat.")
    page.click("#pretrain-start")
    # snapshots arrive: the slider over them grows, to the 13th (step 262 of the 10 minutes' log-spaced steps: the
    # first few steps barely move a random model's attention)
    page.wait_for_function("() => Number(document.querySelector('#pt-timeline-step')?.max) >= 12",
                           timeout=TIMEOUT_MS * 2)
    assert "The [MASK] sat on the mat." in page.locator("#pt-timeline").inner_text()
    page.wait_for_function("() => document.querySelector('#pretrain-top5')?.innerText.includes('Top 5 for [MASK]')")
    # each guess in quotes, punctuation too ('“the” 5.3% · “.” 5.2%'): five of them, the quotes closed
    top5 = page.locator("#pretrain-top5").inner_text().splitlines()[-1]
    assert re.fullmatch(r"“[^”]+” \d+\.\d% · " * 4 + r"“[^”]+” \d+\.\d%", top5), top5
    v.set_input("#pt-timeline-step", 0)
    page.wait_for_function(f"() => ({STEP})() === '0'")
    page.wait_for_timeout(100)  # the new views paint on the next frame
    first = _picture(page)
    last = page.eval_on_selector("#pt-timeline-step", "e => e.max")
    v.set_input("#pt-timeline-step", last)
    page.wait_for_function(f"() => Number(({STEP})()) > 0")
    page.wait_for_timeout(100)
    assert _picture(page) != first, "the views drew the same picture at the first and a later snapshot"
    shoot(page, tmp_path, "pretrain_running")
    page.click("#pretrain-stop")
    page.wait_for_function("() => document.querySelector('#pretrain-status')?.innerText.includes('joined the model "
                           "list')", timeout=TIMEOUT_MS * 2)
    status = page.locator("#pretrain-status [data-testid=markdown]").inner_text()
    assert status.startswith("Cancelled at step ") and "tiny BERT from scratch" in status, status
    shoot(page, tmp_path, "pretrain_stopped")
    assert v.errors == []


REFUSED = "() => document.querySelector('#pretrain-status [data-testid=markdown]')?.innerText.startsWith('Not started')"


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)], ids=["wide", "phone"])
def test_every_refusal_of_start_is_a_sentence_in_the_status_line(browser, server, tmp_path, monkeypatch, size):
    """Start once refused showed nothing but a hidden "Error" (gradio shows no toast for these quiet events): each
    refusal is now the status line's sentence, where the eye already is, and a good Start replaces it."""
    v = AppPage(browser, server, size=size)
    page = v.page
    v.views_drawn()
    v.open_tab("Pretrain")
    status = page.locator("#pretrain-status [data-testid=markdown]")
    page.locator("#pretrain-sentence input, #pretrain-sentence textarea").first.fill("No mask here.")
    page.click("#pretrain-start")
    page.wait_for_function(REFUSED)
    assert "Put [MASK] where the model should guess a word" in status.inner_text()
    assert page.locator("#pretrain-status .error, #pretrain-status [class*=error]").count() == 0
    assert status.is_visible()
    name = "wide" if size[0] > 400 else "phone"
    status.scroll_into_view_if_needed()
    shoot(page, tmp_path, f"pretrain_refused_{name}")
    # the default text where this Python has none: its own sentence, not the one before
    page.locator("#pretrain-sentence input, #pretrain-sentence textarea").first.fill("A [MASK].")
    page.click("#pretrain-data input")
    page.locator("[role=option]", has_text="python-help").click()
    monkeypatch.setitem(lane_pretraining.BUILTIN_TEXTS, "python-help", dataclasses.replace(
        lane_pretraining.BUILTIN_TEXTS["python-help"], present=lambda: False))
    page.click("#pretrain-start")
    page.wait_for_function("() => document.querySelector('#pretrain-status')?.innerText.includes('no help topics')")
    assert status.inner_text().startswith("Not started. This server's Python carries no help topics")
    assert v.errors == []
