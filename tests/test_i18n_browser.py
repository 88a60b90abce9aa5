"""The Spanish interface in Chromium: the app and the static page with ?lang=es show no interface string that the
catalogue (views/js/catalog-es.mjs) lacks, gradio's labels follow the page's language, the tokens stay the model's,
a shipped lesson plays its Spanish caption, and the first screen at 1280 x 720 still holds the input and the picture.

An interface string left in English is found by difference: the same page in English and in Spanish, every text
node and title, aria-label, placeholder and alt attribute collected in both; what the Spanish page still shows
exactly as the English one does is untranslated, unless it is the model's (tokens), the visitor's (the sentences),
a number, a catalogue entry whose Spanish is the same word, or gradio's own (GRADIO_OWN). The tabs a class reaches
first (Masked LM, Embeddings, Hidden states, Beyond attention after Explain) are read the same way, their figures'
titles, axes and legends and the readings the server writes per request included, and so are Next sentence, Compare
(used once), Model and Task after a pair is analyzed; a refused empty sentence is read in both languages. The
Fine-tune, Pretrain, Corpus and Timeline panels are read elsewhere (or not: docs/i18n.md).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from bertviz_app import i18n, lessons

from pages import TIMEOUT_MS, AppPage
from static_pages import Opened, static_host

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]

# Text of gradio's own front end that gradio 6.31 does not translate (its "More tabs" button, a slider's reset and
# the screen reader names of its logo and footer): only gradio can.
GRADIO_OWN = {"More tabs", "Gradio footer navigation", "logo", "Reset to default value", "Empty value",
              "File upload", "Stop Recording", "Copy table data", "Fullscreen", "Open cell menu", "Table actions",
              # the pill gradio puts on an output whose event failed (a tab's, under load): "Error" in Spanish too
              "Error",
              # what gradio's status tracker announces as an event ends, a key its own catalogue lacks (6.31), in any
              # language while the announcement lasts
              "common.complete", "common.error"}

# Every text node and named attribute under a root (the page, or the open tab's panel: its first visible match),
# except what the skip selector matches.
TEXTS_UNDER = """([rootSelector, skipSelector]) => {
  const root = rootSelector ? [...document.querySelectorAll(rootSelector)].find((p) => p.offsetParent) : document.body;
  const skip = (el) => !el || el.closest(skipSelector);
  const out = new Set();
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.nodeValue.trim().replace(/\\s+/g, ' ');
    if (text && !skip(node.parentElement)) out.add(text);
  }
  for (const el of root.querySelectorAll('[title], [aria-label], [placeholder], [alt]')) {
    if (skip(el)) continue;
    for (const name of ['title', 'aria-label', 'placeholder', 'alt']) {
      const value = (el.getAttribute(name) || '').trim().replace(/\\s+/g, ' ');
      if (value) out.add(value);
    }
  }
  return [...out];
}"""
# The page except scripts, the tabs' panels and plotly's drawings.
PAGE = [None, "script, style, #tabs [role=tabpanel], .js-plotly-plot"]

LESSON = "05-heads-that-follow-grammar"


@pytest.fixture(scope="module")
def server(serve_app):
    return serve_app("minilm-l6-mlm-nsp-en").url


def _drawn(page) -> None:
    page.wait_for_function("() => document.querySelector('#view-pane-lines .bv-view')?.dataset.drawn",
                           timeout=TIMEOUT_MS)


def _app_texts(browser, url: str, lang: str) -> tuple[set[str], dict]:
    """What the app's page shows in `lang`: the first screen, each view, the table, the keys, the lesson panel and
    a shipped lesson's step with its question; and what the page knows besides (tokens, strings it missed)."""
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(f"{url}?lang={lang}")
        _drawn(page)
        page.wait_for_function("() => /\\d/.test(document.querySelector('#notice')?.textContent || '')")
        seen = set(page.evaluate(TEXTS_UNDER, PAGE))
        for view in ("matrix", "overview", "qk", "lines"):
            page.click(f"#view-tab-{view}")
            page.wait_for_function("v => !document.querySelector(`#view-pane-${v}`).hidden", arg=view)
            if view == "qk":
                page.wait_for_selector("#view-pane-qk .bv-stats strong")
            seen |= set(page.evaluate(TEXTS_UNDER, PAGE))
        page.click("#view-table-toggle")
        page.wait_for_selector("#view-table table")
        page.click("#keys")
        page.wait_for_selector("#keys-help")
        page.click("#lesson")
        page.wait_for_selector("#lesson-panel:not([hidden]) #lesson-shelf")
        seen |= set(page.evaluate(TEXTS_UNDER, PAGE))
        facts = page.evaluate("""() => ({ lang: document.documentElement.lang,
            tokens: [...document.querySelectorAll('#view-token option')].slice(1).map(o => o.textContent),
            missing: window.BertvizViews.i18n.missing(),
            label: document.querySelector('#sentence-a label, #sentence-a [data-testid=block-info]')?.textContent
              .trim(),
            notice: document.querySelector('#notice').textContent.trim(),
            description: document.querySelector('#view-description').textContent })""")
        page.goto(f"{url}?lang={lang}&lesson={LESSON}&step=1")
        page.wait_for_selector("#lesson-bar .bv-question-ask")
        page.wait_for_function("() => !document.querySelector('#lesson-where').textContent.endsWith('…')")
        seen |= set(page.evaluate(TEXTS_UNDER, PAGE))
        facts["caption"] = page.text_content("#lesson-caption")
        facts["ask"] = page.text_content("#lesson-bar .bv-question-ask")
        facts["choices"] = page.eval_on_selector_all("#lesson-bar [role=group] button",
                                                     "bs => bs.map(b => b.textContent)")
        facts["tokens"] += page.eval_on_selector_all("#view-token option", "os => os.slice(1).map(o => o.textContent)")
        facts["missing"] += [m for m in page.evaluate("() => window.BertvizViews.i18n.missing()")
                             if m not in facts["missing"]]
        return seen, facts
    finally:
        page.close()


