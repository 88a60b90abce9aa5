// The corpus views' hosts. In the app (bertviz_app/app/tabs/corpus.py): one gr.HTML whose js_on_load calls
// BertvizViews.corpusHost({ element, props, server, trigger }) with the corpora's descriptions as its value; the
// server functions answer the summary, a head, the maps and a search (each { value } or { error: a sentence }), and
// a click on a point opens its sentence in the attention views: the tab's `submit` event puts the sentence and the
// corpus's model in the input row and analyzes, and this waits for the new views to select the layer, head and token.
// Offline (a notebook's frame, corpus.save_html): corpusPage() mounts them from the data saved in the page, where a
// click shows the sentence instead.
// The Task tab's held-out table and the sentence map select together, by the sentence's text: a click on a row marks
// its sentence on the map (corpus-app.mjs markText), and a sentence opened from the corpus views marks its row.

import { mountCorpus } from "./corpus-app.mjs";
import { sentenceKey } from "./corpus-data.mjs";
import { addStylesheet } from "./dom.mjs";
import { chooseLanguage, setLanguage, t } from "./i18n.mjs";
import { ask, openHead, viewerIn } from "./gradio-host.mjs";
import { readCorpusLink, writeCorpusLink } from "./permalink.mjs";
import { viewForHead } from "./registry.mjs";

const OPEN_WAIT_MS = 120000;
const VIEWS_ROOT = "attention-host";
// the Task tab's held-out table (app/tabs/task.py): gradio's grid of text cells, its linked rows marked by
// task-heldout.css
const HELDOUT = "task-heldout";

/** The sentence of a row of the held-out table, { text, pair }: its "text" and "sentence B" cells, found by their
 * columns' headers (a model without pairs has no "sentence B"). */
export function heldoutRow(row, headers) {
  const cells = [...row.querySelectorAll("[role=gridcell]")];
  const at = (name) => cells.find((c) => Number(c.dataset.col) === headers.indexOf(name))?.textContent ?? "";
  return { text: at("text"), pair: headers.includes("sentence B") ? at("sentence B") : "" };
}

/** The held-out table's row of one sentence, marked (data-linked) and scrolled into sight in the table's own box (a
 * row out of sight looked for a box at a time). */
export function heldoutLink(doc) {
  let wanted = null, watched = null, watching = false, seeking = false;
  const block = () => doc.getElementById(HELDOUT);
  const grid = () => block()?.querySelector("[role=grid]") ?? null;
  const headers = (g) => [...g.querySelectorAll("[role=columnheader]")].map((h) => h.getAttribute("title")
    ?? h.textContent.trim());
  function mark() {
    const g = grid();
    if (!g) return null;
    const names = headers(g);
    let found = null;
    for (const row of g.querySelectorAll("[role=row][data-index]")) {
      const { text, pair } = heldoutRow(row, names);
      const on = wanted !== null && sentenceKey(text, pair) === wanted;
      if (on) { found = row; row.dataset.linked = "true"; } else if (row.dataset.linked) delete row.dataset.linked;
    }
    return found;
  }
  // The table is drawn late (a tab not yet opened) and anew (a tab shown again, another model's rows), and draws
  // only the rows in sight, reusing them as it scrolls: one watch on the page puts the mark back after each change
  // inside the table, and looks for a row when the table comes into sight. It starts with the first mark.
  function watch() {
    if (watching || !doc.body) return;
    watching = true;
    const seen = new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) reveal(); });
    const follow = () => {
      const b = block();
      if (b !== watched) {
        if (watched) seen.unobserve(watched);
        watched = b;
        if (b) seen.observe(b);
      }
      return b;
    };
    new MutationObserver((records) => {
      const b = follow();
      // only children change inside the table here, never an attribute we set: no loop
      if (b && wanted !== null && records.some((r) => b.contains(r.target))) mark();
    }).observe(doc.body, { childList: true, subtree: true, characterData: true });
    follow();
    addStylesheet(doc, "task-heldout.css");
  }
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
  async function reveal() {
    const g = grid();
    if (!g || wanted === null || seeking || !g.getClientRects().length) return;
    seeking = true;
    try {
      let row = mark();
      const scan = scroller(g.querySelector("[role=row][data-index]"));
      for (let top = 0; !row && scan && top < scan.scrollHeight; top += Math.max(40, scan.clientHeight * 0.8)) {
        scan.scrollTop = top;
        await frame();
        await frame();
        row = mark();
      }
      if (row && scan) {
        const r = row.getBoundingClientRect(), b = scan.getBoundingClientRect();
        if (r.top < b.top || r.bottom > b.bottom) scan.scrollTop += r.top - b.top - (b.height - r.height) / 2;
      }
    } finally { seeking = false; }
  }
  return {
    /** Marks the row of this sentence (text, pair), or none. */
    select(text, pair) { wanted = text === null ? null : sentenceKey(text, pair); watch(); mark(); reveal(); },
    /** The sentence of the row a cell is in, { text, pair }, or null. */
    rowOf(cell) {
      const g = grid(), row = cell.closest("[role=row][data-index]");
      return g && row ? heldoutRow(row, headers(g)) : null;
    },
  };
}

