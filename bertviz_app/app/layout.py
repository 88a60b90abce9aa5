"""The page, classroom first: one line of input (sentences, model, examples, Analyze; a link and presenter mode beside
the title) and right under it the attention views, so that on a 1280 x 720 projector the input and the picture share
the screen. The token table and the other views are in tabs below, one module each in tabs/, built from one tuple
(`tabs.TABS`).

A new input runs one forward pass in `analyze`, which also sends the attention views their payload and fills what
the tabs asked it to (the Tokens tab's table). Each other tab computes its views when it is open: after an analysis
if it is, or when the visitor opens it, if what it shows belongs to an earlier analysis (`tabs.base.tab_step_js`).
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from collections.abc import Mapping, Sequence

import gradio as gr

from .. import limits
from ..catalog import builtin_models, read_examples
from ..explorer import Explorer, load
from .attention import AttentionSection
from .common import MAX_CHARS, Models, api, check_inputs, page_file, plain, refuse, say, user_errors
from .server import gradio_internals
from .lane.training import TrainingSettings, trained_folders
from .tabs import TABS, Gate, Tab, TabPage, check_tabs, tab_step_js
from .tabs.trained import MAX_TRAINED
from .views_host import ViewsHost

log = logging.getLogger("bertviz_app.app")

TITLE = "bertviz-app: see inside BERT"

# Copying needs a secure context (https or localhost); elsewhere the link is shown to copy by hand. Browsers and
# servers accept addresses of several thousand characters; past that a link may not open everywhere.
COPY_LINK_JS = page_file("copy-link.js")
PRESENTER_JS = page_file("presenter.js")

# The lesson panel (views/js/lesson-app.mjs does the work): recording steps, saving and opening a lesson file in the
# browser (nothing is uploaded), and the bar that plays one above the views; the "Lesson" button shows it.
LESSON_HTML = page_file("lesson-panel.html")
LESSON_START = page_file("lesson-start.js")
THEME_JS = page_file("theme.js")
PALETTE_JS = page_file("palette.js")
KEYS_JS = page_file("keys.js")
LESSON_JS = page_file("lesson.js")

# On a phone the input fills the first screen: after Analyze the page scrolls to the picture the visitor asked for.
SHOW_PICTURE_JS = page_file("show-picture.js")

def load_models(sources, device: str = "auto", max_tokens: int | None = None, cache_mb: float | None = None,
                cache_dtype: str | None = None, trained: bool = False) -> dict[str, Explorer]:
    """Load every model the operator named, once, keyed by the name the model picker shows (None: the default);
    with `trained` (the Fine-tune tab is on), the models the app fine-tuned before it was last stopped (newest first,
    at most the tab's MAX_TRAINED, named as the tab named them; a damaged folder is left out with a log line); then
    the model each fine-tuned one started from, where its folder names one that can be read (the Task tab compares
    the two). Raises ValueError (CheckpointError, a missing GPU...) with a message for the command line."""
    explorers: dict[str, Explorer] = {}
    extra = {} if cache_mb is None else {"cache_mb": cache_mb}
    extra.update({} if cache_dtype is None else {"cache_dtype": cache_dtype})

    def loaded(source) -> Explorer:
        return load(source, device=device, max_tokens=max_tokens, name=shown_name(source, explorers), **extra)

    for source in sources:
        explorer = loaded(source)
        if all(other.folder is None or other.folder != explorer.folder for other in explorers.values()):
            explorers.setdefault(explorer.name, explorer)  # the same model named twice is offered once
    if trained:
        _load_trained(explorers, lambda folder, name: load(folder, device=device, max_tokens=max_tokens, name=name,
                                                           **extra))
    for explorer in list(explorers.values()):
        if explorer.base_model is not None and explorer.base_model not in explorers:
            try:
                base = loaded(explorer.base_model)
            except ValueError:  # moved or deleted since: the Task tab says it is missing
                continue
            if all(other.folder != base.folder for other in explorers.values()):
                explorers[base.name] = base
    return explorers


def _load_trained(explorers: dict[str, Explorer], loaded) -> None:
    """The app's earlier fine-tuned models into `explorers`, each under the tab's name (numbered as the tab numbers
    a name already taken)."""
    count = 0
    for stem, folder in trained_folders():
        if count == MAX_TRAINED:
            break
        if any(e.folder is not None and e.folder.resolve() == folder.resolve() for e in explorers.values()):
            continue  # the operator named it with --model too
        name = next(n for n in (stem, *(f"{stem} ({i})" for i in range(2, 1000))) if n not in explorers)
        try:
            explorers[name] = loaded(folder, name)
        except (ValueError, OSError) as err:  # CheckpointError is a ValueError
            log.warning("fine-tuned folder %s left out: %s", folder.name, err)
            continue
        count += 1


def shown_name(source, taken) -> str | None:
    """The name a visitor sees for a model folder given by its path: the folder's own name (its parent's too, or a
    number, where two folders share one), never the server's path. None for a built-in or hub name, shown as given."""
    path = Path(str(source)).expanduser()
    if source is None or not path.is_dir():
        return None
    for name in (path.name, f"{path.parent.name}/{path.name}", *(f"{path.name} ({n})" for n in range(2, 1000))):
        if name and name not in taken:
            return name
    return None


