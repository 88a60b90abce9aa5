"""Our interactive attention views (bertviz_app.views) inside the page: each host is one gr.HTML whose value is an
analysis' payload; the views draw it in the browser, and moving through layers, heads and tokens never asks the
server. The server is asked only for what the views cannot have with them: the query/key blob (the first time that
view opens), an offline copy of the page, or a CSV of exact numbers, each read from the Run in the explorer's cache,
never with a forward pass.

One `ViewsHost` serves every host of the page (the analysis under the input, the two sides of compare mode): it
remembers which input each payload came from, so that a server function finds its Run by the payload's key.

Permalinks (the main host only): the address follows the visitor
(`?a=...&b=...&model=...&layer=2&head=5&token=3&tab=matrix`); layout.py restores a, b and model from it, the script
below layer, head, token and tab. Not `view`: Gradio's own page reads that parameter.
"""

from __future__ import annotations

import base64
import functools
from collections import OrderedDict

import gradio as gr
from .. import views
from ..run import MATRICES, Run
from .common import Models, index_value, refuse, user_errors

# A CSV larger than this is refused: one head of a 512-token input is 262,144 rows; all 12 heads of a layer at
# 512 tokens would be 3 million rows (about 100 MB), more than a browser download should carry.
MAX_CSV_ROWS = 1_000_000

# The script of a host. Its props: value {"payload": base64, "key", "a", "b", "model"} (the template never holds
# it: megabytes of text in the DOM), id_prefix (element ids, unique per host), permalink (write the address),
# sync (hosts of one group follow each other's layer, head, token and view), silence (offer picking heads to
# silence in the overview; the picks go to Python as a `submit` event).
HOST_SCRIPT = """
const host = element.querySelector(".bv-host");

// The views' script comes once per page, in its <head> (app.serve puts views.script_element() there), not in
// every host's js_on_load: three hosts carried 430 kB of it in the page's config, which gradio deep-copies for
// every /config request.
async function library() {
  for (let waited = 0; !window.BertvizViews && waited < 10000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!window.BertvizViews) {
    host.textContent = "The attention views cannot start: their script is missing from this page. Serve the app "
      + "with bertviz_app.app.serve (or the bertviz-app command), which adds it.";
    throw new Error("window.BertvizViews is missing");
  }
  return window.BertvizViews;
}
const URL_KEYS = ["layer", "head", "token", "tab"];
const TABS = { lines: "lines", matrix: "matrix", overview: "overview", query_key: "qk" };
const SHARED = ["layer", "head", "token", "view", "matrix", "units", "segments", "hideSpecial", "renormalize",
                "scale", "direction"];
let viewer = null;
let unsubscribe = null;

function fromAddress() {  // the view a permalink asks for; the views clamp what does not fit the model
  if (!props.permalink) return {};
  const q = new URLSearchParams(window.location.search);
  const int = (name) => (q.has(name) && /^\\d+$/.test(q.get(name)) ? Number(q.get(name)) : undefined);
  return { layer: int("layer"), head: q.get("head") === "all" ? "all" : int("head"), token: int("token"),
           view: TABS[q.get("tab")] };
}

function toAddress(value, state) {
  if (!props.permalink) return;
  const q = new URLSearchParams(window.location.search);
  for (const name of ["a", "b", "model", ...URL_KEYS]) q.delete(name);
  q.set("a", value.a);
  if (value.b) q.set("b", value.b);
  q.set("model", value.model);
  q.set("layer", state.layer);
  q.set("head", state.head);
  if (state.token !== null && state.token !== undefined) q.set("token", state.token);
  q.set("tab", { qk: "query_key" }[state.view] || state.view);
  history.replaceState(history.state, "", `${window.location.pathname}?${q}`);
}

// The server functions answer {value} or {error: a sentence}; a failure becomes an Error the views show.
async function ask(name, argument) {
  let answer;
  try {
    answer = await server[name](argument);
  } catch (error) {
    throw new Error("the server did not answer; is it still running?");
  }
  if (answer && answer.error) {
    if (name !== "query_key") alert(answer.error);  // the query/key view shows its own message
    throw new Error(answer.error);
  }
  return answer.value;
}

function share(state, changed) {  // tell the other hosts of the group what changed here
  if (!props.sync || ![...changed].some((key) => SHARED.includes(key))) return;
  const detail = { group: props.sync, source: props.id_prefix,
                   state: Object.fromEntries(SHARED.map((key) => [key, state[key]])) };
  window.dispatchEvent(new CustomEvent("bertviz-sync", { detail }));
}

window.addEventListener("bertviz-sync", (event) => {
  const { group, source, state } = event.detail;
  if (viewer && group === props.sync && source !== props.id_prefix) viewer.selection.set(state);  // no echo: an
});                                                                                // unchanged state calls nobody

async function show() {
  const value = props.value;
  if (!value || !value.payload) return;
  // A new input keeps every choice but the token (its index means another token now); the first one comes from
  // the address.
  const wanted = viewer ? { ...viewer.selection.get(), token: null, silenced: [] } : fromAddress();
  if (unsubscribe) unsubscribe();
  if (viewer) viewer.destroy();
  viewer = await (await library()).mount(host, value.payload, {
    showTitle: false,
    idPrefix: props.id_prefix || "",
    selection: Object.fromEntries(Object.entries(wanted).filter(([, v]) => v !== undefined)),
    loadQueryKey: () => ask("query_key", value.key),
    offlineHtml: () => ask("offline_page", value.key),
    exportCsv: (s) => ask("attention_csv", { key: value.key, matrix: s.matrix, layer: s.layer, head: s.head }),
    onSilence: props.silence ? async (heads) => { trigger("submit", { key: value.key, heads }); } : undefined,
  });
  unsubscribe = viewer.selection.subscribe((state, changed) => { toAddress(value, state); share(state, changed); });
  toAddress(value, viewer.selection.get());
}
show();
watch("value", show);
"""


