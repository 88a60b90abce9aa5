// The entry a host calls. One function, the same for the app, a notebook and an offline page:
//
//   const viewer = await BertvizViews.mount(container, payload, options);
//
//   container  an element to fill (its children are replaced)
//   payload    the attention payload: Uint8Array, ArrayBuffer or base64 string (bertviz_app.views.encode_payload),
//              or one decoded already (decodePayload's object, see decode.mjs: tokens, length, layers, heads,
//              segments, special, words, sets of 8-bit codes): a page that computes attention itself builds that
//              and never encodes it
//   options    queryKey        the query/key blob now (bytes or base64, or decodeQueryKey's object), or
//              loadQueryKey    async () => any of those: called the first time the query/key view opens
//              offlineHtml     a string, or (async) () => string: the offline page the "Save page" button saves;
//                              without it the button is not shown
//              exportCsv       async (selection state) => CSV text of the numbers on screen; adds a "Save CSV" button
//              queryKeyNote    without queryKey or loadQueryKey: the sentence the query/key view shows instead (a
//                              training timeline's snapshots keep no queries or keys; see timeline-bar.mjs)
//              showTitle       false leaves out the title and model line (a host that shows the text already)
//              selection       initial state (see selection.mjs), e.g. { layer: 2, head: "all", view: "matrix" };
//                              without a layer and a head, the views open on an informative head (guide.mjs)
//              fromLink        true: `selection` is what a link asked for (permalink.mjs readLink): what is out of
//                              range is replaced and said in one sentence each above the controls (view-link-note)
//              idPrefix        prefix for the element ids when one page holds several viewers (default "")
//              maxHeight       the tallest a view box may be, in pixels (default: what the window leaves)
//              onSilence       async (heads) => anything: heads = [[layer, head], ...] picked to silence (the
//                              selection's `silenced`); the host runs the forward pass with those heads' attention
//                              output zeroed and shows the predictions elsewhere on its page. Adds to the overview
//                              "Pick heads to silence", "Silence N heads and predict" (busy until the promise
//                              settles; a rejection's message is shown in the pane) and "Clear picks"; without it
//                              (a standalone page has no server) none of this appears.
//
//   BertvizViews.decode(bytes or base64) -> the decoded payload that mount also takes
//   BertvizViews.permalink.readLink(search), .writeLink(search, input, state): the address every host writes
//
//   viewer.selection   { get, set, subscribe }: drive or follow the views from outside
//   viewer.setQueryKey(bytes or base64)   hand over the query/key blob later (checked against the payload)
//   viewer.exportPNG(), viewer.exportSVG()   Blob / string of the whole picture of the view on screen (every row
//                                         and label, whatever its box scrolls to); viewer.destroy()
//
// This module is every page's entry; a page that needs more adds the entries of its hosts to its bundle
// (views/page.py BUNDLES): lesson-host.mjs (lessons, for the app and the static page), app.mjs (the Gradio app's
// hosts: gradioHost, corpusHost, openHead, appLessons), widget-host.mjs (the notebook widget). An offline page of
// one input carries this module and what it imports, nothing of the corpus, lessons or timeline.
//
// Ids (prefixed): attention-view (the root), view-layer, view-head, view-all-heads, view-token, view-direction,
// view-matrix, view-units, view-segments, view-hide-special, view-renormalize, view-scale, view-zoom,
// view-qk-expand, view-tab-lines|matrix|overview|qk, view-export-png|svg|html; with onSilence view-silence-pick,
// view-silence-run, view-silence-clear, view-silence-note; with a token selected, view-find (the heads where it
// attends most, one button each) and view-find-to.

import { decodePayload, decodeQueryKey } from "./decode.mjs";
import { describeSelection, linkRows, matrixRows } from "./describe.mjs";
import { addStylesheet, download, el, everyFrame } from "./dom.mjs";
import { scenePNG, sceneSVG } from "./export.mjs";
import { nameFigures as nameFiguresIn } from "./figure-names.mjs";
import { informativeHead, strongestHeads } from "./guide.mjs";
import { defaultZoom } from "./layout.mjs";
import { withSelection } from "./offline.mjs";
import { formatWeight } from "./scale.mjs";
import * as links from "./permalink.mjs";
import { VIEW_NAMES, VIEWS, showsHead, viewForHead } from "./registry.mjs";
import { createSelection } from "./selection.mjs";
import * as palettes from "./palette.mjs";
import * as themes from "./theme.mjs";
import { mountView } from "./view-shell.mjs";
import * as languages from "./i18n.mjs";
import { t } from "./i18n.mjs";