/** The nearest box around `el` that scrolls up and down. */
function scroller(el) {
  for (let e = el?.parentElement; e; e = e.parentElement) {
    if (e.scrollHeight > e.clientHeight + 1 && /(auto|scroll)/.test(getComputedStyle(e).overflowY)) return e;
  }
  return null;
}

/** The sentence's analysis, once the attention views show it: { viewer, input } (throws a sentence on a refusal or
 * when it takes too long). */
async function waitForViews(doc, want, before, sleep) {
  for (let waited = 0; ; waited += 100) {
    const now = viewerIn(VIEWS_ROOT, doc);
    if (now && now.viewer !== before && now.input.a === want.text && (now.input.b || "") === (want.pair || "")) {
      return now;
    }
    const refused = doc.querySelector("#notice .bv-stale");
    if (refused && waited > 500) throw new Error(refused.textContent.replace(/ The picture below.*$/, ""));
    if (waited > OPEN_WAIT_MS) throw new Error(t("The sentence was not analyzed; is the server still running?"));
    await sleep(100);
  }
}

/** Selects the target's layer, head and token in the views (Lines unless a one-head view is on screen). */
export function selectTarget(viewer, target) {
  const view = viewer.selection.get().view;
  viewer.selection.set({ layer: target.layer, head: target.head, token: target.token ?? null,
    view: viewForHead(view) });
}

/** The app's source (corpus-app.mjs) from the host's server functions. deps: { doc, location, history, sleep }. */
export function appSource(value, server, trigger, deps) {
  const { doc, location, history, sleep } = deps;
  const heldout = deps.heldout ?? { select() {} };
  const current = () => viewerIn(VIEWS_ROOT, doc);
  return {
    corpora: value.corpora || [],
    problems: (value.unavailable || []).map((name) => t("The corpus {name} is not available on this server (its "
      + "folder is missing or damaged); the operator was told why when the server started.", { name })),
    summary: (corpus, subset) => ask(server, "corpus_summary", { corpus, subset }),
    head: (corpus, layer, head) => ask(server, "corpus_head", { corpus, layer, head }),
    qkMap: (corpus, layer, head) => ask(server, "corpus_qk", { corpus, layer, head }),
    sentenceMap: (corpus, layer, pooling) => ask(server, "corpus_sentences", { corpus, layer, pooling }),
    find: (corpus, text, pair) => ask(server, "corpus_find", { corpus, text, pair }),
    probe: (corpus, target) => ask(server, "corpus_probe", { corpus, target }),
    card: (corpus, layer, head, statistic) => ask(server, "corpus_card", { corpus, layer, head, statistic }),
    async search(corpus, layer, k) {
      const now = current();
      if (!now) throw new Error(t("Analyze an input first, then select one of its tokens to search for."));
      const token = now.viewer.selection.get().token;
      if (token === null || token === undefined) {
        throw new Error(t("Select a token first: click one in the attention views (or in the Tokens tab's table), "
          + "then search."));
      }
      return ask(server, "corpus_search", { corpus, layer, k, token, key: now.input.key });
    },
    selectedToken() {
      const now = current();
      const token = now?.viewer.selection.get().token;
      if (!now || token === null || token === undefined) return null;
      return `“${now.viewer.payload.tokens[token]}” (token ${token}) of “${now.input.a}${now.input.b ? ` | ${now.input.b}` : ""}”`;
    },
    async open(target) {
      const info = await ask(server, "corpus_sentence", { corpus: target.corpus, sentence: target.sentence });
      heldout.select(info.text, info.pair);
      let now = current();
      const same = now && now.input.a === info.text && (now.input.b || "") === (info.pair || "")
        && now.input.model === info.model;
      if (!same) {
        trigger("submit", { corpus: target.corpus, sentence: target.sentence });
        now = await waitForViews(doc, info, now?.viewer, sleep);
      }
      selectTarget(now.viewer, target);
      doc.getElementById(VIEWS_ROOT)?.scrollIntoView?.({ block: "start" });
    },
    openHead: (layer, head) => openHead(VIEWS_ROOT, layer, head, doc),
    onState(state) {
      history.replaceState(history.state, "", `${location.pathname}?${writeCorpusLink(location.search, state)}`);
    },
  };
}