class ViewsHost:
    """The registry and server functions behind every views host of one page."""

    def __init__(self, models: Models):
        self.models = models
        # run key -> (model, text, pair) of recent analyses: the server functions find their Run by it. Strings only,
        # a few hundred bytes each; the Runs stay in the explorers' caches (bounded by bytes).
        self._analyses: OrderedDict[str, tuple[str, str, str | None]] = OrderedDict()

    def value(self, model: str, run: Run) -> dict:
        """A host's value for `run`: its payload (base64) and what a permalink needs."""
        key = views.run_key(run.model_name, run.tokens)
        self._analyses[key] = (model, run.encoding.text, run.encoding.text_pair)
        self._analyses.move_to_end(key)
        while len(self._analyses) > 4096:
            self._analyses.popitem(last=False)
        return {"payload": base64.b64encode(run.views_payload()).decode("ascii"), "key": key,
                "a": run.encoding.text, "b": run.encoding.text_pair or "", "model": model}

    def run_for(self, key) -> tuple[str, Run]:
        """(model name, Run) of a payload's key, from the cache; a sentence for the visitor when it is gone."""
        found = self._analyses.get(key) if isinstance(key, str) else None
        run = self.models.get(found[0]).cached_run(found[1], found[2]) if found else None
        if run is None:
            raise refuse("This analysis is no longer in the server's memory; press Analyze to compute it again.")
        return found[0], run

    def component(self, elem_id: str, *, id_prefix: str = "", permalink: bool = False, sync: str = "",
                  silence: bool = False) -> gr.HTML:
        """A host: the views of whatever value it is given (see HOST_SCRIPT for the props)."""
        run_for = self.run_for

        # Plain functions, not methods: gradio marks each server function with an attribute. Gradio answers an
        # exception in one with a bare 500, so each answers {"value": ...} or {"error": a sentence} instead.
        @in_words
        def query_key(key):
            return base64.b64encode(run_for(key)[1].query_key_payload()).decode("ascii")

        @in_words
        def offline_page(key):
            run = run_for(key)[1]
            return views.standalone_html(run.views_payload(), run.query_key_payload(), title=run.title)

        @in_words
        def attention_csv(request):
            request = request if isinstance(request, dict) else {}
            return csv_of(run_for(request.get("key"))[1], request.get("matrix"), request.get("layer"),
                          request.get("head"))

        return gr.HTML(value=None, html_template="<div class='bv-host'></div>",
                       js_on_load=HOST_SCRIPT, apply_default_css=False, elem_id=elem_id,
                       server_functions=[query_key, offline_page, attention_csv], id_prefix=id_prefix,
                       permalink=permalink, sync=sync, silence=silence)


def in_words(fn):
    """A server function's answer: {"value": what fn returns}, or {"error": the sentence user_errors would show}."""
    checked = user_errors(fn)

    @functools.wraps(fn)
    def answer(*args):
        try:
            return {"value": checked(*args)}
        except gr.Error as err:
            return {"error": err.message}

    return answer


def csv_of(run: Run, matrix, layer, head) -> str:
    """The exact numbers behind the matrix on screen, one row per (layer, head, from, to): one head, all heads of a
    layer, the layer's rollout, or value-weighted attention (its norms, before the views scale rows to one); the
    `precision` column says whether the server keeps attention in float32 or float16 (`--cache-dtype`)."""
    if not isinstance(matrix, str) or matrix not in MATRICES:  # the browser's raw JSON: any type can come
        raise refuse(f"Unknown matrix {str(matrix)[:40]!r}; choose one of: {', '.join(MATRICES)}.")
    layer = index_value(layer, run.num_layers, "Layer")
    heads = list(range(run.num_heads)) if head == "all" or matrix == "rollout" else [
        index_value(head, run.num_heads, "Head")]
    if matrix != "rollout" and len(heads) * len(run) ** 2 > MAX_CSV_ROWS:
        raise refuse(f"All {len(heads)} heads of this {len(run)}-token input are {len(heads) * len(run) ** 2:,} "
                     "rows; choose one head for the CSV.")
    # float32 written in full (shortest round trip, 8-9 digits), float16 at its own 4-5: as exact as the Run
    return run.attention_frame([layer], heads, matrix).to_csv(index=False)