const SEGMENTS = { all: "all", "A->A": "A \u2192 A", "A->B": "A \u2192 B", "B->A": "B \u2192 A", "B->B": "B \u2192 B" };
const BESIDE_ROOM = 12; // under a box whose caption is beside it: a margin
const ZOOMS = { fit: "fit the box", 2: "2\u00d7", 4: "4\u00d7", labels: "every label" };

export async function mount(container, payloadInput, options = {}) {
  const doc = container.ownerDocument;
  addStylesheet(container.getRootNode() === doc ? doc : container.getRootNode(), "views.css", "views-access.css");
  const payload = await loadPayload(container, payloadInput, options);
  const id = (name) => `${options.idPrefix || ""}${name}`;
  const frame = buildFrame(container, payload, options, id);
  const maxHeight = (where = {}) => viewBoxHeight(options, frame, where);
  // Without a layer and head asked for, the page opens on a head that shows something (guide.mjs), not on
  // layer 0, head 0.
  // A link's selection is checked against this payload: what is out of range is said in one sentence each.
  const fromLink = options.fromLink ? links.checkLink(options.selection || {}, payload) : null;
  const asked = fromLink ? fromLink.selection : options.selection || {};
  if (fromLink?.problems.length) {
    frame.controls.before(el("p", { class: "bv-link-note", id: id("view-link-note"), role: "status" },
      fromLink.problems.join(" ")));
  }
  const opening = asked.layer === undefined && asked.head === undefined ? informativeHead(payload) : {};
  const selection = createSelection(payload, { zoom: defaultZoom(payload.length, maxHeight() - 40), ...opening,
    ...asked }, VIEW_NAMES);
  const inputs = buildControls(frame.controls, payload, selection, id);
  const finder = buildFinder(payload, selection, id, () => detailView);
  frame.controls.after(finder.box);

  let detailView = showsHead(selection.get().view) ? selection.get().view : viewForHead(null);
  const loadQueryKey = options.loadQueryKey ? async () => {
    payload.queryKey = await decodeQueryKey(await options.loadQueryKey(), payload);
  } : null;
  const env = { maxHeight, detailView: () => detailView, loadQueryKey, idPrefix: options.idPrefix || "",
    queryKeyNote: options.queryKeyNote || null,
    onSilence: typeof options.onSilence === "function" ? options.onSilence : null };
  const { views, showPanes } = buildPanes(frame, { payload, selection, env }, id);
  const alt = buildAlt(frame, payload, id);

  // A box is as tall as the window leaves it (maxHeight): a taller window, or a host giving the views more of it
  // (presenter mode sends a resize), sizes the view on screen again; the others follow when they are shown.
  const onResize = everyFrame(() => views[selection.get().view].refresh());
  window.addEventListener("resize", onResize);
  const scene = () => views[selection.get().view].scene();
  const title = () => viewTitle(payload, selection.get());
  buildExports(frame.exports, { scene, title, selection, options, id });

  const unsubscribe = selection.subscribe((state, changed) => {
    if (showsHead(state.view)) detailView = state.view;
    if (changed.has("view")) showPanes(state);
    inputs.sync(state);
    finder.sync(state);
    alt.sync(state);
  });
  inputs.sync(selection.get());
  finder.sync(selection.get());
  alt.sync(selection.get());
  return {
    selection, payload,
    async setQueryKey(input) {
      payload.queryKey = await decodeQueryKey(input, payload);
      for (const view of Object.values(views)) view.refresh(); // the ones drawn from it follow
    },
    /** Another payload of the same tokens, layers and heads in place of this one (a training timeline's next
     * step): the DOM, the selection and the hover stay, the numbers change. False (nothing changed) otherwise. */
    setPayload(next) {
      if (next.length !== payload.length || next.layers !== payload.layers || next.heads !== payload.heads
        || next.tokens.join("\u0000") !== payload.tokens.join("\u0000")) return false;
      // in place: every view, control and the finder hold this object
      for (const key of Object.keys(payload)) if (!(key in next)) delete payload[key];
      Object.assign(payload, next);
      frame.root.dataset.key = payload.key || "";
      for (const view of Object.values(views)) view.swap();
      finder.sync(selection.get(), true);
      alt.sync(selection.get(), true);
      return true;
    },
    exportPNG: () => { const s = scene(); return s ? scenePNG(s, title()) : Promise.resolve(null); },
    exportSVG: () => { const s = scene(); return s ? sceneSVG(s, title()) : null; },
    destroy() {
      for (const v of Object.values(views)) v.destroy();
      unsubscribe();
      window.removeEventListener("resize", onResize);
      frame.root.remove();
    },
  };
}

