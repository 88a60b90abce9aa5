"""The page, classroom first: one line of input (sentences, model, examples, Analyze; a link and presenter mode beside
the title) and right under it the attention views, so that on a 1280 x 720 projector the input and the picture share
the screen. The token table and the other views are in tabs below.

A new input runs one forward pass in `analyze`, which also sends the attention views their payload and the token
table (the first tab). Each other tab computes its views when it is open: after an analysis if it is, or when the
visitor opens it, if what it shows belongs to an earlier analysis (`TABS_JS`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import SimpleNamespace

import gradio as gr

from .. import limits
from ..catalog import builtin_models, read_examples
from ..explorer import Explorer, load
from . import gradio_internals
from .attention import AttentionSection
from .beyond import BeyondTab
from .common import MAX_CHARS, Models, Page, api, check_inputs, plain, refuse, user_errors
from .compare import CompareTab
from .embeddings import EmbeddingsTab
from .finetune_tab import FineTuneTab, TrainingSettings
from .hidden import HiddenTab
from .masked_lm import MaskedLMTab
from .model_info import ModelTab
from .next_sentence import NextSentenceTab
from .task import TaskTab
from .views_host import ViewsHost

TITLE = "bertviz-app: see inside BERT"

# Copying needs a secure context (https or localhost); elsewhere the link is shown to copy by hand. Browsers and
# servers accept addresses of several thousand characters; past that a link may not open everywhere.
COPY_LINK_JS = """() => {
  const url = window.location.href;
  const button = document.querySelector("#copy-link");
  const done = (text) => { if (button) { const old = button.textContent; button.textContent = text;
    setTimeout(() => { button.textContent = old; }, 1800); } };
  if (url.length > 8000) alert(`This link is ${url.length} characters long; some browsers and servers refuse links `
    + "over 8,000. Shorter sentences make a link that opens everywhere.");
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(url).then(() => done("Link copied"), () => window.prompt("Copy this link:", url));
  } else {
    window.prompt("Copy this link:", url);
  }
}"""
PRESENTER_JS = """() => {
  const on = document.body.classList.toggle("bv-presenter");
  const button = document.querySelector("#presenter");
  if (button) button.textContent = on ? "Leave presenter mode" : "Presenter mode";
  // the picture gets the screen: one row of controls, the others folded under "More options", also in the views
  // that a new input mounts afresh
  const fold = () => document.querySelectorAll("#attention-host .bv-more").forEach((more) => {
    more.open = !document.body.classList.contains("bv-presenter"); });
  fold();
  if (!window.bvPresenterObserver) {
    window.bvPresenterObserver = new MutationObserver((changes) => {
      if (changes.some((c) => [...c.addedNodes].some((n) => n.querySelector && n.querySelector(".bv-more")))) fold();
    });
    const host = document.querySelector("#attention-host");
    if (host) window.bvPresenterObserver.observe(host, { childList: true, subtree: true });
  }
}"""

# On a phone the input fills the first screen: after Analyze the page scrolls to the picture the visitor asked for.
SHOW_PICTURE_JS = """() => {
  if (window.innerWidth > 700) return;
  const host = document.querySelector("#attention-host");
  if (host) host.scrollIntoView({ block: "start" });
}"""

# The token table, drawn by the page from {headers, data} as plain DOM (text nodes: a token is never read as HTML),
# when the page is next idle: the attention views, drawn from the same answer, go first. As gradio's Dataframe, 512
# rows cost a long input's Analyze ~170 ms before the views could draw (gradio walks every list of an answer cell
# by cell, hence one JSON string, and its table drew slowly).
TOKEN_TABLE_JS = """
const draw = () => {
  let value = {};
  try { value = JSON.parse((props.value || {}).table || "{}"); } catch (err) { value = {}; }
  const host = element.querySelector(".bv-token-table");
  if (!host) return;
  const rows = Array.isArray(value.data) ? value.data : [];
  if (!rows.length || !Array.isArray(value.headers)) { host.replaceChildren(); return; }
  const caption = document.createElement("p");
  caption.className = "bv-table-caption";
  caption.textContent = "What BERT reads: tokens with their segment and position";
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const name of value.headers) head.appendChild(document.createElement("th")).textContent = String(name);
  const body = table.createTBody();
  for (const row of rows) {
    const line = body.insertRow();
    for (const cell of row) line.insertCell().textContent = String(cell);
  }
  const scroll = document.createElement("div");
  scroll.className = "bv-table-scroll";
  scroll.append(table);
  host.replaceChildren(caption, scroll);
};
let waiting = false;
const soon = () => {
  if (waiting) return;
  waiting = true;
  const run = () => { waiting = false; draw(); };
  if (window.requestIdleCallback) requestIdleCallback(run, { timeout: 2000 }); else setTimeout(run, 50);
};
watch("value", soon);
soon();
"""

# Which tabs compute, decided in the browser, without a request for a closed tab: the page keeps the tab that is open
# and those that show an earlier analysis, and a js-only step in front of each tab's steps throws where they need not
# run. Two things of gradio's front end (6.31) are relied on: it runs none of the steps chained with `.success` after
# a js step that throws (a failed step, shown nowhere when the step has no outputs), and a tab's `.select` fires when
# an event selects it too (gr.Tabs(selected=...)); test_browser.py's test_only_the_open_tab_computes_after_an_analysis
# and test_task_browser.py (Task -> Compare, then Analyze) pin them. The page opens on the first tab, Tokens.
TABS_JS = "(window.bvTabs ??= { open: 'tokens-tab', stale: new Set() })"


def tab_step_js(tab_id: str, event: str) -> str:
    """The js-only step in front of a tab's steps: after an "analyzed" input, run them if the tab is open (else the
    tab is stale); when it is "opened", run them if it is stale."""
    tab = json.dumps(tab_id)
    if event == "opened":
        return (f"() => {{ const tabs = {TABS_JS}; tabs.open = {tab};"
                f" if (!tabs.stale.delete({tab})) throw new Error('up to date'); }}")
    return (f"() => {{ const tabs = {TABS_JS}; if (tabs.open !== {tab}) {{ tabs.stale.add({tab});"
            " throw new Error('computed when opened'); } }")


def when_needed(gate) -> SimpleNamespace:
    """What a tab's `after_analysis` chains its steps to: the js step `gate`, with `.success` (none of the steps runs
    where it throws)."""
    return SimpleNamespace(then=gate.success)


def load_models(sources, device: str = "auto", max_tokens: int | None = None, cache_mb: float | None = None,
                cache_dtype: str | None = None) -> dict[str, Explorer]:
    """Load every model the operator named, once, keyed by the name the model picker shows (None: the default),
    then the model each fine-tuned one started from, where its folder names one that can be read (the Task tab
    compares the two). Raises ValueError (CheckpointError, a missing GPU...) with a message for the command line."""
    explorers: dict[str, Explorer] = {}
    extra = {} if cache_mb is None else {"cache_mb": cache_mb}
    extra.update({} if cache_dtype is None else {"cache_dtype": cache_dtype})
    for source in sources:
        explorer = load(source, device=device, max_tokens=max_tokens, **extra)
        explorers.setdefault(explorer.name, explorer)  # the same model named twice is offered once
    for explorer in list(explorers.values()):
        if explorer.base_model is not None and explorer.base_model not in explorers:
            try:
                base = load(explorer.base_model, device=device, max_tokens=max_tokens, **extra)
            except ValueError:  # moved or deleted since: the Task tab says it is missing
                continue
            if all(other.folder != base.folder for other in explorers.values()):
                explorers[base.name] = base
    return explorers


class InputArea:
    """The title line (with the link and presenter buttons), then one row: the sentences, the model picker, an
    examples list and Analyze, and the notice under it. `analysis` gives the analyze event."""

    def __init__(self, models: Models, pairs: list[list[str]]):
        self.models = models
        self.pairs = pairs
        with gr.Row(elem_id="title-row"):
            gr.HTML("<h1 class='bv-app-title'>bertviz-app <span>see what BERT reads and computes: type one "
                    "sentence, or two to see how it relates a pair</span></h1>", elem_id="intro",
                    apply_default_css=False)
            self.copy_link = gr.Button("Copy link", size="sm", scale=0, min_width=90, elem_id="copy-link")
            self.presenter = gr.Button("Presenter mode", size="sm", scale=0, min_width=130, elem_id="presenter")
        with gr.Row(equal_height=True, elem_id="input-row"):
            self.sentence_a = gr.Textbox(label="Sentence A", value=pairs[0][0], lines=1, max_lines=4,
                                         max_length=MAX_CHARS, scale=5, elem_id="sentence-a")
            self.sentence_b = gr.Textbox(label="Sentence B (optional)", value=pairs[0][1], lines=1, max_lines=4,
                                         max_length=MAX_CHARS, scale=4, elem_id="sentence-b")
            self.model = gr.Dropdown(models.names, value=models.names[0], label="Model", scale=2, min_width=210,
                                     interactive=len(models.names) > 1, elem_id="model")
            self.example = gr.Dropdown([(_example_label(a, b), i) for i, (a, b) in enumerate(pairs)], value=None,
                                       label="Examples", scale=2, min_width=150, elem_id="example")
            self.button = gr.Button("Analyze", variant="primary", scale=1, min_width=110, elem_id="analyze")
        self.notice = gr.Markdown(elem_id="notice")
        self._refusals: dict[str | None, str] = {}  # session hash -> the sentence its last refused input got

    def pick_example(self, index):
        """The chosen example's sentences into the boxes."""
        if not isinstance(index, int) or not 0 <= index < len(self.pairs):
            raise refuse("Choose one of the examples in the list.")
        a, b = self.pairs[index]
        return a, b

    def analysis(self, demo: gr.Blocks, page: Page, attention: AttentionSection, token_table: gr.HTML) -> dict:
        """The keyword arguments of the analyze event: one forward pass, the token table, the notice, and the
        attention views' payload."""

        @user_errors
        def checked(model, text, text_pair, request):
            gradio_internals.forget_replaced_components(demo, request)
            explorer = self.models.get(model)
            text_pair = text_pair or ""
            # the explorer checks the input (inputs.check_text): a visitor reads the words a notebook does
            run = explorer.run(text, text_pair or None)
            notice = f"{len(run)} tokens · forward pass {run.seconds * 1000:.0f} ms on {explorer.device}"
            if run.encoding.truncation is not None:  # in the notice, which the next input replaces: no toasts
                notice += f" · **truncated:** {truncation_notice(explorer, run.encoding.truncation)}"
            table = run.token_table().to_dict("split")  # plain Python values, ready for JSON
            # one string: gradio walks every list and dict of an answer, cell by cell (~50 ms at 512 tokens)
            table = {"table": json.dumps({"headers": table["columns"], "data": table["data"]}, ensure_ascii=False)}
            return ({"model": model, "text": text, "pair": text_pair}, table, notice,
                    attention.first_paint(model, run))

        def analyze(model, text, text_pair, request: gr.Request = None):
            try:
                return checked(model, text, text_pair, request)
            except gr.Error as err:
                self._refused(request, err.message)
                raise

        return dict(fn=analyze, inputs=[self.model, self.sentence_a, self.sentence_b],
                    outputs=[page.session, token_table, self.notice, attention.view],
                    # gradio's progress tracker would leave a red "Error" pill on every output of a refused input
                    show_progress="hidden")

    def _refused(self, request, message: str) -> None:
        """Remember why this visitor's input was refused, for `stale_notice` (a failure listener gets no error)."""
        self._refusals[getattr(request, "session_hash", None)] = message
        while len(self._refusals) > 1000:
            self._refusals.pop(next(iter(self._refusals)))

    def stale_notice(self, session, request: gr.Request = None) -> str:
        """After a refused input: why, and that the picture below is still the last good one (the page's CSS dims
        it while this notice is up), or that there is none yet."""
        why = self._refusals.pop(getattr(request, "session_hash", None), "The input was not analyzed.")
        if not isinstance(session, dict):
            return f"<span class='bv-stale'>**{plain(why)}**</span>"
        last = session["text"] if not session["pair"] else f"{session['text']} | {session['pair']}"
        last = last if len(last) <= 80 else last[:79] + "…"
        return (f"<span class='bv-stale'>**{plain(why)}** The picture below is still the last one analyzed: "
                f"“{plain(last)}”</span>")

    def restore(self, request: gr.Request):
        """The input a permalink carries (?a=...&b=...&model=...), before the first analysis; what it lacks or
        what does not fit stays as the page has it."""
        query = getattr(request, "query_params", None) or {}

        def text(name):
            value = query.get(name)
            return value if isinstance(value, str) and len(value) <= MAX_CHARS else gr.update()

        model = query.get("model")
        b = text("b")
        if "a" in query and "b" not in query:
            b = ""  # a link to a single sentence: no sentence B left over from the page's example
        return text("a"), b, model if model in self.models.names else gr.update()


