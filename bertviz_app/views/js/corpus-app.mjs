// The corpus views: heads over the corpus, one head's joint query/key map, search by meaning and the sentence map,
// in one frame with one state. Every host hands in a `source` (what it can answer) and mounts this the same way:
// the app (corpus-host.mjs: the server's functions, and a click opens the sentence in the attention views), a
// notebook's frame and the offline page (corpus-offline.mjs: the data saved in the page).
//
//   mountCorpus(container, source, state) -> { state(), set(patch), destroy() }
//   source: { corpora: [info], problems: [sentences], summary(corpus, subset), head(corpus, layer, head),
//     qkMap(corpus, layer, head), sentenceMap(corpus, layer, pooling) (bytes or base64), search(corpus, layer, k),
//     selectedToken() -> text or null, open(target), onState(state), find(corpus, text, pair) -> { sentence } },
//     each async and rejecting with a sentence
//   state: { corpus, view (heads | qk | search | sentences), layer, head, subset, versus, statistic, color,
//     sentenceColor, sentenceLayer, pooling, searchLayer, sentence (marked on the sentence map, or null) }
// markText(text, pair) marks a sentence by its text (a row of the Task tab's held-out table): from the sentence
// map's own texts when it is on the page (no request), else by asking source.find.
// Strings from the corpus (sentences, pieces, tags, labels) are put in the page as text, never as markup.

import { colorCategories, decodeCorpusMap, sentenceIndex, sentenceKey, tokenInSentence, tokenOf, isKey }
  from "./corpus-data.mjs";
import { mountCanvasView, paletteAt } from "./corpus-shell.mjs";
import { addStylesheet, el } from "./dom.mjs";
import { t as tr } from "./i18n.mjs";
import { linkIndex } from "./permalink.mjs";
import * as headsView from "./corpus-heads.mjs";
import * as pointMap from "./corpus-point-map.mjs";
import { CARD_STATISTICS, TARGETS, headCard, headsScatter, probeChart, probeLegend, roleLegend }
  from "./corpus-cards.mjs";

export const CORPUS_VIEWS = [
  { name: "heads", label: "Heads over the corpus" }, { name: "qk", label: "Query \u00d7 key map" },
  { name: "search", label: "Search by meaning" }, { name: "sentences", label: "Sentence map" },
  { name: "knows", label: "What each layer knows" }, { name: "cards", label: "Head cards" }];
const COLORS = { kind: "query / key", position: "position", tag: "tag", word: "word" };
const SENTENCE_COLORS = { label: "label", prediction: "prediction", error: "error" };
const BRUSH_LISTED = 200;

/** The state a corpus opens with: what the link asks for, checked against the corpus (a head past the model's is
 * one sentence in `problems` and head 0 instead). */
export function checkedState(info, asked = {}) {
  const problems = [];
  const index = (name, value, size, fallback) => linkIndex(problems, { name, value, size, fallback,
    has: "the corpus's model has" });
  const subsets = new Set(Object.entries(info.subsets || {}).flatMap(([k, list]) => list.map(([n]) => `${k}:${n}`)));
  const subset = (value) => {
    if (!value || value === "all") return "all";
    if (subsets.has(value)) return value;
    problems.push(tr("This corpus has no subset {value}; showing the whole corpus.", { value }));
    return "all";
  };
  const view = CORPUS_VIEWS.some((v) => v.name === asked.view) ? asked.view : "heads";
  const state = { corpus: info.name, view, layer: index("layer", asked.layer, info.layers, 0),
    head: index("head", asked.head, info.heads, 0), subset: subset(asked.subset),
    versus: asked.versus ? subset(asked.versus) : null, statistic: asked.statistic || "entropy_ratio",
    color: COLORS[asked.color] ? asked.color : "kind", sentenceColor: "label", sentenceLayer: info.layers,
    pooling: "cls", searchLayer: info.layers, sentence: null, target: info.tagged ? "tag" : "position",
    sx: "previous", sy: "entropy_ratio", rank: null };
  if (asked.sentence !== undefined && asked.sentence !== null) {
    if (Number.isInteger(asked.sentence) && asked.sentence >= 0 && asked.sentence < info.sentences) {
      state.sentence = asked.sentence;
    } else {
      problems.push(tr("This link marks sentence {sentence}, and the corpus has {n} (0 to {last}); none is marked.",
        { sentence: asked.sentence, n: info.sentences, last: info.sentences - 1 }));
    }
  }
  if (state.versus === "all" && state.subset === "all") state.versus = null;
  return { state, problems };
}