/** The payload (decoded unless it already is) with its query/key blob if given; a sentence in the container, and
 * the error thrown, when it cannot be read. */
async function loadPayload(container, payloadInput, options) {
  try {
    const payload = payloadInput && payloadInput.sets && payloadInput.tokens ? payloadInput
      : await decodePayload(payloadInput);
    if (options.queryKey) payload.queryKey = await decodeQueryKey(options.queryKey, payload);
    return payload;
  } catch (error) {
    const why = typeof DecompressionStream === "undefined"
      ? t("this browser cannot unpack the data (it needs DecompressionStream: Chrome or Edge 103+, Firefox 113+, "
        + "Safari 16.4+)")
      : error.message;
    container.replaceChildren(el("div", { class: "bv-root" }, el("p", { class: "bv-error" },
      t("The attention views could not start: {why}.", { why }))));
    throw error;
  }
}

/** The root in the container, with its title, subtitle and the empty boxes of controls, tabs, exports and panes. */
function buildFrame(container, payload, options, id) {
  // data-key: which analysis is on screen (a host or a test can tell when a new one has arrived)
  const root = el("div", { class: "bv-root", id: id("attention-view"), "data-key": payload.key || "" });
  container.replaceChildren(root);
  const heading = el("h2", { class: "bv-title", title: payload.text || payload.title }, payload.title || t("Attention"));
  const subtitle = el("p", { class: "bv-subtitle" }, [payload.model, t("{n} tokens", { n: payload.length }),
    t("{layers} layers × {heads} heads", { layers: payload.layers, heads: payload.heads })].filter(Boolean).join(" \u00b7 "));
  const frame = { root, controls: el("div", { class: "bv-controls" }),
    tabs: el("div", { class: "bv-tabs", role: "tablist" }), exports: el("div", { class: "bv-exports" }),
    panes: el("div", { class: "bv-panes" }) };
  if (options.showTitle === false) heading.hidden = subtitle.hidden = true;
  root.append(heading, subtitle, frame.controls, el("div", { class: "bv-bar" }, frame.tabs, frame.exports),
    frame.panes);
  return frame;
}

/** A view box takes what the window has left under the controls, keeping room for its caption, so that on a
 * 1280 x 720 projector controls, view and caption are on one screen: measured from where the views start on the
 * page (a host may put its own input above them). */
function viewBoxHeight(options, { root, panes }, { beside = false } = {}) {
  if (options.maxHeight) return options.maxHeight;
  const top = Math.max(0, panes.getBoundingClientRect().top + window.scrollY);
  // the room kept under the box: its caption, unless a host hides it (presenter mode sets --bv-room-below) or a
  // wide box has it beside the picture
  const below = parseFloat(getComputedStyle(root).getPropertyValue("--bv-room-below"));
  const room = beside ? BESIDE_ROOM : Number.isFinite(below) ? below : 100;
  return Math.max(300, window.innerHeight - top - room);
}

/** A tab and a pane per view, each view mounted in its pane; (views by name, showPanes(state)). */
function buildPanes({ root, tabs, panes }, context, id) {
  const doc = root.ownerDocument;
  const paneOf = {};
  for (const { name, label } of VIEWS) {
    paneOf[name] = el("div", { class: "bv-pane", role: "tabpanel", id: id(`view-pane-${name}`),
      "aria-labelledby": id(`view-tab-${name}`) });
    panes.append(paneOf[name]);
    tabs.append(el("button", { type: "button", role: "tab", id: id(`view-tab-${name}`),
      "aria-controls": id(`view-pane-${name}`), onclick: () => context.selection.set({ view: name }) }, t(label)));
  }
  const showPanes = (state) => {
    for (const name of VIEW_NAMES) {
      paneOf[name].hidden = name !== state.view;
      doc.getElementById(id(`view-tab-${name}`))?.setAttribute("aria-selected", String(name === state.view));
    }
  };
  showPanes(context.selection.get());
  const views = {};
  for (const { name, module } of VIEWS) views[name] = mountView(paneOf[name], module, context);
  return { views, showPanes };
}

