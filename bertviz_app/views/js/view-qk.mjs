// Query/key view: how one head turns the selected token's query and every key into a row of attention:
// q . k_j for each key, then the model's score terms of the row (each already scaled: "q.k", and whatever else the
// model adds, DeBERTa's "c2p" and "p2c"), one column each, their sum, then a softmax. The terms are the model's, as
// the query/key blob carries them: this view knows no family's rule. Drawn from that blob, which the page may
// have to load first. Pure layout / paint / hit functions; view-shell.mjs mounts them.

import { layerMatrix, queryKeyRow } from "./data.mjs";
import { t as tr } from "./i18n.mjs";
import { el } from "./dom.mjs";
import { LABEL_FONT_PX, labelType, pitchFor, thinLabels, truncate, visibleRange } from "./layout.mjs";
import { DIVERGING_STOPS, formatNumber, formatWeight, lutColor, makeLUT, SELECTED_COLOR,
  signedIndex } from "./scale.mjs";

export const NAME = "qk";
export const LABEL = "Query and key arithmetic";
const BOLD = labelType(0).bold; // labels are measured at the base size, then scaled with the type
const SMALL = `13px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif`;
const LUT = makeLUT(DIVERGING_STOPS);
const HEADER = 78; // column titles, then the query vector above the key columns
const TOP = HEADER + 8;
const PAD = 8, GAP = 14, NUMBER_W = 64, TERM_W = 76, BAR_W = 150, MAX_LABEL_CHARS = 14;
// With several terms the columns are wider: their two-line titles need the room

/** The token whose query is shown: the selected one, else the first that is not [CLS] or [SEP]. */
export function queryToken(payload, state) {
  if (state.token !== null) return state.token;
  const first = payload.special.findIndex((s) => !s);
  return first < 0 ? 0 : first;
}

/** Layout of one head's query/key arithmetic; hidden until the query/key blob is there. */
export function layout(data, state, size) {
  const { payload, cache } = data;
  if (!payload.queryKey) return { hidden: true, state, caption: "", locked: null };
  const head = state.head === "all" ? 0 : state.head;
  const token = queryToken(payload, state);
  const row = queryKeyRow(payload.queryKey, state.layer, head, token);
  const T = payload.length;
  const model = layerMatrix(payload.sets.attention, T, payload.heads, state.layer, head)
    .subarray(token * T, (token + 1) * T);
  // Without the model's terms (a long input, a page with queries and keys only) the weights are the model's own row.
  if (!row.weights) row.weights = model;
  let limit = 0, productLimit = 0;
  for (const x of row.q) limit = Math.max(limit, Math.abs(x));
  for (const x of row.keys) limit = Math.max(limit, Math.abs(x));
  for (const x of row.products) productLimit = Math.max(productLimit, Math.abs(x));
  const labelW15 = cache.get("qk-labelw", () => Math.max(...payload.tokens.map(
    (t) => size.measure(BOLD, truncate(t, MAX_LABEL_CHARS)))));
  const largest = size.labelMax ?? LABEL_FONT_PX;
  const pitch = pitchFor(T, size.maxHeight - TOP - PAD, state.zoom, { min: 2, max: Math.max(24, largest + 3) });
  const type = labelType(pitch, largest);
  const labelW = Math.ceil((labelW15 * type.px) / LABEL_FONT_PX);
  const blocks = state.expand ? 2 : 1;
  const terms = row.terms || [];
  // q.k, each term, and their sum when there is more than one (one term is the score itself)
  const numbers = 1 + terms.length + (terms.length > 1 ? 1 : 0);
  const numberW = terms.length > 1 ? TERM_W : NUMBER_W;
  const fixed = PAD + labelW + GAP + blocks * GAP + numbers * numberW + GAP + BAR_W + PAD;
  const cw = Math.max(6, Math.min(18, (size.width - fixed) / (row.d * blocks))); // narrower: scroll sideways
  const xKeys = PAD + labelW + GAP;
  const xProducts = xKeys + row.d * cw + GAP;
  const xDot = (state.expand ? xProducts + row.d * cw : xKeys + row.d * cw) + GAP;
  const xScore = xDot + (numbers - 1) * numberW;
  const xBar = xScore + numberW + GAP;
  const width = xBar + BAR_W + PAD;
  const height = TOP + T * pitch + PAD;
  const strongest = row.weights.indexOf(Math.max(...row.weights));
  return {
    payload, state, row, model, pitch, type, cw, labelW, numberW, xKeys, xProducts, xDot, xScore, xBar, width, height,
    limit, productLimit, token, head, layer: state.layer, expand: state.expand,
    boxHeight: Math.min(height, size.maxHeight),
    // Until a key row is clicked (a lock that holds for this query row only), the strongest key is the one explained.
    locked: { key: strongest }, lockScope: `${state.layer}|${head}|${token}`,
    caption: describe(state, row, payload, token),
    drawn: `layer=${state.layer} head=${head} query=${token}`,
    geometry: { top: TOP, pitch },
  };
}

