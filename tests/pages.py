"""The app's page in Chromium as the browser tests drive it (test_browser.py, test_family_browser.py,
test_finetune_browser.py): `AppPage`, one visitor's tab, and the helpers around it."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from pathlib import Path

TIMEOUT_MS = 60_000  # two shared cores: the first page load builds the page and a payload of every head


SHOWN_KEY = "() => document.querySelector('#attention-view')?.dataset.key || ''"  # the analysis on screen


class AppPage:
    """One visitor's tab: what it asked the server for, and what it logged."""

    def __init__(self, browser, url: str, size=(1280, 720)):
        self.page = browser.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.page.set_viewport_size({"width": size[0], "height": size[1]})
        self.origin = url.rstrip("/")
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url) if r.url.startswith(self.origin) else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url)

    @contextlib.contextmanager
    def on_a_phone(self):
        """The page at 390 x 844 for the `with` block, then back at 1280 x 720 once the tab bar shows again the tabs
        it showed before (gradio moves tabs out of its "More tabs" menu a moment after a resize: a tab looked for at
        once could be in neither place)."""
        shown_tabs = "() => document.querySelectorAll('#tabs [role=tab]').length"
        before = self.page.evaluate(shown_tabs)
        self.page.set_viewport_size({"width": 390, "height": 844})
        try:
            yield self.page
        finally:
            self.page.set_viewport_size({"width": 1280, "height": 720})
            self.page.wait_for_function(f"n => ({shown_tabs})() >= n", arg=before)

    def views_drawn(self, view: str = "lines", contains: str = "") -> str:
        # One check that also gives the value: a new payload remounts the view, so a second look may find none.
        return self.page.wait_for_function(
            "([v, s]) => { const d = document.querySelector(`#view-pane-${v} .bv-view`)?.dataset.drawn;"
            " return d !== undefined && d.includes(s) && d; }", arg=[view, contains]).json_value()

    def settle(self, quiet_ms: int = 1500) -> None:
        """Wait until the page has asked the server nothing for `quiet_ms`: a new input's chained steps (the other
        tabs' views, one queued request each) are done."""
        seen, quiet = -1, 0
        while quiet < quiet_ms:
            self.page.wait_for_timeout(250)
            quiet = quiet + 250 if len(self.requests) == seen else 0
            seen = len(self.requests)

    def tokens(self) -> list[str]:
        """The analyzed tokens as the views list them (their token choices, as text)."""
        return self.page.eval_on_selector_all("#view-token option", "os => os.slice(1).map(o => o.textContent"
                                                                    ".split(': ').slice(1).join(': '))")

    def wait_for_tokens(self, tokens: list[str]) -> list[str]:
        """The views' token list once it is `tokens`: a new payload is decoded and listed a moment after the
        analysis answers, and until then the list (and the drawn mark) is the previous input's."""
        expected = [f"{i}: {t}" for i, t in enumerate(tokens)]
        try:
            self.page.wait_for_function("want => { const got = [...document.querySelectorAll('#view-token option')]"
                                        ".slice(1).map(o => o.textContent); return JSON.stringify(got) === "
                                        "JSON.stringify(want); }", arg=expected, timeout=TIMEOUT_MS)
        except Exception:
            pass  # the assertion that follows shows what the page lists instead
        return self.tokens()

    def pick_model(self, name: str) -> None:
        """`name` from the model list, once the analysis the switch starts (of the input on the page) is on screen:
        an `analyze` of that same input begun before it arrived could read its key as the old one and wait forever
        for a change (it did, on a loaded machine)."""
        before = self.page.evaluate(SHOWN_KEY)
        self.page.locator("#model input").click()
        self.page.get_by_role("option", name=name, exact=True).click()
        self.page.wait_for_function(f"old => {{ const k = ({SHOWN_KEY})(); return k && k !== old; }}", arg=before)

    def analyze(self, a: str, b: str = "") -> None:
        before = self.page.evaluate(SHOWN_KEY)
        self.page.locator("#sentence-a textarea").fill(a)
        self.page.locator("#sentence-b textarea").fill(b)
        self.page.click("#analyze")
        self.page.wait_for_function("old => { const v = document.querySelector('#attention-view');"
                                    " return v && v.dataset.key && v.dataset.key !== old; }", arg=before)

    def set_input(self, selector: str, value) -> None:
        self.page.eval_on_selector(selector, "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', "
                                             "{bubbles: true})); }", str(value))

    def open_tab(self, name: str) -> None:
        """A tab of the lower tab bar, from the bar or, on a narrow screen, from its "More tabs" menu."""
        tab = self.page.get_by_role("tab", name=name, exact=True)
        if not tab.count():
            self.page.click("#tabs [aria-label='More tabs']")
            tab = self.page.locator("#tabs .overflow-dropdown button", has_text=name)
        tab.click()

    def click_tile(self, layer: int, head: int) -> None:
        """Scroll the overview so that a head's tile is in sight, then click its middle."""
        scroller = "#view-pane-overview .bv-scroller"
        g = self.page.eval_on_selector(scroller, "e => JSON.parse(e.dataset.geometry)")
        x = g["left"] + head * (g["tile"] + g["gap"]) + g["tile"] / 2
        y = g["top"] + layer * g["rowPitch"] + g["tile"] / 2
        scroll = self.page.eval_on_selector(scroller, "(e, [x, y]) => { e.scrollTo(Math.max(0, x - e.clientWidth / 2),"
                                            " Math.max(0, y - e.clientHeight / 2)); return [e.scrollLeft, e.scrollTop];"
                                            " }", [x, y])
        self.page.wait_for_timeout(50)
        box = self.page.locator(scroller).bounding_box()
        self.page.mouse.click(box["x"] + x - scroll[0], box["y"] + y - scroll[1])

    def no_sideways_scroll(self) -> bool:
        return self.page.evaluate("() => document.documentElement.scrollWidth <= "
                                  "document.documentElement.clientWidth + 1")


def shoot(page, tmp_path: Path, name: str, full_page: bool = False) -> None:
    path = tmp_path / f"app_{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    target = os.environ.get("BERTVIZ_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


def wait_for_rows(page, elem_id: str, n: int) -> None:
    """A gradio table's row count, header row included in aria-rowcount (its body is virtualized)."""
    page.wait_for_function(f"() => document.querySelector('#{elem_id} [role=grid]')"
                           f"?.getAttribute('aria-rowcount') === '{n + 1}'", timeout=TIMEOUT_MS)


@dataclasses.dataclass(frozen=True)
class Served:
    """An app served on 127.0.0.1 for a test: its address, its gradio Blocks and the models it offers."""

    url: str
    demo: object
    explorers: object


@contextlib.contextmanager
def serving(explorers, *, auth=None, **options):
    """The app of `explorers` (one Explorer, or name -> Explorer), built with `app.build_demo`'s `options`, on a free
    port for the `with` block. conftest's `serve_app` shares one per configuration; this is for a module whose tests
    change what the server holds (a training, a poll, a patched limit) and so must not share it."""
    from bertviz_app import app

    demo = app.build_demo(explorers, **options)
    try:
        yield Served(app.serve(demo, port=app.free_port(), block=False, auth=auth), demo, explorers)
    finally:
        demo.close()
