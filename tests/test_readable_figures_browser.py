"""Every figure of the Embeddings, Hidden states and Beyond attention tabs readable at a phone's 390 x 844 and a
projector's 1280 x 720, in Chromium, after an Analyze (and an Explain): measured on the drawn SVG, not looked at.

A figure is readable when
- it fits its box, or it scrolls sideways inside its own box (and then a swipe scrolls it: plotly's pan is off);
- no text of it (title, tick label, colour-bar title, a word written in the plot) reaches outside the figure's
  drawing, where the SVG cuts it ("cabinet" read "abinet", titles ended mid-word);
- no two of its texts overlap by more than 3 px both ways (text boxes include a little room above and below the
  letters; rotated token labels squeezed into a phone's box overlapped by 4 to 11 px);
- each of its plot areas is at least 150 px wide and 90 px tall (the position-similarity map was 64 px square; 90:
  the word chart's strip of two rows is about 100 px tall)."""

from __future__ import annotations

import pytest

from pages import AppPage, shoot

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]

FIGURES = {"Embeddings": ["embedding-parts", "segment-embeddings", "position-similarity", "position-path"],
           "Hidden states": ["hidden-norms", "layer-similarity", "token-similarity", "hidden-projection"],
           "Beyond attention": ["attribution", "faithfulness", "head-effects"]}
PAIR = ("The keys to the cabinet [MASK] on the table.", "They were found there the next day.")

# The problems of one figure, as sentences (an empty list: readable). Text boxes are the browser's own
# (getBoundingClientRect), so rotated labels count as they are drawn.
PROBLEMS = """(id) => {
  const plot = document.querySelector(`#${id} .js-plotly-plot`);
  const svg = plot?.querySelector('.main-svg');
  if (!svg || !plot._fullLayout) return [`${id}: not drawn`];
  const s = svg.getBoundingClientRect(), out = [];
  if (s.width > plot.clientWidth + 1) {
    if (!['auto', 'scroll'].includes(getComputedStyle(plot).overflowX)) out.push(`${id}: wider than its box`);
    if (plot._fullLayout.dragmode !== false) out.push(`${id}: scrolls, but a swipe pans its axes`);
  }
  const texts = [...plot.querySelectorAll('svg text')].filter((t) => t.textContent.trim()
    && getComputedStyle(t).display !== 'none' && t.getBBox().width > 0);
  const boxes = texts.map((t) => t.getBoundingClientRect());
  texts.forEach((t, i) => {
    const r = boxes[i];
    if (r.left < s.left - 1 || r.right > s.right + 1 || r.top < s.top - 1 || r.bottom > s.bottom + 1)
      out.push(`${id}: "${t.textContent}" is cut off by the figure's edge`);
    for (let j = i + 1; j < texts.length; j++) {
      const o = boxes[j];
      const w = Math.min(r.right, o.right) - Math.max(r.left, o.left);
      const h = Math.min(r.bottom, o.bottom) - Math.max(r.top, o.top);
      if (w > 3 && h > 3) out.push(`${id}: "${t.textContent}" overlaps "${texts[j].textContent}" (${w | 0}x${h | 0})`);
    }
  });
  const layout = plot._fullLayout;
  for (const name of Object.keys(layout).filter((k) => /^[xy]axis\\d*$/.test(k))) {
    const axis = layout[name], least = name[0] === 'x' ? 150 : 90;
    if (axis.visible !== false && !axis.overlaying && axis._length < least)
      out.push(`${id}: its plot area is ${axis._length | 0} px along ${name} (at least ${least})`);
  }
  return out;
}"""


@pytest.fixture(scope="module")
def server(serve_app):
    return serve_app("minilm-l6-mlm-nsp-en").url


