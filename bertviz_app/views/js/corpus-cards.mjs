// What each layer knows and what each head does (bertviz_app/corpus/probes.py, cards.py): two pictures as pure
// functions around corpus-shell.mjs, and a head's report card as DOM.
//   probeChart   a probe's accuracy per layer (0 = the embeddings) beside its control task's, the selectivity (their
//                difference) and the majority-class baseline
//   headsScatter every head as a point on two statistics of the head summary, coloured by role; with a second
//                subset, a hollow ring at its values joined to the first's
//   headCard     a card's statistics and top examples, each a row of words shaded by the head's attention from the
//                example's token (its sentence's own Run), a button that opens that sentence at that head and token
// Strings from the corpus (pieces, roles) go in as text, never as markup.

import { el } from "./dom.mjs";
import { t } from "./i18n.mjs";
import { HEADS } from "./heads.mjs";
import { categoryColors } from "./corpus-data.mjs";
import { STATISTICS, roleText } from "./corpus-heads.mjs";

export const TARGETS = { tag: "a word's tag", label: "a sentence's label", position: "a token's position",
  recurs: "a word seen earlier in its sentence" };
// Each line its own dash, and colours that stay apart in the colour-vision deficiencies too (palette.test.mjs), so
// one set serves both palettes; the legend draws each line's sample.
export const SERIES = [
  { key: "accuracy", label: "accuracy", color: "#000000", dash: [] },
  { key: "control_accuracy", label: "control task", color: "#E69F00", dash: [6, 4] },
  { key: "selectivity", label: "selectivity (accuracy \u2212 control)", color: "#33BBEE", dash: [10, 3, 2, 3] },
  { key: "majority", label: "majority class", color: "#8c8c8c", dash: [2, 3] },
];
const PAD = { left: 44, right: 12, top: 14, bottom: 34 };
const RADIUS = 6; // a head's point, px
const HIT = 9; // px from a point that still hits it

function finite(v) { return v !== null && v !== undefined && Number.isFinite(v); }

// -- what each layer knows --------------------------------------------------------------------------------------
export const probeChart = {
  NAME: "corpus-probe",
  /** layout(answer, state, size): the layers across, 0..1 up; each series a polyline of its finite values. */
  layout(answer, state, size) {
    const width = size.width, height = size.height;
    const layers = answer.layer, n = layers.length;
    const x = (k) => PAD.left + (n > 1 ? k / (n - 1) : 0.5) * (width - PAD.left - PAD.right);
    const y = (v) => PAD.top + (1 - Math.max(0, Math.min(1, v))) * (height - PAD.top - PAD.bottom);
    const series = SERIES.filter((s) => answer[s.key]?.some(finite)).map((s) => ({ ...s,
      points: answer[s.key].map((v, k) => (finite(v) ? { x: x(k), y: y(v), v, layer: layers[k] } : null)) }));
    const best = answer.accuracy.reduce((b, v, k) => (finite(v) && (b < 0 || v > answer.accuracy[b]) ? k : b), -1);
    return { width, height, series, layers, x, y, answer,
      geometry: { layers: layers.map((l, k) => [l, x(k)]), top: PAD.top, bottom: height - PAD.bottom },
      drawn: `probe:${answer.target}`,
      caption: t("A linear probe of {target} per layer, trained on {items} items and scored on {held_out} from "
        + "sentences it never saw ({classes} classes). Best: layer {layer} ({accuracy}%).", {
        target: TARGETS[answer.target] ? t(TARGETS[answer.target]) : answer.target,
        items: (answer.items - answer.held_out).toLocaleString("en"), held_out: answer.held_out.toLocaleString("en"),
        classes: answer.classes, layer: layers[best], accuracy: (answer.accuracy[best] * 100).toFixed(1) })
        + (answer.selectivity.some(finite) ? t(" The control task gives each word type a random class: what a probe "
          + "learns of it is memorized words, not what the layer knows, so selectivity is the part to read.") : "") };
  },
  paint(ctx, layout, focus) {
    const { width, height, x, y, layers } = layout;
    ctx.font = "12px system-ui, sans-serif";
    ctx.strokeStyle = "#e1e4e8";
    ctx.fillStyle = "#444";
    ctx.lineWidth = 1;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (let v = 0; v <= 1.0001; v += 0.25) {
      ctx.beginPath();
      ctx.moveTo(PAD.left, y(v));
      ctx.lineTo(width - PAD.right, y(v));
      ctx.stroke();
      ctx.fillText(v.toFixed(2), PAD.left - 6, y(v));
    }
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    layers.forEach((l, k) => ctx.fillText(String(l), x(k), height - PAD.bottom + 6));
    ctx.fillText(t("layer (0 = the embeddings)"), (PAD.left + width - PAD.right) / 2, height - 14);
    if (focus.active !== null && focus.active !== undefined) {
      ctx.strokeStyle = "#999";
      ctx.beginPath();
      ctx.moveTo(x(focus.active.index), PAD.top);
      ctx.lineTo(x(focus.active.index), height - PAD.bottom);
      ctx.stroke();
    }
    for (const s of layout.series) {
      ctx.strokeStyle = s.color;
      ctx.fillStyle = s.color;
      ctx.lineWidth = 2;
      ctx.setLineDash(s.dash);
      ctx.beginPath();
      let open = false;
      for (const p of s.points) {
        if (!p) { open = false; continue; }
        if (open) ctx.lineTo(p.x, p.y); else ctx.moveTo(p.x, p.y);
        open = true;
      }
      ctx.stroke();
      ctx.setLineDash([]);
      for (const p of s.points) if (p) { ctx.beginPath(); ctx.arc(p.x, p.y, 3, 0, 2 * Math.PI); ctx.fill(); }
    }
  },
  /** The layer whose column is nearest to x: { index }. */
  hit(layout, x) {
    const n = layout.layers.length;
    let best = null, far = Infinity;
    for (let k = 0; k < n; k++) {
      const d = Math.abs(layout.x(k) - x);
      if (d < far) { far = d; best = k; }
    }
    return best === null ? null : { index: best };
  },
  tooltip(layout, target) {
    const a = layout.answer, k = target.index;
    return [t("Layer {layer}", { layer: a.layer[k] }), ...layout.series.map((s) => `${t(s.label)}: ${finite(a[s.key][k])
      ? a[s.key][k].toFixed(3) : "\u2013"}`)];
  },
};