function select(id, choices, value, onchange, label) {
  const s = el("select", { id, "aria-label": label, onchange: () => onchange(s.value) },
    ...choices.map(([v, text]) => el("option", { value: String(v) }, text)));
  s.value = String(value ?? "");
  return s;
}

/** A table of English names as [key, name in the page's language] choices. */
function translatedEntries(names) {
  return Object.entries(names).map(([k, name]) => [k, tr(name)]);
}

function field(label, control) {
  return el("label", { class: "bv-field" }, el("span", {}, tr(label)), control);
}

function subsetChoices(info, none) {
  const out = none ? [["", none]] : [];
  out.push(["all", tr("whole corpus ({n} tokens)", { n: info.tokens.toLocaleString("en") })]);
  for (const [kind, list] of Object.entries(info.subsets || {})) {
    for (const [name, tokens] of list.slice(0, 60)) out.push([`${kind}:${name}`, `${kind} ${name} (${tokens.toLocaleString("en")})`]);
  }
  return out;
}

// The colourings whose categories are our words (query/key, right/wrong), not the corpus's tags, words or labels
const NAMED_BY_US = new Set(["kind", "error"]);

/** The legend of a colouring: a button per category; a click shows that category alone (again: all). */
function legend(box, colors, only, onPick, by) {
  box.replaceChildren(...colors.names.map((name, k) => el("button", { type: "button", "aria-pressed":
    String(only === k), title: tr("{n} points; click to show only these", { n: colors.counts[k].toLocaleString("en") }),
  onclick: () => onPick(only === k ? null : k) }, el("span", { class: "bv-swatch", style: `background:${colors.colors[k]}` }),
  `${NAMED_BY_US.has(by) ? tr(name) : name} (${colors.counts[k].toLocaleString("en")})`)));
}

/** A sentence's words with one of them marked, as text nodes and a <mark> (never markup from the corpus). */
export function markedSentence(pieces, position) {
  const words = [];
  pieces.forEach((p, k) => {
    if (p.startsWith("##") && words.length) { const w = words[words.length - 1]; w.text += p.slice(2); w.last = k; }
    else words.push({ text: p, first: k, last: k });
  });
  const nodes = [];
  words.forEach((w, k) => {
    if (k) nodes.push(" ");
    nodes.push(w.first <= position && position <= w.last ? el("mark", {}, w.text) : w.text);
  });
  return nodes;
}

function buildHeadsPane(ctx) {
  const { info, state, set } = ctx;
  const stat = select(ctx.id("corpus-statistic"), translatedEntries(headsView.STATISTICS), state().statistic,
    (v) => set({ statistic: v }), tr("Statistic"));
  const subset = select(ctx.id("corpus-subset"), subsetChoices(info), state().subset, (v) => set({ subset: v }),
    tr("Subset"));
  const versus = select(ctx.id("corpus-versus"), subsetChoices(info, tr("nothing")), state().versus ?? "",
    (v) => set({ versus: v || null }), tr("Compare with"));
  const box = el("div", { class: "bv-corpus-box" });
  const detail = el("div", { class: "bv-corpus-detail", id: ctx.id("corpus-head") });
  const pane = el("div", { id: ctx.id("corpus-pane-heads") }, el("div", { class: "bv-controls" },
    field("Statistic", stat), field("Subset", subset), field("Compare with", versus)), box, detail);
  const grids = { a: null, b: null };
  const view = mountCanvasView(box, headsView, {
    label: tr("Heads over the corpus: layers down, heads across"), data: () => (grids.a ? { layers: info.layers,
      heads: info.heads, a: grids.a, b: grids.b } : null),
    state: () => state(), height: () => (ctx.narrow() ? 420 : 470),
    onClick: (t) => set({ layer: t.layer, head: t.head }),
  });
  let asked = "";
  async function load() {
    const s = state();
    const key = `${s.subset}|${s.versus}`;
    if (key === asked) { view.refresh(); return; }
    asked = key;
    try {
      const [a, b] = await Promise.all([ctx.source.summary(info.name, s.subset),
        s.versus ? ctx.source.summary(info.name, s.versus) : null]);
      if (asked !== key) return;
      Object.assign(grids, { a, b });
      view.refresh();
    } catch (error) { ctx.say(error.message); asked = ""; }
  }
  let shownHead = "";
  async function loadHead() {
    const s = state(), key = `${s.layer},${s.head}`;
    if (key === shownHead) return;
    shownHead = key;
    try {
      const d = await ctx.source.head(info.name, s.layer, s.head);
      if (shownHead === key) headDetail(detail, d, grids.a, info, ctx);
    } catch (error) { ctx.say(error.message); shownHead = ""; }
  }
  return { pane, sync(s) { stat.value = s.statistic; subset.value = s.subset; versus.value = s.versus ?? "";
    view.refresh(); return load().then(loadHead); }, destroy: () => view.destroy() };
}