// Past this many tokens the matrix table (T x T cells) is left out: the token's links stay.
const TABLE_MAX_TOKENS = 64;

/**
 * The views' text alternative (describe.mjs): a sentence for the head on screen, read by screen readers (each view's
 * picture is described by it) and announced when the selection changes, and a "Show as table" switch that puts the
 * same numbers under the views as HTML tables. sync(state, force) follows the selection.
 */
function buildAlt(frame, payload, id) {
  const description = el("p", { class: "bv-description", id: id("view-description"), "aria-live": "polite" });
  const tables = el("div", { class: "bv-alt-tables", id: id("view-table"), hidden: true });
  const toggle = el("button", { type: "button", id: id("view-table-toggle"), "aria-pressed": "false",
    "aria-controls": id("view-table"), title: t("The numbers of the head on screen as tables"),
    onclick: () => { tables.hidden = !tables.hidden; fill(last, true); } }, t("Show as table"));
  frame.exports.prepend(toggle);
  frame.panes.before(description);
  frame.panes.after(tables);
  for (const scroller of frame.panes.querySelectorAll(".bv-scroller")) {
    scroller.setAttribute("aria-describedby", id("view-description"));
  }
  let last = null;
  let key = "";
  function table(caption, { header, rows }) {
    const t = el("table", {}, el("caption", {}, caption));
    t.append(el("thead", {}, el("tr", {}, header.map((h) => el("th", { scope: "col" }, h)))));
    t.append(el("tbody", {}, rows.map(([first, ...rest]) => el("tr", {}, el("th", { scope: "row" }, first),
      rest.map((c) => el("td", {}, c))))));
    return t;
  }
  function fill(state, force = false) {
    last = state;
    const now = `${state.layer}/${state.head}/${state.token}/${payload.key}`;
    if (now === key && !force) return;
    key = now;
    description.textContent = describeSelection(payload, state);
    toggle.textContent = tables.hidden ? t("Show as table") : t("Hide the table");
    toggle.setAttribute("aria-pressed", String(!tables.hidden));
    if (tables.hidden) return;
    const links = linkRows(payload, state);
    const head = state.head === "all" ? t("all heads (mean)") : t("head {head}", { head: state.head });
    tables.replaceChildren(table(links.caption, links));
    if (payload.length <= TABLE_MAX_TOKENS) {
      tables.append(table(t("Layer {layer}, {head}: each row a query token, each column the key it attends to",
        { layer: state.layer, head }), matrixRows(payload, state)));
    } else {
      tables.append(el("p", {}, t("The whole matrix ({n} × {n}) is too large for a table here; the token's links "
        + "above are its row.", { n: payload.length })));
    }
  }
  return { sync: (state, force = false) => fill(state, force) };
}

/** What an exported picture is called: the input, the model, the layer and head. */
function viewTitle(payload, s) {
  const head = s.head === "all" ? "all heads" : `head ${s.head}`;
  const model = payload.model ? `${payload.model}, ` : "";
  return `${payload.title || "attention"} \u2014 ${model}layer ${s.layer}, ${head}`;
}

/** The save buttons: PNG and SVG of the view on screen, and the CSV and offline page where the host offers them. */
function buildExports(exports, { scene, title, selection, options, id }) {
  exports.append(
    el("button", { type: "button", id: id("view-export-png"), title: t("Save the view on screen as a PNG image"),
      onclick: async () => {
        const s = scene();
        if (s) download(await scenePNG(s, title()), `bertviz-${s.name}.png`);
      } },
    t("Save PNG")),
    el("button", { type: "button", id: id("view-export-svg"), title: t("Save the view on screen as an SVG drawing"),
      onclick: () => { const s = scene(); if (s) download(new Blob([sceneSVG(s, title())], { type: "image/svg+xml" }),
        `bertviz-${s.name}.svg`); } }, t("Save SVG")));
  if (options.exportCsv) {
    exports.append(el("button", { type: "button", id: id("view-export-csv"),
      title: t("Save the numbers of the layer and head on screen as a CSV table"),
      onclick: async () => {
        const s = selection.get();
        const csv = await options.exportCsv(s);
        const head = s.head === "all" ? "all-heads" : `head-${s.head}`;
        download(new Blob([csv], { type: "text/csv" }), `bertviz-${s.matrix}-layer-${s.layer}-${head}.csv`);
      } }, t("Save CSV")));
  }
  if (options.offlineHtml) {
    exports.append(el("button", { type: "button", id: id("view-export-html"),
      title: t("Save a page with these views that opens offline, with no server"),
      onclick: async () => {
        const page = typeof options.offlineHtml === "function" ? await options.offlineHtml() : options.offlineHtml;
        const html = withSelection(page, selection.get()); // it opens where the visitor is now
        download(new Blob([html], { type: "text/html" }), "bertviz-attention.html");
      } }, t("Save page")));
  }
}