class InputArea:
    """The title line (with the link and presenter buttons), then one row: the sentences, the model picker, an
    examples list and Analyze, and the notice under it. `analysis` gives the analyze event."""

    def __init__(self, models: Models, pairs: list[list[str]]):
        self.models = models
        self.pairs = pairs
        with gr.Row(elem_id="title-row"):
            # one line at 1280 px beside the six buttons: the picture below needs the screen's height
            gr.HTML("<h1 class='bv-app-title'>bertviz-app <span>see what BERT reads and computes, in one sentence "
                    "or a pair</span></h1>", elem_id="intro",
                    apply_default_css=False)
            self.copy_link = gr.Button("Copy link", size="sm", scale=0, min_width=90, elem_id="copy-link")
            self.presenter = gr.Button("Presenter mode", size="sm", scale=0, min_width=130, elem_id="presenter")
            self.theme = gr.Button("Projector", size="sm", scale=0, min_width=0, elem_id="projector-theme")
            self.palette = gr.Button("Colour-blind safe", size="sm", scale=0, min_width=0, elem_id="colorblind-theme")
            self.lesson = gr.Button("Lesson", size="sm", scale=0, min_width=80, elem_id="lesson")
            self.keys = gr.Button("Keys", size="sm", scale=0, min_width=60, elem_id="keys")
        # A box takes twice what the server reads: a paste the browser cut at the limit was analyzed silently cut;
        # longer now, it reaches the server's check, which says how long it is and what it reads.
        with gr.Row(equal_height=True, elem_id="input-row"):
            self.sentence_a = gr.Textbox(label="Sentence A", value=pairs[0][0], lines=1, max_lines=4,
                                         max_length=2 * MAX_CHARS, scale=5, elem_id="sentence-a")
            self.sentence_b = gr.Textbox(label="Sentence B (optional)", value=pairs[0][1], lines=1, max_lines=4,
                                         max_length=2 * MAX_CHARS, scale=4, elem_id="sentence-b")
            self.model = gr.Dropdown(models.names, value=models.names[0], label="Model", scale=2, min_width=210,
                                     interactive=len(models.names) > 1, elem_id="model")
            self.example = gr.Dropdown([(_example_label(a, b), i) for i, (a, b) in enumerate(pairs)], value=None,
                                       label="Examples", scale=2, min_width=150, elem_id="example")
            self.button = gr.Button("Analyze", variant="primary", scale=1, min_width=110, elem_id="analyze")
        self.notice = gr.Markdown(elem_id="notice")
        gr.HTML(value=None, html_template=LESSON_HTML, js_on_load=LESSON_START, apply_default_css=False,
                elem_id="lesson-host")
        self._refusals: dict[str | None, str] = {}  # session hash -> the sentence its last refused input got
        self._asked = itertools.count()
        self._latest: dict[str, int] = {}  # session hash -> the number of its latest analysis asked for

    def pick_example(self, index):
        """The chosen example's sentences into the boxes."""
        if not isinstance(index, int) or not 0 <= index < len(self.pairs):
            raise refuse("Choose one of the examples in the list.")
        a, b = self.pairs[index]
        return a, b

    def analysis(self, demo: gr.Blocks, page: TabPage, attention: AttentionSection) -> dict:
        """The keyword arguments of the analyze event: one forward pass, what the tabs asked it to fill
        (`page.filled_by_analysis`: the token table), the notice, and the attention views' payload."""
        filled = list(page.filled_by_analysis)
        skipped = (gr.skip(),) * (3 + len(filled))  # what an overtaken analysis leaves as it is: every output

        @user_errors
        def checked(model, text, text_pair, request):
            gradio_internals.forget_replaced_components(demo, request)
            explorer = self.models.get(model)
            text_pair = text_pair or ""
            # the explorer checks the input (inputs.check_text): a visitor reads the words a notebook does
            run = explorer.run(text, text_pair or None)
            notice = say(request, "{n} tokens · forward pass {ms} ms on {device}", n=len(run),
                         ms=f"{run.seconds * 1000:.0f}", device=explorer.device)
            if run.encoding.truncation is not None:  # in the notice, which the next input replaces: no toasts
                notice += f" · **truncated:** {truncation_notice(explorer, run.encoding.truncation)}"
            return ({"model": model, "text": text, "pair": text_pair}, *(value(run) for _, value in filled), notice,
                    attention.first_paint(model, run))

        def analyze(model, text, text_pair, request: gr.Request = None):
            session, ticket = getattr(request, "session_hash", None), next(self._asked)
            self._remember(self._latest, session, ticket)
            try:
                result = checked(model, text, text_pair, request)
            except gr.Error as err:
                if self._overtaken(session, ticket):
                    return skipped
                self._refused(request, err.message)
                raise
            # The opening example (or a model switch) may finish after an input asked for later: the later one wins.
            return skipped if self._overtaken(session, ticket) else result

        return dict(fn=analyze, inputs=[self.model, self.sentence_a, self.sentence_b],
                    outputs=[page.session, *(part for part, _ in filled), self.notice, attention.view],
                    # gradio's progress tracker would leave a red "Error" pill on every output of a refused input
                    show_progress="hidden")

    def _refused(self, request, message: str) -> None:
        """Remember why this visitor's input was refused, for `stale_notice` (a failure listener gets no error)."""
        self._remember(self._refusals, getattr(request, "session_hash", None), message)

    def _overtaken(self, session: str | None, ticket: int) -> bool:
        """Whether this visitor asked for another analysis after the one numbered `ticket`."""
        return session is not None and self._latest.get(session, ticket) != ticket

    @staticmethod
    def _remember(table: dict, session, value) -> None:
        table[session] = value
        while len(table) > 1000:  # a bound, as the sessions themselves have
            table.pop(next(iter(table)))

    def stale_notice(self, session, request: gr.Request = None) -> str:
        """After a refused input: why, and that the picture below is still the last good one (the page's CSS dims
        it while this notice is up), or that there is none yet."""
        why = self._refusals.pop(getattr(request, "session_hash", None), None)
        why = why or say(request, "The input was not analyzed.")
        if not isinstance(session, dict):
            return f"<span class='bv-stale'>**{plain(why)}**</span>"
        last = session["text"] if not session["pair"] else f"{session['text']} | {session['pair']}"
        last = last if len(last) <= 80 else last[:79] + "…"
        return (f"<span class='bv-stale'>**{plain(why)}** "
                + say(request, "The picture below is still the last one analyzed: “{input}”", input=plain(last))
                + "</span>")

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
               training: TrainingSettings | None = None, tabs: Sequence[type[Tab]] = TABS,
               corpora: Mapping | None = None, corpus_problems: Sequence[str] = ()) -> gr.Blocks:
    """The app. `explorers`: name -> loaded model, as `load_models` returns (the model picker offers exactly these,
    and the models fine-tuned in the app once they are done); one Explorer; or None for the built-in models on the
    best device. `concurrency`: forward passes at once. `training`: whether the Fine-tune tab may train (off unless
    given; `TrainingSettings.for_server` applies the command line's rule). `tabs`: the tab classes, in the tab
    bar's order (`tabs.TABS`, the app's own, by default). `corpora`: name -> corpus.browser.CorpusViews for the
    Corpus tab (`tabs.corpus.open_corpora` makes them), and `corpus_problems` the sentences of those it could not
    open; without either, the page has no Corpus tab."""
    check_tabs(tabs)
    if explorers is None:
        explorers = load_models(list(builtin_models()))
    elif isinstance(explorers, Explorer):
        explorers = {explorers.name: explorers}
    models = Models(explorers, concurrency)
    pairs, masked_examples = examples or read_examples()
    with gr.Blocks(title=TITLE, analytics_enabled=False) as demo:
        inputs = InputArea(models, pairs)
        host = ViewsHost(models)
        page = TabPage(models, gr.State(None), inputs.model, concurrency, host=host, masked_examples=masked_examples,
                       training=training or TrainingSettings(), sentences=(inputs.sentence_a, inputs.sentence_b),
                       corpora=dict(corpora or {}), corpus_problems=tuple(corpus_problems))
        attention = AttentionSection(page, host)  # the picture, right under the input; the other views in tabs
        built = build_tabs(page, tabs)
        analysis = inputs.analysis(demo, page, attention)
        first = tabs[0].id  # the tab the page opens on

        def follow(event, public: bool) -> None:
            """Each tab's steps after an analysis, behind its gate; the picture is always in sight."""
            attention.after_analysis(event, public)
            for tab in built:
                tab.after_analysis(Gate(lambda tab=tab: event.success(None, js=tab_step_js(tab.id, "analyzed",
                                                                                             first))), public)

        def analyze_after(event) -> None:
            follow(event.success(**page.analysis_api("analyze", False), **analysis), public=False)

        page.analyze_after = analyze_after
        for part in [attention, *built]:  # before `follow`: an endpoint is named after its first, public use
            part.wire()
        inputs.copy_link.click(None, js=COPY_LINK_JS)
        example = inputs.example.input(inputs.pick_example, [inputs.example], [inputs.sentence_a, inputs.sentence_b],
                                       **api("pick_example", False), queue=False)
        inputs.presenter.click(None, js=PRESENTER_JS)
        inputs.theme.click(None, js=THEME_JS)
        inputs.palette.click(None, js=PALETTE_JS)
        inputs.lesson.click(None, js=LESSON_JS)
        inputs.keys.click(None, js=KEYS_JS)
        # The model picker answers the visitor (.input), not a permalink filling it in before the first analysis.
        # always_last: a press of Analyze while an analysis is under way (the one a model switch started, say) runs
        # when that one ends; gradio's default for a click, "once", dropped it and left the previous input on screen.
        analyzed = gr.on([inputs.button.click, inputs.sentence_a.submit, inputs.sentence_b.submit,
                          inputs.model.input], **page.analysis_api("analyze"), **analysis, trigger_mode="always_last")
        analyzed.failure(inputs.stale_notice, [page.session], [inputs.notice], **api("stale_notice", False),
                         queue=False)
        analyzed.success(None, js=SHOW_PICTURE_JS)
        follow(analyzed, public=True)
        loaded = demo.load(inputs.restore, None, [inputs.sentence_a, inputs.sentence_b, inputs.model],
                           **api("restore", False), queue=False)
        follow(loaded.then(**page.analysis_api("analyze", False), **analysis), public=False)
        for tab in built:
            if hasattr(tab, "on_load"):
                tab.on_load(demo)
        analyze_after(example)  # an example fills the boxes, then analyzes like the button (no second API name)
        for tab in built:  # a tab opened (by the visitor or an event) computes if it is stale
            opened = page.items[tab.id].select(None, js=tab_step_js(tab.id, "opened", first))
            tab.after_analysis(Gate(lambda opened=opened: opened), public=False)
    # Every event's values are checked in words before gradio processes them, however the demo is launched; a model
    # the Fine-tune tab replaced is answered with its own sentence
    gradio_internals.check_inputs_first(demo, lambda components, values: check_inputs(components, values,
                                                                                     models.gone))
    return demo