/** A new query row scrolls to its strongest key (centered) when that key is out of sight. */
export function reveal(layout, before, v) {
  if (before && !before.hidden && before.lockScope === layout.lockScope) return null;
  const y = TOP + layout.locked.key * layout.pitch;
  if (y >= v.y + HEADER && y + layout.pitch <= v.y + v.height) return null;
  return { x: v.x, y: Math.max(0, y - HEADER - (v.height - HEADER) / 2) };
}

const rowY = (layout, j) => TOP + (j + 0.5) * layout.pitch;

export function paint(ctx, layout, v, focus) {
  const { payload, row, pitch, cw, numberW, xKeys, xProducts, xDot, xScore, xBar, limit, productLimit,
    expand } = layout;
  const T = payload.length;
  const [r0, r1] = visibleRange(v.y, v.height, TOP, pitch, T);
  ctx.save();
  ctx.translate(-v.x, -v.y);
  const cellH = Math.max(1, pitch - (pitch >= 6 ? 1 : 0));
  const picked = focus.active ? focus.active.key : null;
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
  const labels = thinLabels(r0, r1, pitch, layout.type.pitch, [picked, row.token]);
  ctx.textBaseline = "middle";
  for (const j of labels) {
    const y = rowY(layout, j);
    ctx.font = j === row.token || j === picked ? layout.type.bold : layout.type.font;
    ctx.fillStyle = payload.special[j] ? "#6b6b6b" : "#111";
    ctx.textAlign = "right";
    ctx.fillText(truncate(payload.tokens[j], MAX_LABEL_CHARS), xKeys - GAP, y);
    if (pitch >= layout.type.pitch - 2) {
      ctx.font = SMALL;
      ctx.fillStyle = "#222";
      ctx.fillText(formatNumber(row.dots[j], 1), xDot + numberW - 8, y);
      const terms = row.terms || [];
      terms.forEach((term, t) => {
        // a lone term is the score itself, written as the score was
        ctx.fillText(formatNumber(term.values[j], terms.length === 1 ? undefined : 1), xDot + (t + 2) * numberW - 8, y);
      });
      if (terms.length > 1) ctx.fillText(formatNumber(row.scores[j]), xScore + numberW - 8, y);
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
  paintHeader(ctx, layout, v);
  return { labels: labels.length };
}

function paintHeader(ctx, layout, v) {
  const { payload, row, cw, xKeys, xProducts, xDot, xScore, xBar, limit, expand } = layout;
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, v.width, HEADER);
  ctx.save();
  ctx.translate(-v.x, 0);
  ctx.font = SMALL;
  ctx.fillStyle = "#333";
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  ctx.fillText(tr("query q of “{token}”", { token: truncate(payload.tokens[row.token], 12) }), xKeys, 12);
  ctx.fillText(tr("keys k, one row per token ↓"), xKeys, HEADER - 12);
  if (expand) {
    ctx.fillText(tr("q × k, element by element"), xProducts, 12);
    ctx.fillText("(red: signs agree)", xProducts, HEADER - 12);
  }
  // q.k, then each of the model's terms by its name, then their sum (two lines each, above the keys' own title: a
  // narrow head's title runs under the first column)
  const terms = row.terms || [];
  const columns = [["q\u00b7k", ""], ...terms.map((term) => [truncate(term.name, 9), "term"])];
  if (terms.length > 1) columns.push(["score", "= sum"]);
  columns.forEach((lines, c) => lines.forEach((text, k) => {
    ctx.fillText(text, xDot + c * layout.numberW + 4, HEADER - 30 + 18 * k);
  }));
  ctx.fillText(tr("softmax = weight"), xBar, HEADER - 12);
  // The query vector, over the key columns (and over the products, which it multiplies).
  for (let e = 0; e < row.d; e++) {
    ctx.fillStyle = lutColor(LUT, signedIndex(row.q[e], limit));
    ctx.fillRect(xKeys + e * cw, 26, cw - (cw >= 6 ? 1 : 0), 22);
    if (expand) ctx.fillRect(xProducts + e * cw, 26, cw - (cw >= 6 ? 1 : 0), 22);
  }
  ctx.restore();
  ctx.fillStyle = "#ddd";
  ctx.fillRect(0, HEADER - 1, v.width, 1);
}

/** { key: j } for the key row under (x, y), below the sticky header; else null. */
export function hit(layout, x, y, viewport = { x: 0, y: 0 }) {
  if (y - viewport.y < HEADER) return null;
  const j = Math.floor((y - TOP) / layout.pitch);
  return j >= 0 && j < layout.payload.length ? { key: j } : null;
}

/** A click keeps a key row in the explanation above the picture (for this query row). */
export function click(layout, target) {
  return { lock: target };
}

export function tooltip(layout, { key }) {
  const { payload, row } = layout;
  const lines = [`key \u201c${payload.tokens[key]}\u201d (token ${key})`];
  if (row.scores) lines.push(`score ${formatNumber(row.scores[key])}, weight ${formatWeight(row.weights[key])}`);
  else lines.push(`q\u00b7k ${formatNumber(row.dots[key])}, weight ${formatWeight(row.weights[key])}`);
  if (row.terms && row.terms.length > 1) {
    lines.push(row.terms.map((term) => `${term.name} ${formatNumber(term.values[key])}`).join(", "));
  }
  return lines;
}

export function fileName(layout) {
  return `query-key-layer${layout.layer}-head${layout.head}-token${layout.token}`;
}

/** The sum written out for the active key, in words and numbers. */
export function explain(layout, j) {
  const { payload, row, model } = layout;
  const tokens = payload.tokens;
  const q = `\u201c${tokens[row.token]}\u201d`, k = `\u201c${tokens[j]}\u201d`;
  const dot = `${tr("q · k = the sum of the {d} products qᵢ × kᵢ = {dot}", { d: row.d,
    dot: formatNumber(row.dots[j]) })}; `;
  const head = tr("Query {q} (token {i}) and key {k} (token {j}):", { q, i: row.token, k, j });
  if (!row.terms) {
    return [head, dot + tr("the model's weight here is {weight}.", { weight: formatWeight(model[j]) }),
      tr("The model's score terms did not come with these vectors (they grow with the square of the input's length: a "
        + "long input, or a page that computes only queries and keys, goes without), so the weights are the model's "
        + "own row. Click a key's row to keep it here.")];
  }
  let worst = 0;
  for (let i = 0; i < row.weights.length; i++) worst = Math.max(worst, Math.abs(row.weights[i] - model[i]));
  const scaled = row.scale ? ` ${tr("(the model multiplies q · k by {scale})", { scale: formatNumber(row.scale, 3) })}`
    : "";
  const parts = row.terms.map((term) => `${term.name} = ${formatNumber(term.values[j])}`);
  const score = `${formatNumber(row.scores[j])}${scaled}`;
  const sum = row.terms.length > 1 ? tr("the model's score terms {terms} add up to the score {score}",
    { terms: parts.join(", "), score }) : tr("the model's score term {term} is the score {score}",
    { term: row.terms[0].name, score });
  return [head,
    `${dot}${sum}; ${tr("softmax (e to the score, divided by the sum over all {n} keys) gives the weight {weight}. "
      + "The model's own weight here: {model}.", { n: row.weights.length, weight: formatWeight(row.weights[j]),
      model: formatWeight(model[j]) })}`,
    tr("Rebuilt from the 8-bit score terms, so it can differ a little from the model's own row: here by {by}. Click "
      + "a key's row to keep it here.", { by: worst < 0.005 ? tr("less than 0.01")
      : tr("up to {most}", { most: formatWeight(worst) }) })];
}

/** The notice (data missing, loading, all heads), the explanation and the expand button above the picture. */
export function extras(root, shell) {
  const { selection, payload, env } = shell;
  const notice = el("div", { class: "bv-notice", hidden: true });
  const detail = el("div", { class: "bv-stats", "aria-live": "polite" });
  const expand = el("button", { type: "button", class: "bv-toggle", id: `${env.idPrefix || ""}view-qk-expand`,
    onclick: () => selection.set({ expand: !selection.get().expand }) });
  const tools = el("div", { class: "bv-tools" }, expand);
  let loading = null;

  function showMissing() {
    detail.hidden = true;
    tools.hidden = true;
    notice.hidden = false;
    if (loading) {
      notice.replaceChildren(el("p", {}, tr("Loading the query and key vectors…")));
    } else if (env.loadQueryKey) {
      notice.replaceChildren(
        el("p", {}, tr("This view needs the query and key vectors of every head, which are fetched separately "
          + "(they are large: about 4 kB per token).")),
        el("button", { type: "button", id: `${env.idPrefix || ""}view-qk-load`, onclick: () => load() },
          tr("Load query and key vectors")));
    } else if (env.queryKeyNote) { // a host whose data never has them (a training timeline's snapshots) says why
      notice.replaceChildren(el("p", {}, env.queryKeyNote));
    } else {
      notice.replaceChildren(el("p", {}, tr("This page was saved without the query and key vectors, so it cannot show "
        + "how attention is computed. In Python, save it with them: run.save_html(path), or standalone_html(payload, "
        + "query_key=run.query_key_payload()) from bertviz_app.views.")));
    }
  }

  async function load() {
    if (loading || !env.loadQueryKey) return;
    loading = env.loadQueryKey();
    showMissing();
    try {
      await loading;
    } catch (error) {
      notice.replaceChildren(el("p", {}, tr("Could not load the query and key vectors: {why}", { why: error.message })),
        el("button", { type: "button", onclick: () => load() }, tr("Try again")));
      loading = null;
      return;
    }
    loading = null;
    shell.refresh();
  }

  return {
    before: [notice, detail, tools],
    refresh(layout, state, focus) {
      if (!payload.queryKey) {
        showMissing();
        if (env.loadQueryKey && !loading) load(); // opening the view is the request for the data
        return;
      }
      notice.hidden = state.head !== "all";
      notice.replaceChildren(el("p", {}, tr("All heads is selected, but this arithmetic belongs to one head: showing "
        + "head 0. Pick a head above.")));
      detail.hidden = false;
      tools.hidden = false;
      expand.setAttribute("aria-pressed", String(state.expand));
      expand.textContent = state.expand ? tr("Hide q × k element by element") : tr("Show q × k element by element");
      const [title, sum, note] = explain(layout, focus.active.key);
      detail.replaceChildren(el("strong", {}, title), el("span", {}, sum), el("span", { class: "bv-muted" }, note));
    },
  };
}

function describe(state, row, payload, token) {
  const scaled = row.scale ? tr(", scaled by {scale} so that the scores do not grow with the vector size",
    { scale: formatNumber(row.scale, 3) }) : "";
  const parts = [tr("How head {head} of layer {layer} decides where “{token}” looks. Its query q (top) is compared "
    + "with every token's key k (rows): multiply them element by element and add up (q·k{scaled}); softmax turns the "
    + "scores into weights that add up to 1. Blue is negative, red positive.", { head: row.head, layer: row.layer,
    token: payload.tokens[token], scaled })];
  if (row.terms && row.terms.length > 1) {
    parts.push(tr("This model's score is a sum of {n} terms ({terms}), each a column, as the model computed them.",
      { n: row.terms.length, terms: row.terms.map((t) => t.name).join(", ") }));
  }
  if (state.token === null) {
    parts.push(tr("Select a token (in the list above, or by clicking it in another view) to follow its query."));
  }
  if (state.units === "words") parts.push(tr("This view always works on word pieces: queries and keys belong to pieces."));
  return parts.join(" ");
}