/** Runs the app's corpus host: mounts the corpus views once, at the state the address asks for. */
export function startCorpusHost({ element, props, server, trigger }, deps) {
  const box = element.querySelector(".bv-corpus-host");
  const heldout = heldoutLink(deps.doc);
  const source = appSource(props.value || {}, server, trigger, { ...deps, heldout });
  const asked = readCorpusLink(deps.location.search) || {};
  const mounted = mountCorpus(box, source, asked);
  // The search pane names the token selected in the views; it follows the views' selection. A row of the Tokens
  // tab's table (one row per token, in order) selects its token in the views, for a search.
  const follow = () => mounted.showToken?.();
  deps.doc.addEventListener("click", (event) => {
    // a row of the Task tab's held-out table (which analyzes it) marks its sentence on the sentence map, and itself
    const cell = event.target.closest?.(`#${HELDOUT} [role=gridcell]`);
    const picked = cell ? heldout.rowOf(cell) : null;
    if (picked?.text.trim()) {
      heldout.select(picked.text, picked.pair);
      mounted.markText(picked.text, picked.pair);
    }
    const row = event.target.closest?.("#token-table tbody tr");
    const now = row ? viewerIn(VIEWS_ROOT, deps.doc) : null;
    if (now && row.sectionRowIndex < now.viewer.payload.length) now.viewer.selection.set({ token: row.sectionRowIndex });
    setTimeout(follow, 0);
  }, true);
  return mounted;
}

/** The offline source: what a saved page holds (corpus/browser.py `offline_data`), the rest refused in words. */
export function offlineSource(data, show) {
  const missing = (what) => Promise.reject(new Error(t("This saved page holds {what}; in a notebook, "
    + "corpus.show(heads=[(layer, head), ...]) saves more heads' maps.", { what })));
  const heads = (keys) => keys.map((k) => { const [layer, head] = k.split(",");
    return t("layer {layer}, head {head}", { layer, head }); }).join("; ");
  return {
    corpora: [data.info], problems: [],
    summary: async (corpus, subset) => data.summaries[subset] || missing(t("the summary of the whole corpus and its "
      + "labels only")),
    head: async (corpus, layer, head) => data.heads[`${layer},${head}`] || missing(t("the details of {heads} only",
      { heads: heads(Object.keys(data.heads)) })),
    qkMap: async (corpus, layer, head) => data.qk[`${layer},${head}`]
      || missing(t("the query \u00d7 key maps of {heads} only", { heads: heads(Object.keys(data.qk)) })),
    sentenceMap: async (corpus, layer, pooling) => data.sentences[`${layer},${pooling}`]
      || missing(t("the sentence map of {layers} only", {
      layers: Object.keys(data.sentences).map((k) => { const [layer, pooling] = k.split(",");
        return t("layer {layer} ({pooling})", { layer, pooling }); }).join(", ") })),
    idPrefix: "",
    search: async () => { throw new Error(t("A search needs the model: in a notebook, corpus.search(text, token, "
      + "layer) answers it; in the app, the Corpus tab.")); },
    selectedToken: () => null,
    async open(target) { show(target, data.texts?.[target.sentence]); },
  };
}

/** The offline page's start: the corpus data saved in the page (an inert JSON script element), mounted in its root. */
export function mountCorpusPage(doc = globalThis.document) {
  doc.documentElement.lang = setLanguage(chooseLanguage(doc.defaultView?.location.search,
    doc.defaultView?.navigator.languages));
  const data = JSON.parse(doc.getElementById("bertviz-corpus").textContent);
  const root = doc.getElementById("bertviz-root");
  const note = doc.createElement("p");
  note.className = "bv-corpus-opened";
  note.setAttribute("role", "status");
  const show = (target) => {
    const where = { sentence: target.sentence, token: target.token, layer: target.layer, head: target.head };
    note.textContent = t(target.token !== null && target.token !== undefined
      ? "Sentence {sentence}, token {token} (layer {layer}, head {head}): in a notebook, corpus.run({sentence}).show() "
        + "opens it in the attention views."
      : "Sentence {sentence} (layer {layer}, head {head}): in a notebook, corpus.run({sentence}).show() opens it in "
        + "the attention views.", where);
  };
  const mounted = mountCorpus(root, offlineSource(data, show), data.state || {});
  root.append(note);
  return mounted;
}