def build_tabs(page: TabPage, kinds: Sequence[type[Tab]]) -> list[Tab]:
    """The tab bar and each tab of `kinds` built in its own gr.Tab, in order; every one of them in `page.tabs`."""
    with gr.Tabs(elem_id="tabs") as page.tab_set:
        for kind in kinds:
            if hasattr(kind, "shown") and not kind.shown(page):
                continue
            with gr.Tab(kind.title, id=kind.id) as page.items[kind.id]:
                page.tabs[kind.id] = kind(page)
    return list(page.tabs.values())


def truncation_notice(explorer: Explorer, cut) -> str:
    """A Truncation in words, naming what set the limit: the model's positions, or the server's --max-tokens (and how
    to raise it)."""
    removed = " and ".join(f"{n} from sentence {name}" for n, name in ((cut.removed_a, "A"), (cut.removed_b, "B")) if n)
    model_limit = explorer.config.max_tokens  # the longest input, not the position table (RoBERTa: 2 rows longer)
    if cut.max_tokens < model_limit:
        limit = (f"this server reads at most {cut.max_tokens} (its `--max-tokens`; the model itself reads up to "
                 f"{model_limit}: start the server with `--max-tokens {model_limit}` to read more)")
    else:
        limit = f"the model reads at most {cut.max_tokens}"
    return f"the input has {cut.original_length} tokens and {limit}; removed {removed}"


def _example_label(a: str, b: str) -> str:
    text = f"{a} | {b}" if b else a
    return text if len(text) <= 60 else text[:59] + "…"