def problems(page, ids: list[str]) -> list[str]:
    """The tab's figures' problems once they are drawn and fitted to their box, or, if some remain, what they are.
    The page fits a figure to a phone a frame after gradio draws it (app/tabs/base.py): waited for, not slept."""
    try:
        page.wait_for_function(f"ids => ids.every(id => ({PROBLEMS})(id).length === 0)", arg=ids, timeout=20_000)
    except Exception:
        pass  # the assertion that follows says what is wrong
    return [p for i in ids for p in page.evaluate(PROBLEMS, i)]


def explain(v: AppPage, target: str | None = None) -> None:
    v.page.wait_for_function("() => document.querySelector('#explain-message')?.innerText.includes('press Explain')")
    if target:
        v.page.locator("#explain-target input").click()
        v.page.locator("[data-testid=dropdown-option]", has_text=target).click()
    v.page.click("#explain")
    v.page.wait_for_selector("#head-effects .main-svg")


@pytest.mark.parametrize("size", [(390, 844), (1280, 720)], ids=["phone", "projector"])
def test_every_figure_of_the_three_tabs_is_readable(browser, server, tmp_path, size):
    """At 1280 the pair is explained as IsNext, whose long target cut the titles ("...P(IsNext)/P(NotNex")."""
    v = AppPage(browser, server, size)
    try:
        v.views_drawn("lines")
        v.analyze(*PAIR)
        found = {}
        for tab, ids in FIGURES.items():
            v.open_tab(tab)
            if tab == "Beyond attention":
                explain(v, "IsNext" if size[0] > 700 else None)
            v.page.wait_for_function("ids => ids.every(id => document.querySelector(`#${id} .main-svg`))", arg=ids)
            found[tab] = problems(v.page, ids)
            if tab != "Beyond attention":  # one plain sentence for the tab, one for each figure, the formula folded
                intro = "#embeddings-intro" if tab == "Embeddings" else "#hidden-intro"
                assert v.page.locator(intro).inner_text().startswith(("Before its first layer", "Each layer"))
                for i in ids:
                    reading = v.page.locator(f"#{i}-reading")
                    assert reading.locator("summary").inner_text() == "How is this computed?", i
                    assert not reading.locator("details").evaluate("d => d.open"), i
            v.page.locator(f"#{ids[0]}").scroll_into_view_if_needed()
            shoot(v.page, tmp_path, f"readable-{tab.replace(' ', '-').lower()}-{size[0]}x{size[1]}", full_page=True)
        assert found == {tab: [] for tab in FIGURES}
        assert v.no_sideways_scroll() and v.errors == []
    finally:
        v.page.close()


def test_a_refusal_leaves_the_title_row_buttons_clickable(browser, server, tmp_path):
    """At 1280 x 720 an error box lay over Copy link, Presenter mode and Projector: a refusal of Beyond attention is
    said in place, and the place gradio would put an error box (its toast column) is clear of the buttons."""
    v = AppPage(browser, server, (1280, 720))
    try:
        v.views_drawn("lines")
        v.analyze("The keys to the cabinet are on the table.")
        v.open_tab("Beyond attention")
        v.page.wait_for_function("() => document.querySelector('#explain-message')?.innerText.includes('[MASK]')")
        v.page.click("#explain")
        v.page.wait_for_function("() => document.querySelector('#explain-message .bv-stale')")
        v.page.evaluate("() => window.scrollTo(0, 0)")
        hit = v.page.evaluate("""() => ['copy-link', 'presenter', 'projector-theme'].map((id) => {
          const b = document.getElementById(id).getBoundingClientRect();
          const at = document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2);
          const toasts = document.querySelector('.toast-wrap')?.getBoundingClientRect();
          const under = toasts && toasts.top < b.bottom && toasts.left < b.right && b.left < toasts.right;
          return [id, Boolean(at?.closest(`#${id}`)), Boolean(under)]; })""")
        assert hit == [[i, True, False] for i in ("copy-link", "presenter", "projector-theme")], hit
        shoot(v.page, tmp_path, "refusal-1280x720")
        assert v.errors == []
    finally:
        v.page.close()