/** A head's profile, tag links and relations; in the cards pane (`card`) without its title, under other ids. */
function headDetail(box, d, grid, info, ctx, card = false) {
  const i = d.layer * info.heads + d.head;
  const peak = Math.max(1e-9, ...d.profile.filter((v) => v !== null));
  const bars = el("div", { class: "bv-profile", role: "img", "aria-label": tr("mean attention by offset") },
    ...d.profile.map((v, k) => el("div", { class: d.offsets[k] === 0 ? "bv-zero" : "", title:
      tr("offset {offset}: {value}", { offset: d.offsets[k], value: v === null ? tr("no pairs") : v.toFixed(3) }),
    style: `height:${((v || 0) / peak) * 100}%` })));
  const profile = el("div", {}, el("h4", {}, tr("Attention by relative position")), bars,
    el("div", { class: "bv-axis" }, el("span", {}, `${d.offsets[0]}`), el("span", {}, tr("0: itself")),
      el("span", {}, `+${d.offsets[d.offsets.length - 1]}`)));
  const links = el("div", {}, el("h4", {}, tr("Where its strongest link goes, by tag")), d.links.length
    ? el("p", { class: "bv-muted bv-counts" }, tr("Tag pairs seen {n} times or more, at least twice as often as "
      + "chance; the most telling first (count \u00d7 log\u2082 of the lift), so that a rare tag's few links do not "
      + "lead.", { n: d.link_min_count ?? 20 })) : null, d.links.length
    ? el("ol", { class: "bv-counts bv-links" }, ...d.links.map((l) => el("li", {}, `${l.from} \u2192 ${l.to}: `
      + tr("{lift}\u00d7 chance, {share}% of {tag} ({count})", { lift: l.lift.toFixed(1),
        share: (l.share * 100).toFixed(0), tag: l.from, count: l.count }))))
    : el("p", { class: "bv-muted" }, tr(info.tagged ? "No tag pair above twice chance." : "This corpus has no tags.")));
  const relations = d.relations.length ? el("ul", { class: "bv-counts" }, ...d.relations.map((r) => el("li", {},
    `${tr(r.relation)}: ` + tr("{accuracy}% (best head {best}%, always the next word {next}%)", {
      accuracy: (r.accuracy * 100).toFixed(0), best: (r.best * 100).toFixed(0),
      next: (r.next_word * 100).toFixed(0) })))) : null;
  const suffix = card ? "-card" : "";
  const open = el("button", { type: "button", id: ctx.id(`corpus-open-map${suffix}`), class: "bv-primary",
    onclick: () => ctx.set({ view: "qk" }) }, tr("Open the query \u00d7 key map of layer {layer}, head {head}",
    { layer: d.layer, head: d.head }));
  const inViews = el("button", { type: "button", id: ctx.id(`corpus-open-views${suffix}`),
    onclick: () => ctx.source.openHead?.(d.layer, d.head) }, tr("Show this head in the attention views"));
  box.replaceChildren(el("div", {}, card ? null : el("h3", {}, tr("Layer {layer}, head {head}: ",
    { layer: d.layer, head: d.head })
    + headsView.roleText(grid ? grid.role[i] : "")),
    el("div", { class: "bv-tools" }, open, ctx.source.openHead ? inViews : null), profile),
  el("div", {}, links, relations));
}

/** Lists the tokens of a brushed rectangle, each a button that opens its sentence. */
function brushList(box, map, points, open) {
  if (!points) { box.replaceChildren(); return; }
  const shown = Array.from(points.slice(0, BRUSH_LISTED));
  const counts = new Map();
  for (const p of points) { const w = map.pieces.get(map.piece[tokenOf(map, p)]); counts.set(w, (counts.get(w) || 0) + 1); }
  const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([w, n]) => `${w} ${n}`).join(", ");
  box.replaceChildren(el("p", { class: "bv-counts" }, tr("{n} points in the rectangle",
    { n: points.length.toLocaleString("en") })
    + (points.length > BRUSH_LISTED ? tr(" (the first {n} listed)", { n: BRUSH_LISTED }) : "")
    + tr("; most common: {words}", { words: top })),
  el("ul", { class: "bv-brushed" }, ...shown.map((p) => {
    const t = tokenOf(map, p), where = tokenInSentence(map, t);
    return el("li", {}, el("button", { type: "button", "data-point": String(p), onclick: () => open(p) },
      `${tr(isKey(map, p) ? "key" : "query")} \u00b7 `, el("mark", {}, map.pieces.get(map.piece[t])),
      ` \u00b7 ${where.before} [${where.word}] ${where.after}`));
  })));
}