/** decodePayload (decode.mjs), for a host that decodes, or builds the same object, before it mounts. */
export const decode = decodePayload;

/** The permalink's reader and writer (permalink.mjs), for a host's own address: the static page's. */
export const permalink = links;

/** Themes (theme.mjs): the projector theme's switch and memory, for either host's button. */
export const theme = themes;

/** The app's plotly figures named for screen readers by their titles and axes (figure-names.mjs). */
export const nameFigures = nameFiguresIn;

/** The page's language (i18n.mjs): chooseLanguage, setLanguage, t, translateTree, for the hosts. */
export const i18n = languages;

/** The colour-blind palette (palette.mjs): setPalette, restorePalette, togglePalette, for the hosts' buttons. */
export const palette = palettes;

/** The offline page's start: payload and query/key blob from script elements, the page itself to save. */
export function mountPage(doc = document) {
  doc.documentElement.lang = languages.setLanguage(languages.chooseLanguage(window.location.search,
    navigator.languages));
  // Captured before anything is drawn: the page as it arrived, with its data, is the offline page to save.
  const page = `<!DOCTYPE html>\n${doc.documentElement.outerHTML}`;
  const text = (name) => doc.getElementById(name)?.textContent.trim() || null;
  const extra = JSON.parse(text("bertviz-options") || "{}");
  return mount(doc.getElementById("bertviz-root"), text("bertviz-payload"),
    { ...extra, queryKey: text("bertviz-query-key"), offlineHtml: page });
}

/**
 * "Where it attends most": for the selected token, the heads where it attends most strongly (to any ordinary
 * token, or to one chosen token), each a button that opens that head.
 */
function buildFinder(payload, selection, id, detailView) {
  const to = el("select", { id: id("view-find-to"), onchange: () => sync(selection.get()) });
  to.append(new Option(t("any token"), ""));
  payload.tokens.forEach((t, i) => to.append(new Option(`${i}: ${t}`, String(i))));
  const title = el("span", { class: "bv-finder-title" });
  const list = el("span", { class: "bv-finder-list", id: id("view-find") });
  const box = el("div", { class: "bv-finder", role: "group", "aria-label": t("Heads where the token attends most") },
    title, el("label", { class: "bv-field" }, el("span", {}, t("to")), to), list);
  let shownFor = null;
  function sync(state, again = false) {
    box.hidden = state.token === null;
    if (state.token === null) { shownFor = null; return; }
    const wanted = `${state.token}|${to.value}`;
    if (shownFor !== wanted || again) {
      shownFor = wanted;
      const target = to.value === "" ? null : Number(to.value);
      const found = strongestHeads(payload, state.token, { to: target, count: 5 });
      title.textContent = t("Where “{token}” attends most:", { token: payload.tokens[state.token] });
      // "layer 3, head 1 -> animal 0.45"; on a phone in two lines ("3.1" said nothing), three buttons to a row
      list.replaceChildren(...found.map((f) => el("button", { type: "button", "data-layer": String(f.layer),
        "data-head": String(f.head), title: t("Open layer {layer}, head {head}", f),
        "aria-label": `${t("layer {layer}, head {head}", f)} \u2192 ${payload.tokens[f.to]} ${formatWeight(f.weight)}`,
        onclick: () => selection.set({ layer: f.layer, head: f.head, direction: "from",
          view: showsHead(selection.get().view) ? selection.get().view : detailView() }) },
      el("span", { class: "bv-finder-head" }, t("layer {layer}, head {head}", f)),
      el("span", { class: "bv-finder-to" }, ` \u2192 ${payload.tokens[f.to]} ${formatWeight(f.weight)}`))));
    }
    for (const b of list.children) {
      const on = Number(b.dataset.layer) === state.layer && Number(b.dataset.head) === state.head;
      b.setAttribute("aria-pressed", String(on));
    }
  }
  return { box, sync };
}

