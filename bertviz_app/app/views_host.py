"""Our interactive attention views (bertviz_app.views) inside the page: each host is one gr.HTML whose value is an
analysis' payload; the views draw it in the browser, and moving through layers, heads and tokens never asks the
server. The server is asked only for what the views cannot have with them: the query/key blob (the first time that
view opens), an offline copy of the page, or a CSV of exact numbers, each read from the Run in the explorer's cache,
never with a forward pass.

One `ViewsHost` serves every host of the page (the analysis under the input, the two sides of compare mode): it
remembers which input each payload came from, so that a server function finds its Run by the payload's key.

Permalinks (the main host only): the address follows the visitor
(`?a=...&b=...&model=...&layer=2&head=5&token=3&tab=matrix`); layout.py restores a, b and model from it, the
host's script (bertviz_app/views/js/gradio-host.mjs) layer, head, token and tab. Not `view`: Gradio's own page reads
that parameter.
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
from .common import Models, index_value, refuse, user_errors

# A CSV larger than this is refused: one head of a 512-token input is 262,144 rows; all 12 heads of a layer at
# 512 tokens would be 3 million rows (about 100 MB), more than a browser download should carry.
MAX_CSV_ROWS = 1_000_000
MATRIX_SETS = ("attention", "rollout", "value_weighted")

# The script of a host is bertviz_app/views/js/gradio-host.mjs, part of the views' script that app.serve puts in
# the page's <head> once (three hosts carried 430 kB of it in the page's config when it was in every js_on_load, and
# gradio deep-copies the config for every /config request). js_on_load only waits for that script and hands the host
# what Gradio gives it; the props are documented in gradio-host.mjs.
HOST_SCRIPT = """
const host = element.querySelector(".bv-host");
(async () => {
  for (let waited = 0; !window.BertvizViews && waited < 10000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!window.BertvizViews) {
    host.textContent = "The attention views cannot start: their script is missing from this page. Serve the app "
      + "with bertviz_app.app.serve (or the bertviz-app command), which adds it.";
    return;
  }
  window.BertvizViews.gradioHost({ element, props, server, trigger, watch });
})();
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
            return views.standalone_html(run.views_payload(), run.query_key_payload(), title=run._title())

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
    layer, the layer's rollout, or value-weighted attention (its norms, before the views scale rows to one)."""
    if not isinstance(matrix, str) or matrix not in MATRIX_SETS:  # the browser's raw JSON: any type can come
        raise refuse(f"Unknown matrix {str(matrix)[:40]!r}; choose one of: {', '.join(MATRIX_SETS)}.")
    layer = index_value(layer, run.num_layers, "Layer")
    if matrix == "rollout":
        return _tidy(run.rollout(layer)[None], run.tokens, layer, ["rollout"]).to_csv(index=False, float_format="%.6g")
    heads = list(range(run.num_heads)) if head == "all" else [index_value(head, run.num_heads, "Head")]
    if len(heads) * len(run) ** 2 > MAX_CSV_ROWS:
        raise refuse(f"All {len(heads)} heads of this {len(run)}-token input are {len(heads) * len(run) ** 2:,} "
                     "rows; choose one head for the CSV.")
    if matrix == "value_weighted":
        weights = np.stack([run.value_weighted_attention(layer, h) for h in heads])  # (n, T, T)
        frame = _tidy(weights, run.tokens, layer, heads).rename(columns={"weight": "norm"})
    else:
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