/** The map's pickers, and how they follow the state (a head's tile or a link changes it after they are built). */
function mapControls(ctx, kind) {
  const { info, state, set } = ctx;
  const choices = (n) => Array.from({ length: n }, (_, k) => [k, `${k}`]);
  const pick = (name, label, list, key, asNumber) => [label, select(ctx.id(name), list, state()[key],
    (v) => set({ [key]: asNumber ? Number(v) : v }), tr(label.replace(/ \(.*$/, ""))), key];
  const pickers = kind === "qk" ? [pick("corpus-layer", "Layer", choices(info.layers), "layer", true),
    pick("corpus-head-pick", "Head", choices(info.heads), "head", true),
    pick("corpus-color", "Colour by", Object.entries(COLORS).filter(([k]) => k !== "tag" || info.tagged)
      .map(([k, name]) => [k, tr(name)]), "color")]
    : [pick("corpus-sentence-layer", "Layer (0 = embeddings)", choices(info.layers + 1), "sentenceLayer", true),
      pick("corpus-pooling", "Vector", [["cls", "[CLS]"], ["mean", tr("mean of the tokens")]], "pooling"),
      pick("corpus-sentence-color", "Colour by", Object.entries(SENTENCE_COLORS).filter(([k]) =>
        k === "label" || info.predictions).map(([k, name]) => [k, tr(name)]), "sentenceColor")];
  return { fields: pickers.map(([label, control]) => field(label, control)),
    sync(s) { for (const [, control, key] of pickers) control.value = String(s[key] ?? ""); } };
}

function buildMapPane(ctx, kind) {
  const { info, state } = ctx;
  const box = el("div", { class: "bv-corpus-box" });
  const legendBox = el("div", { class: "bv-legend", id: ctx.id(`corpus-legend-${kind}`) });
  const listBox = el("div", { id: ctx.id(`corpus-brushed-${kind}`) });
  const caption = el("p", { class: "bv-caption" });
  let drag = "brush";
  const dragButton = el("button", { type: "button", class: "bv-toggle", id: ctx.id(`corpus-drag-${kind}`),
    "aria-pressed": "false", onclick: () => { drag = drag === "brush" ? "move" : "brush";
      dragButton.setAttribute("aria-pressed", String(drag === "move")); } }, tr("Drag moves the map"));
  const local = { map: null, colors: null, by: null, only: null, window: null };
  const zoom = (factor) => { const l = view.layout(); if (l) setWindow(pointMap.zoomAt(l, factor, l.width / 2, l.height / 2)); };
  const tools = el("div", { class: "bv-tools" }, dragButton,
    el("button", { type: "button", id: ctx.id(`corpus-zoom-in-${kind}`), onclick: () => zoom(1.6) }, tr("Zoom in")),
    el("button", { type: "button", id: ctx.id(`corpus-zoom-out-${kind}`), onclick: () => zoom(1 / 1.6) },
      tr("Zoom out")),
    el("button", { type: "button", id: ctx.id(`corpus-zoom-all-${kind}`), onclick: () => setWindow(null) },
      tr("Whole map")));
  const controls = mapControls(ctx, kind);
  const pane = el("div", { id: ctx.id(`corpus-pane-${kind}`) }, el("div", { class: "bv-controls" },
    ...controls.fields), tools, legendBox, box, caption, listBox);
  const openPoint = (p) => ctx.openPoint(local.map, p);
  // the sentence marked with the Task tab's held-out table (sentence maps only): its point, or null
  const marked = () => (kind === "sentences" && local.map && state().sentence !== null
    ? sentenceIndex(local.map).byId.get(state().sentence) ?? null : null);
  const view = mountCanvasView(box, pointMap, {
    label: tr(kind === "qk" ? "Queries and keys of one head" : "Sentences"), data: () => local.map,
    state: () => ({ window: local.window, colors: local.colors, only: local.only, marked: marked() }),
    height: (width) => Math.round(Math.min(ctx.narrow() ? 460 : 560, Math.max(300, width * 0.62))),
    drag: () => drag, onClick: (t) => openPoint(t.point),
    onBrush: (points) => (kind === "qk" ? brushList : sentenceList)(listBox, local.map, points, openPoint),
    onWindow: (w) => setWindow(w),
  });
  function setWindow(w) { local.window = w; view.refresh(); caption.textContent = view.layout()?.caption || ""; }
  function recolor(by, palette) {
    local.colors = colorCategories(local.map, by, palette);
    Object.assign(local, { by, palette });
    local.only = null;
    const pick = (k) => { local.only = k; legend(legendBox, local.colors, k, pick, by); view.refresh(); };
    legend(legendBox, local.colors, null, pick, by);
  }
  let asked = "";
  async function load() {
    const s = state();
    const key = kind === "qk" ? `${s.layer},${s.head}` : `${s.sentenceLayer},${s.pooling}`;
    const by = kind === "qk" ? s.color : s.sentenceColor;
    if (key !== asked) {
      asked = key;
      view.root.dataset.loading = "true";
      try {
        const bytes = kind === "qk" ? await ctx.source.qkMap(info.name, s.layer, s.head)
          : await ctx.source.sentenceMap(info.name, s.sentenceLayer, s.pooling);
        const arrived = performance.now(); // from here to the picture: decoding, colouring, layout and paint
        const map = await decodeCorpusMap(bytes);
        if (asked !== key) return;
        Object.assign(local, { map, window: null, by: null, arrived });
        listBox.replaceChildren();
        view.clearBrush();
      } catch (error) { ctx.say(error.message); asked = ""; return; } finally { delete view.root.dataset.loading; }
    }
    const palette = paletteAt(box);
    if (local.map && (local.by !== by || local.palette !== palette)) recolor(by, palette);
    view.refresh();
    if (local.arrived) { view.root.dataset.pictureMs = (performance.now() - local.arrived).toFixed(1); local.arrived = 0; }
    reveal();
    caption.textContent = view.layout()?.caption || "";
  }
  let revealed = null;
  /** A newly marked point in sight: the whole map when the window has lost it, the map scrolled to when on screen. */
  function reveal() {
    const l = view.layout(), p = marked();
    if (!l || p === null || p === revealed) return;
    revealed = p;
    if (l.sx[p] < 0 || l.sy[p] < 0 || l.sx[p] > l.width || l.sy[p] > l.height) setWindow(null);
    if (view.root.getClientRects?.().length) view.root.scrollIntoView?.({ block: "nearest" });
  }
  return { pane, sync: (s) => { controls.sync(s); return load(); }, view: () => view, map: () => local.map,
    destroy: () => view.destroy() };
}

function sentenceList(box, map, points, open) {
  const shown = Array.from(points.slice(0, BRUSH_LISTED));
  box.replaceChildren(el("p", { class: "bv-counts" }, tr("{n} sentences in the rectangle",
    { n: points.length.toLocaleString("en") })
    + (points.length > BRUSH_LISTED ? tr(" (the first {n} listed)", { n: BRUSH_LISTED }) : "")),
  el("ul", { class: "bv-brushed" }, ...shown.map((p) => el("li", {}, el("button", {
    type: "button", "data-point": String(p), onclick: () => open(p) }, `${map.sentenceIds[p]}: ${map.text(p)}`)))));
}

function buildSearchPane(ctx) {
  const { info, state, set } = ctx;
  const layers = Array.from({ length: info.layers + 1 }, (_, l) => [l, `${l}`]);
  const token = el("p", { id: ctx.id("corpus-search-token"), class: "bv-counts" });
  const layer = select(ctx.id("corpus-search-layer"), layers, state().searchLayer,
    (v) => set({ searchLayer: Number(v) }), tr("Layer"));
  const result = el("div", { id: ctx.id("corpus-search-result") });
  const go = el("button", { type: "button", class: "bv-primary", id: ctx.id("corpus-search-go"),
    onclick: () => run() }, tr("Find the nearest tokens in the corpus"));
  const pane = el("div", { id: ctx.id("corpus-pane-search") }, el("p", {}, tr("Select a token in the analysed input "
    + "(click it in the attention views above, or in the Tokens tab's table), choose a layer, and find the corpus's "
    + "tokens whose hidden state at that layer is nearest (cosine) to that token's.")), token,
  el("div", { class: "bv-tools" }, field("Layer (0 = embeddings)", layer), go), result);
  async function run() {
    ctx.say("");
    go.disabled = true;
    try {
      const r = await ctx.source.search(info.name, state().searchLayer, 10);
      searchResult(result, r, ctx);
    } catch (error) { ctx.say(error.message); } finally { go.disabled = false; }
  }
  const showToken = () => {
    const t = ctx.source.selectedToken?.();
    token.textContent = t ? tr("Token: {token}", { token: t }) : tr("No token selected yet.");
  };
  return { pane, sync: (s) => { layer.value = String(s.searchLayer); showToken(); }, showToken, destroy() {} };
}

function searchResult(box, r, ctx) {
  const counts = (title, list) => el("p", { class: "bv-counts" }, `${tr(title)}: `
    + (list.length ? list.map(([w, n]) => `${w} ${n}`).join(", ") : tr("none")));
  box.replaceChildren(el("p", {}, tr("Nearest to {token} at layer {layer}:", { token: r.query, layer: r.layer })),
    counts("Words", r.words),
    counts("Tags", r.tags), el("ol", { class: "bv-hits" }, ...r.hits.map((h) => el("li", {}, el("button", {
      type: "button", "data-sentence": String(h.sentence), "data-position": String(h.position),
      onclick: () => ctx.source.open({ corpus: ctx.info.name, sentence: h.sentence, token: h.position,
        layer: Math.max(0, r.layer - 1), head: ctx.state().head }),
    }, `${h.score.toFixed(3)} \u00b7 ${h.sentence}${h.label ? ` (${h.label})` : ""}: `,
    ...markedSentence(h.pieces, h.position))))));
}

/** The summary of a subset, asked once per page (the heads grid and the scatter share it). */
function summaryOf(ctx, subset) {
  if (!ctx.summaries.has(subset)) {
    ctx.summaries.set(subset, ctx.source.summary(ctx.info.name, subset).catch((error) => {
      ctx.summaries.delete(subset);
      throw error;
    }));
  }
  return ctx.summaries.get(subset);
}

function buildKnowsPane(ctx) {
  const { info, state, set } = ctx;
  const targets = (info.probe_targets || Object.keys(TARGETS)).map((t) => [t, TARGETS[t] ? tr(TARGETS[t]) : t]);
  const target = select(ctx.id("corpus-probe-target"), targets, state().target, (v) => set({ target: v }),
    tr("Target"));
  const box = el("div", { class: "bv-corpus-box" });
  const series = el("div", { class: "bv-series", id: ctx.id("corpus-probe-legend") });
  const caption = el("p", { class: "bv-caption", id: ctx.id("corpus-probe-caption") });
  const status = el("p", { class: "bv-counts", role: "status", id: ctx.id("corpus-probe-status") });
  const pane = el("div", { id: ctx.id("corpus-pane-knows") }, el("p", {}, tr("What each layer knows: a linear probe "
    + "(logistic regression) per layer reads the target from the layer's hidden states, scored on sentences it never "
    + "saw, beside a control task (Hewitt & Liang 2019) and the majority class.")),
  el("div", { class: "bv-controls" }, field("Target", target)), status, series, box, caption);
  let answer = null;
  const view = mountCanvasView(box, probeChart, {
    label: tr("Probe accuracy by layer"), data: () => answer, state: () => ({}),
    height: () => (ctx.narrow() ? 300 : 340),
  });
  let asked = "";
  async function load() {
    const t = state().target;
    if (t === asked) { view.refresh(); return; }
    asked = t;
    answer = null;
    view.refresh();
    series.replaceChildren();
    caption.textContent = "";
    if (!ctx.source.probe) {
      status.textContent = tr("This saved page holds no probes; in a notebook, corpus.probe(target) trains them.");
      return;
    }
    status.textContent = tr("Training a probe per layer on the server (the first time for a target takes a minute or "
      + "two; then every visitor gets it at once)…");
    box.dataset.loading = "true";
    try {
      const a = await ctx.source.probe(info.name, t);
      if (asked !== t) return;
      answer = a;
      status.textContent = "";
      view.refresh();
      series.replaceChildren(...probeLegend(view.layout()));
      caption.textContent = view.layout().caption;
    } catch (error) {
      if (asked === t) { status.textContent = error.message; asked = ""; }
    } finally { delete box.dataset.loading; }
  }
  return { pane, sync: (s) => { target.value = s.target; return load(); }, destroy: () => view.destroy() };
}

/** A head picked in the scatter (a click, or a keyboard's choice): its card below. */
export function openCard(ctx, target) {
  ctx.set({ layer: target.layer, head: target.head });
}

function buildCardsPane(ctx) {
  const { info, state, set } = ctx;
  const stats = translatedEntries(headsView.STATISTICS);
  const sx = select(ctx.id("corpus-scatter-x"), stats, state().sx, (v) => set({ sx: v }), tr("Across"));
  const sy = select(ctx.id("corpus-scatter-y"), stats, state().sy, (v) => set({ sy: v }), tr("Up"));
  const subset = select(ctx.id("corpus-scatter-subset"), subsetChoices(info), state().subset,
    (v) => set({ subset: v }), tr("Subset"));
  const versus = select(ctx.id("corpus-scatter-versus"), subsetChoices(info, tr("nothing")), state().versus ?? "",
    (v) => set({ versus: v || null }), tr("Compare with"));
  const rank = select(ctx.id("corpus-card-rank"), [["", tr("its role's statistic")],
    ...translatedEntries(CARD_STATISTICS)], state().rank ?? "", (v) => set({ rank: v || null }),
  tr("Rank examples by"));
  const legendBox = el("div", { class: "bv-series", id: ctx.id("corpus-scatter-legend") });
  const box = el("div", { class: "bv-corpus-box" });
  const caption = el("p", { class: "bv-caption" });
  const card = el("div", { class: "bv-corpus-card", id: ctx.id("corpus-card") });
  const detail = el("div", { class: "bv-corpus-detail", id: ctx.id("corpus-card-detail") });
  const pane = el("div", { id: ctx.id("corpus-pane-cards") }, el("div", { class: "bv-controls" },
    field("Across", sx), field("Up", sy), field("Subset", subset), field("Compare with", versus)), legendBox, box,
  caption, card, detail);
  const grids = { a: null, b: null };
  const view = mountCanvasView(box, headsScatter, {
    label: tr("Every head on two statistics"), state: () => state(),
    data: () => (grids.a ? { layers: info.layers, heads: info.heads, a: grids.a, b: grids.b } : null),
    height: () => (ctx.narrow() ? 340 : 420), onClick: (t) => openCard(ctx, t),
  });
  let asked = "", shown = "";
  async function load() {
    const s = state(), key = `${s.subset}|${s.versus}`;
    if (key !== asked) {
      asked = key;
      try {
        const [a, b] = await Promise.all([summaryOf(ctx, s.subset), s.versus ? summaryOf(ctx, s.versus) : null]);
        if (asked !== key) return;
        Object.assign(grids, { a, b });
      } catch (error) { ctx.say(error.message); asked = ""; return; }
    }
    view.refresh();
    const l = view.layout();
    if (l) { legendBox.replaceChildren(...roleLegend(l)); caption.textContent = l.caption; }
  }
  async function loadCard() {
    const s = state(), key = `${s.layer},${s.head},${s.rank}`;
    if (key === shown) return;
    shown = key;
    if (!ctx.source.card) {
      card.replaceChildren(el("p", { class: "bv-counts" }, tr("This saved page holds no head cards; in a notebook, "
        + "corpus.head_card(layer, head) makes one.")));
      return;
    }
    card.dataset.loading = "true";
    try {
      const [c, d] = await Promise.all([ctx.source.card(info.name, s.layer, s.head, s.rank),
        ctx.source.head(info.name, s.layer, s.head)]);
      if (shown !== key) return;
      headCard(card, c, field("Rank examples by", rank), (e) => ctx.source.open({ corpus: info.name,
        sentence: e.sentence, token: e.position, layer: c.layer, head: c.head }));
      headDetail(detail, d, grids.a, info, ctx, true);
    } catch (error) { ctx.say(error.message); shown = ""; } finally { delete card.dataset.loading; }
  }
  return { pane, sync(s) { sx.value = s.sx; sy.value = s.sy; subset.value = s.subset; versus.value = s.versus ?? "";
    rank.value = s.rank ?? ""; return load().then(loadCard); }, destroy: () => view.destroy() };
}

function frame(container, ctx) {
  const root = el("div", { class: "bv-root bv-corpus", id: ctx.id("corpus-view") });
  const message = el("p", { class: "bv-corpus-message", role: "alert", id: ctx.id("corpus-message") });
  const picker = ctx.source.corpora.length > 1 ? field("Corpus", select(ctx.id("corpus-pick"), ctx.source.corpora
    .map((c) => [c.name, c.name]), ctx.info.name, (v) => ctx.switchTo(v), tr("Corpus"))) : null;
  const about = el("p", { class: "bv-subtitle" }, `${ctx.info.name}: ` + tr("{sentences} sentences, {tokens} "
    + "tokens from {source}, model {model}", { sentences: ctx.info.sentences.toLocaleString("en"),
    tokens: ctx.info.tokens.toLocaleString("en"), source: ctx.info.source, model: ctx.info.model }));
  const tabs = el("div", { class: "bv-tabs", role: "tablist" }, ...CORPUS_VIEWS.map((v) => el("button", {
    type: "button", role: "tab", id: ctx.id(`corpus-tab-${v.name}`), onclick: () => ctx.set({ view: v.name }) },
  tr(v.label))));
  const panes = el("div", { class: "bv-corpus-panes" });
  root.append(el("div", { class: "bv-controls" }, picker, about), el("div", { class: "bv-bar" }, tabs), message,
    panes);
  container.replaceChildren(root);
  return { root, message, tabs, panes };
}

/** The corpus views in `container` (see the top of this file). */
export function mountCorpus(container, source, asked = {}) {
  const doc = container.ownerDocument;
  addStylesheet(doc, "views.css", "views-access.css", "corpus.css");
  const wanted = source.corpora.find((c) => c.name === asked.corpus) || source.corpora[0];
  if (!wanted) {
    container.replaceChildren(el("div", { class: "bv-root bv-corpus" }, ...(source.problems || []).map((p) =>
      el("p", { class: "bv-corpus-message", role: "alert" }, p))));
    return { state: () => null, set() {}, destroy() { container.replaceChildren(); } };
  }
  const elsewhere = asked.corpus !== undefined && asked.corpus !== wanted.name;
  const first = checkedState(wanted, elsewhere ? {} : asked);
  if (elsewhere) {
    first.problems.unshift(tr("This link asks for the corpus {asked}, which is not served here ({served}); "
      + "showing {shown}.",
      { asked: String(asked.corpus).slice(0, 80), served: source.corpora.map((c) => c.name).join(", "),
        shown: wanted.name }));
  }
  let current = first.state;
  const listeners = new Set();
  const ctx = {
    source, info: wanted, state: () => current, id: (n) => `${source.idPrefix || ""}${n}`, summaries: new Map(),
    narrow: () => (container.clientWidth || 800) < 700,
    set(patch) { current = { ...current, ...patch }; update(); },
    say: (text) => { parts.message.textContent = text; },
    switchTo: (name) => { whole.destroy(); Object.assign(whole, mountCorpus(container, source, { corpus: name })); },
    openPoint: (map, p) => openPoint(ctx, map, p),
  };
  let marking = 0;
  /** Marks the sentence with this text on the sentence map (none when the corpus lacks it). */
  async function markText(text, pair = "") {
    const asked = ++marking;
    const map = panes.sentences.map();
    let sentence = null;
    if (map) {
      const p = sentenceIndex(map).byText.get(sentenceKey(text, pair));
      sentence = p === undefined ? null : Number(map.sentenceIds[p]);
    } else if (source.find) {
      try { sentence = (await source.find(wanted.name, text, pair || null)).sentence ?? null; } catch (error) {
        ctx.say(error.message);
        return;
      }
    }
    if (asked === marking && sentence !== current.sentence) ctx.set({ sentence });
  }
  const parts = frame(container, ctx);
  const problems = [...(source.problems || []), ...first.problems];
  ctx.say(problems.join(" "));
  const panes = { heads: buildHeadsPane(ctx), qk: buildMapPane(ctx, "qk"), search: buildSearchPane(ctx),
    sentences: buildMapPane(ctx, "sentences"), knows: buildKnowsPane(ctx), cards: buildCardsPane(ctx) };
  for (const p of Object.values(panes)) parts.panes.append(p.pane);
  function update() {
    for (const v of CORPUS_VIEWS) {
      parts.tabs.querySelector(`#${ctx.id(`corpus-tab-${v.name}`)}`).setAttribute("aria-selected",
        String(current.view === v.name));
      panes[v.name].pane.hidden = current.view !== v.name;
    }
    parts.root.dataset.view = current.view;
    panes[current.view].sync(current);
    source.onState?.(current);
    for (const f of listeners) f(current);
  }
  update();
  // The palette's switch (palette.mjs) tells the views with a resize: the maps colour their points again.
  const repaint = () => panes[current.view].sync(current);
  doc.defaultView?.addEventListener("resize", repaint);
  const whole = {
    state: () => current, set: ctx.set, panes, showToken: () => panes.search.showToken(), markText,
    subscribe: (f) => { listeners.add(f); return () => listeners.delete(f); },
    destroy() {
      doc.defaultView?.removeEventListener("resize", repaint);
      for (const p of Object.values(panes)) p.destroy();
      parts.root.remove();
    },
  };
  return whole;
}

/** A click on a point: its sentence opened where the host opens sentences (the attention views, in the app). */
function openPoint(ctx, map, p) {
  const s = ctx.state();
  if (map.kind === "corpus_qk") {
    const t = tokenOf(map, p);
    return ctx.source.open({ corpus: ctx.info.name, sentence: map.sentenceIds[map.sentence[t]],
      token: map.position[t], layer: s.layer, head: s.head, kind: isKey(map, p) ? "key" : "query" });
  }
  ctx.set({ sentence: Number(map.sentenceIds[p]) }); // marked: the held-out table selects it too
  return ctx.source.open({ corpus: ctx.info.name, sentence: map.sentenceIds[p], token: null,
    layer: Math.max(0, s.sentenceLayer - 1), head: s.head });
}
