"""The Attention tab: our interactive views (bertviz_app.views: lines, matrix, every head, query x key), drawn in the
browser from one compact payload per analysis. Moving through layers, heads and tokens never asks the server; it is
asked only for the query/key blob (the first time that view opens), an offline copy of the page, or a CSV of exact
numbers, each read from the Run already in the explorer's cache (never a forward pass).

Permalinks: the page's address follows the visitor (`?a=...&b=...&model=...&layer=2&head=5&token=3&tab=matrix`);
opening such an address restores the input (layout.py reads a, b and model) and the view (the script below reads
layer, head, token and tab). Not `view`: Gradio's own page reads that parameter.
"""

from __future__ import annotations

import base64
import functools
from collections import OrderedDict

import gradio as gr
import numpy as np
import pandas as pd

from .. import views
from ..run import Run
from .common import Page, index_value, refuse, user_errors

# A CSV larger than this is refused: one head of a 512-token input is 262,144 rows; all 12 heads of a layer at
# 512 tokens would be 3 million rows (about 100 MB), more than a browser download should carry.
MAX_CSV_ROWS = 1_000_000
MATRIX_SETS = ("attention", "rollout")

# The host: one gr.HTML whose value is {"payload": base64, "key", "a", "b", "model"}; its template never holds the
# value (megabytes of text in the DOM). A new value mounts the views again, keeping layer, head and tab.
HOST_SCRIPT = """
const host = element.querySelector(".bv-host");
const URL_KEYS = ["layer", "head", "token", "tab"];
let viewer = null;
let unsubscribe = null;

function fromAddress() {  // the view a permalink asks for; ignored when it does not fit the model
  const q = new URLSearchParams(window.location.search);
  const int = (name) => (q.has(name) && /^\\d+$/.test(q.get(name)) ? Number(q.get(name)) : undefined);
  const tabs = { lines: "lines", matrix: "matrix", overview: "overview", query_key: "qk" };
  return { layer: int("layer"), head: q.get("head") === "all" ? "all" : int("head"), token: int("token"),
           view: tabs[q.get("tab")] };
}

function toAddress(value, state) {
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

async function show() {
  const value = props.value;
  if (!value || !value.payload) return;
  // A new input keeps every choice but the token (its index means another token now); the first one comes from
  // the address. The views clamp what does not fit this model.
  const wanted = viewer ? { ...viewer.selection.get(), token: null } : fromAddress();
  if (unsubscribe) unsubscribe();
  if (viewer) viewer.destroy();
  viewer = await BertvizViews.mount(host, value.payload, {
    showTitle: false,
    selection: Object.fromEntries(Object.entries(wanted).filter(([, v]) => v !== undefined)),
    loadQueryKey: () => ask("query_key", value.key),
    offlineHtml: () => ask("offline_page", value.key),
    exportCsv: (s) => ask("attention_csv", { key: value.key, matrix: s.matrix, layer: s.layer, head: s.head }),
  });
  unsubscribe = viewer.selection.subscribe((state) => toAddress(value, state));
  toAddress(value, viewer.selection.get());
}
show();
watch("value", show);
"""


class AttentionTab:
    """Built inside `with gr.Tab(...)`. `first_paint` gives the view's value for a new Run (the analyze event sends
    it); the server functions answer the views' three requests."""

    def __init__(self, page: Page):
        self.page = page
        # run key -> (model, text, pair) of recent analyses: the server functions find their Run by it. Strings only,
        # a few hundred bytes each; the Runs stay in the explorers' caches (bounded by bytes).
        self._analyses: OrderedDict[str, tuple[str, str, str | None]] = OrderedDict()
        models, analyses = page.models, self._analyses

        def run_for(key) -> Run:
            found = analyses.get(key) if isinstance(key, str) else None
            run = models.get(found[0]).cached_run(found[1], found[2]) if found else None
            if run is None:
                raise refuse("This analysis is no longer in the server's memory; press Analyze to compute it again.")
            return run

        # Plain functions, not methods: gradio marks each server function with an attribute. Gradio answers an
        # exception in one with a bare 500, so each answers {"value": ...} or {"error": a sentence} instead.
        @in_words
        def query_key(key):
            return base64.b64encode(run_for(key).query_key_payload()).decode("ascii")

        @in_words
        def offline_page(key):
            run = run_for(key)
            return views.standalone_html(run.views_payload(), run.query_key_payload(), title=run._title())

        @in_words
        def attention_csv(request):
            request = request if isinstance(request, dict) else {}
            return csv_of(run_for(request.get("key")), request.get("matrix"), request.get("layer"),
                          request.get("head"))

        self.view = gr.HTML(value=None, html_template="<div class='bv-host'></div>",
                            js_on_load=views.bundle_js() + HOST_SCRIPT, apply_default_css=False,
                            elem_id="attention-host", server_functions=[query_key, offline_page, attention_csv])

    def first_paint(self, model: str, run: Run) -> dict:
        """The view's value for a new Run: its payload (base64) and what a permalink needs."""
        key = views.run_key(run.model_name, run.tokens)
        self._analyses[key] = (model, run.encoding.text, run.encoding.text_pair)
        self._analyses.move_to_end(key)
        while len(self._analyses) > 4096:
            self._analyses.popitem(last=False)
        return {"payload": base64.b64encode(run.views_payload()).decode("ascii"), "key": key,
                "a": run.encoding.text, "b": run.encoding.text_pair or "", "model": model}

    def wire(self) -> None:
        pass  # browsing happens in the browser

    def after_analysis(self, event, public: bool):
        return event


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
    layer, or the layer's rollout."""
    if matrix not in MATRIX_SETS:
        raise refuse(f"Unknown matrix {str(matrix)[:40]!r}; choose one of: {', '.join(MATRIX_SETS)}.")
    layer = index_value(layer, run.num_layers, "Layer")
    if matrix == "rollout":
        weights = run.rollout(layer)[None]  # (1, T, T)
        frame = _tidy(weights, run.tokens, layer, heads=["rollout"])
    else:
        heads = list(range(run.num_heads)) if head == "all" else [index_value(head, run.num_heads, "Head")]
        if len(heads) * len(run) ** 2 > MAX_CSV_ROWS:
            raise refuse(f"All {len(heads)} heads of this {len(run)}-token input are {len(heads) * len(run) ** 2:,} "
                         "rows; choose one head for the CSV.")
        frame = run.attention_frame(layers=[layer], heads=heads)
    return frame.to_csv(index=False, float_format="%.6g")


def _tidy(weights: np.ndarray, tokens, layer: int, heads) -> pd.DataFrame:
    """(n, T, T) matrices as rows layer, head, from, to, from_token, to_token, weight."""
    n, t, _ = weights.shape
    which, src, dst = np.meshgrid(np.arange(n), np.arange(t), np.arange(t), indexing="ij")
    tokens = np.asarray(list(tokens), dtype=object)
    return pd.DataFrame({"layer": layer, "head": np.asarray(heads, dtype=object)[which.ravel()],
                         "from": src.ravel(), "to": dst.ravel(), "from_token": tokens[src.ravel()],
                         "to_token": tokens[dst.ravel()], "weight": weights.astype(np.float32).ravel()})