def _untranslated(english: set[str], spanish: set[str], facts: dict) -> list[str]:
    """The strings both pages show alike that are interface strings."""
    catalogue = i18n.catalogue("es")
    same_word = {k for k, v in catalogue.items() if k == v}
    tokens = {t.split(": ", 1)[-1] for t in facts["tokens"]} | set(facts.get("choices", []))
    # words that are the model's (a token, "##s" read as "s") or that Spanish shares ("token"), and notation
    shared = {t.lower().lstrip("#") for t in tokens} | {w.lower() for w in same_word if re.fullmatch(r"[A-Za-z]+", w)}
    known = same_word | GRADIO_OWN | tokens | set(facts.get("outputs", []))

    def ours(text: str) -> bool:
        if not re.search(r"[A-Za-z]{2}", text) or text in known:
            return False
        if re.fullmatch(r"\d+: .+", text) and text.split(": ", 1)[1] in tokens:  # a token's choice: "3: sat"
            return False
        words = {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 1}  # "cos(A, B)": A and B name vectors
        return not words <= shared | {"cls", "sep", "mask", "unk", "pad", "cos"}  # sentences, tokens alone

    return sorted(text for text in english & spanish if ours(text))


def test_the_spanish_app_shows_no_uncatalogued_interface_string(browser, server):
    english, en = _app_texts(browser, server, "en")
    spanish, es = _app_texts(browser, server, "es")
    assert en["lang"].startswith("en") and es["lang"] == "es"  # gradio's front end moved to ?lang= too
    assert es["missing"] == [], "asked for by the views but not in views/js/catalog-es.mjs"
    left = _untranslated(english, spanish, es)
    assert not left, "shown in English on the Spanish page (add each to views/js/catalog-es.mjs):\n" + "\n".join(left)
    # gradio's labels, the server's notice and the views' own sentence, in Spanish; the tokens are the model's
    assert es["label"] == "Frase A" and en["label"] == "Sentence A"
    assert re.fullmatch(r"\d+ tokens · pasada del modelo \d+ ms en cpu", es["notice"]), es["notice"]
    assert es["description"].startswith("Capa ") and en["description"].startswith("Layer ")
    assert es["tokens"] == en["tokens"] and "0: [CLS]" in es["tokens"]
    # the shipped lesson plays its Spanish caption and question; the choices are tokens
    step = lessons.shipped_lessons()[LESSON]["steps"][0]
    assert es["caption"] == step["translations"]["es"]["caption"] and en["caption"] == step["caption"]
    assert es["ask"] == step["translations"]["es"]["ask"]
    choices = step["question"]["choices"]  # the buttons after them (Reveal, Poll the class) are ours
    assert es["choices"][:len(choices)] == en["choices"][:len(choices)] == choices


