// Query/key view: how one head turns the selected token's query and every key into a row of attention:
// q . k_j for each key, times 1/sqrt(d), then a softmax. Drawn from the query/key blob, which the page may
// have to load first.

import { layerMatrix, queryKeyRow } from "./data.mjs";
import { createSurface, createTooltip, el, everyFrame, measureText } from "./dom.mjs";
import { LABEL_FONT_PX, LABEL_PITCH, pitchFor, thinLabels, truncate, visibleRange } from "./layout.mjs";
import { DIVERGING_STOPS, formatNumber, formatWeight, lutColor, makeLUT, SELECTED_COLOR,
  signedIndex } from "./scale.mjs";

export const NAME = "qk";
const FONT = `${LABEL_FONT_PX}px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;
const BOLD = `bold ${FONT}`;
const SMALL = `13px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;
const LUT = makeLUT(DIVERGING_STOPS);
const HEADER = 78; // column titles, then the query vector above the key columns
const TOP = HEADER + 8;
const PAD = 8, GAP = 14, NUMBER_W = 64, BAR_W = 150, MAX_LABEL_CHARS = 14;

/** draw(container, payload, selection, { maxHeight, loadQueryKey }) -> { scene(), refresh(), destroy() } */
export function draw(container, payload, selection, options = {}) {
  const root = el("div", { class: "bv-view bv-qk" });
  container.append(root);
  const notice = el("div", { class: "bv-notice", hidden: true });
  const detail = el("div", { class: "bv-stats", "aria-live": "polite" });
  const expand = el("button", { type: "button", class: "bv-toggle", id: `${options.idPrefix || ""}view-qk-expand`,
    onclick: () => selection.set({ expand: !selection.get().expand }) });
  const tools = el("div", { class: "bv-tools" }, expand);
  root.append(notice, detail, tools);
  const surface = createSurface(root, { paint, onPointer, label: "Query and key arithmetic" });
  const tooltip = createTooltip(root);
  const caption = el("p", { class: "bv-caption" });
  root.append(caption);
  let row = null; // queryKeyRow for the current state
  let model = null; // the model's own attention row (from the payload), to compare with
  let layout = null;
  let key = null; // the key row picked for the detailed sum, and the hovered one
  let hover = null;
  let loading = null;
  let labelWidth = null;
  let dirty = true;

  function queryToken(state) {
    if (state.token !== null) return state.token;
    const first = payload.special.findIndex((s) => !s);
    return first < 0 ? 0 : first;
  }

  function showMissing() {
    surface.box.hidden = true;
    detail.hidden = true;
    tools.hidden = true;
    notice.hidden = false;
    if (loading) {
      notice.replaceChildren(el("p", {}, "Loading the query and key vectors\u2026"));
    } else if (options.loadQueryKey) {
      notice.replaceChildren(
        el("p", {}, "This view needs the query and key vectors of every head, which are fetched separately "
          + "(they are large: about 4 kB per token)."),
        el("button", { type: "button", id: options.idPrefix ? `${options.idPrefix}view-qk-load` : "view-qk-load",
          onclick: () => load() }, "Load query and key vectors"));
    } else {
      notice.replaceChildren(el("p", {}, "This page was saved without the query and key vectors, so it cannot show "
        + "how attention is computed. In Python, save it with them: standalone_html(payload, "
        + "query_key=query_key_from_run(run)) from bertviz_app.views."));
    }
  }

  async function load() {
    if (loading || !options.loadQueryKey) return;
    loading = options.loadQueryKey();
    showMissing();
    try {
      await loading;
    } catch (error) {
      notice.replaceChildren(el("p", {}, `Could not load the query and key vectors: ${error.message}`),
        el("button", { type: "button", onclick: () => load() }, "Try again"));
      loading = null;
      return;
    }
    loading = null;
    render(selection.get());
  }

  function update(state) {
    if (!payload.queryKey) {
      showMissing();
      if (options.loadQueryKey && !loading) load(); // opening the view is the request for the data
      caption.textContent = "";
      return;
    }
    notice.hidden = state.head !== "all";
    notice.replaceChildren(el("p", {}, "All heads is selected, but this arithmetic belongs to one head: showing "
      + "head 0. Pick a head above."));
    surface.box.hidden = false;
    detail.hidden = false;
    tools.hidden = false;
    expand.setAttribute("aria-pressed", String(state.expand));
    expand.textContent = state.expand ? "Hide q \u00d7 k element by element" : "Show q \u00d7 k element by element";
    const head = state.head === "all" ? 0 : state.head;
    const token = queryToken(state);
    const qk = payload.queryKey;
    row = queryKeyRow(qk, state.layer, head, token);
    const T = payload.length;
    model = layerMatrix(payload.sets.attention, T, payload.heads, state.layer, head)
      .subarray(token * T, (token + 1) * T);
    let limit = 0, productLimit = 0;
    for (const x of row.q) limit = Math.max(limit, Math.abs(x));
    for (const x of row.keys) limit = Math.max(limit, Math.abs(x));
    for (const x of row.products) productLimit = Math.max(productLimit, Math.abs(x));
    const maxHeight = options.maxHeight ? options.maxHeight() : 600;
    labelWidth ??= Math.ceil(Math.max(...payload.tokens.map((t) => measureText(BOLD, truncate(t, MAX_LABEL_CHARS)))));
    const labelW = labelWidth;
    const pitch = pitchFor(T, maxHeight - TOP - PAD, state.zoom, { min: 2, max: 24 });
    const boxWidth = root.clientWidth || 700;
    const blocks = state.expand ? 2 : 1;
    const fixed = PAD + labelW + GAP + blocks * GAP + 2 * NUMBER_W + GAP + BAR_W + PAD;
    const cw = Math.max(6, Math.min(18, (boxWidth - fixed) / (row.d * blocks))); // narrower: scroll sideways
    const xKeys = PAD + labelW + GAP;
    const xProducts = xKeys + row.d * cw + GAP;
    const xDot = (state.expand ? xProducts + row.d * cw : xKeys + row.d * cw) + GAP;
    const xScore = xDot + NUMBER_W;
    const xBar = xScore + NUMBER_W + GAP;
    const width = xBar + BAR_W + PAD;
    const height = TOP + T * pitch + PAD;
    const before = layout;
    layout = { pitch, cw, labelW, xKeys, xProducts, xDot, xScore, xBar, width, height, limit, productLimit, token,
      head, layer: state.layer, expand: state.expand };
    surface.setSize(width, height, Math.min(height, maxHeight));
    // A new row of attention: pick its strongest key and scroll to it.
    const moved = !before || before.token !== token || before.head !== head || before.layer !== state.layer;
    if (key === null || key >= T || moved) {
      key = row.weights.indexOf(Math.max(...row.weights));
      reveal(key);
    }
    showDetail();
    caption.textContent = describe(state, row, payload, token);
    root.dataset.drawn = `layer=${state.layer} head=${head} query=${token}`;
    surface.scroller.dataset.geometry = JSON.stringify({ top: TOP, pitch });
    surface.redraw();
  }

  function showDetail() {
    const j = hover ?? key;
    const tokens = payload.tokens;
    const q = `\u201c${tokens[row.token]}\u201d`, k = `\u201c${tokens[j]}\u201d`;
    let worst = 0;
    for (let i = 0; i < row.weights.length; i++) worst = Math.max(worst, Math.abs(row.weights[i] - model[i]));
    detail.replaceChildren(
      el("strong", {}, `Query ${q} (token ${row.token}) and key ${k} (token ${j}):`),
      el("span", {}, `q \u00b7 k = the sum of the ${row.d} products q\u1d62 \u00d7 k\u1d62 = `
        + `${formatNumber(row.dots[j])}; `
        + `times 1/\u221a${row.d} = ${formatNumber(row.scale, 3)} gives the score ${formatNumber(row.scores[j])}; `
        + `softmax (e to the score, divided by the sum over all ${row.weights.length} keys) gives the weight `
        + `${formatWeight(row.weights[j])}. The model's own weight here: ${formatWeight(model[j])}.`),
      el("span", { class: "bv-muted" }, `Rebuilt from 8-bit queries and keys, so it can differ a little from the `
        + `model's own row: here by ${worst < 0.005 ? "less than 0.01" : `up to ${formatWeight(worst)}`}. `
        + "Click a key's row to keep it here."));
  }

  const rowY = (j) => TOP + (j + 0.5) * layout.pitch;

  /** Scroll the box just enough to show row j (and the query's own row when both fit). */
  function reveal(j) {
    const v = surface.viewport();
    const y = TOP + j * layout.pitch;
    if (y >= v.y + HEADER && y + layout.pitch <= v.y + v.height) return;
    surface.scrollTo(v.x, Math.max(0, y - HEADER - (v.height - HEADER) / 2));
  }

  function paint(ctx, v) {
    if (!layout || !row) return;
    const T = payload.length;
    const { pitch, cw, xKeys, xProducts, xDot, xScore, xBar, limit, productLimit, expand } = layout;
    const [r0, r1] = visibleRange(v.y, v.height, TOP, pitch, T);
    ctx.save();
    ctx.translate(-v.x, -v.y);
    const cellH = Math.max(1, pitch - (pitch >= 6 ? 1 : 0));
    const picked = hover ?? key;
    for (let j = r0; j <= r1; j++) {
      const y = TOP + j * pitch;
      if (j === picked || j === row.token) {
        ctx.fillStyle = j === picked ? "#fff1e0" : "#f0f0f0";
        ctx.fillRect(PAD, y, layout.width - 2 * PAD, pitch);
      }
      for (let e = 0; e < row.d; e++) {
        ctx.fillStyle = lutColor(LUT, signedIndex(row.keys[j * row.d + e], limit));
        ctx.fillRect(xKeys + e * cw, y, cw - (cw >= 6 ? 1 : 0), cellH);
        if (expand) {
          ctx.fillStyle = lutColor(LUT, signedIndex(row.products[j * row.d + e], productLimit));
          ctx.fillRect(xProducts + e * cw, y, cw - (cw >= 6 ? 1 : 0), cellH);
        }
      }
      // The weight as a bar, 1.0 filling the column; the number beside it where a row has room for text.
      ctx.fillStyle = "#2171b5";
      const inset = pitch >= 6 ? 1 : 0;
      ctx.fillRect(xBar, y + inset, Math.max(row.weights[j] * (BAR_W - 44), row.weights[j] > 0.001 ? 1 : 0),
        cellH - inset);
    }
    const labels = thinLabels(r0, r1, pitch, LABEL_PITCH, [picked, row.token]);
    ctx.textBaseline = "middle";
    for (const j of labels) {
      const y = rowY(j);
      ctx.font = j === row.token || j === picked ? BOLD : FONT;
      ctx.fillStyle = payload.special[j] ? "#6b6b6b" : "#111";
      ctx.textAlign = "right";
      ctx.fillText(truncate(payload.tokens[j], MAX_LABEL_CHARS), xKeys - GAP, y);
      if (pitch >= LABEL_PITCH - 2) {
        ctx.font = SMALL;
        ctx.fillStyle = "#222";
        ctx.fillText(formatNumber(row.dots[j], 1), xDot + NUMBER_W - 8, y);
        ctx.fillText(formatNumber(row.scores[j]), xScore + NUMBER_W - 8, y);
        ctx.textAlign = "right";
        ctx.fillText(formatWeight(row.weights[j]), xBar + BAR_W, y);
      }
    }
    if (picked !== null) {
      ctx.strokeStyle = SELECTED_COLOR;
      ctx.lineWidth = 2;
      ctx.strokeRect(PAD, TOP + picked * pitch, layout.width - 2 * PAD, pitch);
    }
    ctx.restore();
    paintHeader(ctx, v);
  }

  function paintHeader(ctx, v) {
    const { cw, xKeys, xProducts, xDot, xScore, xBar, limit, expand } = layout;
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, v.width, HEADER);
    ctx.save();
    ctx.translate(-v.x, 0);
    ctx.font = SMALL;
    ctx.fillStyle = "#333";
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    const tokens = payload.tokens;
    ctx.fillText(`query q of \u201c${truncate(tokens[row.token], 12)}\u201d`, xKeys, 12);
    ctx.fillText("keys k, one row per token \u2193", xKeys, HEADER - 12);
    if (expand) {
      ctx.fillText("q \u00d7 k, element by element", xProducts, 12);
      ctx.fillText("(red: signs agree)", xProducts, HEADER - 12);
    }
    ctx.fillText("q\u00b7k", xDot + 10, HEADER - 12);
    ctx.fillText(`\u00f7\u221a${row.d}`, xScore + 10, HEADER - 12);
    ctx.fillText("softmax = weight", xBar, HEADER - 12);
    // The query vector, over the key columns (and over the products, which it multiplies).
    for (let e = 0; e < row.d; e++) {
      ctx.fillStyle = lutColor(LUT, signedIndex(row.q[e], limit));
      ctx.fillRect(xKeys + e * cw, 26, cw - (cw >= 6 ? 1 : 0), 22);
      if (expand) {
        ctx.fillStyle = lutColor(LUT, signedIndex(row.q[e], limit));
        ctx.fillRect(xProducts + e * cw, 26, cw - (cw >= 6 ? 1 : 0), 22);
      }
    }
    ctx.restore();
    ctx.fillStyle = "#ddd";
    ctx.fillRect(0, HEADER - 1, v.width, 1);
  }

  function onPointer(event, p) {
    if (!layout) return;
    const j = p.vy < HEADER ? null : Math.floor((p.y - TOP) / layout.pitch);
    const inside = j !== null && j >= 0 && j < payload.length ? j : null;
    if (event.type === "click") {
      if (inside !== null) { key = inside; showDetail(); surface.redraw(); }
      return;
    }
    const next = event.type === "pointerleave" ? null : inside;
    if (next !== hover) {
      hover = next;
      showDetail();
      surface.redraw();
    }
    if (next === null) tooltip.hide();
    else {
      tooltip.show([`key \u201c${payload.tokens[next]}\u201d (token ${next})`,
        `score ${formatNumber(row.scores[next])}, weight ${formatWeight(row.weights[next])}`], p.vx, p.vy);
    }
  }

  const render = (state) => {
    if (state.view !== NAME) { dirty = true; return; }
    dirty = false;
    update(state);
  };
  const unsubscribe = selection.subscribe(everyFrame(render));
  const resize = new ResizeObserver(() => { if (selection.get().view === NAME && !dirty) update(selection.get()); });
  resize.observe(root);
  render(selection.get());

  return {
    name: NAME,
    refresh: () => render(selection.get()),
    scene() {
      if (!payload.queryKey || !layout) return null;
      const v = surface.viewport();
      const state = selection.get();
      return { width: v.width, height: v.height, paint: (ctx) => paint(ctx, v),
        name: `query-key-layer${state.layer}-head${layout.head}-token${layout.token}` };
    },
    destroy() { unsubscribe(); resize.disconnect(); root.remove(); },
  };
}

function describe(state, row, payload, token) {
  const parts = [`How head ${row.head} of layer ${row.layer} decides where \u201c${payload.tokens[token]}\u201d looks. `
    + `Its query q (top) is compared with every token's key k (rows): multiply them element by element and add up `
    + `(q\u00b7k), divide by \u221a${row.d} = ${formatNumber(Math.sqrt(row.d))} so that the scores do not grow with `
    + "the vector size, then softmax turns the scores into weights that add up to 1. Blue is negative, red positive."];
  if (state.token === null) {
    parts.push("Select a token (in the list above, or by clicking it in another view) to follow its query.");
  }
  if (state.units === "words") parts.push("This view always works on word pieces: queries and keys belong to pieces.");
  return parts.join(" ");
}
