"""axe-core (Deque's accessibility checker) run in a page the browser tests opened: fetched from npm at first use
into the cache the corpus packages use (`corpus.sources.fetch_npm`, checked by SHA-256), never kept in the
repository, and injected into the page as a script. `serious(page)` is what the tests assert empty: the violations of
impact "serious" or "critical", less the rules docs/accessibility.md waives."""

from __future__ import annotations

import tarfile
from functools import cache

AXE = ("axe-core@4.10.2", "axe-core-4.10.2.tgz", "9ea2d2d6917da998122bdacfd3b473e31ead53f4b87146c716a12edf89158100")

# Findings waived, each a rule and the nodes it is waived for (a CSS selector they match), with why: only gradio can
# fix them (docs/accessibility.md lists them). Any other node the rule flags still fails the test.
WAIVED: dict[tuple[str, str], str] = {
    ("scrollable-region-focusable", ".virtual-table-viewport"):
        "gradio's read-only Dataframe scrolls a viewport of cells that are not focusable; gradio sets no tabindex on "
        "it and rebuilds it on every update (gradio 6.31)",
}


@cache
def axe_source() -> str:
    from bertviz_app.corpus.sources import fetch_npm

    with tarfile.open(fetch_npm(AXE)) as tar:
        return tar.extractfile("package/axe.min.js").read().decode("utf-8")


def serious(page, within: str | None = None) -> list[dict]:
    """The serious and critical violations on the page (or inside the element `within`), one dict per rule: its id,
    impact, help and the first nodes' selectors and failure summary, enough to fix it from a test's message."""
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(content=axe_source())
    return page.evaluate(
        """async ([within, waived]) => {
            const result = await axe.run(within ? document.querySelector(within) : document,
                                         {resultTypes: ['violations']});
            const kept = (v) => v.nodes.filter(n => !waived.some(([rule, selector]) => rule === v.id
                && n.target.length === 1 && document.querySelector(n.target[0])?.matches(selector)));
            return result.violations.filter(v => (v.impact === 'serious' || v.impact === 'critical')
                                                 && kept(v).length).map(v => ({
                id: v.id, impact: v.impact, help: v.help, count: kept(v).length,
                nodes: kept(v).slice(0, 4).map(n => ({target: n.target.join(' '), html: n.html.slice(0, 160),
                                                       why: n.failureSummary.slice(0, 300)}))}));
        }""", [within, [list(key) for key in WAIVED]])
