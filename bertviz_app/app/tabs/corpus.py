"""The Corpus tab (shown when the server was started with `--corpus DIR`): heads over a corpus, one head's joint
query/key map, search by meaning and the sentence map, drawn in the browser by views/js/corpus-app.mjs. The corpora
are the operator's, opened at start; a visitor picks one by name, never by path.

What the page asks the server goes through the host's server functions (outside gradio's queue, in a lane of their
own like the attention views' exports, with a rate per page and per client address; searches in a second lane, so
that answers already made never wait behind them): a subset's summary, a head's details, a head's map (computed once and
cached: corpus/browser.py), the sentence map, a search from the token selected in the analysed input (its Run from
the explorer's cache, never a forward pass), what each layer knows of a target (probes, in a third lane: the first
of a target trains for a minute, then it is kept), a head's report card, a sentence's text, and a sentence by its text (a row of the Task tab's
held-out table, when the sentence map is not on the page to answer it). Hovering, brushing and zooming a map ask
nothing. A click on a point is the tab's one event: the sentence and the corpus's model go into the input row and the page
analyzes it, then the host selects the layer, head and token in the attention views."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import gradio as gr

from ... import limits
from ...corpus import CorpusError, open_corpus
from ...corpus.browser import CorpusViews
from ...explorer import Explorer
from ..common import api, in_page_language, refuse, user_errors
from ..views_host import ExportLane
from .base import TabPage

log = logging.getLogger("bertviz_app.app")

SCRIPT_MISSING = "The corpus views cannot start: their script is missing from this page."
HOST_SCRIPT = """
const box = element.querySelector(".bv-corpus-host");
(async () => {
  for (let waited = 0; !window.BertvizViews && waited < 10000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!window.BertvizViews) {
    box.textContent = MISSING;
    return;
  }
  window.BertvizViews.corpusHost({ element, props, server, trigger });
})();
""".replace("MISSING", in_page_language(SCRIPT_MISSING))


def open_corpora(folders: Sequence[str], explorers: dict[str, Explorer],
                 load_model: Callable[[str], Explorer]) -> tuple[dict[str, CorpusViews], list[str]]:
    """The corpora of `--corpus`, each by its folder's name, with the served model it was built with (loaded into
    `explorers` when the operator did not name it: a click analyses its sentences with that model), and one
    sentence for each folder that cannot be read (the server starts without it: the other tabs, and other corpora,
    keep working)."""
    corpora: dict[str, CorpusViews] = {}
    problems: list[str] = []
    for folder in folders:
        path = Path(folder)
        try:
            corpus = open_corpus(path)
            model = corpus.manifest["model"]
            name = _served_model(explorers, model)
            if name is None:
                source = model["folder"] if model["folder"] and Path(model["folder"]).is_dir() else model["name"]
                explorer = load_model(source)
                name = explorer.name
                explorers.setdefault(name, explorer)
            corpus = open_corpus(path, explorers[name])
        except (CorpusError, ValueError, OSError) as err:
            problems.append(f"The corpus {path.name or folder} is not available: {err}")
            continue
        shown = next(n for n in (path.name, *(f"{path.name} ({k})" for k in range(2, 100))) if n not in corpora)
        corpora[shown] = CorpusViews(corpus, shown, model_name=name)
        # the summaries a first visitor opens (5 s for 10,000 Brown sentences), made while the server starts
        threading.Thread(target=corpora[shown].warm, name=f"bertviz-corpus-{shown}", daemon=True).start()
    return corpora, problems


def unavailable(problem: str) -> str:
    """The corpus a start-up problem names, all a visitor is told of it (corpus-host.mjs says it is not available, in
    the page's language): not the server's folders (the operator's terminal has the whole sentence)."""
    return problem.split(" is not available", 1)[0].removeprefix("The corpus ")


def _served_model(explorers: Mapping[str, Explorer], model: dict) -> str | None:
    """The name of the served model a corpus was built with: the same folder, else the same name."""
    folder = Path(model["folder"]).resolve() if model.get("folder") else None
    for name, explorer in explorers.items():
        if folder is not None and explorer.folder is not None and Path(explorer.folder).resolve() == folder:
            return name
    for name, explorer in explorers.items():
        if explorer.name == model["name"] or name == model["name"]:
            return name
    return None


class CorpusTab:
    id, title = "corpus-tab", "Corpus"

    @staticmethod
    def shown(page: TabPage) -> bool:
        """Only on a server started with --corpus (a folder that could not be read still shows why)."""
        return bool(page.corpora or page.corpus_problems)

    def __init__(self, page: TabPage):
        self.page = page
        self.corpora: dict[str, CorpusViews] = dict(page.corpora)
        self.lane = ExportLane(limits.CORPUS_AT_ONCE, limits.CORPUS_WAITING, limits.CORPUS_PER_MINUTE,
                               per_address=limits.CORPUS_PER_ADDRESS, what="corpus answers")
        self.searches = ExportLane(limits.CORPUS_SEARCHES_AT_ONCE, limits.CORPUS_SEARCHES_WAITING,
                                   limits.CORPUS_SEARCHES_PER_MINUTE, per_address=limits.CORPUS_SEARCHES_PER_ADDRESS,
                                   what="searches")
        self.probes = ExportLane(limits.CORPUS_PROBES_AT_ONCE, limits.CORPUS_PROBES_WAITING,
                                 limits.CORPUS_PROBES_PER_MINUTE, per_address=limits.CORPUS_PROBES_PER_ADDRESS,
                                 what="probes")
        value = {"corpora": [c.info() for c in self.corpora.values()],
                 "unavailable": [unavailable(problem) for problem in page.corpus_problems]}
        self.host = gr.HTML(value=value, html_template="<div class='bv-corpus-host'></div>", js_on_load=HOST_SCRIPT,
                            apply_default_css=False, elem_id="corpus-host", server_functions=self._functions())

    def corpus(self, name) -> CorpusViews:
        if not isinstance(name, str) or name not in self.corpora:
            raise refuse(f"Unknown corpus {str(name)[:80]!r}; this server has: {', '.join(self.corpora) or 'none'}.")
        return self.corpora[name]

    def _functions(self) -> list:
        corpus, lane, searches, probes, host = self.corpus, self.lane, self.searches, self.probes, self.page.host

        def asked(request) -> dict:
            return request if isinstance(request, dict) else {}

        # Plain coroutines (gradio marks each server function); each answers {"value"} or {"error": a sentence}.
        async def corpus_summary(request):
            r = asked(request)
            return await lane.call(lambda session: corpus(r.get("corpus")).summary(r.get("subset")))

        async def corpus_head(request):
            r = asked(request)
            return await lane.call(lambda session: corpus(r.get("corpus")).head(r.get("layer"), r.get("head")))

        async def corpus_qk(request):
            r = asked(request)
            return await lane.call(lambda session: corpus(r.get("corpus")).qk_map_text(r.get("layer"), r.get("head")))

        async def corpus_sentences(request):
            r = asked(request)
            return await lane.call(lambda session: corpus(r.get("corpus")).sentence_map_text(r.get("layer"),
                                                                                              r.get("pooling")))

        async def corpus_sentence(request):
            r = asked(request)
            return await lane.call(lambda session: self.sentence(r.get("corpus"), r.get("sentence")))

        async def corpus_find(request):
            r = asked(request)
            return await lane.call(lambda session: corpus(r.get("corpus")).find(r.get("text"), r.get("pair")))

        async def corpus_probe(request):
            r = asked(request)
            return await probes.call(lambda session: corpus(r.get("corpus")).probe(r.get("target")))

        async def corpus_card(request):
            r = asked(request)
            return await lane.call(lambda session: corpus(r.get("corpus")).card(r.get("layer"), r.get("head"),
                                                                               r.get("statistic")))

        async def corpus_search(request):
            r = asked(request)

            def search(session):
                views = corpus(r.get("corpus"))
                model, run = host.run_for(r.get("key"), session)
                if model != views.model_name:
                    raise refuse(f"This corpus was built with the model {views.model_name}; pick it in the Model "
                                 "list, analyze, select a token, then search.")
                k = r.get("k", 10)
                k = k if isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= 50 else 10
                return views.search_run(run, r.get("token"), r.get("layer"), k)

            return await searches.call(search)

        return [corpus_summary, corpus_head, corpus_qk, corpus_sentences, corpus_sentence, corpus_find, corpus_search,
                corpus_probe, corpus_card]

    def sentence(self, name, sentence) -> dict:
        views = self.corpus(name)
        if isinstance(sentence, bool) or not isinstance(sentence, int):
            raise refuse("A sentence is named by its number.")
        row = views.corpus.sentences.loc[views.corpus.check_sentence(sentence)]
        pair = row["pair"] if isinstance(row["pair"], str) else ""
        return {"text": row["text"], "pair": pair, "model": views.model_name}

    @user_errors
    def open_sentence(self, event: gr.EventData):
        """A point clicked: its sentence and the corpus's model into the input row (the page analyzes it next)."""
        data = getattr(event, "_data", None) or {}
        data = data if isinstance(data, dict) else {}
        found = self.sentence(data.get("corpus"), data.get("sentence"))
        return found["text"], found["pair"], found["model"]

    def wire(self) -> None:
        page = self.page
        opened = self.host.submit(self.open_sentence, None, [*page.sentences, page.model],
                                  **api("corpus_open", False), queue=False)
        page.analyze_after(opened)

    def after_analysis(self, event, public: bool) -> None:
        """Nothing to compute for a new input: the corpus views read the selected token when asked to search."""

    def on_load(self, demo: gr.Blocks) -> None:
        """A link to a corpus view opens this tab."""
        def opened_by_link(request: gr.Request):
            query = getattr(request, "query_params", None) or {}
            return gr.Tabs(selected=self.id) if "cview" in query else gr.skip()

        demo.load(opened_by_link, None, [self.page.tab_set], **api("corpus_link", False), queue=False)