def test_the_spanish_first_screen_still_holds_the_input_and_the_picture(browser, server):
    """test_browser's first-screen check, in Spanish: the longer words must not wrap the title row and push the
    picture down; on a phone nothing runs off the side."""
    heights = {}
    for lang in ("en", "es"):
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        try:
            page.set_viewport_size({"width": 1280, "height": 720})
            page.goto(f"{server}?lang={lang}")
            _drawn(page)
            page.wait_for_function("() => document.querySelector('#copy-link')?.textContent.trim() === arguments[0]"
                                   .replace("arguments[0]", repr(i18n.translate("Copy link", lang))))
            for selector in ("#sentence-a", "#analyze", "#view-layer", "#view-head", "#view-pane-lines .bv-surface"):
                box = page.locator(selector).first.bounding_box()
                assert box and box["y"] + 20 < 720, (lang, selector)
            heights[lang] = page.locator("#title-row").bounding_box()["height"]
            page.set_viewport_size({"width": 390, "height": 844})
            page.wait_for_function("() => window.innerWidth === 390")
            assert page.evaluate("() => document.scrollingElement.scrollWidth") <= 390, lang
        finally:
            page.close()
    assert heights["es"] <= heights["en"] + 1, heights  # the title row stays one line at 1280


# The open tab's panel: plotly's drawings included (titles, axes, legends, tick labels), except the examples a model is
# shown with (English sentences, like what a visitor types) and plotly's toolbar (plotly's own words, docs/i18n.md).
# Code (a configuration's keys and values, a command) is never translated.
PANEL = ["#tabs [role=tabpanel]", "script, style, code, .modebar, .gallery, #mask-example-notes"]
MASKED = "The keys to the cabinet [MASK] on the table."
# each tab a class reaches first, and the figures it shows once it has computed
PANELS = {"Masked LM": ["mask-bars", "logit-lens", "corruption"],
          "Embeddings": ["embedding-parts", "segment-embeddings", "position-similarity", "position-path"],
          "Hidden states": ["hidden-norms", "layer-similarity", "token-similarity", "hidden-projection"],
          "Beyond attention": ["attribution", "faithfulness", "head-effects"]}


# the tabs read after a pair is analyzed (Next sentence computed, Compare used once with one word changed), and what
# shows that each has answered
PAIR = ("The keys to the cabinet are on the table.", "Somebody left them there this morning.")
SECOND_A = "The keys to the cabinet are on the desk."
MORE_PANELS = {
    "Next sentence": "() => document.querySelector('#next-sentence-label')?.textContent.includes('IsNext')",
    "Compare": "() => ['compare-change', 'compare-layers'].every(id => document.querySelector(`#${id} .main-svg`))",
    "Model": "() => document.querySelector('#model-info table')",
    "Task": "() => document.querySelector('#task')?.textContent.trim()"}


def _panel_texts(browser, url: str, lang: str, size=(1280, 720), shots: dict | None = None) -> tuple[set[str], str]:
    """What the panels of PANELS show in `lang` after MASKED is analyzed (and, in Beyond attention, explained), and
    those of MORE_PANELS after PAIR is; and the notice an empty sentence A gets first. `shots`: screenshot paths by
    name ("refusal", "Embeddings", "Next sentence")."""
    shots = shots or {}
    v = AppPage(browser, f"{url}?lang={lang}", size)
    try:
        v.views_drawn("lines")
        v.page.locator("#sentence-a textarea").fill("")
        v.page.click("#analyze")
        refusal = v.page.wait_for_selector("#notice .bv-stale").inner_text()
        if "refusal" in shots:
            v.page.screenshot(path=shots["refusal"])
        v.analyze(MASKED)
        seen = set()
        for tab, figures in PANELS.items():
            v.open_tab(i18n.translate(tab, lang))
            if tab == "Beyond attention":
                ready = i18n.translate("Choose the prediction to explain and press **Explain**.", lang)
                v.page.wait_for_function("s => document.querySelector('#explain-message')?.innerText.includes(s)",
                                         arg=ready.replace("**", ""))
                v.page.click("#explain")
            v.page.wait_for_function("ids => ids.every(id => document.querySelector(`#${id} .main-svg`))",
                                     arg=figures)
            v.settle()
            seen |= set(v.page.evaluate(TEXTS_UNDER, PANEL))
            if tab in shots:
                v.page.evaluate("() => document.querySelector('#embedding-parts-reading').scrollIntoView()")
                v.page.screenshot(path=shots[tab])
        v.analyze(*PAIR)
        for tab, ready in MORE_PANELS.items():
            v.open_tab(i18n.translate(tab, lang))
            if tab == "Compare":
                v.page.locator("#compare-a textarea").fill(SECOND_A)
                v.page.click("#compare")
            v.page.wait_for_function(ready)
            v.settle()
            seen |= set(v.page.evaluate(TEXTS_UNDER, PANEL))
            if tab in shots:
                v.page.evaluate("() => document.querySelector('#tabs').scrollIntoView()")
                v.page.screenshot(path=shots[tab])
        assert v.errors == []
        return seen, refusal
    finally:
        v.page.close()


