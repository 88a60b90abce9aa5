"""What a tab is: the `Tab` protocol every tab of the page follows, the `TabPage` it is built with, and the gate that
lets only the open tab compute after an analysis.

Adding a tab is one new module in this folder (a class that follows `Tab`) and one line in `TABS`
(tabs/__init__.py); layout.build_demo builds, wires and gates every tab of that tuple alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import gradio as gr

from ..common import Page
from ..lane.training import TrainingLane, TrainingSettings
from ..views_host import ViewsHost


class Gate:
    """What a tab's `after_analysis` chains its steps to: `gate.then(fn, inputs, outputs, **kwargs)` behaves as a
    gradio event's `.then`, but its steps run only where the page needs them (after a js-only step that throws
    otherwise, see `tab_step_js`). The js step is made with the first step chained to it, so a tab with nothing to
    compute after an analysis (Tokens, Fine-tune) costs the page no step at all."""

    def __init__(self, step: Callable[[], Any]):
        self._make, self._step = step, None

    def then(self, *args, **kwargs):
        if self._step is None:
            self._step = self._make()
        return self._step.success(*args, **kwargs)


@runtime_checkable
class Tab(Protocol):
    """One tab of the page, in four steps that layout.build_demo takes for every tab of `TABS`, in the tuple's order:

    1. build: `TabClass(page)`, called inside the tab's `gr.Tab(title, id=id)`, makes the tab's components (and
       may offer the page a model list or a part that the analysis fills, see `TabPage`);
    2. `wire()`: once every tab is built, the events of the tab's own controls. Every event is declared with
       `page.api(name, public)` (or `common.api` for one that reads no Run), which names its endpoint and puts it in
       the model lane;
    3. `after_analysis(event, public)`: what the tab computes for a new input, chained to `event` (a `Gate`) with
       `event.then(...)`. The page calls it once per way an input arrives (Analyze, a permalink, an example, a
       held-out row) and once for the tab being opened; the gate runs the steps only while the tab is open, or when
       it is opened showing an earlier input. `public` is True for the one call whose steps name the public
       endpoints (`page.api(name, public)`); the others are private uses of the same handlers. A tab with nothing
       to compute chains nothing;
    4. optional `on_load(demo)`: events of the page's load, after the first analysis is chained.

    `id` names the tab in the page (`gr.Tab(id=...)`: the lazy gate, permalinks' `tab`, tests), `title` is its
    label in the tab bar. The page opens on the first tab of the tuple.
    """

    id: ClassVar[str]
    title: ClassVar[str]

    def __init__(self, page: TabPage) -> None: ...

    def wire(self) -> None: ...

    def after_analysis(self, event: Gate, public: bool) -> None: ...


@dataclass
class TabPage(Page):
    """What a tab is built with: the page's shared parts (`common.Page`: the models, the visitor's session, the
    input's model picker, the event lanes) and what the page around the tabs offers them. build_demo fills it; a
    tab reads it, and adds to the two lists while it is built."""

    host: ViewsHost | None = None  # the attention views' host: a tab may place more views (Compare's two)
    masked_examples: Sequence[str] = ()  # the examples of the Masked LM tab
    training: TrainingSettings = field(default_factory=TrainingSettings)  # whether the app may train, on what
    # The page's one training lane, which the Fine-tune and Pretrain tabs share: one training at a time
    training_lane: TrainingLane = field(default_factory=TrainingLane)
    sentences: tuple[gr.Textbox, gr.Textbox] | None = None  # the input's boxes (sentence A, sentence B)
    # Every model list of the page, the input's first: a tab with one of its own adds it while it is built; a model
    # fine-tuned in the app joins them all.
    model_pickers: list[gr.Dropdown] = field(default_factory=list)
    # Parts the analyze event itself fills, with what from the Run: (component, value of a Run). For what is cheap
    # and always wanted (the Tokens tab's table); everything else waits for `after_analysis` and the gate.
    filled_by_analysis: list[tuple[gr.components.Component, Callable[[Any], Any]]] = field(default_factory=list)
    tabs: dict[str, Tab] = field(default_factory=dict)  # the tabs built so far, by id (all of them by `wire`)
    items: dict[str, gr.Tab] = field(default_factory=dict)  # each tab's own gr.Tab, by id
    tab_set: gr.Tabs | None = None  # the tab bar, for an event that opens a tab (gr.Tabs(selected=id))
    # Chains an analysis of the input boxes after an event that filled them (a held-out row clicked), as Analyze.
    analyze_after: Callable[[Any], None] | None = None
    # The operator's corpora (`serve --corpus`): name -> corpus.browser.CorpusViews, and a sentence for each folder
    # that could not be opened. A tab class may say it is not shown on this page (`shown(page)` False: the Corpus
    # tab without --corpus).
    corpora: Mapping[str, Any] = field(default_factory=dict)
    corpus_problems: Sequence[str] = ()

    def __post_init__(self):
        if not self.model_pickers:
            self.model_pickers = [self.model]


def check_tabs(kinds: Sequence[type]) -> None:
    """Raise ValueError unless `kinds` is a tuple of tab classes that follow `Tab`, with ids of their own."""
    ids = [getattr(kind, "id", None) for kind in kinds]
    for kind in kinds:
        missing = [name for name in ("id", "title", "wire", "after_analysis") if not hasattr(kind, name)]
        if missing:
            raise ValueError(f"{getattr(kind, '__name__', kind)} is not a tab: it lacks {', '.join(missing)} "
                             "(see bertviz_app/app/tabs/base.py, Tab)")
    if not kinds or len(set(ids)) != len(ids):
        raise ValueError(f"the page needs at least one tab and one id per tab, not {ids}")


# Which tabs compute, decided in the browser, without a request for a closed tab: the page keeps the tab that is open
# and those that show an earlier analysis, and a js-only step in front of each tab's steps throws where they need not
# run. Two things of gradio's front end (6.31) are relied on: it runs none of the steps chained with `.success` after
# a js step that throws (a failed step, shown nowhere when the step has no outputs), and a tab's `.select` fires when
# an event selects it too (gr.Tabs(selected=...)); test_browser.py's test_only_the_open_tab_computes_after_an_analysis
# and test_task_browser.py (Task -> Compare, then Analyze) pin them. The page opens on the first tab.
def tab_step_js(tab_id: str, event: str, first: str) -> str:
    """The js-only step in front of a tab's steps: after an "analyzed" input, run them if the tab is open (else the
    tab is stale); when it is "opened", run them if it is stale. `first`: the tab the page opens on."""
    tabs, tab = f"(window.bvTabs ??= {{ open: {json.dumps(first)}, stale: new Set() }})", json.dumps(tab_id)
    if event == "opened":
        return (f"() => {{ const tabs = {tabs}; tabs.open = {tab};"
                f" if (!tabs.stale.delete({tab})) throw new Error('up to date'); }}")
    return (f"() => {{ const tabs = {tabs}; if (tabs.open !== {tab}) {{ tabs.stale.add({tab});"
            " throw new Error('computed when opened'); } }")


# On a phone a figure of a fixed width (820-1000 px: as wide as its tokens need) sits in a box of ~324 px, and a swipe
# on it pans plotly's axes instead of scrolling the box: titles, legends and most tokens were out of reach. So on a
# narrow screen (700 px or less, as app.css says a phone is) a figure inside an element of class FIT_ON_A_PHONE is
# laid out again at its box's width; wider again (a phone turned sideways), it gets back the width it came with.
FIT_ON_A_PHONE = "bv-fit-phone"
FIT_ON_A_PHONE_JS = """() => {
  if (window.bvFitFigures) return;
  const ROOM = 150; // under the plot, for a legend in rows
  const fit = (plot) => {
    const layout = plot.layout;
    if (!window.Plotly || !layout || !plot.isConnected) return;
    if (layout.width !== Number(plot.dataset.bvFitted)) {  // a width other than the one set here: a new figure
      plot.dataset.bvNatural = layout.width || "";
      plot.dataset.bvOwn = JSON.stringify({ height: layout.height, b: layout.margin?.b, legend: layout.legend || {},
        moveLegend: Boolean(plot._fullLayout?.showlegend), title: layout.title?.font?.size ?? null,
        drag: layout.dragmode ?? null });
    }
    const natural = Number(plot.dataset.bvNatural), box = plot.clientWidth;
    if (!natural || !box) return;
    // no narrower than the figure says it stays readable (meta.phone_width, figures/_base.py): it scrolls in its box
    const least = Math.min(natural, Number(layout.meta?.phone_width) || 0);
    const width = window.innerWidth <= 700 && natural > box ? Math.max(box, least) : natural;
    if (width === layout.width) return;
    plot.dataset.bvFitted = width;
    const own = JSON.parse(plot.dataset.bvOwn);
    // a smaller title, so that it fits the phone's width too; no pan or zoom on one wider than its box, so that a
    // swipe scrolls the box
    const update = { width, "title.font.size": width < natural ? 13 : own.title,
      dragmode: width > box ? false : own.drag };
    if (own.moveLegend) {  // a legend beside the plot would take most of a phone's width: under it, in rows
      const fitted = width < natural;
      Object.assign(update, fitted ? { "legend.orientation": "h", "legend.yref": "container", "legend.y": 0,
        "legend.yanchor": "bottom", "legend.x": 0, height: (own.height || 450) + ROOM,
        "margin.b": (own.b ?? 80) + ROOM } : { legend: own.legend, height: own.height, "margin.b": own.b });
    }
    window.Plotly.relayout(plot, update);
  };
  let pending = false;
  const fitAll = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      document.querySelectorAll(".%s .js-plotly-plot").forEach(fit);
    });
  };
  // gradio draws each new figure with Plotly.newPlot, which drops listeners on the plot: watch the page instead
  window.bvFitFigures = new MutationObserver((changes) => {
    if (changes.some((c) => c.target.closest?.(".%s"))) fitAll();
  });
  window.bvFitFigures.observe(document.body, { childList: true, subtree: true });
  window.addEventListener("resize", fitAll);
  fitAll();
}""" % (FIT_ON_A_PHONE, FIT_ON_A_PHONE)


def fit_figures_on_a_phone(demo: gr.Blocks) -> None:
    """A tab's `on_load`: its figures in elements of class FIT_ON_A_PHONE fit their box on a phone (a js-only step
    of the page's load; the script runs once however many tabs ask for it)."""
    demo.load(None, js=FIT_ON_A_PHONE_JS)