def build_demo(explorers: Mapping[str, Explorer] | Explorer | None = None, *,
               concurrency: int = limits.CONCURRENCY,
               examples: tuple[list[list[str]], list[str]] | None = None,
               training: TrainingSettings | None = None) -> gr.Blocks:
    """The app. `explorers`: name -> loaded model, as `load_models` returns (the model picker offers exactly these,
    and the models fine-tuned in the app once they are done); one Explorer; or None for the built-in models on the
    best device. `concurrency`: forward passes at once. `training`: whether the Fine-tune tab may train (off unless
    given; `TrainingSettings.for_server` applies the command line's rule)."""
    if explorers is None:
        explorers = load_models(list(builtin_models()))
    elif isinstance(explorers, Explorer):
        explorers = {explorers.name: explorers}
    models = Models(explorers, concurrency)
    pairs, masked_examples = examples or read_examples()
    with gr.Blocks(title=TITLE, analytics_enabled=False) as demo:
        inputs = InputArea(models, pairs)
        page = Page(models, gr.State(None), inputs.model, concurrency)
        host = ViewsHost(models)
        attention = AttentionSection(page, host)  # the picture, right under the input; the other views in tabs
        with gr.Tabs(elem_id="tabs") as tab_set:
            with gr.Tab("Tokens", id="tokens-tab"):
                token_table = gr.HTML(value={}, html_template="<div class='bv-token-table'></div>",
                                      js_on_load=TOKEN_TABLE_JS, apply_default_css=False, elem_id="token-table")
            with gr.Tab("Embeddings", id="embeddings-tab"):
                embeddings = EmbeddingsTab(page)
            with gr.Tab("Hidden states", id="hidden-tab"):
                hidden = HiddenTab(page)
            with gr.Tab("Masked LM", id="mlm-tab"):
                masked_lm = MaskedLMTab(page, masked_examples)
            with gr.Tab("Next sentence", id="nsp-tab"):
                next_sentence = NextSentenceTab(page)
            with gr.Tab("Task", id="task-tab"):
                task = TaskTab(page)
            with gr.Tab("Fine-tune", id="finetune-tab") as finetune_item:
                finetune = FineTuneTab(page, training or TrainingSettings())
            with gr.Tab("Beyond attention", id="beyond-tab"):
                beyond = BeyondTab(page)
            with gr.Tab("Compare", id="compare-tab"):
                compare = CompareTab(page, host)
            with gr.Tab("Model", id="model-tab"):
                model_tab = ModelTab(page)
        # The tabs that compute after an analysis, by their id; the Tokens tab's table comes with the analysis.
        tabs = {"mlm-tab": masked_lm, "nsp-tab": next_sentence, "task-tab": task, "beyond-tab": beyond,
                "compare-tab": compare, "model-tab": model_tab, "embeddings-tab": embeddings, "hidden-tab": hidden}
        analysis = inputs.analysis(demo, page, attention, token_table)

        def follow(event, public: bool) -> None:
            attention.after_analysis(event, public)  # the picture is always in sight
            for tab_id, tab in tabs.items():
                tab.after_analysis(when_needed(event.success(None, js=tab_step_js(tab_id, "analyzed"))), public)

        for tab in [attention, *tabs.values()]:  # before `follow`: an endpoint is named after its first, public use
            tab.wire()
        finetune.wire(finetune_item, [inputs.model, compare.other_model])
        inputs.copy_link.click(None, js=COPY_LINK_JS)
        example = inputs.example.input(inputs.pick_example, [inputs.example], [inputs.sentence_a, inputs.sentence_b],
                                       **api("pick_example", False), queue=False)
        inputs.presenter.click(None, js=PRESENTER_JS)
        # The model picker answers the visitor (.input), not a permalink filling it in before the first analysis.
        # always_last: a press of Analyze while an analysis is under way (the one a model switch started, say) runs
        # when that one ends; gradio's default for a click, "once", dropped it and left the previous input on screen.
        analyzed = gr.on([inputs.button.click, inputs.sentence_a.submit, inputs.sentence_b.submit,
                          inputs.model.input], **page.analysis_api("analyze"), **analysis, trigger_mode="always_last")
        analyzed.failure(inputs.stale_notice, [page.session], [inputs.notice], **api("stale_notice", False),
                         queue=False)
        analyzed.success(None, js=SHOW_PICTURE_JS)
        follow(analyzed, public=True)
        first = demo.load(inputs.restore, None, [inputs.sentence_a, inputs.sentence_b, inputs.model],
                          **api("restore", False), queue=False)
        follow(first.then(**page.analysis_api("analyze", False), **analysis), public=False)
        finetune.on_load(demo)
        # An example fills the boxes, then analyzes like the button (without a second API name).
        follow(example.success(**page.analysis_api("analyze", False), **analysis), public=False)
        # So does a held-out example clicked in the Task tab, which also leads into Compare.
        held_out = task.link(inputs, compare, tab_set)
        follow(held_out.success(**page.analysis_api("analyze", False), **analysis), public=False)
        for item in tab_set.children:  # a tab opened (by the visitor or an event) computes if it is stale
            opened = item.select(None, js=tab_step_js(item.id, "opened"))
            if item.id in tabs:
                tabs[item.id].after_analysis(when_needed(opened), public=False)
    # Every event's values are checked in words before gradio processes them, however the demo is launched.
    gradio_internals.check_inputs_first(demo, check_inputs)
    return demo


def truncation_notice(explorer: Explorer, cut) -> str:
    """A Truncation in words, naming what set the limit: the model's positions, or the server's --max-tokens (and how
    to raise it)."""
    removed = " and ".join(f"{n} from sentence {name}" for n, name in ((cut.removed_a, "A"), (cut.removed_b, "B")) if n)
    model_limit = explorer.config.max_position_embeddings
    if cut.max_tokens < model_limit:
        limit = (f"this server reads at most {cut.max_tokens} (its `--max-tokens`; the model itself reads up to "
                 f"{model_limit}: start the server with `--max-tokens {model_limit}` to read more)")
    else:
        limit = f"the model reads at most {cut.max_tokens}"
    return f"the input has {cut.original_length} tokens and {limit}; removed {removed}"


def _example_label(a: str, b: str) -> str:
    text = f"{a} | {b}" if b else a
    return text if len(text) <= 60 else text[:59] + "…"