def _model_outputs(explorer) -> set[str]:
    """The tokens the model puts in the panels besides the input's: its guesses at the [MASK] (the tab's 5, the logit
    lens' 3 a layer) and the random tokens of the pretraining example (seed 0)."""
    guesses = {t for best in explorer.fill_mask(MASKED, top_k=5) for t, _ in best}
    guesses |= {t for layer in explorer.logit_lens(MASKED, top_k=3).layers for t, _ in layer}
    return guesses | set(explorer.corrupt_example(explorer.run(MASKED).encoding, seed=0).input_tokens)


@pytest.mark.slow  # 40 s and more: ten tabs computed and read twice
def test_the_spanish_tabs_show_their_figures_and_readings_in_spanish(browser, server, default_explorer, tmp_path):
    """The server writes these panels per request (plotly titles and axes, the tables' headers, the sentences under
    the figures, a refused input's sentence): in the page's language, the tokens untouched. The screenshots go to
    tmp_path and, with BERTVIZ_SCREENSHOTS=DIR, to DIR: the Embeddings tab (i18n-es-tabs-1280x720.png), the refusal
    of an empty sentence A (app_refusal_es.png) and the Next sentence tab (app_nextsentence_es.png)."""
    english, refused_en = _panel_texts(browser, server, "en")
    shots = {"Embeddings": tmp_path / "i18n-es-tabs-1280x720.png", "refusal": tmp_path / "app_refusal_es.png",
             "Next sentence": tmp_path / "app_nextsentence_es.png"}
    spanish, refused_es = _panel_texts(browser, server, "es", shots={k: str(p) for k, p in shots.items()})
    if os.environ.get("BERTVIZ_SCREENSHOTS"):
        for shot in shots.values():
            shutil.copy(shot, Path(os.environ["BERTVIZ_SCREENSHOTS"]) / shot.name)
    # the library's refusal (inputs.check_text), in the visitor's language
    assert refused_en.startswith("Sentence A is empty: type a sentence (sentence B is optional).")
    assert refused_es.startswith("La frase A está vacía: escribe una frase (la frase B es opcional).")
    explorer = default_explorer
    tokens = [*explorer.run(MASKED).labels, *explorer.run(*PAIR).labels, *explorer.run(SECOND_A, PAIR[1]).labels]
    # the next-sentence head's own names for its classes (not translated: next_sentence.py)
    facts = {"tokens": [*tokens, *_model_outputs(explorer)], "outputs": [explorer.name, explorer.family.name, "IsNext",
                                                                    "NotNext"]}
    left = _untranslated(english, spanish, facts)
    assert not left, "shown in English on the Spanish page (translate each where the server writes it):\n" + \
        "\n".join(left)
    assert i18n.translate("How long each token's vector is, layer by layer", "es") in spanish  # a figure's title
    assert "Explain" not in spanish and i18n.translate("Explain", "es") in spanish


def _static_texts(browser, url: str, lang: str) -> tuple[set[str], dict]:
    opened = Opened(browser, f"{url}?lang={lang}", url)
    try:
        page = opened.page
        page.wait_for_function("() => document.querySelector('#views .bv-view')?.dataset.drawn")
        page.click("#fill")
        page.wait_for_selector("#fill-out li")
        page.click("#nsp")
        page.wait_for_function("() => document.querySelector('#nsp-out').textContent")
        page.click("#lesson-open")
        page.wait_for_selector("#lesson-shelf")
        seen = set(page.evaluate(TEXTS_UNDER, PAGE))
        facts = page.evaluate("""() => ({ lang: document.documentElement.lang, title: document.title,
            tokens: [...document.querySelectorAll('#view-token option')].slice(1).map(o => o.textContent),
            missing: window.BertvizViews.i18n.missing(), note: document.querySelector('#load-note').textContent,
            // the model's: its name, and its fill-mask answers
            outputs: [document.querySelector('h1 small').textContent,
                      ...[...document.querySelectorAll('#fill-out li')].map(li => li.textContent)] })""")
        return seen, facts
    finally:
        opened.close()


def test_the_spanish_static_page_shows_no_uncatalogued_interface_string(browser, default_site):
    with static_host(default_site) as url:
        english, en = _static_texts(browser, url, "en")
        spanish, es = _static_texts(browser, url, "es")
    assert es["lang"] == "es" and es["title"].startswith("La atención de BERT, en tu navegador")
    assert " funciona en esta página " in es["note"]
    assert es["missing"] == []
    assert es["tokens"] == en["tokens"]
    left = _untranslated(english, spanish, es)
    assert not left, "shown in English on the Spanish page (add each to views/js/catalog-es.mjs):\n" + "\n".join(left)