/** The chart's legend: a swatch and a name per series drawn. */
export function probeLegend(layout) {
  return layout.series.map((s) => el("span", {}, el("span", { class: "bv-swatch bv-swatch-line",
    style: `background:${dashPattern(s.color, s.dash)}` }), t(s.label)));
}

/** A CSS background that draws a canvas line dash sideways (the legend's sample of a line). */
export function dashPattern(color, dash) {
  if (!dash.length) return color;
  let at = 0;
  const stops = dash.map((d, k) => {
    const stop = `${k % 2 ? "transparent" : color} ${at}px ${at + d}px`;
    at += d;
    return stop;
  });
  return `repeating-linear-gradient(90deg,${stops.join(",")})`;
}

// -- the heads scatter ------------------------------------------------------------------------------------------
/** Each role's colour in a palette (palette.mjs; none: the default), the roles in the order the summary first
 * names them; past the palette's colours, its grey. */
export function roleColors(roles, palette) {
  const { colors, other } = categoryColors(palette);
  return new Map([...new Set(roles)].map((r, k) => [r, k < colors.length ? colors[k] : other]));
}

/** The axis of a statistic: its heads' range with a margin (a model's heads may all sit within a few hundredths). */
export function extent(values) {
  const shown = values.filter(finite);
  if (!shown.length) return [0, 1];
  const lo = Math.min(...shown), hi = Math.max(...shown), pad = hi > lo ? 0.06 * (hi - lo) : 0.01;
  return [lo >= 0 ? Math.max(0, lo - pad) : lo - pad, hi + pad]; // a share or a distance never below 0
}

/** Digits enough to tell an axis's ticks apart. */
function digits(lo, hi) {
  return Math.min(4, Math.max(1, Math.ceil(-Math.log10(Math.max(1e-9, (hi - lo) / 4))) + 1));
}