function buildControls(parent, payload, selection, id) {
  const field = (label, input, after) => el("label", { class: "bv-field" }, el("span", {}, t(label)), input,
    after || null);
  const set = (patch) => selection.set(patch);
  const range = (name, max, onInput) => el("input", { type: "range", id: id(name), min: "0", max: String(max),
    step: "1", oninput: onInput });
  const select = (name, options, onChange) => {
    const node = el("select", { id: id(name), oninput: onChange, onchange: onChange });
    for (const [value, text] of options) node.append(new Option(text, value)); // Option: the text stays text
    return node;
  };
  // options whose text is ours, not the model's tokens
  const words = (name, options, onChange) => select(name, options.map(([value, text]) => [value, t(text)]), onChange);

  const layerOut = el("output");
  const layer = range("view-layer", payload.layers - 1, () => set({ layer: Number(layer.value) }));
  const headOut = el("output");
  const head = range("view-head", payload.heads - 1, () => set({ head: Number(head.value) }));
  const allHeads = el("input", { type: "checkbox", id: id("view-all-heads"),
    onchange: () => set({ head: allHeads.checked ? "all" : Number(head.value) }) });
  const token = select("view-token", [["", t("none")], ...payload.tokens.map((t, i) => [String(i), `${i}: ${t}`])],
    () => set({ token: token.value === "" ? null : Number(token.value) }));
  const direction = words("view-direction", [["from", "what it attends to"], ["to", "what attends to it"]],
    () => set({ direction: direction.value }));
  const matrixSet = words("view-matrix", Object.entries(payload.sets).map(([k, s]) => [k, s.label]),
    () => set({ matrix: matrixSet.value }));
  const units = words("view-units", [["tokens", "word pieces"], ["words", "words"]],
    () => set({ units: units.value }));
  const segments = words("view-segments", Object.entries(SEGMENTS), () => set({ segments: segments.value }));
  const hide = el("input", { type: "checkbox", id: id("view-hide-special"),
    onchange: () => set({ hideSpecial: hide.checked }) });
  const renorm = el("input", { type: "checkbox", id: id("view-renormalize"),
    onchange: () => set({ renormalize: renorm.checked }) });
  const scale = words("view-scale", [["sqrt", "square root"], ["linear", "linear"]],
    () => set({ scale: scale.value }));
  const zoom = words("view-zoom", Object.entries(ZOOMS), () => set({ zoom: zoom.value }));

  // The ones used most first; at 1280 pixels all of them fill two rows. On a phone the second group starts
  // folded away under a visible "More options", so that the view is not pushed off the screen.
  const more = el("details", { class: "bv-more", open: window.innerWidth >= 700 },
    el("summary", { id: id("view-more") }, t("More options")),
    el("div", { class: "bv-controls" }, field("Matrix", matrixSet), field("Units", units),
      field("Sentences", segments), field("hide [CLS]/[SEP]", hide), field("rows renormalized", renorm),
      field("Color", scale)));
  const wide = window.matchMedia("(min-width: 700px)");
  wide.addEventListener?.("change", (event) => { if (event.matches) more.open = true; }); // no summary to click there
  parent.append(field("Layer", layer, layerOut), field("Head", head, headOut), field("all heads", allHeads),
    field("Token", token), field("shows", direction), field("Zoom", zoom), more);

  return {
    sync(s) {
      layer.value = String(s.layer);
      layerOut.textContent = `${s.layer}`;
      const perHead = payload.sets[s.matrix].perHead;
      if (s.head !== "all") head.value = String(s.head);
      headOut.textContent = s.head === "all" ? "all" : `${s.head}`;
      allHeads.checked = s.head === "all";
      head.disabled = allHeads.disabled = !perHead; // rollout is one matrix per layer
      token.value = s.token === null ? "" : String(s.token);
      direction.value = s.direction;
      matrixSet.value = s.matrix;
      units.value = s.units;
      segments.value = s.segments;
      hide.checked = s.hideSpecial;
      renorm.checked = s.renormalize;
      renorm.disabled = !(s.hideSpecial || s.segments !== "all"); // nothing hidden, nothing to renormalize
      scale.value = s.scale;
      zoom.value = s.zoom;
    },
  };
}
