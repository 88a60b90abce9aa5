"""The Tokens tab: what BERT reads, token by token (its segment, position and id), as a plain table. The page
opens on it; its table comes with every analysis (the analyze event fills it), so it has nothing to compute
afterwards."""

from __future__ import annotations

import json

import gradio as gr

from .base import Gate, TabPage

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
  // the page's language (views/js/i18n.mjs); the cells are the model's and stay as they are
  const tr = window.BertvizViews?.i18n?.t ?? ((english) => english);
  const caption = document.createElement("p");
  caption.className = "bv-table-caption";
  caption.textContent = tr("What BERT reads: tokens with their segment and position");
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const name of value.headers) head.appendChild(document.createElement("th")).textContent = tr(String(name));
  const body = table.createTBody();
  for (const row of rows) {
    const line = body.insertRow();
    for (const cell of row) line.insertCell().textContent = String(cell);
  }
  const scroll = document.createElement("div");
  scroll.className = "bv-table-scroll";
  // a region that scrolls sideways on a phone: focusable, so that the keyboard can scroll it too, and named
  Object.assign(scroll, { tabIndex: 0, role: "region" });
  scroll.setAttribute("aria-label", caption.textContent);
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


def token_table(run) -> dict:
    """The Run's token table as the page's table draws it: {"table": one JSON string of {headers, data}}."""
    table = run.token_table().to_dict("split")  # plain Python values, ready for JSON
    # one string: gradio walks every list and dict of an answer, cell by cell (~50 ms at 512 tokens)
    return {"table": json.dumps({"headers": table["columns"], "data": table["data"]}, ensure_ascii=False)}


class TokensTab:
    id, title = "tokens-tab", "Tokens"

    def __init__(self, page: TabPage):
        self.table = gr.HTML(value={}, html_template="<div class='bv-token-table'></div>", js_on_load=TOKEN_TABLE_JS,
                             apply_default_css=False, elem_id="token-table")
        page.filled_by_analysis.append((self.table, token_table))

    def wire(self) -> None:
        pass

    def after_analysis(self, event: Gate, public: bool) -> None:
        pass  # the analysis itself fills the table