export const headsScatter = {
  NAME: "corpus-scatter",
  /**
   * layout(data, state, size): data { layers, heads, a: a subset's grid, b: a second or null }, state { sx, sy,
   * layer, head }. Points in head order (layer-major); a head without both values is left out.
   */
  layout(data, state, size) {
    const { a, b, heads } = data;
    const sx = state.sx in STATISTICS ? state.sx : "previous", sy = state.sy in STATISTICS ? state.sy : "entropy_ratio";
    const width = size.width, height = size.height;
    const [x0, x1] = extent([...a[sx], ...(b ? b[sx] : [])]), [y0, y1] = extent([...a[sy], ...(b ? b[sy] : [])]);
    const X = (v) => PAD.left + ((v - x0) / (x1 - x0 || 1)) * (width - PAD.left - PAD.right);
    const Y = (v) => PAD.top + (1 - (v - y0) / (y1 - y0 || 1)) * (height - PAD.top - PAD.bottom);
    const colors = roleColors(a.role, size.palette);
    const points = [];
    for (let i = 0; i < a.role.length; i++) {
      if (!finite(a[sx][i]) || !finite(a[sy][i])) continue;
      const p = { layer: Math.floor(i / heads), head: i % heads, role: a.role[i], vx: a[sx][i], vy: a[sy][i],
        x: X(a[sx][i]), y: Y(a[sy][i]), color: colors.get(a.role[i]) };
      if (b && finite(b[sx][i]) && finite(b[sy][i])) Object.assign(p, { bx: X(b[sx][i]), by: Y(b[sy][i]),
        wx: b[sx][i], wy: b[sy][i] });
      points.push(p);
    }
    const chosen = points.find((p) => p.layer === state.layer && p.head === state.head) || null;
    return { width, height, points, sx, sy, X, Y, x0, x1, y0, y1, colors, chosen, a: a.subset, b: b?.subset ?? null,
      geometry: { points: points.map((p) => [p.layer, p.head, p.x, p.y]) },
      drawn: `scatter:${a.subset}${b ? ` vs ${b.subset}` : ""}:${sx}:${sy}`,
      caption: t("Every head of the model over {subset}", { subset: a.subset === "all" ? t("the whole corpus")
        : a.subset })
        + (b ? t(" (filled) and {subset} (rings, joined to the same head)", { subset: b.subset }) : "")
        + t(": {across} across, {up} up, coloured by role. Click a head for its report card.",
          { across: t(STATISTICS[sx]), up: t(STATISTICS[sy]) }) };
  },
  paint(ctx, layout, focus) {
    const { width, height, X, Y } = layout;
    ctx.font = "12px system-ui, sans-serif";
    ctx.lineWidth = 1;
    ctx.strokeStyle = "#e1e4e8";
    ctx.fillStyle = "#444";
    for (let k = 0; k <= 4; k++) {
      const vx = layout.x0 + (k / 4) * (layout.x1 - layout.x0), vy = layout.y0 + (k / 4) * (layout.y1 - layout.y0);
      ctx.beginPath(); ctx.moveTo(X(vx), PAD.top); ctx.lineTo(X(vx), height - PAD.bottom); ctx.stroke();
      ctx.beginPath(); ctx.moveTo(PAD.left, Y(vy)); ctx.lineTo(width - PAD.right, Y(vy)); ctx.stroke();
      ctx.textAlign = "center"; ctx.textBaseline = "top";
      ctx.fillText(vx.toFixed(digits(layout.x0, layout.x1)), X(vx), height - PAD.bottom + 4);
      ctx.textAlign = "right"; ctx.textBaseline = "middle";
      ctx.fillText(vy.toFixed(digits(layout.y0, layout.y1)), PAD.left - 4, Y(vy));
    }
    ctx.textAlign = "center"; ctx.textBaseline = "bottom";
    ctx.fillText(t(STATISTICS[layout.sx]), (PAD.left + width - PAD.right) / 2, height - 2);
    for (const p of layout.points) {
      if (p.bx === undefined) continue;
      ctx.strokeStyle = p.color;
      ctx.beginPath(); ctx.moveTo(p.x, p.y); ctx.lineTo(p.bx, p.by); ctx.stroke();
      ctx.beginPath(); ctx.arc(p.bx, p.by, RADIUS - 1, 0, 2 * Math.PI); ctx.stroke();
    }
    for (const p of layout.points) {
      ctx.fillStyle = p.color;
      ctx.beginPath(); ctx.arc(p.x, p.y, RADIUS, 0, 2 * Math.PI); ctx.fill();
    }
    const ring = (p, color, w) => {
      if (!p) return;
      ctx.strokeStyle = color; ctx.lineWidth = w;
      ctx.beginPath(); ctx.arc(p.x, p.y, RADIUS + 3, 0, 2 * Math.PI); ctx.stroke();
    };
    ring(layout.chosen, "#d62728", 3);
    ring(focus.active ? layout.points.find((p) => p.layer === focus.active.layer && p.head === focus.active.head)
      : null, "#111", 2);
  },
  /** The head nearest (x, y) within a few pixels, { layer, head }, or null. */
  hit(layout, x, y) {
    let best = null, far = HIT;
    for (const p of layout.points) {
      const d = Math.hypot(p.x - x, p.y - y);
      if (d <= far) { far = d; best = p; }
    }
    return best ? { layer: best.layer, head: best.head } : null;
  },
  tooltip(layout, target) {
    const p = layout.points.find((q) => q.layer === target.layer && q.head === target.head);
    if (!p) return null;
    const f = (v, stat) => v.toFixed(stat === "distance" ? 2 : 3);
    const lines = [t("Layer {layer}, head {head}: ", { layer: p.layer, head: p.head }) + roleText(p.role),
      `${t(STATISTICS[layout.sx])}: ${f(p.vx, layout.sx)}; ${t(STATISTICS[layout.sy])}: ${f(p.vy, layout.sy)}`];
    if (p.wx !== undefined) lines.push(`${layout.b}: ${f(p.wx, layout.sx)}; ${f(p.wy, layout.sy)}`);
    return lines;
  },
};

