"""The Pretrain tab in Chromium: a tiny BERT started from the tab on a short text shows its snapshots as they arrive
(the slider grows, the views' picture differs between the first snapshot and a later one, the class's sentence's top
5 is on the page), and Stop keeps the model, which joins the model list. With ?lang=es the Pretrain and Fine-tune
tabs, and every status line of a pretraining, speak Spanish. Screenshots go to tmp_path and, with
BERTVIZ_SCREENSHOTS=DIR, to DIR (app_pretrain_*.png)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from bertviz_app import app, i18n
from bertviz_app.app.lane import pretraining as lane_pretraining
from bertviz_app.app.lane.training import TrainingSettings
from pages import TIMEOUT_MS, AppPage, serving, shoot
from test_i18n_browser import PANEL, TEXTS_UNDER, _untranslated

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


# --- in Spanish -----------------------------------------------------------------------------------------------------
# Every text a tab's status line shows, recorded as it changes: the lane's messages (its start, Cancel's answer) last
# a poll or two.
RECORD_STATUS = """(ids) => {
  window.bvStatuses = window.bvStatuses || [];
  for (const id of ids) {
    const box = document.getElementById(id);
    const note = () => {
      const text = box.querySelector('[data-testid=markdown]')?.innerText.trim();
      if (text && window.bvStatuses.at(-1) !== text) window.bvStatuses.push(text);
    };
    note();
    new MutationObserver(note).observe(box, { subtree: true, childList: true, characterData: true });
  }
}"""


def _choices(page, ids) -> set[str]:
    """What the data, text and model lists show: the chosen label, and every label offered."""
    shown = set()
    for elem_id in ids:
        shown.add(page.locator(f"#{elem_id} input").input_value())
        page.click(f"#{elem_id} input")
        shown |= {text.removeprefix("✓").strip() for text in page.locator("[role=option]").all_inner_texts()}
        page.keyboard.press("Escape")
        page.locator(f"#{elem_id} input").blur()  # a focused list opens again on focus, not on a click
    return {text.strip() for text in shown}


# The open tab's panel but the Pretrain tab's views and top 5: an earlier test's training left its snapshots there,
# with its sentence and the model's guesses (a Spanish training's views are read after it, below).
TAB = [PANEL[0], PANEL[1] + ", #pretrain-views, #pretrain-top5"]
NAME = re.compile(r"\S+ BERT from scratch \d\d:\d\d")  # a model trained here: a name, one for every page
# The timeline bar over a training's views, but the class's sentence and the model's guesses at it.
BAR = ["#pt-timeline", ".bv-timeline-input, .bv-timeline-prediction"]


def _training_tabs(v: AppPage, lang: str) -> set[str]:
    """The Fine-tune and Pretrain panels as a page in `lang` first shows them, their lists' labels included."""
    page = v.page
    v.views_drawn()
    v.open_tab(i18n.translate("Fine-tune", lang))
    # the page's first poll has drawn the epochs' table in its language
    page.wait_for_function("s => [...document.querySelectorAll('#finetune-epochs-table th')]"
                           ".some(th => th.innerText.trim() === s)", arg=i18n.translate("epoch", lang))
    seen = set(page.evaluate(TEXTS_UNDER, TAB)) | _choices(page, ["finetune-data"])
    v.open_tab(i18n.translate("Pretrain", lang))
    page.wait_for_selector("#pretrain-status [data-testid=markdown]")
    return seen | set(page.evaluate(TEXTS_UNDER, TAB)) | _choices(page, ["pretrain-data", "pretrain-preset"])


def _english_words() -> set[str]:
    """The words only the English of the catalogue uses: one in a Spanish status line is an English sentence."""
    def words(texts):
        return {w for text in texts for w in re.findall(r"[^\W\d_]{3,}", text.lower())}

    catalogue = i18n.catalogue("es")
    return words(catalogue) - words(catalogue.values())


def test_the_spanish_training_tabs_show_no_uncatalogued_string_while_a_pretraining_runs_and_stops(
        browser, server, tmp_path, monkeypatch):
    """Both tabs in English and in Spanish (test_i18n_browser's reading by difference); then, in Spanish, a tiny
    pretraining started, watched from both tabs and stopped: every status line either tab showed (the lane's own
    messages, written once for every page, included) and the timeline bar over its views speak Spanish, but for the
    model's name. The screenshot goes to tmp_path and, with BERTVIZ_SCREENSHOTS=DIR, to DIR (app_pretrain_es.png)."""
    monkeypatch.setenv("BERTVIZ_APP_CACHE", str(tmp_path / "cache"))
    english = AppPage(browser, f"{server}?lang=en")
    try:
        english_texts = _training_tabs(english, "en")
    finally:
        english.page.close()
    v = AppPage(browser, f"{server}?lang=es")
    page = v.page
    spanish_texts = _training_tabs(v, "es")
    names = [text for text in english_texts if NAME.fullmatch(text)]  # an earlier test's model, in its status
    left = _untranslated(english_texts, spanish_texts, {"tokens": [], "outputs": ["animals.txt", *names]})
    assert not left, "shown in English on the Spanish tabs (add each to views/js/catalog-es.mjs):\n" + "\n".join(left)
    page.evaluate(RECORD_STATUS, ["pretrain-status", "finetune-status"])
    page.click("#pretrain-preset input")
    page.locator("[role=option]", has_text="tiny:").click()
    page.click("#pretrain-start")
    page.wait_for_function("() => document.querySelector('#pretrain-top5')?.innerText.includes('[MASK]')",
                           timeout=TIMEOUT_MS * 2)
    v.open_tab(i18n.translate("Fine-tune", "es"))
    busy = i18n.translate("The training lane is busy pretraining **{name}** (the Pretrain tab); one training runs at "
                          "a time. Start yours when it is done.", "es").split(" **")[0]
    page.wait_for_function("s => document.querySelector('#finetune-status [data-testid=markdown]')?.innerText"
                           ".startsWith(s)", arg=busy)
    v.open_tab(i18n.translate("Pretrain", "es"))
    page.click("#pretrain-stop")
    joined = i18n.translate("{what} **joined the model list** after {step} steps in {seconds} s.", "es")
    page.wait_for_function("s => document.querySelector('#pretrain-status')?.innerText.includes(s)",
                           arg=joined.split("**")[1], timeout=TIMEOUT_MS * 2)
    page.evaluate("() => document.querySelector('#pretrain-status').scrollIntoView()")  # the status, then the curve
    shoot(page, tmp_path, "pretrain_es")
    statuses = page.evaluate("() => window.bvStatuses")
    bar = page.evaluate(TEXTS_UNDER, BAR)
    assert "Reproducir" in bar, bar
    assert any(s.startswith(busy) for s in statuses) and len(statuses) >= 4, statuses
    english_words = _english_words()
    # the model's name is a name ("tiny BERT from scratch 10:31"), as the model list shows it
    said = [(s, sorted(set(re.findall(r"[^\W\d_]{3,}", NAME.sub("", s).lower()))
                       & english_words)) for s in statuses + bar]
    english = [f"{s} ({', '.join(words)})" for s, words in said if words]
    assert not english, "English on the Spanish Pretrain tab (translate it where it is written):\n" + "\n".join(english)
    assert page.evaluate("() => window.BertvizViews.i18n.missing()") == []
    assert v.errors == []