/** The scatter's legend: a swatch per role. */
export function roleLegend(layout) {
  return [...layout.colors].map(([role, color]) => el("span", {}, el("span", { class: "bv-swatch",
    style: `background:${color}` }), roleText(role)));
}

// -- a head's report card ---------------------------------------------------------------------------------------
// what a card lists and ranks its examples by (bertviz_app/heads.py CORPUS_STATISTICS; entropy in nats)
export const CARD_STATISTICS = Object.fromEntries(Object.entries(HEADS.corpusStatistics)
  .filter(([n]) => n !== "entropy_ratio"));

/** A sentence's pieces, each shaded by the head's attention from the example's token (outlined), as text. */
export function attentionRow(pieces, weights, position) {
  const top = Math.max(1e-9, ...weights);
  return el("span", { class: "bv-card-row", role: "img",
    "aria-label": t("attention from token {position}", { position }) },
    ...pieces.map((p, k) => el("span", { class: k === position ? "bv-card-from" : "", title: `${p}: ${weights[k]
      .toFixed(3)}`, style: `background:rgba(8,81,156,${(0.85 * weights[k] / top).toFixed(3)});`
      + (weights[k] / top > 0.5 ? "color:#fff;" : "") }, p)));
}

/** The card in `box`: statistics, then the top examples, each a button `open(example)` calls. */
export function headCard(box, card, statistic, open) {
  const f = (k, v) => (v === null ? "\u2013" : k === "distance" || k === "entropy" ? v.toFixed(2) : v.toFixed(3));
  const stats = el("dl", { class: "bv-card-stats" }, ...Object.entries(CARD_STATISTICS).flatMap(([k, label]) => [
    el("dt", {}, t(label)), el("dd", {}, f(k, card.statistics[k]))]));
  const word = t(CARD_STATISTICS[card.ranked_by]);
  const examples = el("ol", { class: "bv-card-examples" }, ...card.examples.map((e) => el("li", {}, el("button", {
    type: "button", "data-sentence": String(e.sentence), "data-position": String(e.position),
    title: t("Open sentence {sentence} in the attention views at layer {layer}, head {head}, token {token}",
      { sentence: e.sentence, layer: card.layer, head: card.head, token: e.position }), onclick: () => open(e) },
  el("span", { class: "bv-counts" }, `${f(card.ranked_by, e.value)} \u00b7 `
    + t("sentence {sentence}, token {token}", { sentence: e.sentence, token: e.position })
    + ` \u201c${e.pieces[e.position] ?? ""}\u201d`), attentionRow(e.pieces, e.weights, e.position)))));
  box.replaceChildren(el("h3", {}, t("Layer {layer}, head {head}: ", { layer: card.layer, head: card.head })
    + roleText(card.role)), statistic, stats,
    el("h4", {}, t(card.largest ? "Top examples: the tokens with the highest {statistic}, one per sentence"
      : "Top examples: the tokens with the lowest {statistic}, one per sentence", { statistic: word })),
    el("p", { class: "bv-counts" }, t("Each row is the sentence, shaded by where this head's attention from the "
      + "outlined token goes (its sentence's own forward pass). Click one to open it in the attention views.")),
    examples);
}
